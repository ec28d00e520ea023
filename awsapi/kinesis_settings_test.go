package awsapi_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	ktypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/runnel-dev/runnel/awsapi"
)

// TagResource, UntagResource, ListTagsForResource, DescribeLimits,
// Enable/DisableEnhancedMonitoring and Start/StopStreamEncryption through
// aws-sdk-go-v2, with their errors.
func TestKinesisSettings(t *testing.T) {
	ctx := context.Background()
	e := start(t, awsapi.Options{})
	kc := e.kinesis()
	must(kc.CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: aws.String("st"), ShardCount: aws.Int32(2)}))
	arn := e.rn.Streams.ARN("st")

	// Tags by ARN.
	must(kc.TagResource(ctx, &kinesis.TagResourceInput{ResourceARN: aws.String(arn), Tags: map[string]string{"b": "2", "a": "1"}}))
	must(kc.UntagResource(ctx, &kinesis.UntagResourceInput{ResourceARN: aws.String(arn), TagKeys: []string{"b"}}))
	lt := must(kc.ListTagsForResource(ctx, &kinesis.ListTagsForResourceInput{ResourceARN: aws.String(arn)}))
	if len(lt.Tags) != 1 || aws.ToString(lt.Tags[0].Key) != "a" || aws.ToString(lt.Tags[0].Value) != "1" {
		t.Fatalf("ListTagsForResource: %+v", lt.Tags)
	}
	if lts := must(kc.ListTagsForStream(ctx, &kinesis.ListTagsForStreamInput{StreamName: aws.String("st")})); len(lts.Tags) != 1 {
		t.Fatalf("ListTagsForStream after TagResource: %+v", lts.Tags)
	}
	_, err := kc.ListTagsForResource(ctx, &kinesis.ListTagsForResourceInput{ResourceARN: aws.String("arn:aws:sqs:us-east-1:000000000000:q")})
	// The model's ResourceARN pattern (arn:aws.*:kinesis:...) refuses it.
	if errCode(err) != "ValidationException" {
		t.Fatalf("a queue ARN: %v", err)
	}
	_, err = kc.TagResource(ctx, &kinesis.TagResourceInput{ResourceARN: aws.String(arn + "/consumer/c:1"), Tags: map[string]string{"a": "1"}})
	if errCode(err) != "ResourceNotFoundException" {
		t.Fatalf("a consumer ARN: %v", err)
	}
	_, err = kc.TagResource(ctx, &kinesis.TagResourceInput{ResourceARN: aws.String(e.rn.Streams.ARN("missing")), Tags: map[string]string{"a": "1"}})
	if errCode(err) != "ResourceNotFoundException" {
		t.Fatalf("a missing stream: %v", err)
	}

	// DescribeLimits counts the open shards.
	dl := must(kc.DescribeLimits(ctx, &kinesis.DescribeLimitsInput{}))
	if aws.ToInt32(dl.OpenShardCount) != 2 || aws.ToInt32(dl.ShardLimit) != 500 || aws.ToInt32(dl.OnDemandStreamCountLimit) != 50 || aws.ToInt32(dl.OnDemandStreamCount) != 0 {
		t.Fatalf("DescribeLimits: %+v", dl)
	}

	// Enhanced monitoring: stored, reported, ALL expands.
	em := must(kc.EnableEnhancedMonitoring(ctx, &kinesis.EnableEnhancedMonitoringInput{StreamName: aws.String("st"),
		ShardLevelMetrics: []ktypes.MetricsName{ktypes.MetricsNameIncomingBytes, ktypes.MetricsNameIteratorAgeMilliseconds}}))
	if len(em.CurrentShardLevelMetrics) != 0 || !reflect.DeepEqual(em.DesiredShardLevelMetrics, []ktypes.MetricsName{"IncomingBytes", "IteratorAgeMilliseconds"}) || aws.ToString(em.StreamARN) != arn {
		t.Fatalf("EnableEnhancedMonitoring: %+v", em)
	}
	dm := must(kc.DisableEnhancedMonitoring(ctx, &kinesis.DisableEnhancedMonitoringInput{StreamName: aws.String("st"),
		ShardLevelMetrics: []ktypes.MetricsName{ktypes.MetricsNameIncomingBytes}}))
	if len(dm.CurrentShardLevelMetrics) != 2 || !reflect.DeepEqual(dm.DesiredShardLevelMetrics, []ktypes.MetricsName{"IteratorAgeMilliseconds"}) {
		t.Fatalf("DisableEnhancedMonitoring: %+v", dm)
	}
	ds := must(kc.DescribeStreamSummary(ctx, &kinesis.DescribeStreamSummaryInput{StreamName: aws.String("st")}))
	if got := ds.StreamDescriptionSummary.EnhancedMonitoring[0].ShardLevelMetrics; !reflect.DeepEqual(got, []ktypes.MetricsName{"IteratorAgeMilliseconds"}) {
		t.Fatalf("DescribeStreamSummary EnhancedMonitoring: %v", got)
	}
	em = must(kc.EnableEnhancedMonitoring(ctx, &kinesis.EnableEnhancedMonitoringInput{StreamName: aws.String("st"), ShardLevelMetrics: []ktypes.MetricsName{ktypes.MetricsNameAll}}))
	if len(em.DesiredShardLevelMetrics) != 7 {
		t.Fatalf("ALL: %v", em.DesiredShardLevelMetrics)
	}
	_, err = kc.EnableEnhancedMonitoring(ctx, &kinesis.EnableEnhancedMonitoringInput{StreamName: aws.String("st"), ShardLevelMetrics: []ktypes.MetricsName{"Bogus"}})
	if errCode(err) != "ValidationException" { // outside the model's enum
		t.Fatalf("an unknown metric: %v", err)
	}
	_, err = kc.EnableEnhancedMonitoring(ctx, &kinesis.EnableEnhancedMonitoringInput{StreamName: aws.String("st"), ShardLevelMetrics: []ktypes.MetricsName{}})
	if errCode(err) != "ValidationException" { // the model's length >= 1
		t.Fatalf("no metrics: %v", err)
	}

	// Encryption: stored and reported.
	must(kc.StartStreamEncryption(ctx, &kinesis.StartStreamEncryptionInput{StreamName: aws.String("st"), EncryptionType: ktypes.EncryptionTypeKms, KeyId: aws.String("alias/aws/kinesis")}))
	d := must(kc.DescribeStream(ctx, &kinesis.DescribeStreamInput{StreamName: aws.String("st")}))
	if d.StreamDescription.EncryptionType != ktypes.EncryptionTypeKms || aws.ToString(d.StreamDescription.KeyId) != "alias/aws/kinesis" {
		t.Fatalf("DescribeStream after StartStreamEncryption: %v %v", d.StreamDescription.EncryptionType, d.StreamDescription.KeyId)
	}
	_, err = kc.StartStreamEncryption(ctx, &kinesis.StartStreamEncryptionInput{StreamName: aws.String("st"), EncryptionType: ktypes.EncryptionTypeNone, KeyId: aws.String("k")})
	if errCode(err) != "InvalidArgumentException" {
		t.Fatalf("EncryptionType NONE: %v", err)
	}
	_, err = kc.StartStreamEncryption(ctx, &kinesis.StartStreamEncryptionInput{StreamName: aws.String("st"), EncryptionType: ktypes.EncryptionTypeKms, KeyId: aws.String("")})
	if errCode(err) != "ValidationException" { // the model's length >= 1
		t.Fatalf("an empty KeyId: %v", err)
	}
	must(kc.StopStreamEncryption(ctx, &kinesis.StopStreamEncryptionInput{StreamName: aws.String("st"), EncryptionType: ktypes.EncryptionTypeKms, KeyId: aws.String("alias/aws/kinesis")}))
	ds = must(kc.DescribeStreamSummary(ctx, &kinesis.DescribeStreamSummaryInput{StreamName: aws.String("st")}))
	if ds.StreamDescriptionSummary.EncryptionType != ktypes.EncryptionTypeNone || ds.StreamDescriptionSummary.KeyId != nil {
		t.Fatalf("DescribeStreamSummary after StopStreamEncryption: %v %v", ds.StreamDescriptionSummary.EncryptionType, ds.StreamDescriptionSummary.KeyId)
	}
	_, err = kc.StartStreamEncryption(ctx, &kinesis.StartStreamEncryptionInput{StreamName: aws.String("missing"), EncryptionType: ktypes.EncryptionTypeKms, KeyId: aws.String("k")})
	if errCode(err) != "ResourceNotFoundException" {
		t.Fatalf("a missing stream: %v", err)
	}
}
