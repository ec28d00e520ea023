package mapping_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/mapping"
)

// Tumbling windows' final invocations and retired lanes, after
// https://docs.aws.amazon.com/lambda/latest/dg/services-kinesis-windows.html
// (and services-ddb-windows.html).

// shardStatus returns the live status of the mapping's only shard.
func shardStatus(t *testing.T, rn *runnel.Runnel, uuid string) mapping.ShardStatus {
	t.Helper()
	st, err := rn.Mappings.Status(uuid)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Shards) != 1 {
		return mapping.ShardStatus{}
	}
	return st.Shards[0]
}

// TestRecordsFoldedIntoAFormerLaneStayFoldedAcrossARestart: runnel folds
// each record into one window once (window.go; AWS: the final invocation
// holds the window's aggregate). After ParallelizationFactor changes, a
// former lane's window is closed with the records folded into it, and
// those records are not delivered again. Before, the new lane of the same
// index stored its window under the same key, overwriting the former
// lane's Through: the protection lived only in the running worker, and
// after any restart (here an update of BatchSize) the former lane's
// records between the new Through and the old one were delivered again
// and folded into a second window (x and y twice).
func TestRecordsFoldedIntoAFormerLaneStayFoldedAcrossARestart(t *testing.T) {
	ctx := context.Background()
	clock := clockwork.NewFakeClockAt(t0.Add(5 * time.Second))
	rn := testenv.Start(t, testenv.Options{Clock: clock})
	arn := createStream(t, rn, "src", 1)
	lane := func(key string) uint32 { h := fnv.New32a(); h.Write([]byte(key)); return h.Sum32() % 2 }
	good, bad := "k0", "k1"
	for i := 1; lane(good) == lane(bad); i++ {
		bad = fmt.Sprintf("k%d", i)
	}
	var failing atomic.Value
	failing.Store("bad1")
	var mu sync.Mutex
	delivered, attempts := map[string]int{}, map[string]int{}
	var finals []string
	name := "folded-once-across-restart"
	function.Register(name, func(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
		var ev rawWindowEvent
		if err := json.Unmarshal(raw, &ev); err != nil {
			return nil, err
		}
		mu.Lock()
		defer mu.Unlock()
		attempts[dataOf(ev)]++
		fail := dataOf(ev) == failing.Load().(string) && dataOf(ev) != ""
		select {
		case <-ctx.Done(): // abandoned by a stopped worker: not counted
			fail = true
		default:
		}
		if fail {
			return nil, errors.New("fails for now")
		}
		if ev.IsFinalInvokeForWindow {
			finals = append(finals, string(ev.State))
		}
		for _, r := range ev.Records {
			delivered[string(r.Kinesis.Data)]++
		}
		var s struct{ N int }
		_ = json.Unmarshal(ev.State, &s)
		return json.RawMessage(fmt.Sprintf(`{"state":{"N":%d}}`, s.N+len(ev.Records))), nil
	})
	if _, err := rn.Functions.CreateFunction(ctx, function.Config{FunctionName: name, Handler: name}); err != nil {
		t.Fatal(err)
	}
	m, err := rn.Mappings.CreateEventSourceMapping(ctx, mapping.Config{EventSourceArn: arn, FunctionName: name, BatchSize: 1,
		StartingPosition: mapping.TrimHorizon, TumblingWindowInSeconds: ptr(60), ParallelizationFactor: 2})
	if err != nil {
		t.Fatal(err)
	}
	put(t, rn, "src", bad, "bad1", "bad2")
	put(t, rn, "src", good, "x", "y")
	testenv.Eventually(t, wait, "x and y folded by lane 0 while bad1 is retried", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return delivered["x"] == 1 && delivered["y"] == 1
	})
	// The old lanes are stopped when the update returns.
	if _, err := rn.Mappings.UpdateEventSourceMapping(ctx, mapping.Config{UUID: m.UUID, ParallelizationFactor: 1}); err != nil {
		t.Fatal(err)
	}
	failing.Store("bad2")
	// bad2 is tried only after the new lane 0 stored its window with bad1.
	testenv.Eventually(t, wait, "bad1 folded by the new lane 0, bad2 retried", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return delivered["bad1"] == 1 && attempts["bad2"] > 0
	})
	if _, err := rn.Mappings.UpdateEventSourceMapping(ctx, mapping.Config{UUID: m.UUID, BatchSize: 2}); err != nil {
		t.Fatal(err)
	}
	failing.Store("")
	settle(t, rn, m.UUID, "src")
	mu.Lock()
	defer mu.Unlock()
	for _, d := range []string{"bad1", "bad2", "x", "y"} {
		if delivered[d] != 1 {
			t.Fatalf("delivered %v (finals %q): want bad1, bad2, x and y once each; the former lane's final held x and y", delivered, finals)
		}
	}
	if len(finals) != 1 || finals[0] != `{"N":2}` {
		t.Fatalf("finals %q, want the former lane 0's window (x, y) closed once", finals)
	}
}

// TestAFinalInvocationWithoutStateFailsAndIsRetried: "your Lambda
// function response must contain a state property. If the response
// doesn't contain a state property, Lambda considers this a failed
// invocation" (services-kinesis-windows.html); a failed final invocation
// is retried, and the shard waits, until it succeeds. Before, a final
// (or early-termination) invocation answering without a state (here
// null, then {}) closed the window.
func TestAFinalInvocationWithoutStateFailsAndIsRetried(t *testing.T) {
	ctx := context.Background()
	clock := clockwork.NewFakeClockAt(t0.Add(5 * time.Second))
	rn := testenv.Start(t, testenv.Options{Clock: clock})
	arn := createStream(t, rn, "src", 1)
	var finals, records atomic.Int64
	name := "final-without-state"
	function.Register(name, func(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
		var ev rawWindowEvent
		if err := json.Unmarshal(raw, &ev); err != nil {
			return nil, err
		}
		if !ev.IsFinalInvokeForWindow {
			records.Add(int64(len(ev.Records)))
			return json.RawMessage(`{"state":{"N":1}}`), nil
		}
		switch finals.Add(1) {
		case 1:
			return json.RawMessage(`null`), nil
		case 2:
			return json.RawMessage(`{"batchItemFailures":[]}`), nil
		}
		return json.RawMessage(`{"state":null}`), nil
	})
	if _, err := rn.Functions.CreateFunction(ctx, function.Config{FunctionName: name, Handler: name}); err != nil {
		t.Fatal(err)
	}
	m, err := rn.Mappings.CreateEventSourceMapping(ctx, mapping.Config{EventSourceArn: arn, FunctionName: name,
		StartingPosition: mapping.TrimHorizon, TumblingWindowInSeconds: ptr(60)})
	if err != nil {
		t.Fatal(err)
	}
	put(t, rn, "src", "k", "a")
	testenv.Eventually(t, wait, "a folded", func() bool { return records.Load() == 1 })
	clock.Advance(60 * time.Second)
	testenv.Eventually(t, wait, "the window closed", func() bool { return shardStatus(t, rn, m.UUID).WindowsClosed == 1 })
	ss := shardStatus(t, rn, m.UUID)
	if n := finals.Load(); n != 3 || ss.FunctionErrors != 2 {
		t.Fatalf("%d final invocations, %d function errors (status %+v): want the 2 without state failed, the window closed by the 3rd", n, ss.FunctionErrors, ss)
	}
}

// TestAFinalInvocationWaitsForAHandlerOfItsEventType: as for a batch, a
// function replaced (PutFunction) by a handler that does not take the
// mapping's event type is not invoked: it would get an empty event and
// the window's aggregate would be lost. The final invocation waits, the
// status says why, and goes to the function once its handler takes
// Kinesis events again. Before, the final invocation went to the SQS
// handler.
func TestAFinalInvocationWaitsForAHandlerOfItsEventType(t *testing.T) {
	ctx := context.Background()
	clock := clockwork.NewFakeClockAt(t0.Add(5 * time.Second))
	rn := testenv.Start(t, testenv.Options{Clock: clock})
	arn := createStream(t, rn, "src", 1)
	var mu sync.Mutex
	var finals []string
	var records, sqsCalls atomic.Int64
	name := "final-handler-type"
	function.Register(name, func(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
		var ev rawWindowEvent
		if err := json.Unmarshal(raw, &ev); err != nil {
			return nil, err
		}
		if ev.IsFinalInvokeForWindow {
			mu.Lock()
			finals = append(finals, string(ev.State))
			mu.Unlock()
		}
		records.Add(int64(len(ev.Records)))
		return json.RawMessage(`{"state":{"N":1}}`), nil
	})
	function.Register(name+"-sqs", function.SQSHandler(func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
		sqsCalls.Add(1)
		return events.SQSEventResponse{}, nil
	}))
	if _, err := rn.Functions.CreateFunction(ctx, function.Config{FunctionName: name, Handler: name}); err != nil {
		t.Fatal(err)
	}
	m, err := rn.Mappings.CreateEventSourceMapping(ctx, mapping.Config{EventSourceArn: arn, FunctionName: name,
		StartingPosition: mapping.TrimHorizon, TumblingWindowInSeconds: ptr(60)})
	if err != nil {
		t.Fatal(err)
	}
	put(t, rn, "src", "k", "a")
	testenv.Eventually(t, wait, "a folded", func() bool { return records.Load() == 1 })
	if _, err := rn.Functions.PutFunction(ctx, function.Config{FunctionName: name, Handler: name + "-sqs"}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(60 * time.Second)
	testenv.Eventually(t, wait, "the problem reported", func() bool {
		return strings.Contains(shardStatus(t, rn, m.UUID).LastProcessingResult, "takes no kinesis events")
	})
	if ss := shardStatus(t, rn, m.UUID); sqsCalls.Load() != 0 || ss.WindowsClosed != 0 {
		t.Fatalf("the SQS handler was invoked %d times, %d windows closed: want the final invocation waiting", sqsCalls.Load(), ss.WindowsClosed)
	}
	if _, err := rn.Functions.PutFunction(ctx, function.Config{FunctionName: name, Handler: name}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, wait, "the window closed", func() bool { return shardStatus(t, rn, m.UUID).WindowsClosed == 1 })
	mu.Lock()
	defer mu.Unlock()
	if len(finals) != 1 || finals[0] != `{"N":1}` || sqsCalls.Load() != 0 {
		t.Fatalf("finals %q, SQS handler calls %d: want one final with the window's state, none to the SQS handler", finals, sqsCalls.Load())
	}
}
