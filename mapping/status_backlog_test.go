package mapping_test

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/mapping"
)

// TestTheStoredStatusCountsTheRecordsWaitingAfterTheCheckpoint: a mapping
// not running in this process (stopped, or read by `runnel status` and
// `runnel mappings` from a stopped serve's data directory or beside a live
// one) shows, per shard, the records waiting after its stored checkpoint
// and the age of the first of them: Lambda's IteratorAge is "the age of the
// last record in the event" against the stream's newest, the time records
// wait to be read (AWS Lambda Developer Guide, "Using Lambda function
// metrics", Streaming invocation metrics: IteratorAge; Kinesis
// GetRecords' MillisBehindLatest). The stored status once read the record
// at the checkpoint itself, one past the last record processed, which does
// not exist when that record ended its stored message, so it showed age 0,
// and always 0 records pending, while records waited: the iterator-age
// alarm stayed OK.
func TestTheStoredStatusCountsTheRecordsWaitingAfterTheCheckpoint(t *testing.T) {
	clock := clockwork.NewFakeClockAt(time.Now())
	rn := testenv.Start(t, testenv.Options{Clock: clock})
	ctx := context.Background()
	arn := createStream(t, rn, "backlog", 1)
	rec := newRecorder(t, rn, function.Config{}, nil)
	put(t, rn, "backlog", "k", "a", "b") // one stored message
	m := createMapping(t, rn, mapping.Config{EventSourceArn: arn, FunctionName: rec.name, BatchSize: 2})
	testenv.Eventually(t, wait, "a and b processed", func() bool { return rec.processed() == 2 })
	off := false
	if _, err := rn.Mappings.UpdateEventSourceMapping(ctx, mapping.Config{UUID: m.UUID, Enabled: &off}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, wait, "the stored status of the disabled mapping", func() bool {
		st, err := rn.Mappings.Status(m.UUID)
		return err == nil && !st.Live && len(st.Shards) == 1
	})
	st, _ := rn.Mappings.Status(m.UUID)
	if ss := st.Shards[0]; ss.PendingRecords != 0 || ss.IteratorAgeMs != 0 {
		t.Fatalf("caught up: pending %d, age %d ms; want 0, 0", ss.PendingRecords, ss.IteratorAgeMs)
	}
	put(t, rn, "backlog", "k", "c")
	clock.Advance(30 * time.Second)
	put(t, rn, "backlog", "k", "d", "e")
	clock.Advance(60 * time.Second)
	st, err := rn.Mappings.Status(m.UUID)
	if err != nil {
		t.Fatal(err)
	}
	if ss := st.Shards[0]; ss.PendingRecords != 3 || ss.IteratorAgeMs != 90_000 {
		t.Fatalf("3 records put after the mapping stopped, the first 90 s ago: pending %d, age %d ms; want 3, 90000 (%+v)",
			ss.PendingRecords, ss.IteratorAgeMs, ss)
	}
}
