package mapping_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/mapping"
	"github.com/runnel-dev/runnel/table"
)

// TestTheStoredStatusOfADynamoDBStreamMappingShowsItsCheckpoint: a
// mapping not running in this process (here disabled) shows each shard's
// stored checkpoint as a sequence number of the table's change stream,
// past the last change it processed. The stored status once
// looked the change stream up among the Kinesis streams, found nothing
// and showed no checkpoint.
func TestTheStoredStatusOfADynamoDBStreamMappingShowsItsCheckpoint(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	ctx := context.Background()
	desc := createStreamTable(t, rn, "orders", table.ViewNewImage, 1)
	var seen atomic.Int64
	var last atomic.Value // the sequence number of the last change processed
	function.Register("ddb-status-count", function.DynamoDBHandler(func(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		for _, r := range ev.Records {
			last.Store(r.Change.SequenceNumber)
		}
		seen.Add(int64(len(ev.Records)))
		return events.DynamoDBEventResponse{}, nil
	}))
	if _, err := rn.Functions.CreateFunction(ctx, function.Config{FunctionName: "fn", Handler: "ddb-status-count"}); err != nil {
		t.Fatal(err)
	}
	m, err := rn.Mappings.CreateEventSourceMapping(ctx, mapping.Config{EventSourceArn: desc.LatestStreamArn, FunctionName: "fn", StartingPosition: "TRIM_HORIZON", BatchSize: 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b", "c"} {
		if _, err := rn.Tables.PutItem(ctx, table.PutItemInput{TableName: "orders", Item: table.Item{"id": S(id)}}); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, wait, "3 changes processed", func() bool { return seen.Load() == 3 })
	testenv.Eventually(t, wait, "the 3 changes resolved", func() bool {
		st, err := rn.Mappings.Status(m.UUID)
		return err == nil && len(st.Shards) == 1 && st.Shards[0].ProcessedRecords == 3 && st.Shards[0].PendingRecords == 0
	})
	off := false
	if _, err := rn.Mappings.UpdateEventSourceMapping(ctx, mapping.Config{UUID: m.UUID, Enabled: &off}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, wait, "the stored status of the disabled mapping", func() bool {
		st, err := rn.Mappings.Status(m.UUID)
		return err == nil && !st.Live && len(st.Shards) == 1
	})
	st, _ := rn.Mappings.Status(m.UUID)
	// The final checkpoint (written when the mapping stopped) is the
	// position after the last change: greater than its sequence number.
	if got, lastSeq := st.Shards[0].Checkpoint, last.Load().(string); seqCmp(got, lastSeq) <= 0 {
		t.Fatalf("stored checkpoint %q, want one past the last change %s", got, lastSeq)
	}
}
