package awsapi_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	ktypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel/awsapi"
	"github.com/runnel-dev/runnel/internal/testenv"
)

// kinesisOnFakeClock starts an endpoint whose engine clock starts at a
// millisecond that epoch seconds as a float64 do not hold exactly
// (1795773600.028 reads as .028000116).
func kinesisOnFakeClock(t *testing.T) (*kinesis.Client, *clockwork.FakeClock) {
	t.Helper()
	clk := clockwork.NewFakeClockAt(time.Unix(1795773600, 28*int64(time.Millisecond)))
	e := startEnv(t, awsapi.Options{}, testenv.Options{Clock: clk})
	return e.kinesis(), clk
}

// API_GetShardIterator, Timestamp: "If a record with this exact time
// stamp does not exist, the iterator returned is for the next (later)
// record", so AT_TIMESTAMP with a record's own ApproximateArrivalTimestamp
// starts at that record. Before the fix the endpoint read the SDK's
// epoch seconds to the nanosecond (.028 became .028000116), after the
// stored millisecond, and the iterator started after the record for about
// half of them.
func TestAtTimestampWithARecordsOwnTimestampStartsAtThatRecord(t *testing.T) {
	kc, clk := kinesisOnFakeClock(t)
	ctx := context.Background()
	must(kc.CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: aws.String("ts"), ShardCount: aws.Int32(1)}))
	for i := range 40 {
		clk.Advance(3 * time.Millisecond)
		must(kc.PutRecord(ctx, &kinesis.PutRecordInput{StreamName: aws.String("ts"), PartitionKey: aws.String("k"), Data: fmt.Appendf(nil, "r%d", i)}))
	}
	shard := aws.String("shardId-000000000000")
	it := must(kc.GetShardIterator(ctx, &kinesis.GetShardIteratorInput{StreamName: aws.String("ts"), ShardId: shard, ShardIteratorType: ktypes.ShardIteratorTypeTrimHorizon}))
	all := must(kc.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: it.ShardIterator})).Records
	if len(all) != 40 {
		t.Fatalf("read %d records, want 40", len(all))
	}
	missed := 0
	for _, r := range all {
		it := must(kc.GetShardIterator(ctx, &kinesis.GetShardIteratorInput{StreamName: aws.String("ts"), ShardId: shard,
			ShardIteratorType: ktypes.ShardIteratorTypeAtTimestamp, Timestamp: r.ApproximateArrivalTimestamp}))
		got := must(kc.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: it.ShardIterator, Limit: aws.Int32(1)})).Records
		if len(got) != 1 || aws.ToString(got[0].SequenceNumber) != aws.ToString(r.SequenceNumber) {
			missed++
			t.Errorf("AT_TIMESTAMP %s: first record %v, want %s", r.ApproximateArrivalTimestamp.UTC().Format(time.RFC3339Nano), got, string(r.Data))
		}
	}
	if missed > 0 {
		t.Fatalf("AT_TIMESTAMP with a record's own timestamp started after it for %d of 40 records", missed)
	}
}

// ListShards' StreamCreationTimestamp "distinguish[es] data streams that
// have the same name": the one DescribeStreamSummary returned names the
// stream. And ShardFilter AT_TIMESTAMP at the creation time lists the
// stream's shard ("start timestamp is less than or equal to the given
// timestamp"). Before the fix the first was ResourceNotFoundException and
// the second listed no shard for about half of the streams: the same
// nanosecond reading of the timestamp.
func TestListShardsTakesTheStreamsOwnCreationTimestamp(t *testing.T) {
	kc, clk := kinesisOnFakeClock(t)
	ctx := context.Background()
	for i := range 12 {
		clk.Advance(time.Millisecond)
		name := aws.String(fmt.Sprintf("s%d", i))
		must(kc.CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: name, ShardCount: aws.Int32(1)}))
		created := must(kc.DescribeStreamSummary(ctx, &kinesis.DescribeStreamSummaryInput{StreamName: name})).StreamDescriptionSummary.StreamCreationTimestamp
		out, err := kc.ListShards(ctx, &kinesis.ListShardsInput{StreamName: name, StreamCreationTimestamp: created})
		if err != nil || len(out.Shards) != 1 {
			t.Fatalf("ListShards of %s with its StreamCreationTimestamp %s: %v, %v", *name, created.UTC().Format(time.RFC3339Nano), out, err)
		}
		out = must(kc.ListShards(ctx, &kinesis.ListShardsInput{StreamName: name,
			ShardFilter: &ktypes.ShardFilter{Type: ktypes.ShardFilterTypeAtTimestamp, Timestamp: created}}))
		if len(out.Shards) != 1 {
			t.Fatalf("ListShards of %s, AT_TIMESTAMP its creation %s: %d shards, want 1", *name, created.UTC().Format(time.RFC3339Nano), len(out.Shards))
		}
	}
}

// API_DeleteStream, EnforceConsumerDeletion: "If this parameter is unset
// (null) or if you set it to false, and the stream has registered
// consumers, the call to DeleteStream fails with a
// ResourceInUseException." Before the fix the parameter was not read and
// the stream was deleted with its consumers and records.
func TestDeleteStreamWithConsumersNeedsEnforceConsumerDeletion(t *testing.T) {
	kc, clk := kinesisOnFakeClock(t)
	ctx := context.Background()
	must(kc.CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: aws.String("s"), ShardCount: aws.Int32(1)}))
	arn := must(kc.DescribeStreamSummary(ctx, &kinesis.DescribeStreamSummaryInput{StreamName: aws.String("s")})).StreamDescriptionSummary.StreamARN
	must(kc.RegisterStreamConsumer(ctx, &kinesis.RegisterStreamConsumerInput{StreamARN: arn, ConsumerName: aws.String("app")}))
	clk.Advance(time.Second)
	for _, enforce := range []*bool{nil, aws.Bool(false)} {
		_, err := kc.DeleteStream(ctx, &kinesis.DeleteStreamInput{StreamName: aws.String("s"), EnforceConsumerDeletion: enforce})
		var inUse *ktypes.ResourceInUseException
		if !errors.As(err, &inUse) {
			t.Fatalf("DeleteStream, EnforceConsumerDeletion %v, a consumer registered: %v, want ResourceInUseException", aws.ToBool(enforce), err)
		}
	}
	must(kc.DescribeStreamSummary(ctx, &kinesis.DescribeStreamSummaryInput{StreamName: aws.String("s")}))
	must(kc.DeleteStream(ctx, &kinesis.DeleteStreamInput{StreamName: aws.String("s"), EnforceConsumerDeletion: aws.Bool(true)}))
	_, err := kc.DescribeStreamSummary(ctx, &kinesis.DescribeStreamSummaryInput{StreamName: aws.String("s")})
	var notFound *ktypes.ResourceNotFoundException
	if !errors.As(err, &notFound) {
		t.Fatalf("the stream after DeleteStream with EnforceConsumerDeletion: %v, want ResourceNotFoundException", err)
	}
}

// DescribeStreamInput.Limit: "If you specify a value greater than 100, at
// most 100 results are returned." Before the fix Limit 200 returned all
// 101 shards of a stream, HasMoreShards false.
func TestDescribeStreamReturnsAtMostAHundredShards(t *testing.T) {
	kc, _ := kinesisOnFakeClock(t)
	ctx := context.Background()
	must(kc.CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: aws.String("many"), ShardCount: aws.Int32(101)}))
	d := must(kc.DescribeStream(ctx, &kinesis.DescribeStreamInput{StreamName: aws.String("many"), Limit: aws.Int32(200)})).StreamDescription
	if len(d.Shards) != 100 || !aws.ToBool(d.HasMoreShards) {
		t.Fatalf("DescribeStream Limit 200 of 101 shards: %d shards, HasMoreShards %v; want 100 and true", len(d.Shards), aws.ToBool(d.HasMoreShards))
	}
	rest := must(kc.DescribeStream(ctx, &kinesis.DescribeStreamInput{StreamName: aws.String("many"), Limit: aws.Int32(200), ExclusiveStartShardId: d.Shards[99].ShardId})).StreamDescription
	if len(rest.Shards) != 1 || aws.ToBool(rest.HasMoreShards) {
		t.Fatalf("the next page: %d shards, HasMoreShards %v; want 1 and false", len(rest.Shards), aws.ToBool(rest.HasMoreShards))
	}
}

// TestListShardsNamesTheStreamARNGivenWithANextToken: ListShards refuses
// a NextToken with the stream's identity, naming the parameter given:
// "NextToken and StreamARN cannot be provided together." (InvalidArgument,
// quoted in aws/aws-cli#9635). The endpoint resolved the ARN to a name
// first, so the answer named StreamName.
func TestListShardsNamesTheStreamARNGivenWithANextToken(t *testing.T) {
	kc, _ := kinesisOnFakeClock(t)
	ctx := context.Background()
	must(kc.CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: aws.String("tok"), ShardCount: aws.Int32(2)}))
	arn := must(kc.DescribeStreamSummary(ctx, &kinesis.DescribeStreamSummaryInput{StreamName: aws.String("tok")})).StreamDescriptionSummary.StreamARN
	page := must(kc.ListShards(ctx, &kinesis.ListShardsInput{StreamName: aws.String("tok"), MaxResults: aws.Int32(1)}))
	_, err := kc.ListShards(ctx, &kinesis.ListShardsInput{StreamARN: arn, NextToken: page.NextToken})
	var iae *ktypes.InvalidArgumentException
	if !errors.As(err, &iae) || iae.ErrorMessage() != "NextToken and StreamARN cannot be provided together." {
		t.Fatalf("ListShards(StreamARN, NextToken) = %v; want InvalidArgumentException naming StreamARN", err)
	}
}
