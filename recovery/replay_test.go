package recovery_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/queue"
	"github.com/runnel-dev/runnel/recovery"
	"github.com/runnel-dev/runnel/stream"
)

// collector is a function handler that records what it was given.
type collector struct {
	mu      sync.Mutex
	batches [][]string // data per batch
	failOn  string
}

func (c *collector) handle(ctx context.Context, ev events.KinesisEvent) (events.KinesisEventResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var b []string
	for _, r := range ev.Records {
		if string(r.Kinesis.Data) == c.failOn {
			return events.KinesisEventResponse{}, errors.New("boom")
		}
		if r.EventSource != "aws:kinesis" || r.AwsRegion == "" || r.InvokeIdentityArn == "" || r.EventID != "shardId-000000000000:"+r.Kinesis.SequenceNumber {
			return events.KinesisEventResponse{}, fmt.Errorf("record not shaped like a mapping's: %+v", r)
		}
		b = append(b, string(r.Kinesis.Data))
	}
	c.batches = append(c.batches, b)
	return events.KinesisEventResponse{}, nil
}

func (c *collector) all() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, b := range c.batches {
		out = append(out, b...)
	}
	return out
}

var collectors sync.Map

// registerCollector registers a handler named after the test.
func registerCollector(t *testing.T, rn *runnel.Runnel, name string) *collector {
	t.Helper()
	c := &collector{}
	function.Register("recovery-test-"+name, function.KinesisHandler(c.handle))
	if _, err := rn.Functions.CreateFunction(context.Background(), function.Config{FunctionName: name, Handler: "recovery-test-" + name}); err != nil {
		t.Fatal(err)
	}
	return c
}

// replayEnv is a one-shard stream "s" with records r0..r9 arriving one
// minute apart from t0.
type replayEnv struct {
	rn    *runnel.Runnel
	clock *clockwork.FakeClock
	seqs  []string
}

func newReplayEnv(t *testing.T, shards int) *replayEnv {
	t.Helper()
	clock := clockwork.NewFakeClockAt(t0)
	rn := testenv.Start(t, testenv.Options{Clock: clock})
	ctx := context.Background()
	if _, err := rn.Streams.CreateStream(ctx, stream.CreateStreamInput{StreamName: "s", ShardCount: shards}); err != nil {
		t.Fatal(err)
	}
	e := &replayEnv{rn: rn, clock: clock}
	for i := range 10 {
		out, err := rn.Streams.PutRecord(ctx, "s", stream.PutRecordsRequestEntry{PartitionKey: fmt.Sprintf("k%d", i%3), Data: fmt.Appendf(nil, "r%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		e.seqs = append(e.seqs, out.SequenceNumber)
		clock.Advance(time.Minute)
	}
	return e
}

func (e *replayEnv) svc() recovery.Services {
	return recovery.Services{Streams: e.rn.Streams, Queues: e.rn.Queues, Functions: e.rn.Functions}
}

func TestReplaySequenceRangeToFunction(t *testing.T) {
	e := newReplayEnv(t, 1)
	c := registerCollector(t, e.rn, "seqfn")
	var last int64
	res, err := recovery.Replay(context.Background(), e.svc(), recovery.ReplayOptions{
		Range:  recovery.ReplayRange{Stream: "s", FromSeq: e.seqs[2], ToSeq: e.seqs[6]},
		Target: recovery.ReplayTarget{Function: "seqfn"}, BatchSize: 2,
		Progress: func(done, total int64) { last = done },
	})
	if err != nil {
		t.Fatal(err)
	}
	// Both boundaries inclusive, in order, in batches of 2.
	if got := fmt.Sprint(c.all()); got != "[r2 r3 r4 r5 r6]" {
		t.Fatalf("function got %s", got)
	}
	if len(c.batches) != 3 || res.Sent != 5 || res.Read != 5 || res.Plan.MissingMessages != 0 || last != 5 {
		t.Fatalf("batches %v, result %+v, progress %d", c.batches, res, last)
	}
}

func TestReplayStopsAtFailureAndSaysWhereToResume(t *testing.T) {
	e := newReplayEnv(t, 1)
	c := registerCollector(t, e.rn, "failfn")
	c.failOn = "r5"
	res, err := recovery.Replay(context.Background(), e.svc(), recovery.ReplayOptions{
		Range:  recovery.ReplayRange{Stream: "s", FromSeq: e.seqs[0], ToSeq: e.seqs[9]},
		Target: recovery.ReplayTarget{Function: "failfn"}, BatchSize: 3,
	})
	if err == nil || res.Sent != 3 || res.Failed != 3 || res.ResumeSequenceNumber != e.seqs[3] {
		t.Fatalf("Replay = %+v, %v", res, err)
	}
	if !strings.Contains(err.Error(), "boom") { // the function's error message
		t.Fatalf("error %q does not carry the function's error", err)
	}
}

func TestReplayTimeRangeToQueueWithSkip(t *testing.T) {
	e := newReplayEnv(t, 2)
	ctx := context.Background()
	url, err := e.rn.Queues.CreateQueue(ctx, "replayed", nil)
	if err != nil {
		t.Fatal(err)
	}
	// r3 arrived at t0+3m, r7 at t0+7m: both ends inclusive, across shards.
	res, err := recovery.Replay(ctx, e.svc(), recovery.ReplayOptions{
		Range:  recovery.ReplayRange{Stream: "s", FromTime: t0.Add(3 * time.Minute), ToTime: t0.Add(7 * time.Minute)},
		Target: recovery.ReplayTarget{Queue: "replayed"},
		Skip:   func(r events.KinesisEventRecord) bool { return string(r.Kinesis.Data) == "r4" },
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Read != 5 || res.Skipped != 1 || res.Sent != 4 || len(res.Plan.Shards) != 2 {
		t.Fatalf("Replay = %+v", res)
	}
	var got []string
	for _, b := range bodies(t, e.rn, url) {
		var r events.KinesisEventRecord
		if err := json.Unmarshal([]byte(b), &r); err != nil || r.EventSource != "aws:kinesis" {
			t.Fatalf("body %s: %v", b, err)
		}
		got = append(got, string(r.Kinesis.Data))
	}
	if fmt.Sprint(got) != fmt.Sprint(sortedStrings("r3", "r5", "r6", "r7")) {
		t.Fatalf("queue got %v", got)
	}
}

func sortedStrings(s ...string) []string { return s }

func TestReplayToStreamKeepsPartitionKeys(t *testing.T) {
	e := newReplayEnv(t, 1)
	ctx := context.Background()
	if _, err := e.rn.Streams.CreateStream(ctx, stream.CreateStreamInput{StreamName: "s2", ShardCount: 1}); err != nil {
		t.Fatal(err)
	}
	res, err := recovery.Replay(ctx, e.svc(), recovery.ReplayOptions{
		Range:  recovery.ReplayRange{Stream: "s", Shard: "shardId-000000000000", FromSeq: e.seqs[0], ToSeq: e.seqs[9]},
		Target: recovery.ReplayTarget{Stream: "s2"},
	})
	if err != nil || res.Sent != 10 {
		t.Fatalf("Replay = %+v, %v", res, err)
	}
	recs, missing, err := e.rn.Streams.ReadRange(ctx, "s2", "shardId-000000000000", 0, stream.Position(1000, 0))
	if err != nil || missing != 0 || len(recs) != 10 {
		t.Fatalf("s2: %d records, %d missing, %v", len(recs), missing, err)
	}
	for i, r := range recs {
		if string(r.Data) != fmt.Sprintf("r%d", i) || r.PartitionKey != fmt.Sprintf("k%d", i%3) {
			t.Fatalf("s2 record %d = %q key %q", i, r.Data, r.PartitionKey)
		}
	}
}

func TestReplayPastRetentionIsReported(t *testing.T) {
	e := newReplayEnv(t, 1)
	ctx := context.Background()
	// Put r10..r12 a day later, then trim: r0..r9 are gone.
	e.clock.Advance(24 * time.Hour)
	for i := 10; i < 13; i++ {
		out, err := e.rn.Streams.PutRecord(ctx, "s", stream.PutRecordsRequestEntry{PartitionKey: "k", Data: fmt.Appendf(nil, "r%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		e.seqs = append(e.seqs, out.SequenceNumber)
	}
	e.clock.Advance(time.Hour)
	if n, err := e.rn.Streams.TrimExpired(ctx); err != nil || n != 10 {
		t.Fatalf("TrimExpired = %d, %v", n, err)
	}
	c := registerCollector(t, e.rn, "retfn")

	t.Run("sequence range", func(t *testing.T) {
		opts := recovery.ReplayOptions{Range: recovery.ReplayRange{Stream: "s", FromSeq: e.seqs[8], ToSeq: e.seqs[11]}, Target: recovery.ReplayTarget{Function: "retfn"}}
		res, err := recovery.Replay(ctx, e.svc(), opts)
		if !errors.Is(err, recovery.ErrPastRetention) || res.Plan.MissingMessages != 2 || !res.Plan.Shards[0].MissingExact ||
			res.Plan.Shards[0].FirstAvailableSequenceNumber != e.seqs[10] || res.Sent != 0 || len(c.all()) != 0 {
			t.Fatalf("Replay = %+v (plan %+v), %v", res, res.Plan, err)
		}
		if !strings.Contains(err.Error(), "shardId-000000000000 "+e.seqs[10]) { // where to replay from
			t.Fatalf("error %q does not name the first available record", err)
		}
		opts.AllowPastRetention = true
		res, err = recovery.Replay(ctx, e.svc(), opts)
		if err != nil || res.Sent != 2 || res.Plan.MissingMessages != 2 || fmt.Sprint(c.all()) != "[r10 r11]" {
			t.Fatalf("Replay allowing past retention = %+v, %v; got %v", res, err, c.all())
		}
	})
	t.Run("time range", func(t *testing.T) {
		plan, err := recovery.PlanReplay(ctx, e.rn.Streams, recovery.ReplayRange{Stream: "s", FromTime: t0.Add(5 * time.Minute), ToTime: e.clock.Now(), Now: e.clock.Now()})
		if err != nil || !plan.PastRetention || plan.MissingMessages != 10 || plan.Shards[0].MissingExact || plan.Available != 3 ||
			plan.Shards[0].FirstAvailableSequenceNumber != e.seqs[10] {
			t.Fatalf("plan = %+v, %v", plan, err)
		}
		// A time range after the trim horizon misses nothing.
		plan, err = recovery.PlanReplay(ctx, e.rn.Streams, recovery.ReplayRange{Stream: "s", FromTime: t0.Add(24*time.Hour + 10*time.Minute), ToTime: e.clock.Now(), Now: e.clock.Now()})
		if err != nil || plan.PastRetention || plan.Available != 3 {
			t.Fatalf("plan after horizon = %+v, %v", plan, err)
		}
	})
}

func TestResolveOfArchivedAndRetryQueueMessages(t *testing.T) {
	// Resolve's two failure formats come back out of a queue unchanged.
	e := newDLQEnv(t)
	ctx := context.Background()
	e.deadLetter(t, e.pointer(1, 3, "RetryAttemptsExhausted"), asyncBody)
	ms, err := e.rn.Queues.ReceiveMessage(ctx, e.dlq, queue.ReceiveMessageInput{MaxNumberOfMessages: 10})
	if err != nil || len(ms) != 2 {
		t.Fatalf("receive: %d, %v", len(ms), err)
	}
	for _, m := range ms {
		r, err := recovery.Resolve(ctx, e.rn.Streams, []byte(m.Body))
		if err != nil {
			t.Fatal(err)
		}
		switch r.Kind {
		case recovery.KindStreamBatch:
			if len(r.Records) != 3 || string(r.Records[0].Kinesis.Data) != "r1" {
				t.Errorf("pointer resolved to %+v", r.Records)
			}
		case recovery.KindAsync:
			if string(r.Payload) != `{"order":42}` {
				t.Errorf("async resolved to %s", r.Payload)
			}
		}
	}
}

// TestAReplayToAQueueStopsBeforeARecordItCannotTakeAndSendsNothingTwice:
// a record over the queue's MaximumMessageSize ends the replay before
// anything after it is sent, so a resume from ResumeSequenceNumber sends
// each record once. Before, the whole batch was sent: the records after
// the refused one were stored, and the resume sent them again.
func TestAReplayToAQueueStopsBeforeARecordItCannotTakeAndSendsNothingTwice(t *testing.T) {
	e := newReplayEnv(t, 1)
	ctx := context.Background()
	if _, err := e.rn.Streams.CreateStream(ctx, stream.CreateStreamInput{StreamName: "big", ShardCount: 1}); err != nil {
		t.Fatal(err)
	}
	var seqs []string
	for _, d := range []string{"a", strings.Repeat("x", 3000), "b"} {
		out, err := e.rn.Streams.PutRecord(ctx, "big", stream.PutRecordsRequestEntry{PartitionKey: "k", Data: []byte(d)})
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, out.SequenceNumber)
	}
	url, err := e.rn.Queues.CreateQueue(ctx, "small", map[string]string{"MaximumMessageSize": "1024"})
	if err != nil {
		t.Fatal(err)
	}
	o := recovery.ReplayOptions{Range: recovery.ReplayRange{Stream: "big", FromSeq: seqs[0], ToSeq: seqs[2]}, Target: recovery.ReplayTarget{Queue: "small"}}
	res, err := recovery.Replay(ctx, e.svc(), o)
	if err == nil || !strings.Contains(err.Error(), "MaximumMessageSize") || res.Sent != 1 || res.ResumeSequenceNumber != seqs[1] {
		t.Fatalf("Replay = %+v, %v; want a sent, and the resume at the large record", res, err)
	}
	if err := e.rn.Queues.SetQueueAttributes(ctx, url, map[string]string{"MaximumMessageSize": "1048576"}); err != nil {
		t.Fatal(err)
	}
	o.Range.FromSeq = res.ResumeSequenceNumber
	if _, err := recovery.Replay(ctx, e.svc(), o); err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, b := range bodies(t, e.rn, url) {
		var r events.KinesisEventRecord
		if err := json.Unmarshal([]byte(b), &r); err != nil {
			t.Fatal(err)
		}
		count[string(r.Kinesis.Data)[:1]]++
	}
	if count["a"] != 1 || count["x"] != 1 || count["b"] != 1 {
		t.Fatalf("the queue holds %v, want a, the large record and b once each", count)
	}
}
