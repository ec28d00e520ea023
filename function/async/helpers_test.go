package async_test

// Helpers shared by the async package's tests: the fake clock, recording
// functions, queues, invocations and the checks of destination records.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/function/async"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/queue"
)

const wait = 10 * time.Second

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newClock() *clockwork.FakeClock { return clockwork.NewFakeClockAt(t0) }

func ptr[T any](v T) *T { return &v }

// idle waits until n timers wait on the fake clock: each poller is back in
// its long poll and no invocation runs.
func idle(t *testing.T, clock *clockwork.FakeClock, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := clock.BlockUntilContext(ctx, n); err != nil {
		t.Fatalf("pollers not idle (%d timers): %v", n, err)
	}
}

// call is one invocation a recorder saw.
type call struct {
	payload string
	at      time.Time
}

// recorder is a function whose handler records its calls and answers
// with behave (nil: succeed with {"ok":true}).
type recorder struct {
	name  string
	mu    sync.Mutex
	calls []call
}

var handlerSeq atomic.Int64

// registerRecorder registers a handler that records into r.
func registerRecorder(r *recorder, clock func() time.Time, behave func(payload string) (json.RawMessage, error)) string {
	handler := fmt.Sprintf("async-test-%d", handlerSeq.Add(1))
	function.Register(handler, func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
		r.mu.Lock()
		r.calls = append(r.calls, call{string(in), clock()})
		r.mu.Unlock()
		if behave == nil {
			return json.RawMessage(`{"ok":true}`), nil
		}
		return behave(string(in))
	})
	return handler
}

func newFunction(t *testing.T, rn *runnel.Runnel, cfg function.Config, behave func(payload string) (json.RawMessage, error)) *recorder {
	t.Helper()
	if cfg.FunctionName == "" {
		cfg.FunctionName = "f"
	}
	r := &recorder{name: cfg.FunctionName}
	cfg.Handler = registerRecorder(r, rn.Engine.Clock.Now, behave)
	if _, err := rn.Functions.CreateFunction(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.calls)
}

func (r *recorder) call(i int) call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[i]
}

func fail(msg string) func(string) (json.RawMessage, error) {
	return func(string) (json.RawMessage, error) { return nil, errors.New(msg) }
}

func createQueue(t *testing.T, rn *runnel.Runnel, name string, attrs map[string]string) string {
	t.Helper()
	if _, err := rn.Queues.CreateQueue(context.Background(), name, attrs); err != nil {
		t.Fatal(err)
	}
	return rn.Queues.ARN(name)
}

// receiveAll takes every visible message of a queue.
func receiveAll(t *testing.T, rn *runnel.Runnel, name string) []queue.Message {
	t.Helper()
	var out []queue.Message
	for {
		zero := 0
		got, err := rn.Queues.ReceiveMessage(context.Background(), name, queue.ReceiveMessageInput{MaxNumberOfMessages: 10,
			WaitTimeSeconds: &zero, MessageAttributeNames: []string{"All"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 {
			return out
		}
		out = append(out, got...)
	}
}

// queueDepth is visible + in flight + delayed messages of a queue.
func queueDepth(t *testing.T, rn *runnel.Runnel, name string) int {
	t.Helper()
	a, err := rn.Queues.GetQueueAttributes(context.Background(), name, []string{"All"})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, k := range []string{queue.AttrApproximateNumberOfMessages, queue.AttrApproximateNumberOfMessagesNotVisible, queue.AttrApproximateNumberOfMessagesDelayed} {
		var v int
		fmt.Sscan(a[k], &v)
		n += v
	}
	return n
}

// delayedIn is the number of delayed messages in a queue, counted by the
// engine clock at the call.
func delayedIn(t *testing.T, rn *runnel.Runnel, name string) int {
	t.Helper()
	a, err := rn.Queues.GetQueueAttributes(context.Background(), name, []string{queue.AttrApproximateNumberOfMessagesDelayed})
	if err != nil {
		t.Fatal(err)
	}
	var v int
	fmt.Sscan(a[queue.AttrApproximateNumberOfMessagesDelayed], &v)
	return v
}

func waitStats(t *testing.T, rn *runnel.Runnel, fn, what string, cond func(async.Stats) bool) async.Stats {
	t.Helper()
	var st async.Stats
	testenv.Eventually(t, wait, what, func() bool { st = rn.Async.Stats(fn); return cond(st) })
	return st
}

// onlyMessage waits for exactly one message in a queue and returns it.
func onlyMessage(t *testing.T, rn *runnel.Runnel, name string) queue.Message {
	t.Helper()
	var got []queue.Message
	testenv.Eventually(t, wait, "a message in "+name, func() bool { got = append(got, receiveAll(t, rn, name)...); return len(got) > 0 })
	if len(got) != 1 {
		t.Fatalf("%s holds %d messages, want 1: %+v", name, len(got), got)
	}
	return got[0]
}

func invoke(t *testing.T, rn *runnel.Runnel, fn, typ, payload string) *async.InvokeOutput {
	t.Helper()
	out, err := rn.Async.Invoke(context.Background(), fn, typ, []byte(payload))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func put(t *testing.T, rn *runnel.Runnel, cfg async.EventInvokeConfig) {
	t.Helper()
	if _, err := rn.Async.PutFunctionEventInvokeConfig(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
}

func onFailure(arn string) *async.DestinationConfig {
	return &async.DestinationConfig{OnFailure: &async.OnFailure{Destination: arn}}
}

func awsTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// wantRecord compares a destination record with SPEC 3 field by field,
// then byte for byte (field order included).
func wantRecord(t *testing.T, body string, want map[string]any, exact string) {
	t.Helper()
	var got map[string]any
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatalf("record is not JSON: %v\n%s", err, body)
	}
	for _, k := range []string{"version", "timestamp", "requestContext", "requestPayload", "responseContext"} {
		if _, ok := got[k]; !ok {
			t.Errorf("record has no %s: %s", k, body)
		}
	}
	for k := range got {
		switch k {
		case "version", "timestamp", "requestContext", "requestPayload", "responseContext", "responsePayload":
		default:
			t.Errorf("record has an unexpected field %s: %s", k, body)
		}
	}
	for _, field := range []string{"version", "timestamp", "requestContext", "requestPayload", "responseContext", "responsePayload"} {
		w, ok := want[field]
		if !ok {
			continue
		}
		var wv any
		b, _ := json.Marshal(w)
		json.Unmarshal(b, &wv)
		if !reflect.DeepEqual(got[field], wv) {
			t.Errorf("%s = %s, want %s", field, mustJSON(got[field]), mustJSON(wv))
		}
	}
	if exact != "" && body != exact {
		t.Errorf("record bytes\n got %s\nwant %s", body, exact)
	}
}

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }
