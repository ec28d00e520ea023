package mapping_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/batch"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/mapping"
)

// windowCounter is a function that counts a window's records in its
// state (through batch.AggregateKinesis) and keeps each window's final
// count; it fails once on the record named failOn.
type windowCounter struct {
	mu     sync.Mutex
	failOn string
	failed bool
	counts map[time.Time]int // window start -> final count
	evs    []batch.KinesisWindowEvent[wcount]
}

type wcount struct {
	N int `json:"n"`
}

func newWindowCounter(t *testing.T, rn *runnel.Runnel, failOn string) (*windowCounter, string) {
	t.Helper()
	handlerSeq.Lock()
	handlerSeq.n++
	name := fmt.Sprintf("win-%d", handlerSeq.n)
	handlerSeq.Unlock()
	c := &windowCounter{failOn: failOn, counts: map[time.Time]int{}}
	agg := batch.AggregateKinesis(
		func(ctx context.Context, s wcount, r events.KinesisEventRecord) (wcount, error) {
			c.mu.Lock()
			defer c.mu.Unlock()
			if string(r.Kinesis.Data) == c.failOn && !c.failed {
				c.failed = true
				return s, errors.New("injected failure")
			}
			s.N++
			return s, nil
		},
		func(ctx context.Context, e batch.WindowEmit, s wcount) error {
			c.mu.Lock()
			c.counts[e.Window.Start.UTC()] += s.N
			c.mu.Unlock()
			return nil
		})
	function.Register(name, func(ctx context.Context, ev batch.KinesisWindowEvent[wcount]) (batch.WindowResponse[wcount], error) {
		c.mu.Lock()
		c.evs = append(c.evs, ev)
		c.mu.Unlock()
		return agg(ctx, ev)
	})
	if _, err := rn.Functions.CreateFunction(context.Background(), function.Config{FunctionName: name, Handler: name}); err != nil {
		t.Fatal(err)
	}
	return c, name
}

func (c *windowCounter) final() map[time.Time]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.counts)
}

// t0 is the start of the tests' first window; their clocks start 5 s in.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type windowCounterRun struct {
	rn    *runnel.Runnel
	clock *clockwork.FakeClock
	dir   string
	arn   string
	c     *windowCounter
	m     *mapping.Config
}

// startWindowCounter starts runnel (o, with a fake clock at t0+5s and a
// data directory of its own) with a stream "src" of one shard and a
// mapping of cfg's BatchSize and ParallelizationFactor with 60 s windows
// into a windowCounter.
func startWindowCounter(t *testing.T, o testenv.Options, failOn string, cfg mapping.Config) windowCounterRun {
	t.Helper()
	w := windowCounterRun{clock: clockwork.NewFakeClockAt(t0.Add(5 * time.Second)), dir: t.TempDir()}
	o.Clock, o.Dir = w.clock, w.dir
	w.rn = testenv.Start(t, o)
	w.arn = createStream(t, w.rn, "src", 1)
	var fn string
	w.c, fn = newWindowCounter(t, w.rn, failOn)
	var err error
	cfg.EventSourceArn, cfg.FunctionName, cfg.StartingPosition, cfg.TumblingWindowInSeconds = w.arn, fn, mapping.TrimHorizon, ptr(60)
	w.m, err = w.rn.Mappings.CreateEventSourceMapping(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// A tumbling-window mapping's per-window counts match a count of the
// stream's records by arrival time, with a failure injected mid-window
// and a restart of runnel in the middle of a window.
func TestTumblingWindowCountsMatchAnIndependentCount(t *testing.T) {
	w := startWindowCounter(t, testenv.Options{}, "w0-4", mapping.Config{BatchSize: 3})
	rn, clock, dir, arn, c, m := w.rn, w.clock, w.dir, w.arn, w.c, w.m
	for i := range 6 {
		put(t, rn, "src", "k", fmt.Sprintf("w0-%d", i))
	}
	settle(t, rn, m.UUID, "src")
	if len(c.final()) != 0 {
		t.Fatalf("a window closed before the clock passed its end: %v", c.final())
	}

	// A restart in the middle of window 0: its state is durable.
	rn.Close()
	rn = testenv.Start(t, testenv.Options{Clock: clock, Dir: dir})
	for i := 6; i < 10; i++ {
		put(t, rn, "src", "k", fmt.Sprintf("w0-%d", i))
	}
	settle(t, rn, m.UUID, "src")
	clock.Advance(60 * time.Second) // 00:01:05: window 0 closes
	testenv.Eventually(t, wait, "window 0 closed", func() bool { return len(c.final()) == 1 })
	for i := range 7 {
		put(t, rn, "src", "k", fmt.Sprintf("w1-%d", i))
	}
	settle(t, rn, m.UUID, "src")
	clock.Advance(60 * time.Second) // 00:02:05: window 1 closes
	testenv.Eventually(t, wait, "window 1 closed", func() bool { return len(c.final()) == 2 })

	want := map[time.Time]int{}
	for _, r := range readAll(t, rn, "src") {
		want[r.ApproximateArrivalTimestamp.UTC().Truncate(time.Minute)]++
	}
	if got := c.final(); !maps.Equal(got, want) {
		t.Fatalf("window counts = %v, want %v", got, want)
	}
	if !c.failed {
		t.Fatal("the failure was not injected")
	}
	if st, _ := rn.Mappings.Status(m.UUID); st.Shards[0].WindowsClosed != 2 {
		t.Fatalf("WindowsClosed = %d, want 2 (both closed after the restart)", st.Shards[0].WindowsClosed)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	finals := 0
	for _, ev := range c.evs {
		if ev.ShardID != "shardId-000000000000" || ev.EventSourceARN != arn {
			t.Fatalf("shardId %q eventSourceARN %q", ev.ShardID, ev.EventSourceARN)
		}
		if ev.Window.End.Sub(ev.Window.Start.Time) != time.Minute || !ev.Window.Start.Equal(ev.Window.Start.Truncate(time.Minute)) {
			t.Fatalf("window %v..%v is not an aligned minute", ev.Window.Start, ev.Window.End)
		}
		for _, r := range ev.Records {
			if w := r.Kinesis.ApproximateArrivalTimestamp.UTC().Truncate(time.Minute); !w.Equal(ev.Window.Start.Time) {
				t.Fatalf("record %s of window %v in the event of window %v", r.Kinesis.Data, w, ev.Window.Start)
			}
		}
		if ev.IsFinalInvokeForWindow {
			finals++
			if len(ev.Records) != 0 {
				t.Fatalf("final invocation with %d records", len(ev.Records))
			}
		}
	}
	if finals != 2 {
		t.Fatalf("%d final invocations, want 2", finals)
	}
	if first := c.evs[0]; first.State.N != 0 {
		t.Fatalf("first invocation's state = %+v, want {}", first.State)
	}
}

func TestTumblingWindowInSecondsRange(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	arn := createStream(t, rn, "src", 1)
	_, fn := newWindowCounter(t, rn, "")
	for _, w := range []int{-1, 901} {
		_, err := rn.Mappings.CreateEventSourceMapping(context.Background(), mapping.Config{EventSourceArn: arn, FunctionName: fn,
			StartingPosition: mapping.TrimHorizon, TumblingWindowInSeconds: ptr(w)})
		if !errors.Is(err, awserr.ErrInvalidParameterValue) {
			t.Fatalf("TumblingWindowInSeconds %d: err = %v, want InvalidParameterValueException", w, err)
		}
	}
}

// rawWindowEvent is a windowed invocation's event, the state as JSON.
type rawWindowEvent struct {
	Records                 []events.KinesisEventRecord `json:"Records"`
	Window                  events.Window               `json:"window"`
	State                   json.RawMessage             `json:"state"`
	ShardID                 string                      `json:"shardId"`
	IsFinalInvokeForWindow  bool                        `json:"isFinalInvokeForWindow"`
	IsWindowTerminatedEarly bool                        `json:"isWindowTerminatedEarly"`
}

// rawWindowFunction registers a JSON function that records its events
// and answers with reply(call index, event).
func rawWindowFunction(t *testing.T, rn *runnel.Runnel, reply func(i int, ev rawWindowEvent) string) (string, func() []rawWindowEvent) {
	t.Helper()
	handlerSeq.Lock()
	handlerSeq.n++
	name := fmt.Sprintf("rawwin-%d", handlerSeq.n)
	handlerSeq.Unlock()
	var mu sync.Mutex
	var evs []rawWindowEvent
	function.Register(name, func(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
		var ev rawWindowEvent
		if err := json.Unmarshal(raw, &ev); err != nil {
			return nil, err
		}
		mu.Lock()
		i := len(evs)
		evs = append(evs, ev)
		mu.Unlock()
		return json.RawMessage(reply(i, ev)), nil
	})
	if _, err := rn.Functions.CreateFunction(context.Background(), function.Config{FunctionName: name, Handler: name}); err != nil {
		t.Fatal(err)
	}
	return name, func() []rawWindowEvent {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(evs)
	}
}

func dataOf(ev rawWindowEvent) string {
	var b strings.Builder
	for _, r := range ev.Records {
		b.Write(r.Kinesis.Data)
	}
	return b.String()
}

func TestTumblingWindowResponses(t *testing.T) {
	start := func(t *testing.T, cfg mapping.Config, reply func(i int, ev rawWindowEvent) string) (*runnel.Runnel, func() []rawWindowEvent) {
		clock := clockwork.NewFakeClockAt(t0.Add(5 * time.Second))
		rn := testenv.Start(t, testenv.Options{Clock: clock})
		arn := createStream(t, rn, "src", 1)
		put(t, rn, "src", "k", "a", "b", "c", "d")
		fn, evs := rawWindowFunction(t, rn, reply)
		cfg.EventSourceArn, cfg.FunctionName, cfg.StartingPosition, cfg.TumblingWindowInSeconds = arn, fn, mapping.TrimHorizon, ptr(60)
		cfg.MaximumBatchingWindowInSeconds = 1 // batches of BatchSize: the records are there
		m, err := rn.Mappings.CreateEventSourceMapping(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		settle(t, rn, m.UUID, "src")
		return rn, evs
	}
	t.Run("a response without state fails the batch, retried with the same state", func(t *testing.T) {
		_, evs := start(t, mapping.Config{BatchSize: 2}, func(i int, ev rawWindowEvent) string {
			if i == 1 {
				return `{"batchItemFailures":[]}`
			}
			return `{"state":{"through":"` + dataOf(ev) + `"}}`
		})
		var got []string
		for _, ev := range evs() {
			got = append(got, dataOf(ev)+" "+string(ev.State))
		}
		want := []string{`ab {}`, `cd {"through":"ab"}`, `cd {"through":"ab"}`}
		if !slices.Equal(got, want) {
			t.Fatalf("invocations = %q, want %q", got, want)
		}
	})
	t.Run("with ReportBatchItemFailures the state covers the records before the failure", func(t *testing.T) {
		_, evs := start(t, mapping.Config{BatchSize: 4, FunctionResponseTypes: []string{mapping.ReportBatchItemFailures}}, func(i int, ev rawWindowEvent) string {
			if i == 0 {
				return `{"state":{"n":2},"batchItemFailures":[{"itemIdentifier":"` + ev.Records[2].Kinesis.SequenceNumber + `"}]}`
			}
			return `{"state":{"n":4}}`
		})
		var got []string
		for _, ev := range evs() {
			got = append(got, dataOf(ev)+" "+string(ev.State))
		}
		if want := []string{`abcd {}`, `cd {"n":2}`}; !slices.Equal(got, want) {
			t.Fatalf("invocations = %q, want %q", got, want)
		}
	})
	t.Run("a state over 1 MB terminates the window early", func(t *testing.T) {
		big := `{"pad":"` + strings.Repeat("x", mapping.MaxWindowStateBytes) + `"}`
		_, evs := start(t, mapping.Config{BatchSize: 2}, func(i int, ev rawWindowEvent) string {
			if i == 0 {
				return `{"state":` + big + `}`
			}
			return `{"state":{"n":1}}`
		})
		e := evs()
		if len(e) != 3 {
			t.Fatalf("%d invocations, want 3", len(e))
		}
		if !e[1].IsWindowTerminatedEarly || e[1].IsFinalInvokeForWindow || len(e[1].Records) != 0 || string(e[1].State) != big {
			t.Fatalf("the invocation after a big state: early %v final %v records %d state %d bytes", e[1].IsWindowTerminatedEarly, e[1].IsFinalInvokeForWindow, len(e[1].Records), len(e[1].State))
		}
		if dataOf(e[2]) != "cd" || string(e[2].State) != "{}" || !e[2].Window.Start.Equal(e[0].Window.Start.Time) || e[2].IsWindowTerminatedEarly {
			t.Fatalf("the next invocation: %s state %s window %v (first %v)", dataOf(e[2]), e[2].State, e[2].Window.Start, e[0].Window.Start)
		}
	})
}

// After a crash (no final checkpoint: the shard's checkpoint is behind the
// records folded into the stored state), a window continues with its
// stored state and no record is folded twice.
func TestTumblingWindowStateSurvivesACrash(t *testing.T) {
	w := startWindowCounter(t, testenv.Options{Mappings: mapping.Options{CheckpointInterval: time.Hour}}, "", mapping.Config{BatchSize: 2})
	rn, clock, dir, c, m := w.rn, w.clock, w.dir, w.c, w.m
	for i := range 6 {
		put(t, rn, "src", "k", fmt.Sprintf("r%d", i))
	}
	testenv.Eventually(t, wait, "six records processed", func() bool {
		st, _ := rn.Mappings.Status(m.UUID)
		return st.Shards[0].ProcessedRecords == 6
	})
	rn.Crash()

	rn = testenv.Start(t, testenv.Options{Clock: clock, Dir: dir})
	put(t, rn, "src", "k", "r6", "r7")
	settle(t, rn, m.UUID, "src")
	clock.Advance(time.Minute)
	testenv.Eventually(t, wait, "window closed", func() bool { return len(c.final()) == 1 })
	if got := c.final()[t0]; got != 8 {
		t.Fatalf("window count = %d, want 8 (records folded once each)", got)
	}
}

// A closed shard's windows end with it: the final invocation comes when
// its last record is processed, before the clock reaches the window's
// end, and its children start fresh windows.
func TestTumblingWindowEndsAtShardEnd(t *testing.T) {
	clock := clockwork.NewFakeClockAt(t0.Add(5 * time.Second))
	rn := testenv.Start(t, testenv.Options{Clock: clock})
	arn := createStream(t, rn, "src", 1)
	fn, evs := rawWindowFunction(t, rn, func(i int, ev rawWindowEvent) string {
		var s struct{ N int }
		if err := json.Unmarshal(ev.State, &s); err != nil {
			return `{}` // no state: the invocation fails
		}
		return fmt.Sprintf(`{"state":{"N":%d}}`, s.N+len(ev.Records))
	})
	m, err := rn.Mappings.CreateEventSourceMapping(context.Background(), mapping.Config{EventSourceArn: arn, FunctionName: fn,
		StartingPosition: mapping.TrimHorizon, TumblingWindowInSeconds: ptr(60)})
	if err != nil {
		t.Fatal(err)
	}
	put(t, rn, "src", "k", "p1", "p2", "p3")
	settle(t, rn, m.UUID, "src")
	if _, err := rn.Streams.SplitShard(context.Background(), "src", "shardId-000000000000", "170141183460469231731687303715884105728"); err != nil {
		t.Fatal(err)
	}
	finals := func() map[string]string {
		out := map[string]string{}
		for _, ev := range evs() {
			if ev.IsFinalInvokeForWindow {
				out[ev.ShardID+" "+ev.Window.Start.Format(time.TimeOnly)] = string(ev.State)
			}
		}
		return out
	}
	testenv.Eventually(t, wait, "the parent's window closed at its end", func() bool { return len(finals()) == 1 })
	if got := finals()["shardId-000000000000 00:00:00"]; got != `{"N":3}` {
		t.Fatalf("finals = %v, want the parent's window with N 3", finals())
	}
	put(t, rn, "src", "k", "c1", "c2")
	testenv.Eventually(t, wait, "the child read c1 and c2", func() bool {
		n := 0
		for _, ev := range evs() {
			n += len(ev.Records)
		}
		return n == 5
	})
	clock.Advance(time.Minute)
	testenv.Eventually(t, wait, "the child's window closed", func() bool { return len(finals()) == 2 })
	f := finals()
	delete(f, "shardId-000000000000 00:00:00")
	for k, v := range f {
		if !strings.HasSuffix(k, " 00:00:00") || k == "shardId-000000000000 00:00:00" || v != `{"N":2}` {
			t.Fatalf("finals = %v, want a child's window with a fresh count of 2", finals())
		}
	}
}

// With ParallelizationFactor 2 each lane of the shard keeps its own
// window state; the lanes' final counts add up to the window's records.
func TestTumblingWindowPerLane(t *testing.T) {
	w := startWindowCounter(t, testenv.Options{}, "", mapping.Config{BatchSize: 2, ParallelizationFactor: 2})
	keys := []string{"k1", "k2", "k3", "k4", "k5", "k6"}
	for i, k := range keys {
		put(t, w.rn, "src", k, fmt.Sprintf("r%d", i))
	}
	settle(t, w.rn, w.m.UUID, "src")
	w.clock.Advance(time.Minute)
	testenv.Eventually(t, wait, "every lane's window closed", func() bool {
		w.c.mu.Lock()
		defer w.c.mu.Unlock()
		finals := 0
		for _, ev := range w.c.evs {
			if ev.IsFinalInvokeForWindow {
				finals++
			}
		}
		return finals == 2 // fnv of k1..k6 puts keys in both lanes
	})
	if got := w.c.final()[t0]; got != len(keys) {
		t.Fatalf("the lanes' counts add up to %d, want %d", got, len(keys))
	}
}
