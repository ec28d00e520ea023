package batch_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/batch"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/mapping"
	"github.com/runnel-dev/runnel/stream"
)

// windowStart is the start of the window the tests' records fall in; the
// fake clocks start 5 s into it.
var windowStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type winState struct {
	N   int    `json:"n"`
	Pad string `json:"pad,omitempty"`
}

// partSink is the sink the package doc asks for: each emit is put (an
// overwrite) under its WindowEmit.Key, and a window's count is the sum
// of its parts.
type partSink struct {
	mu    sync.Mutex
	parts map[string]int
	emits []batch.WindowEmit
	// block, when set, makes the first final emit, after its put, close
	// it and wait for its context to end (the process dying before the
	// mapping records the final invocation).
	block chan struct{}
}

// register registers the aggregation "name": a count of the records in
// the state, a 600 KB pad for each record "big" (two make it pass 1 MB).
func (s *partSink) register(t *testing.T, rn *runnel.Runnel, name string) {
	t.Helper()
	function.Register(name, batch.AggregateKinesis(
		func(ctx context.Context, st winState, r events.KinesisEventRecord) (winState, error) {
			st.N++
			if string(r.Kinesis.Data) == "big" {
				st.Pad += strings.Repeat("x", 600_000)
			}
			return st, nil
		},
		func(ctx context.Context, e batch.WindowEmit, st winState) error {
			s.mu.Lock()
			s.parts[e.Key()] = st.N
			s.emits = append(s.emits, e)
			b := s.block
			if e.Final {
				s.block = nil
			}
			s.mu.Unlock()
			if b != nil && e.Final {
				close(b)
				<-ctx.Done()
				return ctx.Err()
			}
			return nil
		}))
	if _, err := rn.Functions.CreateFunction(context.Background(), function.Config{FunctionName: name, Handler: name}); err != nil {
		t.Fatal(err)
	}
}

// window returns the count of the window at windowStart (the sum of its
// parts) and the emits so far.
func (s *partSink) window() (int, []batch.WindowEmit) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for k, v := range s.parts {
		if strings.Contains(k, "/"+windowStart.Format(time.RFC3339Nano)+"/") {
			n += v
		}
	}
	return n, append([]batch.WindowEmit(nil), s.emits...)
}

func putRecords(t *testing.T, rn *runnel.Runnel, pk string, data ...string) []string {
	t.Helper()
	var es []stream.PutRecordsRequestEntry
	for _, d := range data {
		es = append(es, stream.PutRecordsRequestEntry{PartitionKey: pk, Data: []byte(d)})
	}
	out, err := rn.Streams.PutRecords(context.Background(), "win", es)
	if err != nil || out.FailedRecordCount != 0 {
		t.Fatalf("put: %v %+v", err, out)
	}
	var seqs []string
	for _, r := range out.Records {
		seqs = append(seqs, r.SequenceNumber)
	}
	return seqs
}

func windowsClosed(rn *runnel.Runnel, uuid string) int64 {
	st, _ := rn.Mappings.Status(uuid)
	n := int64(0)
	for _, sh := range st.Shards {
		n += sh.WindowsClosed
	}
	return n
}

// foldedAll waits until the mapping has folded every record (each
// shard's window stored through its last record).
func foldedAll(t *testing.T, rn *runnel.Runnel, uuid string) {
	t.Helper()
	ctx := context.Background()
	testenv.Eventually(t, 20*time.Second, "every record folded", func() bool {
		st, err := rn.Mappings.Status(uuid)
		if err != nil || len(st.Shards) == 0 {
			return false
		}
		for _, sh := range st.Shards {
			_, last, _ := rn.Streams.ShardBounds(ctx, "win", sh.ShardID)
			if want, _ := rn.Streams.SequenceNumber(ctx, "win", sh.ShardID, last+1); sh.Checkpoint != want {
				return false
			}
		}
		return true
	})
}

// TestAWindowsEmitsArePartsASinkKeyedByTheirKeyKeepsEveryRecord: a
// window has one emit per shard, and one more per early termination (a
// state over 1 MB). Before, emit got the window alone (emit(ctx, w,
// state)), and the package doc's sink, keyed by the window's start, kept
// the last of them: 3 of the 11 records of this test. Now emit gets a
// WindowEmit (shard, Final, TerminatedEarly, the folded sequence
// numbers) whose Key names the part: put under it, the parts sum to 11.
func TestAWindowsEmitsArePartsASinkKeyedByTheirKeyKeepsEveryRecord(t *testing.T) {
	clock := clockwork.NewFakeClockAt(windowStart.Add(5 * time.Second))
	rn := testenv.Start(t, testenv.Options{Clock: clock})
	ctx := context.Background()
	d, err := rn.Streams.CreateStream(ctx, stream.CreateStreamInput{StreamName: "win", ShardCount: 2})
	if err != nil {
		t.Fatal(err)
	}
	s := &partSink{parts: map[string]int{}}
	s.register(t, rn, "win-parts")
	for i := range 8 {
		putRecords(t, rn, fmt.Sprintf("pk%d", i), "r")
	}
	putRecords(t, rn, "pk0", "big", "big", "r")
	m, err := rn.Mappings.CreateEventSourceMapping(ctx, mapping.Config{EventSourceArn: d.StreamARN, FunctionName: "win-parts",
		StartingPosition: mapping.TrimHorizon, BatchSize: 1, TumblingWindowInSeconds: intp(60)})
	if err != nil {
		t.Fatal(err)
	}
	foldedAll(t, rn, m.UUID)
	clock.Advance(time.Minute)
	testenv.Eventually(t, 20*time.Second, "both shards' windows closed", func() bool { return windowsClosed(rn, m.UUID) == 2 })
	n, emits := s.window()
	shards := map[string]bool{}
	early, final := 0, 0
	for _, e := range emits {
		shards[e.ShardID] = true
		if e.TerminatedEarly {
			early++
		}
		if e.Final {
			final++
		}
		if !e.Window.Start.Equal(windowStart) || e.EventSourceARN != d.StreamARN || e.FirstSequenceNumber == "" || e.LastSequenceNumber == "" {
			t.Errorf("emit %+v", e)
		}
	}
	if n != 11 || len(shards) != 2 || early != 1 || final != 2 {
		t.Fatalf("the window's parts sum to %d records (want 11) over %d shards (want 2), %d early and %d final emits (want 1, 2): %+v", n, len(shards), early, final, emits)
	}
}

// TestAWindowsEmitRunsAgainAfterACrashWithTheSameKey: the final
// invocation is retried until the mapping has recorded it, so a crash
// after emit's write and before that record runs emit again, with the
// same state (at-least-once, as on AWS). Before, emit could not tell the
// second call from a new part (the doc's example, keyed by the window's
// start, was right only for one shard and no early termination). Now the
// call run again has the same WindowEmit (Key, first and last folded
// sequence numbers): a put under the key keeps the window's 3 records
// once.
func TestAWindowsEmitRunsAgainAfterACrashWithTheSameKey(t *testing.T) {
	clock := clockwork.NewFakeClockAt(windowStart.Add(5 * time.Second))
	dir := t.TempDir()
	rn := testenv.Start(t, testenv.Options{Clock: clock, Dir: dir})
	ctx := context.Background()
	d, err := rn.Streams.CreateStream(ctx, stream.CreateStreamInput{StreamName: "win", ShardCount: 1})
	if err != nil {
		t.Fatal(err)
	}
	block := make(chan struct{})
	s := &partSink{parts: map[string]int{}, block: block}
	s.register(t, rn, "win-crash")
	seqs := putRecords(t, rn, "k", "r0", "r1", "r2")
	m, err := rn.Mappings.CreateEventSourceMapping(ctx, mapping.Config{EventSourceArn: d.StreamARN, FunctionName: "win-crash",
		StartingPosition: mapping.TrimHorizon, BatchSize: 3, MaximumBatchingWindowInSeconds: 1, TumblingWindowInSeconds: intp(60)})
	if err != nil {
		t.Fatal(err)
	}
	foldedAll(t, rn, m.UUID)
	clock.Advance(time.Minute)
	<-block // the final emit has put its part: the process dies now
	rn.Crash()
	rn2 := testenv.Start(t, testenv.Options{Clock: clock, Dir: dir})
	testenv.Eventually(t, 20*time.Second, "the window closed after the restart", func() bool { return windowsClosed(rn2, m.UUID) == 1 })
	n, emits := s.window()
	if len(emits) != 2 {
		t.Fatalf("%d emits; want 2 (the final invocation, then again after the crash): %+v", len(emits), emits)
	}
	first, again := emits[0], emits[1]
	if first != again || !first.Final || first.FirstSequenceNumber != seqs[0] || first.LastSequenceNumber != seqs[2] {
		t.Fatalf("the emit and its run after the crash: %+v and %+v; want the same, Final, folded %s..%s", first, again, seqs[0], seqs[2])
	}
	if n != 3 {
		t.Fatalf("the window's parts sum to %d records; want 3", n)
	}
}

func intp(n int) *int { return &n }
