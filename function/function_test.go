package function_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/google/uuid"
	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/function"
)

// ---- helpers ----

var quiet = slog.New(slog.DiscardHandler)

func intp(n int) *int { return &n }

// newFn builds a Function with the real clock; inside a synctest bubble the
// real clock is the bubble's fake time.
func newFn(t *testing.T, cfg function.Config, h any) *function.Function {
	t.Helper()
	if cfg.FunctionName == "" {
		cfg.FunctionName = "fn"
	}
	f, err := function.New(cfg, h, clockwork.NewRealClock(), quiet)
	if err != nil {
		t.Fatalf("function.New(%+v): %v", cfg, err)
	}
	return f
}

func invoke(t *testing.T, f *function.Function, event any) *function.Result {
	t.Helper()
	res, err := f.Invoke(context.Background(), event)
	if err != nil {
		t.Fatalf("Invoke: unexpected error (function did not run): %v", err)
	}
	return res
}

func mustSucceed(t *testing.T, res *function.Result) {
	t.Helper()
	if res.Failed() || res.FunctionError != "" || res.Error != nil {
		t.Fatalf("invocation failed: FunctionError=%q Error=%v", res.FunctionError, res.Error)
	}
}

// payloadFields decodes an error payload and checks it carries exactly the
// fields aws-lambda-go's InvokeResponse_Error has.
func payloadFields(t *testing.T, payload []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(payload, &m); err != nil {
		t.Fatalf("error payload %q is not JSON: %v", payload, err)
	}
	for k := range m {
		switch k {
		case "errorMessage", "errorType", "stackTrace":
		default:
			t.Errorf("error payload has unexpected key %q: %s", k, payload)
		}
	}
	return m
}

func checkFunctionError(t *testing.T, res *function.Result, wantType, wantMessage string) {
	t.Helper()
	if !res.Failed() || res.FunctionError != function.FunctionErrorUnhandled {
		t.Fatalf("FunctionError = %q, want %q", res.FunctionError, function.FunctionErrorUnhandled)
	}
	if res.Error == nil {
		t.Fatal("Error = nil on a function error")
	}
	if res.Error.Type != wantType {
		t.Errorf("errorType = %q, want %q", res.Error.Type, wantType)
	}
	if res.Error.Message != wantMessage {
		t.Errorf("errorMessage = %q, want %q", res.Error.Message, wantMessage)
	}
	m := payloadFields(t, res.Payload)
	if m["errorType"] != wantType || m["errorMessage"] != wantMessage {
		t.Errorf("Payload = %s, want errorType %q errorMessage %q", res.Payload, wantType, wantMessage)
	}
	if res.Response != nil {
		t.Errorf("Response = %#v on a function error, want nil", res.Response)
	}
}

type kinesisErrHandler = func(context.Context, events.KinesisEvent) error

var emptyEvent = &events.KinesisEvent{}

// ---- 1. Timeout ----

func TestTimeoutIsAFunctionErrorSandboxTimedout(t *testing.T) {
	behaviours := []struct {
		name    string
		handler func(timeout time.Duration) kinesisErrHandler
	}{
		{"handler ignoring its context is abandoned at the deadline", func(timeout time.Duration) kinesisErrHandler {
			return func(ctx context.Context, _ events.KinesisEvent) error {
				time.Sleep(timeout + 10*time.Second)
				return nil
			}
		}},
		{"handler returning ctx.Err() at ctx.Done ends as a timeout", func(time.Duration) kinesisErrHandler {
			return func(ctx context.Context, _ events.KinesisEvent) error {
				<-ctx.Done()
				return ctx.Err()
			}
		}},
		{"handler wrapping ctx.Err() at ctx.Done ends as a timeout", func(time.Duration) kinesisErrHandler {
			return func(ctx context.Context, _ events.KinesisEvent) error {
				<-ctx.Done()
				return fmt.Errorf("gave up: %w", ctx.Err())
			}
		}},
		{"handler returning nil at ctx.Done ends as a timeout", func(time.Duration) kinesisErrHandler {
			return func(ctx context.Context, _ events.KinesisEvent) error {
				<-ctx.Done()
				return nil
			}
		}},
	}
	for _, timeout := range []int{3, 900} {
		for _, b := range behaviours {
			t.Run(fmt.Sprintf("Timeout=%d/%s", timeout, b.name), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					d := time.Duration(timeout) * time.Second
					f := newFn(t, function.Config{Timeout: timeout}, b.handler(d))
					const n = 20 // repeat: the outcome must not depend on scheduling
					for i := range n {
						res := invoke(t, f, emptyEvent)
						checkFunctionError(t, res, function.TimeoutErrorType,
							fmt.Sprintf("Task timed out after %d.00 seconds", timeout))
						if res.Error.Type != "Sandbox.Timedout" {
							t.Fatalf("invocation %d: TimeoutErrorType constant drifted: %q", i, res.Error.Type)
						}
						if res.Duration < d || res.Duration > d+time.Second {
							t.Errorf("Duration = %v, want about %v", res.Duration, d)
						}
					}
					synctest.Wait()
					time.Sleep(d + 11*time.Second) // let ignoring handlers return
					st := f.Stats()
					if st.Invocations != n || st.Errors != n {
						t.Errorf("Stats = %+v, want %d invocations and %d errors", st, n, n)
					}
				})
			})
		}
	}
}

func TestTimeoutIsTheHandlersContextDeadline(t *testing.T) {
	for _, timeout := range []int{1, 3, 60, 900} {
		t.Run(fmt.Sprintf("Timeout=%d", timeout), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var left time.Duration
				var hasDeadline bool
				f := newFn(t, function.Config{Timeout: timeout}, func(ctx context.Context, _ events.KinesisEvent) error {
					var dl time.Time
					dl, hasDeadline = ctx.Deadline()
					left = time.Until(dl)
					return nil
				})
				mustSucceed(t, invoke(t, f, emptyEvent))
				if !hasDeadline {
					t.Fatal("handler context has no deadline")
				}
				if want := time.Duration(timeout) * time.Second; left != want {
					t.Errorf("deadline is %v away, want %v", left, want)
				}
			})
		})
	}
}

func TestTimeoutDefaultIsThreeSeconds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFn(t, function.Config{}, func(ctx context.Context, _ events.KinesisEvent) error {
			<-ctx.Done()
			return nil
		})
		res := invoke(t, f, emptyEvent)
		checkFunctionError(t, res, function.TimeoutErrorType, "Task timed out after 3.00 seconds")
		if res.Duration != 3*time.Second {
			t.Errorf("Duration = %v, want 3s", res.Duration)
		}
	})
}

func TestHandlerFinishingBeforeTheDeadlineSucceeds(t *testing.T) {
	for _, timeout := range []int{3, 900} {
		t.Run(fmt.Sprintf("Timeout=%d", timeout), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				d := time.Duration(timeout)*time.Second - time.Millisecond
				f := newFn(t, function.Config{Timeout: timeout}, function.KinesisHandler(
					func(ctx context.Context, _ events.KinesisEvent) (events.KinesisEventResponse, error) {
						time.Sleep(d)
						return events.KinesisEventResponse{}, ctx.Err()
					}))
				res := invoke(t, f, emptyEvent)
				mustSucceed(t, res)
				if res.Duration != d {
					t.Errorf("Duration = %v, want %v", res.Duration, d)
				}
				if st := f.Stats(); st.Errors != 0 || st.Invocations != 1 || st.TotalDuration != d {
					t.Errorf("Stats = %+v", st)
				}
			})
		})
	}
}

// ---- 2. Errors ----

type quotaError struct{ Limit int }

func (e quotaError) Error() string { return fmt.Sprintf("quota %d exceeded", e.Limit) }

type lockError struct{ Key string }

func (e *lockError) Error() string { return "lock held on " + e.Key }

func TestHandlerErrorTypeIsTheGoTypeNameAsAwsLambdaGoReportsIt(t *testing.T) {
	base := errors.New("disk full")
	cases := []struct {
		name     string
		err      error
		wantType string
	}{
		{"errors.New is errorString", errors.New("bad record"), "errorString"},
		{"fmt.Errorf without %w is errorString", fmt.Errorf("bad record %d", 7), "errorString"},
		{"fmt.Errorf with %w is wrapError", fmt.Errorf("write: %w", base), "wrapError"},
		{"fmt.Errorf with two %w is wrapErrors", fmt.Errorf("%w and %w", base, base), "wrapErrors"},
		{"errors.Join is joinError", errors.Join(base, base), "joinError"},
		{"struct error by value is its type name", quotaError{Limit: 5}, "quotaError"},
		{"struct error by pointer is its type name", &lockError{Key: "k"}, "lockError"},
		{"context.Canceled (an errors.New value) is errorString", context.Canceled, "errorString"},
	}
	shapes := []struct {
		name string
		mk   func(err error) any
	}{
		{"KinesisHandler", func(err error) any {
			return function.KinesisHandler(func(context.Context, events.KinesisEvent) (events.KinesisEventResponse, error) {
				return events.KinesisEventResponse{}, err
			})
		}},
		{"func(ctx, KinesisEvent) error", func(err error) any {
			return func(context.Context, events.KinesisEvent) error { return err }
		}},
		{"func(ctx, T) (U, error)", func(err error) any {
			return func(context.Context, orderIn) (orderOut, error) { return orderOut{}, err }
		}},
	}
	for _, c := range cases {
		for _, s := range shapes {
			t.Run(s.name+"/"+c.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					f := newFn(t, function.Config{}, s.mk(c.err))
					res := invoke(t, f, &events.KinesisEvent{})
					checkFunctionError(t, res, c.wantType, c.err.Error())
					if res.Error.StackTrace != nil {
						t.Errorf("stackTrace = %v on a returned error, want none (only panics have one)", res.Error.StackTrace)
					}
					if strings.Contains(string(res.Payload), "stackTrace") {
						t.Errorf("Payload %s has a stackTrace", res.Payload)
					}
					if st := f.Stats(); st.Errors != 1 || st.Invocations != 1 {
						t.Errorf("Stats = %+v, want 1 invocation, 1 error", st)
					}
				})
			})
		}
	}
}

func TestHandlerErrorPayloadIsTheRuntimeErrorJSON(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFn(t, function.Config{}, func(context.Context, events.KinesisEvent) error {
			return errors.New(`bad "record"`)
		})
		res := invoke(t, f, emptyEvent)
		want := `{"errorMessage":"bad \"record\"","errorType":"errorString"}`
		if string(res.Payload) != want {
			t.Errorf("Payload = %s, want %s", res.Payload, want)
		}
	})
}

func TestReturnedInvokeErrorIsPassedThrough(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ie := &function.InvokeError{Message: "custom", Type: "My.Type"}
		f := newFn(t, function.Config{}, func(context.Context, events.KinesisEvent) error { return ie })
		checkFunctionError(t, invoke(t, f, emptyEvent), "My.Type", "custom")
	})
}

// ---- 3. Panics ----

var panicLine int

// panicSite panics with v; panicLine is the line of the panic call.
func panicSite(v any) {
	_, _, line, _ := runtime.Caller(0)
	panicLine = line + 2
	panic(v)
}

func TestPanicIsAFunctionErrorWithTheValuesTypeAndAStackTrace(t *testing.T) {
	cases := []struct {
		name              string
		value             any
		wantType, wantMsg string
	}{
		{`panic("boom") is string`, "boom", "string", "boom"},
		{`panic(errors.New) is errorString`, errors.New("x"), "errorString", "x"},
		{`panic(fmt.Errorf %w) is wrapError`, fmt.Errorf("y: %w", errors.New("x")), "wrapError", "y: x"},
		{`panic(custom pointer error) is its type name`, &lockError{Key: "k"}, "lockError", "lock held on k"},
		{`panic(42) is int`, 42, "int", "42"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var calls atomic.Int32
				f := newFn(t, function.Config{ReservedConcurrentExecutions: intp(1)}, func(context.Context, events.KinesisEvent) error {
					if calls.Add(1) == 1 {
						panicSite(c.value)
					}
					return nil
				})
				res := invoke(t, f, emptyEvent)
				checkFunctionError(t, res, c.wantType, c.wantMsg)
				st := res.Error.StackTrace
				if len(st) == 0 {
					t.Fatal("stackTrace is empty on a panic")
				}
				top := st[0]
				if !strings.HasSuffix(top.Path, "function_test.go") || int(top.Line) != panicLine || !strings.HasSuffix(top.Label, "panicSite") {
					t.Errorf("top frame = %+v, want the panic site function_test.go:%d panicSite", top, panicLine)
				}
				for _, fr := range st {
					if fr.Path == "" || fr.Line <= 0 || fr.Label == "" {
						t.Errorf("incomplete frame %+v", fr)
					}
				}
				m := payloadFields(t, res.Payload)
				frames, ok := m["stackTrace"].([]any)
				if !ok || len(frames) != len(st) {
					t.Fatalf("Payload stackTrace = %v, want %d frames", m["stackTrace"], len(st))
				}
				fr0, _ := frames[0].(map[string]any)
				for _, k := range []string{"path", "line", "label"} {
					if _, ok := fr0[k]; !ok {
						t.Errorf("payload frame %v lacks %q", fr0, k)
					}
				}

				// The function keeps working: the slot came back and the next
				// invocation succeeds.
				synctest.Wait()
				mustSucceed(t, invoke(t, f, emptyEvent))
				if s := f.Stats(); s.Invocations != 2 || s.Errors != 1 || s.Throttles != 0 {
					t.Errorf("Stats = %+v, want 2 invocations, 1 error, 0 throttles", s)
				}
			})
		})
	}
}

type thrower struct{}

func (*thrower) boom() { panic("method boom") }

// algLabel is aws-lambda-go's formatFrame label: the function name without
// its package path and package name ("(*thrower).boom", "Test.func1").
func algLabel(fn string) string {
	fn = fn[strings.LastIndex(fn, "/")+1:]
	return fn[strings.Index(fn, ".")+1:]
}

func TestPanicStackFrameLabelsAreAwsLambdaGos(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFn(t, function.Config{}, func(context.Context, events.KinesisEvent) error {
			(&thrower{}).boom()
			return nil
		})
		res := invoke(t, f, emptyEvent)
		checkFunctionError(t, res, "string", "method boom")
		want := algLabel(runtime.FuncForPC(reflect.ValueOf((*thrower).boom).Pointer()).Name())
		if got := res.Error.StackTrace[0].Label; got != want {
			t.Errorf("top frame label = %q, want %q (aws-lambda-go's)", got, want)
		}
	})
}

// ---- 4. ReservedConcurrentExecutions ----

func TestReservedConcurrencyThrottlesBeyondTheLimit(t *testing.T) {
	cases := []struct {
		name     string
		reserved *int
		limit    int
	}{
		{"reserved 2 admits 2 concurrent invocations", intp(2), 2},
		{"reserved 1 admits 1", intp(1), 1},
		{"unreserved is bounded by the account limit 1000", nil, function.DefaultAccountConcurrency},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var wg sync.WaitGroup
				defer wg.Wait()
				release := make(chan struct{})
				unblock := sync.OnceFunc(func() { close(release) })
				defer unblock() // a failed check must not leave handlers blocked in the bubble
				var ran atomic.Int64
				f := newFn(t, function.Config{ReservedConcurrentExecutions: c.reserved}, func(ctx context.Context, _ events.KinesisEvent) error {
					ran.Add(1)
					<-release
					return nil
				})
				for range c.limit {
					wg.Go(func() {
						res, err := f.Invoke(context.Background(), emptyEvent)
						if err != nil || res.Failed() {
							t.Errorf("admitted invocation: err=%v res=%+v", err, res)
						}
					})
				}
				synctest.Wait() // all admitted handlers are blocked in the handler
				if got := f.Stats().ConcurrentExecutions; got != int64(c.limit) {
					t.Fatalf("ConcurrentExecutions = %d, want %d", got, c.limit)
				}

				res, err := f.Invoke(context.Background(), emptyEvent)
				if !errors.Is(err, awserr.ErrTooManyRequests) {
					t.Fatalf("invocation beyond the limit: err = %v, want ErrTooManyRequests", err)
				}
				if res != nil {
					t.Errorf("throttled invocation returned a Result %+v", res)
				}
				synctest.Wait()
				if got := ran.Load(); got != int64(c.limit) {
					t.Errorf("handler ran %d times, want %d (the throttled one must not run)", got, c.limit)
				}
				st := f.Stats()
				if st.Throttles != 1 || st.Invocations != int64(c.limit) || st.Errors != 0 {
					t.Errorf("Stats = %+v, want 1 throttle, %d invocations, 0 errors", st, c.limit)
				}

				unblock()
				wg.Wait()
				synctest.Wait()
				if got := f.Stats().ConcurrentExecutions; got != 0 {
					t.Errorf("ConcurrentExecutions after all returned = %d, want 0", got)
				}
				mustSucceed(t, invoke(t, f, emptyEvent))
			})
		})
	}
}

func TestReservedConcurrencyZeroThrottlesEveryInvocation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var ran atomic.Int64
		f := newFn(t, function.Config{ReservedConcurrentExecutions: intp(0)}, func(context.Context, events.KinesisEvent) error {
			ran.Add(1)
			return nil
		})
		const n = 5
		for i := range n {
			res, err := f.Invoke(context.Background(), emptyEvent)
			if !errors.Is(err, awserr.ErrTooManyRequests) || res != nil {
				t.Fatalf("invocation %d: res=%v err=%v, want ErrTooManyRequests", i, res, err)
			}
		}
		synctest.Wait()
		if ran.Load() != 0 {
			t.Errorf("handler ran %d times with reserved concurrency 0", ran.Load())
		}
		if st := f.Stats(); st.Throttles != n || st.Invocations != 0 {
			t.Errorf("Stats = %+v, want %d throttles, 0 invocations", st, n)
		}
	})
}

// The slot of an invocation is free once Invoke has returned: back-to-back
// invocations of a function with reserved concurrency 1 are never throttled,
// whatever the previous one ended with.
func TestConcurrencySlotIsReleasedWhenInvokeReturns(t *testing.T) {
	endings := []struct {
		name string
		h    kinesisErrHandler
		fail bool
	}{
		{"after success", func(context.Context, events.KinesisEvent) error { return nil }, false},
		{"after an error", func(context.Context, events.KinesisEvent) error { return errors.New("x") }, true},
		{"after a panic", func(context.Context, events.KinesisEvent) error { panic("boom") }, true},
	}
	for _, e := range endings {
		t.Run(e.name, func(t *testing.T) {
			// Outside a bubble on purpose: real scheduling, nothing here
			// depends on time.
			f := newFn(t, function.Config{ReservedConcurrentExecutions: intp(1)}, e.h)
			const n = 20000
			for i := range n {
				res, err := f.Invoke(context.Background(), emptyEvent)
				if err != nil {
					t.Fatalf("invocation %d right after the previous returned: %v (slot not released)", i, err)
				}
				if res.Failed() != e.fail {
					t.Fatalf("invocation %d: Failed() = %v, want %v", i, res.Failed(), e.fail)
				}
				if c := f.Stats().ConcurrentExecutions; c != 0 {
					t.Fatalf("invocation %d: ConcurrentExecutions = %d after Invoke returned, want 0", i, c)
				}
			}
			if st := f.Stats(); st.Throttles != 0 || st.Invocations != n {
				t.Errorf("Stats = %+v", st)
			}
		})
	}
}

// The same rule, tolerant of the goroutine hand-off: once the handler's
// goroutine has finished (synctest.Wait), the slot is free again.
func TestConcurrencySlotIsReleasedAfterEveryEnding(t *testing.T) {
	endings := []struct {
		name string
		h    kinesisErrHandler
		fail bool
	}{
		{"after success", func(context.Context, events.KinesisEvent) error { return nil }, false},
		{"after an error", func(context.Context, events.KinesisEvent) error { return errors.New("x") }, true},
		{"after a panic", func(context.Context, events.KinesisEvent) error { panic("boom") }, true},
		{"after a timeout honoured by the handler", func(ctx context.Context, _ events.KinesisEvent) error {
			<-ctx.Done()
			return ctx.Err()
		}, true},
	}
	for _, e := range endings {
		t.Run(e.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFn(t, function.Config{ReservedConcurrentExecutions: intp(1)}, e.h)
				for i := range 3 {
					res := invoke(t, f, emptyEvent)
					if res.Failed() != e.fail {
						t.Fatalf("invocation %d: Failed() = %v, want %v", i, res.Failed(), e.fail)
					}
					synctest.Wait()
					if c := f.Stats().ConcurrentExecutions; c != 0 {
						t.Fatalf("invocation %d: ConcurrentExecutions = %d, want 0", i, c)
					}
				}
				if st := f.Stats(); st.Throttles != 0 || st.Invocations != 3 {
					t.Errorf("Stats = %+v, want 3 invocations, 0 throttles", st)
				}
			})
		})
	}
}

// Documented trap: a handler that ignores its context is abandoned at the
// deadline but keeps its concurrency slot until it actually returns.
// Lambda stops an environment that runs out of time, and its concurrency
// is free again at once. An in-process handler that ignores its context
// cannot be stopped: runnel frees the slot at the deadline and counts the
// invocation as abandoned while its goroutine runs on.
func TestTimedOutHandlerFreesItsSlotAtTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		f := newFn(t, function.Config{Timeout: 3, ReservedConcurrentExecutions: intp(1)}, func(context.Context, events.KinesisEvent) error {
			if calls.Add(1) == 1 {
				time.Sleep(10 * time.Second) // ignores ctx
			}
			return nil
		})
		start := time.Now()
		res := invoke(t, f, emptyEvent)
		checkFunctionError(t, res, function.TimeoutErrorType, "Task timed out after 3.00 seconds")
		if el := time.Since(start); el != 3*time.Second {
			t.Errorf("Invoke returned after %v, want 3s (abandoned at the deadline)", el)
		}
		synctest.Wait()
		if st := f.Stats(); st.ConcurrentExecutions != 0 || st.Abandoned != 1 {
			t.Errorf("after the timeout: %+v, want ConcurrentExecutions 0 and Abandoned 1", st)
		}
		// The slot is free although the abandoned handler still runs.
		mustSucceed(t, invoke(t, f, emptyEvent))
		time.Sleep(7 * time.Second) // the abandoned handler returns at 10s
		synctest.Wait()
		if c := f.Stats().ConcurrentExecutions; c != 0 {
			t.Errorf("ConcurrentExecutions after the handler returned = %d, want 0 (released once)", c)
		}
		mustSucceed(t, invoke(t, f, emptyEvent))
		if st := f.Stats(); st.Throttles != 0 || st.Invocations != 3 || st.Errors != 1 {
			t.Errorf("Stats = %+v, want 3 invocations, 1 error, no throttle", st)
		}
	})
}

// ---- 5. Handler shapes ----

type orderIn struct {
	ID    string `json:"id"`
	Items int    `json:"items"`
}

type orderOut struct {
	ID     string `json:"id"`
	Double int    `json:"double"`
}

func sampleEvent() *events.KinesisEvent {
	return &events.KinesisEvent{Records: []events.KinesisEventRecord{{
		AwsRegion:      "us-east-1",
		EventID:        "shardId-000000000000:49590338271490256608559692538361571095921575989136588898",
		EventName:      "aws:kinesis:record",
		EventSource:    "aws:kinesis",
		EventSourceArn: "arn:aws:kinesis:us-east-1:000000000000:stream/orders",
		EventVersion:   "1.0",
		Kinesis: events.KinesisRecord{
			ApproximateArrivalTimestamp: events.SecondsEpochTime{Time: time.Unix(1700000000, 0)},
			Data:                        []byte(`{"id":"o-1"}`),
			PartitionKey:                "pk-1",
			SequenceNumber:              "49590338271490256608559692538361571095921575989136588898",
			KinesisSchemaVersion:        "1.0",
		},
	}}}
}

func TestKinesisHandlerGetsTheTypedEventAndReturnsATypedResponse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ev := sampleEvent()
		var got events.KinesisEvent
		f := newFn(t, function.Config{}, function.KinesisHandler(func(_ context.Context, e events.KinesisEvent) (events.KinesisEventResponse, error) {
			got = e
			return events.KinesisEventResponse{BatchItemFailures: []events.KinesisBatchItemFailure{
				{ItemIdentifier: e.Records[0].Kinesis.SequenceNumber},
			}}, nil
		}))
		res := invoke(t, f, ev)
		mustSucceed(t, res)
		if len(got.Records) != 1 || &got.Records[0] != &ev.Records[0] {
			t.Errorf("handler did not get the caller's event as is (no JSON round trip)")
		}
		resp, ok := res.Response.(*events.KinesisEventResponse)
		if !ok {
			t.Fatalf("Response is %T, want *events.KinesisEventResponse", res.Response)
		}
		if len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != ev.Records[0].Kinesis.SequenceNumber {
			t.Errorf("Response = %+v", resp)
		}
	})
}

func TestKinesisHandlerGetsAnEventPassedAsJSON(t *testing.T) {
	for _, c := range []struct {
		name  string
		event func() any
	}{
		{"events.KinesisEvent by value", func() any { return *sampleEvent() }},
		{"raw JSON bytes", func() any { b, _ := json.Marshal(sampleEvent()); return b }},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var got events.KinesisEvent
				f := newFn(t, function.Config{}, func(_ context.Context, e events.KinesisEvent) error {
					got = e
					return nil
				})
				res := invoke(t, f, c.event())
				mustSucceed(t, res)
				want := sampleEvent().Records[0]
				if len(got.Records) != 1 {
					t.Fatalf("handler got %d records", len(got.Records))
				}
				g := got.Records[0]
				if string(g.Kinesis.Data) != string(want.Kinesis.Data) || g.Kinesis.SequenceNumber != want.Kinesis.SequenceNumber ||
					g.EventSourceArn != want.EventSourceArn || !g.Kinesis.ApproximateArrivalTimestamp.Equal(want.Kinesis.ApproximateArrivalTimestamp.Time) {
					t.Errorf("handler got %+v, want %+v", g, want)
				}
				if _, ok := res.Response.(*events.KinesisEventResponse); !ok {
					t.Errorf("Response is %T, want *events.KinesisEventResponse", res.Response)
				}
			})
		})
	}
}

func TestPlainHandlerGetsJSONAndReturnsPayloadJSON(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFn(t, function.Config{}, func(_ context.Context, in orderIn) (orderOut, error) {
			return orderOut{ID: in.ID, Double: 2 * in.Items}, nil
		})
		res := invoke(t, f, orderIn{ID: "o-7", Items: 21})
		mustSucceed(t, res)
		var out orderOut
		if err := json.Unmarshal(res.Payload, &out); err != nil {
			t.Fatalf("Payload %q is not JSON: %v", res.Payload, err)
		}
		if out != (orderOut{ID: "o-7", Double: 42}) {
			t.Errorf("Payload = %s", res.Payload)
		}
		if res.Response != nil {
			t.Errorf("Response = %#v, want nil for a JSON handler", res.Response)
		}
	})
}

// A Result's Payload belongs to the caller: later invocations must not
// change it.
func TestPlainHandlerPayloadIsNotOverwrittenByTheNextInvocation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFn(t, function.Config{}, func(_ context.Context, in orderIn) (orderOut, error) {
			return orderOut{ID: in.ID, Double: 2 * in.Items}, nil
		})
		first := invoke(t, f, orderIn{ID: "AAAA", Items: 1})
		want := string(first.Payload)
		for i := range 5 {
			invoke(t, f, orderIn{ID: fmt.Sprintf("BBBB%d", i), Items: 2})
		}
		if got := string(first.Payload); got != want {
			t.Errorf("first Payload changed from %q to %q after later invocations", want, got)
		}
	})
}

type rawHandler struct {
	got []byte
	out []byte
}

func (h *rawHandler) Invoke(_ context.Context, payload []byte) ([]byte, error) {
	h.got = append([]byte(nil), payload...)
	return h.out, nil
}

var _ lambda.Handler = (*rawHandler)(nil)

func TestLambdaHandlerGetsRawBytes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &rawHandler{out: []byte(`{"ok":true}`)}
		f := newFn(t, function.Config{}, h)
		in := []byte(`{"b": [1, 2,3] }`) // bytes are passed as they are, not re-encoded
		res := invoke(t, f, in)
		mustSucceed(t, res)
		if string(h.got) != string(in) {
			t.Errorf("handler got %q, want %q", h.got, in)
		}
		if string(res.Payload) != `{"ok":true}` {
			t.Errorf("Payload = %q", res.Payload)
		}
		if res.Response != nil {
			t.Errorf("Response = %#v, want nil", res.Response)
		}
	})
}

// The event a raw handler receives is the JSON of the event passed.
func TestRawHandlerReceivesTheEventAsJSON(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &rawHandler{}
		f := newFn(t, function.Config{}, h)
		ev := sampleEvent()
		mustSucceed(t, invoke(t, f, ev))
		if !json.Valid(h.got) {
			t.Fatalf("handler got invalid JSON %q", h.got)
		}
		var raw struct {
			Records []struct {
				EventSource    string `json:"eventSource"`
				EventSourceARN string `json:"eventSourceARN"`
				Kinesis        struct {
					Data                        string  `json:"data"`
					PartitionKey                string  `json:"partitionKey"`
					SequenceNumber              string  `json:"sequenceNumber"`
					ApproximateArrivalTimestamp float64 `json:"approximateArrivalTimestamp"`
				} `json:"kinesis"`
			} `json:"Records"`
		}
		if err := json.Unmarshal(h.got, &raw); err != nil {
			t.Fatal(err)
		}
		if len(raw.Records) != 1 {
			t.Fatalf("JSON %s has %d Records", h.got, len(raw.Records))
		}
		r := raw.Records[0]
		if r.EventSource != "aws:kinesis" || r.EventSourceARN != ev.Records[0].EventSourceArn ||
			r.Kinesis.Data != "eyJpZCI6Im8tMSJ9" || r.Kinesis.PartitionKey != "pk-1" ||
			r.Kinesis.SequenceNumber != ev.Records[0].Kinesis.SequenceNumber ||
			r.Kinesis.ApproximateArrivalTimestamp != 1700000000 {
			t.Errorf("handler got %s", h.got)
		}
	})
}

func TestHandlerContextCarriesLambdaContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var ids []string
		var ok bool
		f := newFn(t, function.Config{}, func(ctx context.Context, _ events.KinesisEvent) error {
			var lc *lambdacontext.LambdaContext
			lc, ok = lambdacontext.FromContext(ctx)
			if ok {
				ids = append(ids, lc.AwsRequestID)
			}
			return nil
		})
		seen := map[string]bool{}
		for i := range 3 {
			res := invoke(t, f, emptyEvent)
			if !ok {
				t.Fatal("lambdacontext.FromContext: no LambdaContext")
			}
			if ids[i] != res.RequestID {
				t.Errorf("AwsRequestID = %q, Result.RequestID = %q", ids[i], res.RequestID)
			}
			if _, err := uuid.Parse(res.RequestID); err != nil {
				t.Errorf("RequestID %q is not a UUID: %v", res.RequestID, err)
			}
			if seen[res.RequestID] {
				t.Errorf("RequestID %q reused", res.RequestID)
			}
			seen[res.RequestID] = true
		}
	})
}

func TestEnvReturnsTheFunctionsEnvironment(t *testing.T) {
	cases := []struct {
		name string
		env  map[string]string
	}{
		{"environment set", map[string]string{"TABLE": "orders", "STAGE": "test"}},
		{"no environment", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var got map[string]string
				f := newFn(t, function.Config{Environment: c.env}, func(ctx context.Context, _ events.KinesisEvent) error {
					got = function.Env(ctx)
					return nil
				})
				mustSucceed(t, invoke(t, f, emptyEvent))
				if !reflect.DeepEqual(got, c.env) {
					t.Errorf("Env(ctx) = %v, want %v", got, c.env)
				}
			})
		})
	}
	if function.Env(context.Background()) != nil {
		t.Error("Env outside a handler is not nil")
	}
}

func TestHandlerThatIsNotAFunctionIsRejected(t *testing.T) {
	for _, h := range []any{42, "handler", nil} {
		if _, err := function.New(function.Config{FunctionName: "f"}, h, nil, quiet); !errors.Is(err, awserr.ErrInvalidParameterValue) {
			t.Errorf("New with handler %#v: err = %v, want ErrInvalidParameterValue", h, err)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("Register with a non-function did not panic")
		}
	}()
	function.Register("function_test.not-a-function", 42)
}

// Invoke's doc: it returns an error only when the function did not run,
// a throttle or "an event that does not encode".
func TestEventThatDoesNotEncodeIsAnInvokeError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFn(t, function.Config{}, &rawHandler{})
		res, err := f.Invoke(context.Background(), make(chan int))
		if err == nil {
			t.Fatalf("Invoke with an unencodable event: err = nil, res = %+v", res)
		}
		if st := f.Stats(); st.Errors != 0 || st.Invocations != 0 {
			t.Errorf("Stats = %+v, want the function not run", st)
		}
	})
}

// ---- 6. Config validation ----

func TestConfigValidationFollowsTheLambdaAPIRanges(t *testing.T) {
	cases := []struct {
		name     string
		cfg      function.Config
		wantErr  []string // substrings of the message; nil = valid
		validate func(t *testing.T, c function.Config)
	}{
		{name: "Timeout 0 defaults to 3", cfg: function.Config{Timeout: 0}, validate: func(t *testing.T, c function.Config) {
			if c.Timeout != 3 {
				t.Errorf("Timeout = %d, want 3", c.Timeout)
			}
		}},
		{name: "MemorySize 0 defaults to 128", cfg: function.Config{}, validate: func(t *testing.T, c function.Config) {
			if c.MemorySize != 128 {
				t.Errorf("MemorySize = %d, want 128", c.MemorySize)
			}
		}},
		{name: "Timeout 1 is the minimum", cfg: function.Config{Timeout: 1}},
		{name: "Timeout 900 is the maximum", cfg: function.Config{Timeout: 900}},
		{name: "Timeout 901 is rejected", cfg: function.Config{Timeout: 901}, wantErr: []string{"Timeout", "901", "1 and 900"}},
		{name: "Timeout -1 is rejected", cfg: function.Config{Timeout: -1}, wantErr: []string{"Timeout", "1 and 900"}},
		{name: "MemorySize 128 is the minimum", cfg: function.Config{MemorySize: 128}},
		{name: "MemorySize 10240 is the maximum", cfg: function.Config{MemorySize: 10240}},
		{name: "MemorySize 127 is rejected", cfg: function.Config{MemorySize: 127}, wantErr: []string{"MemorySize", "127", "128 and 10240"}},
		{name: "MemorySize 10241 is rejected", cfg: function.Config{MemorySize: 10241}, wantErr: []string{"MemorySize", "10241", "128 and 10240"}},
		{name: "ReservedConcurrentExecutions 0 is allowed", cfg: function.Config{ReservedConcurrentExecutions: intp(0)}},
		{name: "ReservedConcurrentExecutions 1000 is allowed", cfg: function.Config{ReservedConcurrentExecutions: intp(1000)}},
		{name: "ReservedConcurrentExecutions -1 is rejected", cfg: function.Config{ReservedConcurrentExecutions: intp(-1)}, wantErr: []string{"ReservedConcurrentExecutions", "0 and 1000"}},
		{name: "ReservedConcurrentExecutions 1001 is rejected", cfg: function.Config{ReservedConcurrentExecutions: intp(1001)}, wantErr: []string{"ReservedConcurrentExecutions", "1001", "0 and 1000"}},
		{name: "FunctionName of letters, digits, - and _ is allowed", cfg: function.Config{FunctionName: "My-func_01"}},
		{name: "FunctionName of 64 characters is allowed", cfg: function.Config{FunctionName: strings.Repeat("a", 64)}},
		{name: "FunctionName empty is rejected", cfg: function.Config{FunctionName: ""}, wantErr: []string{"FunctionName"}},
		{name: "FunctionName of 65 characters is rejected", cfg: function.Config{FunctionName: strings.Repeat("a", 65)}, wantErr: []string{"FunctionName"}},
		{name: "FunctionName with a space is rejected", cfg: function.Config{FunctionName: "my func"}, wantErr: []string{"FunctionName"}},
		{name: "FunctionName with a colon is rejected", cfg: function.Config{FunctionName: "a:b"}, wantErr: []string{"FunctionName"}},
		{name: "FunctionName with a dot is rejected", cfg: function.Config{FunctionName: "a.b"}, wantErr: []string{"FunctionName"}},
	}
	h := func(context.Context, events.KinesisEvent) error { return nil }
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := c.cfg
			if cfg.FunctionName == "" && !strings.HasPrefix(c.name, "FunctionName") {
				cfg.FunctionName = "f"
			}
			// Through WithDefaults and Validate, with a Handler name.
			vc := cfg
			vc.Handler = "h"
			vc = vc.WithDefaults()
			verr := vc.Validate()
			// Through New.
			f, nerr := function.New(cfg, h, nil, quiet)
			for _, err := range []error{verr, nerr} {
				if c.wantErr == nil {
					if err != nil {
						t.Fatalf("valid config rejected: %v", err)
					}
					continue
				}
				if !errors.Is(err, awserr.ErrInvalidParameterValue) {
					t.Fatalf("err = %v, want ErrInvalidParameterValue", err)
				}
				for _, s := range c.wantErr {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("message %q does not mention %q", err.Error(), s)
					}
				}
			}
			if c.wantErr == nil && c.validate != nil {
				c.validate(t, vc)
				c.validate(t, f.Config())
			}
		})
	}
}

func TestConfigValidationRequiresAHandlerName(t *testing.T) {
	c := function.Config{FunctionName: "f"}
	if err := c.Validate(); !errors.Is(err, awserr.ErrInvalidParameterValue) || !strings.Contains(err.Error(), "Handler") {
		t.Errorf("Validate without Handler: %v, want ErrInvalidParameterValue naming Handler", err)
	}
}

func TestFunctionNameFromARN(t *testing.T) {
	cases := []struct {
		arn, want string
		ok        bool
	}{
		{"arn:aws:lambda:us-east-1:000000000000:function:orders", "orders", true},
		{"arn:aws:lambda:eu-west-1:123456789012:function:my-fn_2", "my-fn_2", true},
		{"arn:aws:lambda:us-east-1:000000000000:function:orders:$LATEST", "orders", true},
		{"orders", "", false},
		{"arn:aws:kinesis:us-east-1:000000000000:stream/orders", "", false},
		{"arn:aws:lambda:us-east-1:000000000000:function:", "", false},
	}
	for _, c := range cases {
		got, ok := function.FunctionNameFromARN(c.arn)
		if got != c.want || ok != c.ok {
			t.Errorf("FunctionNameFromARN(%q) = %q, %v; want %q, %v", c.arn, got, ok, c.want, c.ok)
		}
	}
}
