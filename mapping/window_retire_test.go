package mapping_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/mapping"
)

// Windows whose worker stops, or whose lanes change, before their final
// invocation. SPEC §3: "Final invoke is synchronous: success ⇒ checkpoint
// and continue; failure ⇒ shard halts until success."

// countingWindows is a windowed function counting its records in the
// state ({"N": n}); while failFinal is set its final invocations fail. It
// logs each invocation: "<shard> final <state>" or "<shard> records <n>".
type countingWindows struct {
	name      string
	failFinal atomic.Bool
	attempts  atomic.Int64 // final invocations, failed ones included
	mu        sync.Mutex
	log       []string
}

func newCountingWindows(t *testing.T, rn *runnel.Runnel) *countingWindows {
	t.Helper()
	handlerSeq.Lock()
	handlerSeq.n++
	c := &countingWindows{name: fmt.Sprintf("countwin-%d", handlerSeq.n)}
	handlerSeq.Unlock()
	function.Register(c.name, func(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
		var ev rawWindowEvent
		if err := json.Unmarshal(raw, &ev); err != nil {
			return nil, err
		}
		if ev.IsFinalInvokeForWindow {
			c.attempts.Add(1)
			// failFinal first: an invocation abandoned by a stopped worker
			// (in-process handlers run on) that reads it cleared was
			// cancelled before, and is not counted. (Done, not Err: a
			// fake-clock context's Err blocks until it is done.)
			fail := c.failFinal.Load()
			select {
			case <-ctx.Done():
				fail = true
			default:
			}
			if fail {
				return nil, errors.New("the final invocation fails for now")
			}
			c.add(ev.ShardID + " final " + string(ev.State))
			return json.RawMessage(`{"state":{}}`), nil
		}
		var s struct{ N int }
		_ = json.Unmarshal(ev.State, &s)
		c.add(fmt.Sprintf("%s records %d", ev.ShardID, len(ev.Records)))
		return json.RawMessage(fmt.Sprintf(`{"state":{"N":%d}}`, s.N+len(ev.Records))), nil
	})
	if _, err := rn.Functions.CreateFunction(context.Background(), function.Config{FunctionName: c.name, Handler: c.name}); err != nil {
		t.Fatal(err)
	}
	return c
}

func (c *countingWindows) add(s string) {
	c.mu.Lock()
	c.log = append(c.log, s)
	c.mu.Unlock()
}

func (c *countingWindows) calls() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.log...)
}

// windowsOnOneShard starts a runnel on a fake clock with the stream "src"
// (one shard) and a countingWindows function fed by a mapping with 60 s
// tumbling windows from TRIM_HORIZON.
func windowsOnOneShard(t *testing.T) (*runnel.Runnel, *countingWindows, *mapping.Config) {
	t.Helper()
	clock := clockwork.NewFakeClockAt(t0.Add(5 * time.Second))
	rn := testenv.Start(t, testenv.Options{Clock: clock})
	arn := createStream(t, rn, "src", 1)
	c := newCountingWindows(t, rn)
	m, err := rn.Mappings.CreateEventSourceMapping(context.Background(), mapping.Config{EventSourceArn: arn, FunctionName: c.name,
		StartingPosition: mapping.TrimHorizon, TumblingWindowInSeconds: ptr(60)})
	if err != nil {
		t.Fatal(err)
	}
	return rn, c, m
}

func indexOf(calls []string, s string) int {
	for i, c := range calls {
		if c == s {
			return i
		}
	}
	return -1
}

// Before, a closed shard counted as done once its checkpoint reached its
// end, which happens before its windows' final invocations: a mapping
// disabled (or updated, handed over, crashed) while the parent's final
// invocation failed came back with the parent "done", its window's state
// lost, and the children started.
func TestAParentsWindowStillToCloseHoldsItsChildrenAcrossADisable(t *testing.T) {
	ctx := context.Background()
	rn, c, m := windowsOnOneShard(t)
	put(t, rn, "src", "k", "p1", "p2", "p3")
	settle(t, rn, m.UUID, "src")
	c.failFinal.Store(true)
	if _, err := rn.Streams.SplitShard(ctx, "src", "shardId-000000000000", "170141183460469231731687303715884105728"); err != nil {
		t.Fatal(err)
	}
	end, _, _ := rn.Streams.ShardEnd(ctx, "src", "shardId-000000000000")
	atEnd, _ := rn.Streams.SequenceNumber(ctx, "src", "shardId-000000000000", end)
	testenv.Eventually(t, wait, "the parent at its end, its final invocation failing", func() bool {
		st, _ := rn.Mappings.Status(m.UUID)
		for _, sh := range st.Shards {
			if sh.ShardID == "shardId-000000000000" {
				return sh.Checkpoint == atEnd && c.attempts.Load() >= 2
			}
		}
		return false
	})
	if _, err := rn.Mappings.UpdateEventSourceMapping(ctx, mapping.Config{UUID: m.UUID, Enabled: ptr(false)}); err != nil {
		t.Fatal(err)
	}
	c.failFinal.Store(false)
	if _, err := rn.Mappings.UpdateEventSourceMapping(ctx, mapping.Config{UUID: m.UUID, Enabled: ptr(true)}); err != nil {
		t.Fatal(err)
	}
	put(t, rn, "src", "k", "c1")
	parentFinal := `shardId-000000000000 final {"N":3}`
	testenv.Eventually(t, wait, "the parent's final invocation and the child's record", func() bool {
		calls := c.calls()
		return indexOf(calls, parentFinal) >= 0 && (indexOf(calls, "shardId-000000000001 records 1") >= 0 || indexOf(calls, "shardId-000000000002 records 1") >= 0)
	})
	calls := c.calls()
	child := max(indexOf(calls, "shardId-000000000001 records 1"), indexOf(calls, "shardId-000000000002 records 1"))
	if indexOf(calls, parentFinal) > child {
		t.Fatalf("invocations %q: the child read before its parent's window closed", calls)
	}
	if n := len(slices.DeleteFunc(calls, func(c string) bool { return c != parentFinal })); n != 1 {
		t.Fatalf("invocations %q: the parent's window closed %d times", c.calls(), n)
	}
}

// Before, a window stored under the former ParallelizationFactor or
// TumblingWindowInSeconds was ignored after an update: its state, and
// the records folded into it (already checkpointed), never reached a
// final invocation.
func TestAWindowOpenAcrossAnUpdateGetsItsFinalInvocation(t *testing.T) {
	for _, tc := range []struct {
		name   string
		update mapping.Config
	}{
		{"ParallelizationFactor 1 to 2", mapping.Config{ParallelizationFactor: 2}},
		{"TumblingWindowInSeconds 60 to 120", mapping.Config{TumblingWindowInSeconds: ptr(120)}},
		{"TumblingWindowInSeconds 60 to 0", mapping.Config{TumblingWindowInSeconds: ptr(0)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			rn, c, m := windowsOnOneShard(t)
			put(t, rn, "src", "k1", "a")
			put(t, rn, "src", "k2", "b")
			put(t, rn, "src", "k3", "c")
			settle(t, rn, m.UUID, "src")
			u := tc.update
			u.UUID = m.UUID
			if _, err := rn.Mappings.UpdateEventSourceMapping(ctx, u); err != nil {
				t.Fatal(err)
			}
			final := `shardId-000000000000 final {"N":3}`
			testenv.Eventually(t, wait, "the former window's final invocation", func() bool { return indexOf(c.calls(), final) >= 0 })
			// The records folded into it are not delivered again.
			put(t, rn, "src", "k1", "d")
			settle(t, rn, m.UUID, "src")
			records := 0
			for _, call := range c.calls() {
				// A plain (unwindowed) event names no shard.
				if _, rest, ok := strings.Cut(call, "records "); ok {
					n, _ := strconv.Atoi(rest)
					records += n
				}
			}
			if records != 4 {
				t.Fatalf("invocations %q: %d records delivered, want a, b, c and d once each", c.calls(), records)
			}
		})
	}
}

// Windows start at multiples of their length in Unix time (the 120 s
// example of services-kinesis-windows.html). Before, time.Truncate counted
// from year 1: a 7 s window started 3 s off.
func TestTumblingWindowsStartAtMultiplesOfTheirLengthInUnixTime(t *testing.T) {
	at := time.Unix(1767225605, 0).UTC() // 5 s past a multiple of 7 in Unix time, 2 s past one counted from year 1
	clock := clockwork.NewFakeClockAt(at)
	rn := testenv.Start(t, testenv.Options{Clock: clock})
	arn := createStream(t, rn, "src", 1)
	fn, evs := rawWindowFunction(t, rn, func(int, rawWindowEvent) string { return `{"state":{}}` })
	m, err := rn.Mappings.CreateEventSourceMapping(context.Background(), mapping.Config{EventSourceArn: arn, FunctionName: fn,
		StartingPosition: mapping.TrimHorizon, TumblingWindowInSeconds: ptr(7)})
	if err != nil {
		t.Fatal(err)
	}
	put(t, rn, "src", "k", "a")
	settle(t, rn, m.UUID, "src")
	ev := evs()[0]
	if want := time.Unix(1767225605-1767225605%7, 0).UTC(); !ev.Window.Start.Equal(want) || !ev.Window.End.Equal(want.Add(7*time.Second)) {
		t.Fatalf("window %v to %v, want %v to %v", ev.Window.Start.Time, ev.Window.End.Time, want, want.Add(7*time.Second))
	}
}

// A lane's window may hold records past the shard's checkpoint (another
// lane is still retrying an earlier record). After ParallelizationFactor
// changes, the new worker reads from the checkpoint again: the records
// folded into the former lane's window (closed by its final invocation)
// must not be delivered again, and the others must.
func TestRecordsFoldedIntoAFormerLaneAreNotDeliveredAgain(t *testing.T) {
	ctx := context.Background()
	clock := clockwork.NewFakeClockAt(t0.Add(5 * time.Second))
	rn := testenv.Start(t, testenv.Options{Clock: clock})
	arn := createStream(t, rn, "src", 1)
	lane := func(key string) uint32 { h := fnv.New32a(); h.Write([]byte(key)); return h.Sum32() % 2 }
	good, bad := "k0", "k1"
	for i := 1; lane(good) == lane(bad); i++ {
		bad = fmt.Sprintf("k%d", i)
	}
	var failBad atomic.Bool
	failBad.Store(true)
	var mu sync.Mutex
	var delivered []string
	var finals []string
	name := "folded-once"
	function.Register(name, func(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
		var ev rawWindowEvent
		if err := json.Unmarshal(raw, &ev); err != nil {
			return nil, err
		}
		fail := failBad.Load() && strings.Contains(dataOf(ev), "bad")
		select {
		case <-ctx.Done(): // abandoned by a stopped worker: not counted
			fail = true
		default:
		}
		if fail {
			return nil, errors.New("bad fails for now")
		}
		mu.Lock()
		defer mu.Unlock()
		if ev.IsFinalInvokeForWindow {
			finals = append(finals, string(ev.State))
		}
		for _, r := range ev.Records {
			delivered = append(delivered, string(r.Kinesis.Data))
		}
		var s struct{ N int }
		_ = json.Unmarshal(ev.State, &s)
		return json.RawMessage(fmt.Sprintf(`{"state":{"N":%d}}`, s.N+len(ev.Records))), nil
	})
	if _, err := rn.Functions.CreateFunction(ctx, function.Config{FunctionName: name, Handler: name}); err != nil {
		t.Fatal(err)
	}
	m, err := rn.Mappings.CreateEventSourceMapping(ctx, mapping.Config{EventSourceArn: arn, FunctionName: name,
		StartingPosition: mapping.TrimHorizon, TumblingWindowInSeconds: ptr(60), ParallelizationFactor: 2})
	if err != nil {
		t.Fatal(err)
	}
	put(t, rn, "src", bad, "bad")
	put(t, rn, "src", good, "x", "y")
	testenv.Eventually(t, wait, "x and y folded while bad is retried", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(delivered) == 2
	})
	if _, err := rn.Mappings.UpdateEventSourceMapping(ctx, mapping.Config{UUID: m.UUID, ParallelizationFactor: 1}); err != nil {
		t.Fatal(err)
	}
	failBad.Store(false)
	settle(t, rn, m.UUID, "src")
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(delivered)
	if !slices.Equal(delivered, []string{"bad", "x", "y"}) || !slices.Contains(finals, `{"N":2}`) {
		t.Fatalf("delivered %q, finals %q: want bad, x and y once each, and the former lane's window (x, y) closed", delivered, finals)
	}
}
