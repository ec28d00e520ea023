package stack_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/function/builtin"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/mapping"
	"github.com/runnel-dev/runnel/stack"
	"github.com/runnel-dev/runnel/stream"
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
		var f mapping.OnFailureRecord
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
