package async_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/function/async"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/queue"
)

// An event's state rides with it in the message attributes of its
// function's internal queue, the last error object included when it fits
// the 1 MiB message. An event whose payload leaves no room for it is
// retried all the same, without it; one that leaves exactly room for it
// carries it to the dead-letter queue's ErrorMessage when it ages out.
func TestLastErrorRidesWithTheRetryOnlyWhenItFits(t *testing.T) {
	msg := strings.Repeat("x", 1024)
	errObj, _ := json.Marshal(struct {
		Message string `json:"errorMessage"`
		Type    string `json:"errorType"`
	}{msg, "errorString"})
	for _, c := range []struct {
		name  string
		extra int    // payload bytes beyond an exact fit
		want  string // the DLQ's ErrorMessage
	}{
		{"an event that leaves exactly room for the last error carries it", 0, msg},
		{"an event one byte larger is retried without it", 1, "EventAgeExceeded"},
	} {
		t.Run(c.name, func(t *testing.T) {
			clock := newClock()
			rn := testenv.Start(t, testenv.Options{Clock: clock})
			dlq := createQueue(t, rn, "dlq", map[string]string{queue.AttrMaximumMessageSize: "1048576"})
			f := newFunction(t, rn, function.Config{}, fail(msg))
			put(t, rn, async.EventInvokeConfig{FunctionName: "f", MaximumEventAgeInSeconds: ptr(60),
				DeadLetterConfig: &async.DeadLetterConfig{TargetArn: dlq}})
			// The retry's attributes: name, data type and value of each,
			// as SQS counts them towards the message size.
			out := invoke(t, rn, "f", async.Event, `"probe"`) // only for the request id's length
			waitLong(t, rn, "the probe's first attempt", func(s async.Stats) bool { return s.Handled == 1 })
			attrs := 0
			for _, a := range [][3]string{
				{"runnel.RequestId", "String", out.RequestID},
				{"runnel.EnqueuedAt", "Number", strconv.FormatInt(t0.UnixMilli(), 10)},
				{"runnel.InvokeCount", "Number", "1"},
				{"runnel.LastStatus", "Number", "200"},
				{"runnel.FunctionError", "String", "Unhandled"},
				{"runnel.LastError", "String", string(errObj)},
			} {
				attrs += len(a[0]) + len(a[1]) + len(a[2])
			}
			size := queue.MaxMaximumMessageSize - attrs + c.extra
			payload := `"` + strings.Repeat("a", size-2) + `"`
			invoke(t, rn, "f", async.Event, payload)
			waitLong(t, rn, "attempt 1 re-scheduled", func(s async.Stats) bool { return s.Handled == 2 && s.Retried == 2 })
			idle(t, clock, 1)
			clock.Advance(time.Minute) // exactly 60 s old: still run
			waitLong(t, rn, "attempt 2 re-scheduled", func(s async.Stats) bool { return s.Handled == 4 && s.Retried == 4 })
			idle(t, clock, 1)
			clock.Advance(2 * time.Minute) // now too old: EventAgeExceeded, with the last outcome
			waitLong(t, rn, "both events aged out", func(s async.Stats) bool { return s.EventAgeExceeded == 2 && s.Handled == 6 })
			if f.count() != 4 {
				t.Fatalf("%d attempts, want 2 of each event", f.count())
			}
			var got string
			for _, m := range receiveAll(t, rn, "dlq") {
				if m.Body == payload {
					got = *m.MessageAttributes["ErrorMessage"].StringValue
				}
			}
			if got != c.want {
				t.Fatalf("ErrorMessage of the large event %.30q (%d bytes), want %.30q (%d bytes)", got, len(got), c.want, len(c.want))
			}
		})
	}
}

// waitLong is waitStats with a longer bound: events of 1 MiB take a
// while to move through the queues under the race detector on a loaded
// machine. It only bounds the wait.
func waitLong(t *testing.T, rn *runnel.Runnel, what string, cond func(async.Stats) bool) {
	t.Helper()
	testenv.Eventually(t, time.Minute, what, func() bool { return cond(rn.Async.Stats("f")) })
}

// A throttled event goes back to the queue with a backoff that starts at
// 1 s and doubles with each throttle in a row (full jitter): after the
// k-th throttle it is due within 1 s to 2^(k-1) s. The throttle count
// rides with the event, so the bound grows.
func TestThrottleBackoffDoublesFromOneSecond(t *testing.T) {
	clock := newClock()
	rn := testenv.Start(t, testenv.Options{Clock: clock})
	entered, release := make(chan struct{}), make(chan struct{})
	newFunction(t, rn, function.Config{Timeout: 900, ReservedConcurrentExecutions: ptr(1)}, func(p string) (json.RawMessage, error) {
		if p == `"hold"` {
			close(entered)
			<-release
		}
		return nil, nil
	})
	held := make(chan struct{})
	go func() {
		defer close(held)
		rn.Async.Invoke(context.Background(), "f", async.RequestResponse, []byte(`"hold"`))
	}()
	defer func() { close(release); <-held }()
	<-entered
	invoke(t, rn, "f", async.Event, `{"order":42}`)
	internal := async.QueueName("f")
	later := 0 // throttles after which the event was not yet due at +1 s
	const throttles = 8
	// state reads the delayed count, then the throttle count: a re-throttle
	// counts its throttle before it sends the event back delayed, so a
	// delayed event seen with the throttle count still k is the k-th one.
	state := func() (delayed int, th int64) {
		delayed = delayedIn(t, rn, internal)
		return delayed, rn.Async.Stats("f").Throttles
	}
	for k := 1; k <= throttles; k++ {
		waitStats(t, rn, "f", fmt.Sprintf("throttle %d", k), func(s async.Stats) bool { return s.Throttles == int64(k) && s.Requeued == int64(k) })
		idle(t, clock, 2) // the poller and the held invocation's timeout
		if d := delayedIn(t, rn, internal); d != 1 {
			t.Fatalf("after throttle %d: %d delayed events, want 1 (at least 1 s)", k, d)
		}
		clock.Advance(time.Second)
		if d, th := state(); th != int64(k) || d != 1 {
			continue // due at +1 s: the poller takes it
		}
		if k == 1 {
			t.Fatal("after the first throttle the event is not due at +1 s")
		}
		later++
		bound := time.Duration(1<<(k-1)) * time.Second
		clock.Advance(bound - time.Second)
		if d, th := state(); th == int64(k) && d == 1 {
			t.Fatalf("after throttle %d the event is still delayed at +%v, want due within 2^(k-1) s", k, bound)
		}
	}
	// Uniform in [1, 2^(k-1)] s: the event is due at +1 s after each of
	// throttles 2..8 with probability 2^-28 if the bound doubles; it
	// always is if it stays at 1 s.
	if later == 0 {
		t.Fatalf("after each of %d throttles the event was due within 1 s: the backoff does not grow", throttles)
	}
}

// Options.Concurrency bounds how many events of one function run at once,
// above the 10 messages one receive can take: with 25, 25 events run
// together.
func TestEventsOfOneFunctionRunUpToTheServiceConcurrencyAtOnce(t *testing.T) {
	ctx := context.Background()
	rn := testenv.Start(t, testenv.Options{Clock: newClock()})
	rn.Async.Close() // the service below processes the events
	const n = 25
	svc, err := async.New(ctx, rn.Engine, rn.Functions, rn.Queues, rn.Streams, async.Options{Concurrency: n})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Close)
	var running atomic.Int64
	release := make(chan struct{})
	t.Cleanup(func() { close(release) }) // before svc.Close
	newFunction(t, rn, function.Config{}, func(string) (json.RawMessage, error) {
		running.Add(1)
		<-release
		return json.RawMessage(`{}`), nil
	})
	for i := range n {
		if _, err := svc.Invoke(ctx, "f", async.Event, []byte(strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, wait, fmt.Sprintf("%d events running at once", n), func() bool { return running.Load() == n })
}

// An Event invocation of a qualified function (a version) runs that
// version's code, not $LATEST's, and its record names the version.
func TestEventInvocationOfAVersionRunsThatVersion(t *testing.T) {
	ctx := context.Background()
	rn := testenv.Start(t, testenv.Options{Clock: newClock()})
	dest := createQueue(t, rn, "successes", nil)
	v1 := newFunction(t, rn, function.Config{}, nil)
	if _, err := rn.Functions.PublishVersion(ctx, "f", nil); err != nil {
		t.Fatal(err)
	}
	latest := &recorder{name: "f"}
	if _, err := rn.Functions.PutFunction(ctx, function.Config{FunctionName: "f", Handler: registerRecorder(latest, rn.Engine.Clock.Now, nil)}); err != nil {
		t.Fatal(err)
	}
	put(t, rn, async.EventInvokeConfig{FunctionName: "f:1",
		DestinationConfig: &async.DestinationConfig{OnSuccess: &async.OnSuccess{Destination: dest}}})
	out := invoke(t, rn, "f:1", async.Event, `{"order":42}`)
	waitStats(t, rn, "f", "the event", func(s async.Stats) bool { return s.Handled == 1 })
	if v1.count() != 1 || latest.count() != 0 {
		t.Fatalf("version 1 ran %d times, $LATEST %d times; want version 1 once", v1.count(), latest.count())
	}
	wantRecord(t, onlyMessage(t, rn, "successes").Body, map[string]any{
		"requestContext": map[string]any{"requestId": out.RequestID, "functionArn": rn.Functions.ARN("f") + ":1",
			"condition": "Success", "approximateInvokeCount": 1},
	}, "")
}

// A poller whose internal queue is deleted under it creates the queue
// again and goes on processing the function's events.
func TestDeletedInternalQueueIsCreatedAgain(t *testing.T) {
	ctx := context.Background()
	clock := newClock()
	rn := testenv.Start(t, testenv.Options{Clock: clock})
	f := newFunction(t, rn, function.Config{}, nil)
	invoke(t, rn, "f", async.Event, `1`)
	waitStats(t, rn, "f", "the first event", func(s async.Stats) bool { return s.Handled == 1 })
	idle(t, clock, 1)
	if err := rn.Queues.DeleteQueue(ctx, async.QueueName("f")); err != nil {
		t.Fatal(err)
	}
	invoke(t, rn, "f", async.Event, `2`)
	// The poller's receive fails (the queue is gone), it waits a second
	// and receives again from the queue created anew.
	received := func() bool {
		a, err := rn.Queues.GetQueueAttributes(ctx, async.QueueName("f"), []string{queue.AttrApproximateNumberOfMessages})
		return err == nil && a[queue.AttrApproximateNumberOfMessages] == "0"
	}
	for i := 0; !received(); i++ {
		if i == 60 {
			t.Fatalf("the second event was not received in 60 s: %d calls, stats %+v", f.count(), rn.Async.Stats("f"))
		}
		idle(t, clock, 1)
		clock.Advance(time.Second)
	}
	waitStats(t, rn, "f", "the second event", func(s async.Stats) bool { return s.Handled == 2 })
	if f.count() != 2 || f.call(1).payload != `2` {
		t.Fatalf("%d calls, want the second event run", f.count())
	}
}
