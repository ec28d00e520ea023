package async_test

import (
	"encoding/json"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/function/async"
	"github.com/runnel-dev/runnel/internal/testenv"
)

// gate is a slow handler: each invocation counts itself running, records
// the most that ran at once, and waits for release.
type gate struct {
	running, most atomic.Int64
	release       chan struct{}
}

func newGate() *gate { return &gate{release: make(chan struct{})} }

func (g *gate) handle(string) (json.RawMessage, error) {
	n := g.running.Add(1)
	for m := g.most.Load(); n > m && !g.most.CompareAndSwap(m, n); m = g.most.Load() {
	}
	<-g.release
	g.running.Add(-1)
	return json.RawMessage(`{}`), nil
}

// The events of a function run up to the function's concurrency at once:
// its reserved concurrency when set, else the account's (1,000), as
// Lambda's ("If the function doesn't have enough concurrency available to
// process all events, additional requests are throttled",
// https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html).
// Before, a node ran at most 10 events of a function at once whatever its
// concurrency: of 20 Event invocations of a slow unreserved function with
// MaximumEventAgeInSeconds 60, 10 ran and 10 aged out (EventAgeExceeded)
// without ever being invoked.
func TestAsyncEventsRunUpToTheFunctionsConcurrency(t *testing.T) {
	clock := newClock()
	rn := testenv.Start(t, testenv.Options{Clock: clock})
	g := newGate()
	newFunction(t, rn, function.Config{Timeout: 900}, g.handle)
	put(t, rn, async.EventInvokeConfig{FunctionName: "f", MaximumEventAgeInSeconds: ptr(60)})
	const n = 25
	for i := range n {
		invoke(t, rn, "f", async.Event, strconv.Itoa(i))
	}
	testenv.Eventually(t, wait, "all 25 events running at once (unreserved: the account's 1,000)", func() bool { return g.running.Load() == n })
	clock.Advance(61 * time.Second) // older than the maximum age, but all were invoked in time
	close(g.release)
	st := waitStats(t, rn, "f", "all handled", func(s async.Stats) bool { return s.Handled == n })
	if st.Succeeded != n || st.EventAgeExceeded != 0 {
		t.Fatalf("succeeded %d, aged out %d; want %d and 0", st.Succeeded, st.EventAgeExceeded, n)
	}

	// A reservation of 3: 3 run at once, the others wait in the queue (not
	// taken to be throttled).
	r := newGate()
	newFunction(t, rn, function.Config{FunctionName: "r", Timeout: 900, ReservedConcurrentExecutions: ptr(3)}, r.handle)
	for i := range 10 {
		invoke(t, rn, "r", async.Event, strconv.Itoa(i))
	}
	testenv.Eventually(t, wait, "3 events of r running", func() bool { return r.running.Load() == 3 })
	close(r.release)
	st = waitStats(t, rn, "r", "all of r handled", func(s async.Stats) bool { return s.Handled == 10 })
	if st.Succeeded != 10 || st.Throttles != 0 || r.most.Load() != 3 {
		t.Fatalf("r: succeeded %d, throttled %d, at most %d at once; want 10, 0, 3", st.Succeeded, st.Throttles, r.most.Load())
	}
}
