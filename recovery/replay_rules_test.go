package recovery_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/recovery"
)

// TestReplayOfOneRecord: a sequence range whose two ends are the same
// record replays that record.
func TestReplayOfOneRecord(t *testing.T) {
	e := newReplayEnv(t, 1)
	c := registerCollector(t, e.rn, "onefn")
	res, err := recovery.Replay(context.Background(), e.svc(), recovery.ReplayOptions{
		Range:  recovery.ReplayRange{Stream: "s", FromSeq: e.seqs[4], ToSeq: e.seqs[4]},
		Target: recovery.ReplayTarget{Function: "onefn"},
	})
	if err != nil || res.Sent != 1 || fmt.Sprint(c.all()) != "[r4]" {
		t.Fatalf("Replay = %+v, %v; function got %v", res, err, c.all())
	}
	if sp := res.Plan.Shards[0]; sp.FirstAvailableSequenceNumber != "" || sp.NotWritten {
		t.Fatalf("plan %+v: nothing is missing and the record was written", sp)
	}
	// A range that ends at the shard's last record was written whole.
	plan, err := recovery.PlanReplay(context.Background(), e.rn.Streams, recovery.ReplayRange{Stream: "s", FromSeq: e.seqs[8], ToSeq: e.seqs[9]})
	if err != nil || plan.Available != 2 || plan.Shards[0].NotWritten {
		t.Fatalf("plan to the last record = %+v, %v", plan, err)
	}
}

// TestReplayTimeRangeCountsOnlyItsRecords: a time range's plan counts the
// records that arrived within it, both ends included, and none after; a
// range between two records holds none.
func TestReplayTimeRangeCountsOnlyItsRecords(t *testing.T) {
	e := newReplayEnv(t, 1) // r0..r9 at t0, t0+1m, ...
	ctx := context.Background()
	for _, c := range []struct {
		name     string
		from, to time.Duration
		want     uint64
	}{
		{"r2..r4", 2 * time.Minute, 4 * time.Minute, 3},
		{"between r2 and r3", 2*time.Minute + 10*time.Second, 2*time.Minute + 20*time.Second, 0},
		{"r0, the shard's first record", -time.Hour, 0, 1},
	} {
		plan, err := recovery.PlanReplay(ctx, e.rn.Streams, recovery.ReplayRange{Stream: "s", FromTime: t0.Add(c.from), ToTime: t0.Add(c.to), Now: e.clock.Now()})
		if err != nil || plan.Available != c.want || plan.MissingMessages != 0 || plan.PastRetention {
			t.Fatalf("%s: plan = %+v, %v; want %d available, nothing missing", c.name, plan, err, c.want)
		}
		if sp := plan.Shards[0]; c.want > 0 && (sp.FromSequenceNumber == "" || sp.ToSequenceNumber == "") {
			t.Fatalf("%s: the plan does not say where the range starts and ends: %+v", c.name, sp)
		}
	}
}

// TestTimeRangeFromBeforeRetentionOfAnUntrimmedStreamMissesNothing: a
// time range that starts before the retention horizon misses nothing
// when the stream still holds its first record ever.
func TestTimeRangeFromBeforeRetentionOfAnUntrimmedStreamMissesNothing(t *testing.T) {
	e := newReplayEnv(t, 1)
	plan, err := recovery.PlanReplay(context.Background(), e.rn.Streams, recovery.ReplayRange{Stream: "s",
		FromTime: t0.Add(-48 * time.Hour), ToTime: e.clock.Now(), Now: e.clock.Now()})
	if err != nil || plan.Available != 10 || plan.MissingMessages != 0 || plan.PastRetention ||
		!plan.Shards[0].MissingExact || plan.Shards[0].FirstAvailableSequenceNumber != "" {
		t.Fatalf("plan = %+v (shard %+v), %v; want all 10 records and nothing missing", plan, plan.Shards, err)
	}
}
