package stack_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/function/builtin"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/stack"
	"github.com/runnel-dev/runnel/stream"
	"github.com/runnel-dev/runnel/table"
	"github.com/runnel-dev/runnel/wire"
)

func TestExampleStackRunsAndIsIdempotent(t *testing.T) {
	streams := builtin.Register(nil)
	s, err := stack.Load("../examples/stack.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rn := testenv.Start(t, testenv.Options{})
	streams.Use(rn.Streams)
	ctx := context.Background()
	a, err := stack.Apply(ctx, rn, s)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.StreamsCreated) != 2 || len(a.FunctionsCreated) != 1 || len(a.MappingsCreated) != 1 {
		t.Fatalf("applied %+v", a)
	}
	// Applying again changes nothing but updates the mapping in place.
	a2, err := stack.Apply(ctx, rn, s)
	if err != nil {
		t.Fatal(err)
	}
	if len(a2.StreamsKept) != 2 || len(a2.MappingsUpdated) != 1 || len(rn.Mappings.ListEventSourceMappings()) != 1 {
		t.Fatalf("second apply %+v", a2)
	}
	m := rn.Mappings.ListEventSourceMappings()[0]
	if m.BatchSize != 100 || !m.BisectBatchOnFunctionError || *m.MaximumRetryAttempts != 2 || m.DestinationConfig.OnFailure.Destination != rn.Streams.ARN("orders-failed") {
		t.Fatalf("mapping %+v", m)
	}
	if _, err := rn.Streams.PutRecords(ctx, "orders", []stream.PutRecordsRequestEntry{
		{PartitionKey: "a", Data: []byte(`{"id":1}`)}, {PartitionKey: "a", Data: []byte(`{"id":2,"poison":true}`)}, {PartitionKey: "a", Data: []byte(`{"id":3}`)},
	}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 20*time.Second, "poison record in orders-failed", func() bool {
		first, last, _ := rn.Streams.ShardBounds(ctx, "orders-failed", "shardId-000000000000")
		if last < first {
			return false
		}
		recs, _, _ := rn.Streams.ReadRange(ctx, "orders-failed", "shardId-000000000000", first, last)
		var f wire.OnFailureRecord
		json.Unmarshal(recs[0].Data, &f)
		return f.KinesisBatchInfo.BatchSize == 1
	})
}

func TestUnknownPropertyIsAnError(t *testing.T) {
	_, err := stack.Parse([]byte("EventSourceMappings:\n  - EventSourceArn: s\n    BatchSizes: 10\n"))
	if err == nil || !strings.Contains(err.Error(), "BatchSizes") {
		t.Fatalf("err = %v, want one naming BatchSizes", err)
	}
}

func TestRefusedItemIsNamed(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	s, err := stack.Parse([]byte("Streams:\n  - StreamName: s\n    ShardCount: 0\n    RetentionPeriodHours: 20\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = stack.Apply(context.Background(), rn, s)
	if err == nil || !strings.Contains(err.Error(), "Streams[0] (s)") || !strings.Contains(err.Error(), "RetentionPeriodHours") {
		t.Fatalf("err = %v", err)
	}
}

func TestTwoTierStackRoutesPoisonToTheUnrecoverableDLQ(t *testing.T) {
	streams := builtin.Register(nil)
	s, err := stack.Load("../examples/two-tier.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rn := testenv.Start(t, testenv.Options{})
	streams.Use(rn.Streams)
	ctx := context.Background()
	a, err := stack.Apply(ctx, rn, s)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.QueuesCreated) != 2 || len(a.MappingsCreated) != 2 {
		t.Fatalf("applied %+v", a)
	}
	if _, err := rn.Streams.PutRecords(ctx, "orders", []stream.PutRecordsRequestEntry{
		{PartitionKey: "a", Data: []byte(`{"id":1}`)}, {PartitionKey: "a", Data: []byte(`{"id":2,"poison":true}`)},
	}); err != nil {
		t.Fatal(err)
	}
	// fail-on-poison never succeeds: the pointer goes stream -> Retry-DLQ ->
	// (5 attempts, 1 s base backoff) -> Unrecoverable-DLQ.
	testenv.Eventually(t, 60*time.Second, "poison pointer in the Unrecoverable-DLQ", func() bool {
		attrs, err := rn.Queues.GetQueueAttributes(ctx, "orders-unrecoverable", []string{"ApproximateNumberOfMessages"})
		return err == nil && attrs["ApproximateNumberOfMessages"] == "1"
	})
}

// TestTableStack: a stack declares a table with a stream and TTL, and a
// mapping from the table (by name) to a function; applying it twice keeps
// the table; a put reaches the function as a DynamoDB event.
func TestTableStack(t *testing.T) {
	got := make(chan events.DynamoDBEventRecord, 10)
	function.Register("stack-ddb", function.DynamoDBHandler(func(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		for _, r := range ev.Records {
			got <- r
		}
		return events.DynamoDBEventResponse{}, nil
	}))
	s, err := stack.Parse([]byte(`
Tables:
  - TableName: sessions
    KeySchema: [{AttributeName: id, KeyType: HASH}]
    AttributeDefinitions: [{AttributeName: id, AttributeType: S}]
    StreamSpecification: {StreamEnabled: true, StreamViewType: NEW_IMAGE}
    TimeToLiveSpecification: {AttributeName: expires, Enabled: true}
Functions:
  - FunctionName: on-session
    Handler: stack-ddb
EventSourceMappings:
  - EventSourceArn: sessions
    FunctionName: on-session
    StartingPosition: TRIM_HORIZON
`))
	if err != nil {
		t.Fatal(err)
	}
	rn := testenv.Start(t, testenv.Options{})
	ctx := context.Background()
	a, err := stack.Apply(ctx, rn, s)
	if err != nil || len(a.TablesCreated) != 1 || len(a.MappingsCreated) != 1 {
		t.Fatalf("apply: %+v %v", a, err)
	}
	if a, err = stack.Apply(ctx, rn, s); err != nil || len(a.TablesKept) != 1 || len(a.MappingsUpdated) != 1 {
		t.Fatalf("apply again: %+v %v", a, err)
	}
	ttl, _ := rn.Tables.DescribeTimeToLive(ctx, "sessions")
	if !ttl.Enabled || ttl.AttributeName != "expires" {
		t.Fatalf("ttl = %+v", ttl)
	}
	if _, err := rn.Tables.PutItem(ctx, table.PutItemInput{TableName: "sessions", Item: table.Item{"id": events.NewStringAttribute("s1")}}); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-got:
		if r.EventName != "INSERT" || r.Change.NewImage["id"].String() != "s1" {
			t.Fatalf("record = %+v", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the mapping did not deliver the change")
	}
}

// A stream's capacity mode as CloudFormation writes it
// (AWS::Kinesis::Stream StreamModeDetails).
func TestOnDemandStreamStack(t *testing.T) {
	s, err := stack.Parse([]byte("Streams:\n  - StreamName: od\n    StreamModeDetails: {StreamMode: ON_DEMAND}\n"))
	if err != nil {
		t.Fatal(err)
	}
	rn := testenv.Start(t, testenv.Options{})
	if _, err := stack.Apply(context.Background(), rn, s); err != nil {
		t.Fatal(err)
	}
	d, err := rn.Streams.DescribeStream(context.Background(), "od")
	if err != nil || d.Mode() != stream.StreamModeOnDemand || d.OpenShardCount() != stream.OnDemandInitialShards {
		t.Fatalf("stream od: %+v, %v; want ON_DEMAND with 4 shards", d, err)
	}
}

// A queue's Tags in a stack file are the new queue's tags (the file was
// refused: Tags was an unknown property).
func TestQueueTagsStack(t *testing.T) {
	s, err := stack.Parse([]byte("Queues:\n  - QueueName: tagged\n    Tags: {team: data}\n"))
	if err != nil {
		t.Fatal(err)
	}
	rn := testenv.Start(t, testenv.Options{})
	ctx := context.Background()
	if _, err := stack.Apply(ctx, rn, s); err != nil {
		t.Fatal(err)
	}
	tags, err := rn.Queues.ListQueueTags(ctx, "tagged")
	if err != nil || len(tags) != 1 || tags["team"] != "data" {
		t.Fatalf("tags: %v %v", tags, err)
	}
}
