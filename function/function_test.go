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
