package awsapi_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/internal/sdkhttp"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	ktypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/awsapi"
	"github.com/runnel-dev/runnel/internal/testenv"
)

// endpoint is a runnel served by awsapi on httptest.
type endpoint struct {
	rn  *runnel.Runnel
	srv *httptest.Server
	// h2 counts requests served over HTTP/2.
	h2 atomic.Int64
}

func start(t *testing.T, opts awsapi.Options) *endpoint {
	t.Helper()
	return startEnv(t, opts, testenv.Options{})
}

// startEnv is start with the runnel's options (a fake clock...).
func startEnv(t testing.TB, opts awsapi.Options, env testenv.Options) *endpoint {
	t.Helper()
	e := &endpoint{rn: testenv.Start(t, env)}
	h := awsapi.NewHandler(e.rn, opts)
	e.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor == 2 {
			e.h2.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	e.srv.Config.Protocols = awsapi.Protocols()
	e.srv.Start()
	t.Cleanup(e.srv.Close)
	return e
}

func (e *endpoint) config(key, secret string) aws.Config {
	return aws.Config{HTTPClient: sdkhttp.Client(),
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider(key, secret, ""),
		BaseEndpoint: aws.String(e.srv.URL),
	}
}

func (e *endpoint) kinesis() *kinesis.Client {
	return kinesis.NewFromConfig(e.config("AKID", "secret"))
}

func (e *endpoint) sqs(opts ...func(*sqs.Options)) *sqs.Client {
	return sqs.NewFromConfig(e.config("AKID", "secret"), opts...)
}

// must returns v, or panics (failing the test with a stack) on err.
func must[T any](v T, err error) T {
	if err != nil {
		panic(fmt.Sprintf("unexpected error: %v", err))
	}
	return v
}

func errCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return fmt.Sprintf("not an API error: %v", err)
}

func TestKinesis(t *testing.T) {
	e := start(t, awsapi.Options{})
	kc := e.kinesis()
	ctx := context.Background()

	must(kc.CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: aws.String("s1"), ShardCount: aws.Int32(2)}))
	must(kc.CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: aws.String("s2")}))
	_, err := kc.CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: aws.String("s1"), ShardCount: aws.Int32(1)})
	var inUse *ktypes.ResourceInUseException
	if !errors.As(err, &inUse) {
		t.Fatalf("CreateStream of an existing stream: %v, want ResourceInUseException", err)
	}
	// AWS answers a name outside the model's pattern with a
	// ValidationException, before any stream is looked up (quoted from
	// AWS in localstack/localstack#4048 and bizreach/aws-kinesis-scala#19).
	_, err = kc.CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: aws.String("bad name!"), ShardCount: aws.Int32(1)})
	var invalid *ktypes.ValidationException
	if !errors.As(err, &invalid) || aws.ToString(invalid.Message) != "1 validation error detected: Value 'bad name!' at 'streamName' failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9_.-]+" {
		t.Fatalf("CreateStream with a bad name: %v, want ValidationException", err)
	}

	// Describe, with shard paging.
	d := must(kc.DescribeStream(ctx, &kinesis.DescribeStreamInput{StreamName: aws.String("s1"), Limit: aws.Int32(1)}))
	sd := d.StreamDescription
	if aws.ToString(sd.StreamName) != "s1" || sd.StreamStatus != ktypes.StreamStatusActive || len(sd.Shards) != 1 || !aws.ToBool(sd.HasMoreShards) ||
		aws.ToInt32(sd.RetentionPeriodHours) != 24 || aws.ToString(sd.StreamARN) != "arn:aws:kinesis:us-east-1:000000000000:stream/s1" {
		t.Fatalf("DescribeStream: %+v", sd)
	}
	if age := time.Since(aws.ToTime(sd.StreamCreationTimestamp)); age < 0 || age > time.Minute {
		t.Fatalf("StreamCreationTimestamp %v", sd.StreamCreationTimestamp)
	}
	d = must(kc.DescribeStream(ctx, &kinesis.DescribeStreamInput{StreamARN: sd.StreamARN, ExclusiveStartShardId: sd.Shards[0].ShardId}))
	if len(d.StreamDescription.Shards) != 1 || aws.ToBool(d.StreamDescription.HasMoreShards) || aws.ToString(d.StreamDescription.Shards[0].ShardId) != "shardId-000000000001" {
		t.Fatalf("DescribeStream page 2: %+v", d.StreamDescription.Shards)
	}
	sum := must(kc.DescribeStreamSummary(ctx, &kinesis.DescribeStreamSummaryInput{StreamName: aws.String("s1")}))
	if aws.ToInt32(sum.StreamDescriptionSummary.OpenShardCount) != 2 || sum.StreamDescriptionSummary.StreamModeDetails.StreamMode != ktypes.StreamModeProvisioned {
		t.Fatalf("DescribeStreamSummary: %+v", sum.StreamDescriptionSummary)
	}
	_, err = kc.DescribeStream(ctx, &kinesis.DescribeStreamInput{StreamName: aws.String("nope")})
	var notFound *ktypes.ResourceNotFoundException
	if !errors.As(err, &notFound) || errCode(err) != "ResourceNotFoundException" {
		t.Fatalf("DescribeStream of a missing stream: %v", err)
	}

	// ListStreams with paging, ListShards with paging.
	ls := must(kc.ListStreams(ctx, &kinesis.ListStreamsInput{Limit: aws.Int32(1)}))
	if len(ls.StreamNames) != 1 || ls.StreamNames[0] != "s1" || !aws.ToBool(ls.HasMoreStreams) || len(ls.StreamSummaries) != 1 {
		t.Fatalf("ListStreams: %+v", ls)
	}
	ls = must(kc.ListStreams(ctx, &kinesis.ListStreamsInput{NextToken: ls.NextToken}))
	if len(ls.StreamNames) != 1 || ls.StreamNames[0] != "s2" || aws.ToBool(ls.HasMoreStreams) {
		t.Fatalf("ListStreams page 2: %+v", ls)
	}
	sh := must(kc.ListShards(ctx, &kinesis.ListShardsInput{StreamName: aws.String("s1"), MaxResults: aws.Int32(1)}))
	if len(sh.Shards) != 1 || sh.NextToken == nil {
		t.Fatalf("ListShards: %+v", sh)
	}
	sh2 := must(kc.ListShards(ctx, &kinesis.ListShardsInput{NextToken: sh.NextToken}))
	if len(sh2.Shards) != 1 || sh2.NextToken != nil || aws.ToString(sh2.Shards[0].HashKeyRange.EndingHashKey) != "340282366920938463463374607431768211455" {
		t.Fatalf("ListShards page 2: %+v", sh2)
	}

	// Put and read back.
	before := time.Now().Add(-time.Second)
	pr := must(kc.PutRecord(ctx, &kinesis.PutRecordInput{StreamName: aws.String("s2"), Data: []byte("first"), PartitionKey: aws.String("k")}))
	if aws.ToString(pr.ShardId) != "shardId-000000000000" || aws.ToString(pr.SequenceNumber) == "" {
		t.Fatalf("PutRecord: %+v", pr)
	}
	var entries []ktypes.PutRecordsRequestEntry
	for i := range 5 {
		entries = append(entries, ktypes.PutRecordsRequestEntry{Data: fmt.Appendf(nil, "r%d\x00\xff", i), PartitionKey: aws.String(fmt.Sprint("k", i))})
	}
	prs := must(kc.PutRecords(ctx, &kinesis.PutRecordsInput{StreamName: aws.String("s2"), Records: entries}))
	if aws.ToInt32(prs.FailedRecordCount) != 0 || len(prs.Records) != 5 || aws.ToString(prs.Records[4].SequenceNumber) == "" {
		t.Fatalf("PutRecords: %+v", prs)
	}
	_, err = kc.PutRecords(ctx, &kinesis.PutRecordsInput{StreamName: aws.String("s2"), Records: []ktypes.PutRecordsRequestEntry{{Data: []byte("x"), PartitionKey: aws.String("")}}})
	if !errors.As(err, &invalid) || !strings.Contains(aws.ToString(invalid.Message), "at 'records.1.member.partitionKey' failed to satisfy constraint: Member must have length greater than or equal to 1") {
		t.Fatalf("PutRecords with an empty partition key: %v", err)
	}

	iter := func(typ ktypes.ShardIteratorType, mod func(*kinesis.GetShardIteratorInput)) *string {
		in := &kinesis.GetShardIteratorInput{StreamName: aws.String("s2"), ShardId: aws.String("shardId-000000000000"), ShardIteratorType: typ}
		if mod != nil {
			mod(in)
		}
		return must(kc.GetShardIterator(ctx, in)).ShardIterator
	}
	gr := must(kc.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: iter(ktypes.ShardIteratorTypeTrimHorizon, nil), Limit: aws.Int32(3)}))
	if len(gr.Records) != 3 || string(gr.Records[0].Data) != "first" || aws.ToString(gr.Records[0].SequenceNumber) != aws.ToString(pr.SequenceNumber) ||
		aws.ToString(gr.Records[0].PartitionKey) != "k" || string(gr.Records[1].Data) != "r0\x00\xff" || gr.NextShardIterator == nil {
		t.Fatalf("GetRecords: %+v", gr.Records)
	}
	if ts := aws.ToTime(gr.Records[0].ApproximateArrivalTimestamp); ts.Before(before) || ts.After(time.Now().Add(time.Second)) {
		t.Fatalf("ApproximateArrivalTimestamp %v", ts)
	}
	gr2 := must(kc.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: gr.NextShardIterator}))
	if len(gr2.Records) != 3 || string(gr2.Records[2].Data) != "r4\x00\xff" || aws.ToInt64(gr2.MillisBehindLatest) != 0 {
		t.Fatalf("GetRecords next: %d records, %v behind", len(gr2.Records), gr2.MillisBehindLatest)
	}
	latest := iter(ktypes.ShardIteratorTypeLatest, nil)
	if n := len(must(kc.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: latest})).Records); n != 0 {
		t.Fatalf("LATEST read %d records", n)
	}
	must(kc.PutRecord(ctx, &kinesis.PutRecordInput{StreamARN: sd.StreamARN, Data: []byte("other stream"), PartitionKey: aws.String("k")}))
	must(kc.PutRecord(ctx, &kinesis.PutRecordInput{StreamName: aws.String("s2"), Data: []byte("after latest"), PartitionKey: aws.String("k")}))
	if r := must(kc.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: latest})).Records; len(r) != 1 || string(r[0].Data) != "after latest" {
		t.Fatalf("LATEST then put: %v", r)
	}
	second := gr.Records[1].SequenceNumber
	at := must(kc.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: iter(ktypes.ShardIteratorTypeAtSequenceNumber, func(in *kinesis.GetShardIteratorInput) { in.StartingSequenceNumber = second }), Limit: aws.Int32(1)}))
	after := must(kc.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: iter(ktypes.ShardIteratorTypeAfterSequenceNumber, func(in *kinesis.GetShardIteratorInput) { in.StartingSequenceNumber = second }), Limit: aws.Int32(1)}))
	if string(at.Records[0].Data) != "r0\x00\xff" || string(after.Records[0].Data) != "r1\x00\xff" {
		t.Fatalf("AT/AFTER_SEQUENCE_NUMBER: %q %q", at.Records[0].Data, after.Records[0].Data)
	}
	ts := must(kc.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: iter(ktypes.ShardIteratorTypeAtTimestamp, func(in *kinesis.GetShardIteratorInput) { in.Timestamp = aws.Time(before) }), Limit: aws.Int32(1)}))
	if len(ts.Records) != 1 || string(ts.Records[0].Data) != "first" {
		t.Fatalf("AT_TIMESTAMP: %v", ts.Records)
	}
	_, err = kc.GetShardIterator(ctx, &kinesis.GetShardIteratorInput{StreamName: aws.String("s2"), ShardId: aws.String("shardId-000000000009"), ShardIteratorType: ktypes.ShardIteratorTypeLatest})
	if !errors.As(err, &notFound) {
		t.Fatalf("GetShardIterator of a missing shard: %v", err)
	}
	_, err = kc.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: aws.String("garbage")})
	var invalidArg *ktypes.InvalidArgumentException
	if !errors.As(err, &invalidArg) {
		t.Fatalf("GetRecords with a bad iterator: %v", err)
	}

	// Retention.
	must(kc.IncreaseStreamRetentionPeriod(ctx, &kinesis.IncreaseStreamRetentionPeriodInput{StreamName: aws.String("s2"), RetentionPeriodHours: aws.Int32(48)}))
	if h := aws.ToInt32(must(kc.DescribeStreamSummary(ctx, &kinesis.DescribeStreamSummaryInput{StreamName: aws.String("s2")})).StreamDescriptionSummary.RetentionPeriodHours); h != 48 {
		t.Fatalf("retention after increase: %d", h)
	}
	_, err = kc.IncreaseStreamRetentionPeriod(ctx, &kinesis.IncreaseStreamRetentionPeriodInput{StreamName: aws.String("s2"), RetentionPeriodHours: aws.Int32(24)})
	if !errors.As(err, &invalidArg) {
		t.Fatalf("increase to less: %v", err)
	}
	must(kc.DecreaseStreamRetentionPeriod(ctx, &kinesis.DecreaseStreamRetentionPeriodInput{StreamName: aws.String("s2"), RetentionPeriodHours: aws.Int32(24)}))
	if h := aws.ToInt32(must(kc.DescribeStreamSummary(ctx, &kinesis.DescribeStreamSummaryInput{StreamName: aws.String("s2")})).StreamDescriptionSummary.RetentionPeriodHours); h != 24 {
		t.Fatalf("retention after decrease: %d", h)
	}
	_, err = kc.DecreaseStreamRetentionPeriod(ctx, &kinesis.DecreaseStreamRetentionPeriodInput{StreamName: aws.String("s2"), RetentionPeriodHours: aws.Int32(10)})
	if !errors.As(err, &invalidArg) {
		t.Fatalf("decrease below 24: %v", err)
	}

	// Delete.
	must(kc.DeleteStream(ctx, &kinesis.DeleteStreamInput{StreamName: aws.String("s2")}))
	_, err = kc.DeleteStream(ctx, &kinesis.DeleteStreamInput{StreamName: aws.String("s2")})
	if !errors.As(err, &notFound) {
		t.Fatalf("DeleteStream twice: %v", err)
	}
	if names := must(kc.ListStreams(ctx, &kinesis.ListStreamsInput{})).StreamNames; len(names) != 1 || names[0] != "s1" {
		t.Fatalf("ListStreams after delete: %v", names)
	}
}

// TestH2C drives both APIs over cleartext HTTP/2 with prior knowledge.
func TestH2C(t *testing.T) {
	e := start(t, awsapi.Options{})
	tr := &http.Transport{Protocols: new(http.Protocols)}
	tr.Protocols.SetUnencryptedHTTP2(true)
	hc := &http.Client{Transport: tr}
	cfg := e.config("AKID", "secret")
	cfg.HTTPClient = hc
	ctx := context.Background()
	kc := kinesis.NewFromConfig(cfg)
	must(kc.CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: aws.String("h2"), ShardCount: aws.Int32(1)}))
	must(kc.PutRecord(ctx, &kinesis.PutRecordInput{StreamName: aws.String("h2"), Data: []byte("x"), PartitionKey: aws.String("k")}))
	qc := sqs.NewFromConfig(cfg)
	must(qc.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("h2")}))
	if n := len(must(qc.ListQueues(ctx, &sqs.ListQueuesInput{})).QueueUrls); n != 1 {
		t.Fatalf("ListQueues over h2c: %d", n)
	}
	if n := e.h2.Load(); n != 4 {
		t.Fatalf("%d requests over HTTP/2, want 4", n)
	}
	// HTTP/1.1 keeps working on the same port.
	must(kinesis.NewFromConfig(e.config("AKID", "secret")).ListStreams(ctx, &kinesis.ListStreamsInput{}))
	if n := e.h2.Load(); n != 4 {
		t.Fatalf("HTTP/1.1 request counted as HTTP/2")
	}
}

// TestAuth checks SigV4 verification with Options.Auth.
func TestAuth(t *testing.T) {
	e := start(t, awsapi.Options{Auth: map[string]string{"AKID": "secret"}})
	ctx := context.Background()
	must(e.kinesis().CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: aws.String("a"), ShardCount: aws.Int32(1)}))
	must(e.kinesis().PutRecord(ctx, &kinesis.PutRecordInput{StreamName: aws.String("a"), Data: []byte("x"), PartitionKey: aws.String("k")}))
	must(e.sqs().CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("a"), Attributes: map[string]string{"DelaySeconds": "1"}}))

	_, err := kinesis.NewFromConfig(e.config("AKID", "wrong")).ListStreams(ctx, &kinesis.ListStreamsInput{})
	if errCode(err) != "InvalidSignatureException" {
		t.Fatalf("wrong secret: %v", err)
	}
	_, err = kinesis.NewFromConfig(e.config("OTHER", "secret")).ListStreams(ctx, &kinesis.ListStreamsInput{})
	if errCode(err) != "UnrecognizedClientException" {
		t.Fatalf("unknown key: %v", err)
	}
	_, err = sqs.NewFromConfig(e.config("AKID", "wrong")).ListQueues(ctx, &sqs.ListQueuesInput{})
	if errCode(err) != "SignatureDoesNotMatch" {
		t.Fatalf("SQS wrong secret: %v", err)
	}
	resp, err := http.Post(e.srv.URL, "application/x-www-form-urlencoded", strings.NewReader("Action=ListQueues"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 403 {
		t.Fatalf("unsigned query request: status %d", resp.StatusCode)
	}
}
