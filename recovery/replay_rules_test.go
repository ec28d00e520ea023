package recovery_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/recovery"
	"github.com/runnel-dev/runnel/stream"
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

// TestReplayReadsALongRangeOnceInOrder: a range longer than one read
// (16 stored messages) is read chunk after chunk, every record once and
// in order, and sent in batches of 100 when BatchSize is not given.
func TestReplayReadsALongRangeOnceInOrder(t *testing.T) {
	e := newReplayEnv(t, 1) // r0..r9
	ctx := context.Background()
	want := []string{}
	for i := range 10 {
		want = append(want, fmt.Sprintf("r%d", i))
	}
	for i := 10; i < 40; i++ { // one stored message each
		out, err := e.rn.Streams.PutRecord(ctx, "s", stream.PutRecordsRequestEntry{PartitionKey: "k", Data: fmt.Appendf(nil, "r%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		e.seqs = append(e.seqs, out.SequenceNumber)
		want = append(want, fmt.Sprintf("r%d", i))
	}
	c := registerCollector(t, e.rn, "longfn")
	res, err := recovery.Replay(ctx, e.svc(), recovery.ReplayOptions{
		Range:  recovery.ReplayRange{Stream: "s", FromSeq: e.seqs[0], ToSeq: e.seqs[39]},
		Target: recovery.ReplayTarget{Function: "longfn"},
	})
	if err != nil || res.Sent != 40 || fmt.Sprint(c.all()) != fmt.Sprint(want) || len(c.batches) != 1 {
		t.Fatalf("Replay = %+v, %v; function got %d batches %v", res, err, len(c.batches), c.all())
	}
	// The same from the 21st message on: a range that starts more than
	// one read into the shard.
	c.batches = nil
	res, err = recovery.Replay(ctx, e.svc(), recovery.ReplayOptions{
		Range:  recovery.ReplayRange{Stream: "s", FromSeq: e.seqs[20], ToSeq: e.seqs[39]},
		Target: recovery.ReplayTarget{Function: "longfn"},
	})
	if err != nil || res.Sent != 20 || fmt.Sprint(c.all()) != fmt.Sprint(want[20:]) {
		t.Fatalf("Replay from r20 = %+v, %v; function got %v", res, err, c.all())
	}
}

// TestReplayProgressCountsFailedRecords: the progress callback counts
// the records sent, skipped and failed, out of the plan's total.
func TestReplayProgressCountsFailedRecords(t *testing.T) {
	e := newReplayEnv(t, 1)
	c := registerCollector(t, e.rn, "progfn")
	c.failOn = "r5"
	var done, total int64
	res, err := recovery.Replay(context.Background(), e.svc(), recovery.ReplayOptions{
		Range:  recovery.ReplayRange{Stream: "s", FromSeq: e.seqs[0], ToSeq: e.seqs[9]},
		Target: recovery.ReplayTarget{Function: "progfn"}, BatchSize: 3,
		Progress: func(d, n int64) { done, total = d, n },
	})
	if err == nil || res.Sent != 3 || res.Failed != 3 || done != 6 || total != 10 {
		t.Fatalf("Replay = %+v, %v; last progress %d of %d, want 6 of 10", res, err, done, total)
	}
}

// TestReplayToAStreamPutsBatchSizeRecordsPerCall: a stream target gets
// BatchSize records per PutRecords call (each call is one stored message
// of the target's shard), 500 (MaxPutRecords) when BatchSize is 0.
func TestReplayToAStreamPutsBatchSizeRecordsPerCall(t *testing.T) {
	e := newReplayEnv(t, 1)
	ctx := context.Background()
	for _, c := range []struct {
		batch int
		want  []int // records per stored message of the target
	}{{2, []int{2, 2, 1}}, {0, []int{5}}} {
		target := fmt.Sprintf("to-%d", c.batch)
		if _, err := e.rn.Streams.CreateStream(ctx, stream.CreateStreamInput{StreamName: target, ShardCount: 1}); err != nil {
			t.Fatal(err)
		}
		res, err := recovery.Replay(ctx, e.svc(), recovery.ReplayOptions{
			Range:  recovery.ReplayRange{Stream: "s", FromSeq: e.seqs[0], ToSeq: e.seqs[4]},
			Target: recovery.ReplayTarget{Stream: target}, BatchSize: c.batch,
		})
		if err != nil || res.Sent != 5 {
			t.Fatalf("BatchSize %d: Replay = %+v, %v", c.batch, res, err)
		}
		recs, _, err := e.rn.Streams.ReadRange(ctx, target, "shardId-000000000000", 0, stream.Position(1000, 0))
		if err != nil {
			t.Fatal(err)
		}
		var got []int
		last := uint64(0)
		for _, r := range recs {
			if msg, _ := stream.MessageOf(r.Seq); msg != last {
				got, last = append(got, 0), msg
			}
			got[len(got)-1]++
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Fatalf("BatchSize %d: records per PutRecords call %v, want %v", c.batch, got, c.want)
		}
	}
}

// TestReplayCountsTheRestOfAPartlyFailedBatchAsFailed: a function that
// reports the third record of a batch of 3 as failed processed 2; the
// third is Failed and the replay resumes at it.
func TestReplayCountsTheRestOfAPartlyFailedBatchAsFailed(t *testing.T) {
	e := newReplayEnv(t, 1)
	function.Register("recovery-test-partfn", function.KinesisHandler(func(ctx context.Context, ev events.KinesisEvent) (events.KinesisEventResponse, error) {
		var resp events.KinesisEventResponse
		for _, r := range ev.Records {
			if string(r.Kinesis.Data) == "r5" {
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.KinesisBatchItemFailure{ItemIdentifier: r.Kinesis.SequenceNumber})
			}
		}
		return resp, nil
	}))
	if _, err := e.rn.Functions.CreateFunction(context.Background(), function.Config{FunctionName: "partfn", Handler: "recovery-test-partfn"}); err != nil {
		t.Fatal(err)
	}
	res, err := recovery.Replay(context.Background(), e.svc(), recovery.ReplayOptions{
		Range:  recovery.ReplayRange{Stream: "s", FromSeq: e.seqs[0], ToSeq: e.seqs[9]},
		Target: recovery.ReplayTarget{Function: "partfn"}, BatchSize: 3,
	})
	if err == nil || res.Sent != 5 || res.Failed != 1 || res.ResumeSequenceNumber != e.seqs[5] {
		t.Fatalf("Replay = %+v, %v; want 5 sent, 1 failed, resume at r5", res, err)
	}
}

// TestReplayProgressCountsSkippedRecords: records refused by Skip count
// in the progress as done.
func TestReplayProgressCountsSkippedRecords(t *testing.T) {
	e := newReplayEnv(t, 1)
	registerCollector(t, e.rn, "skipfn")
	var done, total int64
	res, err := recovery.Replay(context.Background(), e.svc(), recovery.ReplayOptions{
		Range:    recovery.ReplayRange{Stream: "s", FromSeq: e.seqs[0], ToSeq: e.seqs[9]},
		Target:   recovery.ReplayTarget{Function: "skipfn"},
		Skip:     func(r events.KinesisEventRecord) bool { return string(r.Kinesis.Data) < "r3" },
		Progress: func(d, n int64) { done, total = d, n },
	})
	if err != nil || res.Sent != 7 || res.Skipped != 3 || done != 10 || total != 10 {
		t.Fatalf("Replay = %+v, %v; last progress %d of %d, want 10 of 10", res, err, done, total)
	}
}

// Records of the plan that retention trims before Replay reads them are
// counted (TrimmedMessages) and logged with their shard, never skipped
// without a trace (the house rule: nothing is lost silently). Before the
// fix ReadRange's count of gone messages was dropped and the replay
// reported success with nothing sent and nothing missing.
func TestRecordsTrimmedBetweenThePlanAndTheReadAreCountedAndLogged(t *testing.T) {
	e := newReplayEnv(t, 1)
	ctx := context.Background()
	c := registerCollector(t, e.rn, "trimfn")
	var logged bytes.Buffer
	trimmed := false
	res, err := recovery.Replay(ctx, e.svc(), recovery.ReplayOptions{
		Range:  recovery.ReplayRange{Stream: "s", FromSeq: e.seqs[0], ToSeq: e.seqs[9]},
		Target: recovery.ReplayTarget{Function: "trimfn"},
		Logger: slog.New(slog.NewTextHandler(&logged, nil)),
		Progress: func(done, total int64) {
			if !trimmed { // after the plan, before the first read
				trimmed = true
				e.clock.Advance(25 * time.Hour)
				if n, err := e.rn.Streams.TrimExpired(ctx); err != nil || n != 10 {
					t.Fatalf("TrimExpired = %d, %v", n, err)
				}
			}
		},
	})
	if err != nil || res.Plan.Available != 10 || res.Sent != 0 || res.TrimmedMessages != 10 || len(c.all()) != 0 {
		t.Fatalf("Replay = %+v, %v; want 10 planned, none sent, 10 messages trimmed", res, err)
	}
	if !strings.Contains(logged.String(), "trimmed by retention after the plan") || !strings.Contains(logged.String(), "shardId-000000000000") {
		t.Fatalf("the trimmed records were not logged with their shard: %q", logged.String())
	}
}
