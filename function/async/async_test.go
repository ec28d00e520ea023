package async_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/function/async"
	"github.com/runnel-dev/runnel/internal/testenv"
)

func TestInvocationTypes(t *testing.T) {
	ctx := context.Background()
	rn := testenv.Start(t, testenv.Options{Clock: newClock()})
	ok := newFunction(t, rn, function.Config{FunctionName: "ok"}, func(p string) (json.RawMessage, error) {
		return json.RawMessage(`{"echo":` + p + `}`), nil
	})
	bad := newFunction(t, rn, function.Config{FunctionName: "bad"}, fail("boom"))
	zero := newFunction(t, rn, function.Config{FunctionName: "zero", ReservedConcurrentExecutions: ptr(0)}, nil)

	t.Run("RequestResponse runs the function now: 200 and its response", func(t *testing.T) {
		out := invoke(t, rn, "ok", async.RequestResponse, `{"a":1}`)
		if out.StatusCode != 200 || string(out.Payload) != `{"echo":{"a":1}}` || out.FunctionError != "" || out.ExecutedVersion != "$LATEST" || out.RequestID == "" {
			t.Fatalf("out = %+v (%s)", out, out.Payload)
		}
	})
	t.Run("an empty InvocationType is RequestResponse; an empty payload is {}", func(t *testing.T) {
		out := invoke(t, rn, "ok", "", "")
		if out.StatusCode != 200 || string(out.Payload) != `{"echo":{}}` {
			t.Fatalf("out = %+v (%s)", out, out.Payload)
		}
	})
	t.Run("RequestResponse returns a function error as FunctionError Unhandled, without retry", func(t *testing.T) {
		out := invoke(t, rn, "bad", async.RequestResponse, `{}`)
		if out.StatusCode != 200 || out.FunctionError != "Unhandled" || string(out.Payload) != `{"errorMessage":"boom","errorType":"errorString"}` {
			t.Fatalf("out = %+v (%s)", out, out.Payload)
		}
		if bad.count() != 1 || rn.Async.Stats("bad").Invocations != 0 {
			t.Fatalf("%d calls, %d async invocations: want 1 call and no retry", bad.count(), rn.Async.Stats("bad").Invocations)
		}
	})
	t.Run("RequestResponse of a throttled function is TooManyRequestsException", func(t *testing.T) {
		_, err := rn.Async.Invoke(ctx, "zero", async.RequestResponse, []byte(`{}`))
		if !errors.Is(err, awserr.ErrTooManyRequests) || zero.count() != 0 {
			t.Fatalf("err = %v, %d calls", err, zero.count())
		}
	})
	t.Run("DryRun checks the function exists: 204, not invoked", func(t *testing.T) {
		before := ok.count()
		out := invoke(t, rn, rn.Functions.ARN("ok"), async.DryRun, `{}`)
		if out.StatusCode != 204 || ok.count() != before {
			t.Fatalf("out = %+v, %d calls", out, ok.count()-before)
		}
	})
	big := func(n int) []byte { return []byte(`"` + strings.Repeat("a", n-2) + `"`) }
	errCases := []struct {
		name, fn, typ string
		payload       []byte
		want          *awserr.Error
		msg           string
	}{
		{"an unknown InvocationType is InvalidParameterValueException naming InvocationType", "ok", "Async", []byte(`{}`), awserr.ErrInvalidParameterValue, "InvocationType"},
		{"an unknown function is ResourceNotFoundException (Event)", "nope", async.Event, []byte(`{}`), awserr.ErrResourceNotFound, "nope"},
		{"an unknown function is ResourceNotFoundException (RequestResponse)", "nope", async.RequestResponse, []byte(`{}`), awserr.ErrResourceNotFound, "nope"},
		{"an unknown function is ResourceNotFoundException (DryRun)", "nope", async.DryRun, []byte(`{}`), awserr.ErrResourceNotFound, "nope"},
		{"an Event payload over the 1 MiB limit is RequestEntityTooLargeException", "ok", async.Event, big(async.MaxEventPayloadSize + 1), async.ErrRequestTooLarge, "Event"},
		{"a RequestResponse payload over 6 MiB is RequestEntityTooLargeException", "ok", async.RequestResponse, big(async.MaxSyncPayloadSize + 1), async.ErrRequestTooLarge, "for the InvokeFunction operation"},
		{"a payload that is not JSON is InvalidRequestContentException", "ok", async.Event, []byte(`{not json`), async.ErrInvalidRequestContent, "json"},
	}
	for _, c := range errCases {
		t.Run(c.name, func(t *testing.T) {
			_, err := rn.Async.Invoke(ctx, c.fn, c.typ, c.payload)
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("err = %v, want %s mentioning %q", err, c.want.Code, c.msg)
			}
		})
	}
	t.Run("an Event payload of exactly MaxEventPayloadSize is accepted", func(t *testing.T) {
		out, err := rn.Async.Invoke(ctx, "ok", async.Event, big(async.MaxEventPayloadSize))
		if err != nil || out.StatusCode != 202 {
			t.Fatalf("out = %+v, err = %v", out, err)
		}
		waitStats(t, rn, "ok", "the large event processed", func(s async.Stats) bool { return s.Succeeded == 1 })
	})
}

func TestEventIsAcceptedDurablyWith202(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{Clock: newClock()})
	entered, release := make(chan struct{}), make(chan struct{})
	f := newFunction(t, rn, function.Config{}, func(string) (json.RawMessage, error) {
		close(entered)
		<-release
		return json.RawMessage(`null`), nil
	})
	out := invoke(t, rn, "f", async.Event, `{"order":42}`)
	if out.StatusCode != 202 || len(out.Payload) != 0 || out.FunctionError != "" || out.RequestID == "" {
		t.Fatalf("out = %+v", out)
	}
	// Invoke returned before the handler finished: the event is stored
	// in the function's internal queue.
	if n := queueDepth(t, rn, async.QueueName("f")); n != 1 {
		t.Fatalf("internal queue holds %d messages after Invoke, want 1", n)
	}
	<-entered
	close(release)
	waitStats(t, rn, "f", "the event processed", func(s async.Stats) bool { return s.Succeeded == 1 && s.Handled == 1 })
	if f.count() != 1 || f.call(0).payload != `{"order":42}` {
		t.Fatalf("calls = %+v", f.calls)
	}
	if n := queueDepth(t, rn, async.QueueName("f")); n != 0 {
		t.Fatalf("internal queue holds %d messages after success, want 0", n)
	}
	if st := rn.Async.Stats("f"); st.Accepted != 1 || st.Invocations != 1 {
		t.Fatalf("stats = %+v", st)
	}
}

// TestAVersionsLongerTimeoutKeepsItsEventInvisible: an event for a
// published version runs with that version's Timeout (300 s here), not
// $LATEST's (3 s). While it runs, the event must stay invisible in the
// function's internal queue, so it is not received and invoked a second
// time beside the first (the poller's visibility was $LATEST's timeout
// plus a minute, 63 s).
func TestAVersionsLongerTimeoutKeepsItsEventInvisible(t *testing.T) {
	clock := newClock()
	rn := testenv.Start(t, testenv.Options{Clock: clock})
	ctx := context.Background()
	entered, release := make(chan struct{}, 4), make(chan struct{})
	f := newFunction(t, rn, function.Config{FunctionName: "slow", Timeout: 300}, func(string) (json.RawMessage, error) {
		entered <- struct{}{}
		<-release
		return json.RawMessage(`null`), nil
	})
	defer close(release)
	if _, err := rn.Functions.PublishVersion(ctx, "slow", nil); err != nil {
		t.Fatal(err)
	}
	latest, err := rn.Functions.GetFunction("slow")
	if err != nil {
		t.Fatal(err)
	}
	cfg := latest.Config()
	cfg.Timeout = 3
	if _, err := rn.Functions.PutFunction(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	invoke(t, rn, "slow:1", async.Event, `{"n":1}`)
	<-entered
	// Time runs in 10 s steps until a second call comes: legitimately
	// only once version 1's 300 s have passed (its visibility of 360 s, or
	// a retry after the invocation timed out). Before each step the
	// poller waits in its long poll.
	for step := 0; f.count() < 2; step++ {
		if step == 60 {
			t.Fatal("no second call in 600 s")
		}
		idle(t, clock, 1)
		clock.Advance(10 * time.Second)
		select {
		case <-entered:
		case <-time.After(50 * time.Millisecond): // the real time a due receive takes to invoke, if one is due
		}
	}
	if gap := f.call(1).at.Sub(f.call(0).at); gap < 300*time.Second {
		t.Fatalf("the event was invoked again %v after its first invocation began, which version 1 lets run 300 s", gap)
	}
}

func TestFunctionErrorIsRetriedAfterOneMinuteThenTwoMore(t *testing.T) {
	cases := []struct {
		name     string
		retries  *int
		attempts []time.Duration // when each attempt runs, from the Event invocation
	}{
		{"MaximumRetryAttempts 0: one attempt, then RetriesExhausted", ptr(0), []time.Duration{0}},
		{"MaximumRetryAttempts 1: a retry after 1 minute", ptr(1), []time.Duration{0, time.Minute}},
		{"MaximumRetryAttempts 2 (default): retries after 1 minute, then after 2 more minutes", nil, []time.Duration{0, time.Minute, 3 * time.Minute}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clock := newClock()
			rn := testenv.Start(t, testenv.Options{Clock: clock})
			dest := createQueue(t, rn, "failures", nil)
			f := newFunction(t, rn, function.Config{}, fail("boom"))
			put(t, rn, async.EventInvokeConfig{FunctionName: "f", MaximumRetryAttempts: c.retries, DestinationConfig: onFailure(dest)})
			out := invoke(t, rn, "f", async.Event, `{"order":42}`)
			for i := 1; i < len(c.attempts); i++ {
				waitStats(t, rn, "f", fmt.Sprintf("attempt %d re-scheduled", i), func(s async.Stats) bool { return s.Handled == int64(i) })
				// The retry is a delayed message in the function's internal
				// queue. The queue counts delayed messages by the engine
				// clock when asked, so the checks below do not race the
				// poller: one second before the retry is due the event is
				// still delayed (neither visible nor received), and at the
				// due time it no longer is.
				gap := c.attempts[i] - c.attempts[i-1]
				clock.Advance(gap - time.Second)
				if d := delayedIn(t, rn, async.QueueName("f")); d != 1 || f.count() != i {
					t.Fatalf("%v after attempt %d: %d attempts, %d delayed events; want %d attempts and the retry still delayed (due after %v)", gap-time.Second, i, f.count(), d, i, gap)
				}
				clock.Advance(time.Second)
				// The poller may receive the retry as soon as it is due, run
				// it and schedule the next one before the count is read: a
				// delayed event then counts as "still delayed" only while
				// attempt i+1 has not run (the count read after it).
				if d := delayedIn(t, rn, async.QueueName("f")); d != 0 && f.count() == i {
					t.Fatalf("%v after attempt %d the retry is still delayed, want it due (%d delayed events, %d attempts, stats %+v)", gap, i, d, f.count(), rn.Async.Stats("f"))
				}
				testenv.Eventually(t, wait, fmt.Sprintf("attempt %d", i+1), func() bool { return f.count() == i+1 })
				if at := f.call(i).at.Sub(t0); at != c.attempts[i] {
					t.Fatalf("attempt %d ran at +%v, want +%v", i+1, at, c.attempts[i])
				}
			}
			st := waitStats(t, rn, "f", "RetriesExhausted", func(s async.Stats) bool { return s.RetriesExhausted == 1 && s.Handled == int64(len(c.attempts)) })
			if f.count() != len(c.attempts) || st.Invocations != int64(len(c.attempts)) || st.FunctionErrors != int64(len(c.attempts)) {
				t.Fatalf("%d attempts, stats %+v; want %d", f.count(), st, len(c.attempts))
			}
			for i := range c.attempts {
				if p := f.call(i).payload; p != `{"order":42}` {
					t.Fatalf("attempt %d got %s", i+1, p)
				}
			}
			last := t0.Add(c.attempts[len(c.attempts)-1])
			arn := rn.Functions.ARN("f") + ":$LATEST"
			n := len(c.attempts)
			wantRecord(t, onlyMessage(t, rn, "failures").Body, map[string]any{
				"version":   "1.0",
				"timestamp": awsTime(last),
				"requestContext": map[string]any{"requestId": out.RequestID, "functionArn": arn,
					"condition": "RetriesExhausted", "approximateInvokeCount": n},
				"requestPayload":  map[string]any{"order": 42},
				"responseContext": map[string]any{"statusCode": 200, "executedVersion": "$LATEST", "functionError": "Unhandled"},
				"responsePayload": map[string]any{"errorMessage": "boom", "errorType": "errorString"},
			}, fmt.Sprintf(`{"version":"1.0","timestamp":"%s","requestContext":{"requestId":"%s","functionArn":"%s","condition":"RetriesExhausted","approximateInvokeCount":%d},"requestPayload":{"order":42},"responseContext":{"statusCode":200,"executedVersion":"$LATEST","functionError":"Unhandled"},"responsePayload":{"errorMessage":"boom","errorType":"errorString"}}`,
				awsTime(last), out.RequestID, arn, n))
			if d := queueDepth(t, rn, async.QueueName("f")); d != 0 {
				t.Fatalf("internal queue holds %d messages, want 0", d)
			}
		})
	}
}

func TestSuccessRecordGoesToOnSuccess(t *testing.T) {
	clock := newClock()
	rn := testenv.Start(t, testenv.Options{Clock: clock})
	dest := createQueue(t, rn, "successes", nil)
	newFunction(t, rn, function.Config{}, func(string) (json.RawMessage, error) { return json.RawMessage(`{"ok":true}`), nil })
	put(t, rn, async.EventInvokeConfig{FunctionName: "f", DestinationConfig: &async.DestinationConfig{OnSuccess: &async.OnSuccess{Destination: dest}}})
	payload := `{"html":"<a & b>","n":[1,2]}`
	out := invoke(t, rn, "f", async.Event, payload)
	arn := rn.Functions.ARN("f") + ":$LATEST"
	wantRecord(t, onlyMessage(t, rn, "successes").Body, map[string]any{
		"version":   "1.0",
		"timestamp": awsTime(t0),
		"requestContext": map[string]any{"requestId": out.RequestID, "functionArn": arn,
			"condition": "Success", "approximateInvokeCount": 1},
		"requestPayload":  map[string]any{"html": "<a & b>", "n": []int{1, 2}},
		"responseContext": map[string]any{"statusCode": 200, "executedVersion": "$LATEST"},
		"responsePayload": map[string]any{"ok": true},
	}, fmt.Sprintf(`{"version":"1.0","timestamp":"%s","requestContext":{"requestId":"%s","functionArn":"%s","condition":"Success","approximateInvokeCount":1},"requestPayload":%s,"responseContext":{"statusCode":200,"executedVersion":"$LATEST"},"responsePayload":{"ok":true}}`,
		awsTime(t0), out.RequestID, arn, payload))
	if st := rn.Async.Stats("f"); st.DestinationDeliveries != 1 || st.KeptInStore != 0 {
		t.Fatalf("stats = %+v", st)
	}
}

// TestARecordNamesTheVersionThatRan: a destination record's
// responseContext.executedVersion is the version that ran (an event for
// f:1 ran version 1), as X-Amz-Executed-Version is. (Every record said
// $LATEST.)
func TestARecordNamesTheVersionThatRan(t *testing.T) {
	clock := newClock()
	rn := testenv.Start(t, testenv.Options{Clock: clock})
	dest := createQueue(t, rn, "successes", nil)
	newFunction(t, rn, function.Config{}, func(string) (json.RawMessage, error) { return json.RawMessage(`{"ok":true}`), nil })
	if _, err := rn.Functions.PublishVersion(context.Background(), "f", nil); err != nil {
		t.Fatal(err)
	}
	put(t, rn, async.EventInvokeConfig{FunctionName: "f:1", DestinationConfig: &async.DestinationConfig{OnSuccess: &async.OnSuccess{Destination: dest}}})
	invoke(t, rn, "f:1", async.Event, `{}`)
	var rec struct {
		RequestContext  struct{ FunctionArn string }
		ResponseContext struct{ ExecutedVersion string }
	}
	if err := json.Unmarshal([]byte(onlyMessage(t, rn, "successes").Body), &rec); err != nil {
		t.Fatal(err)
	}
	if rec.RequestContext.FunctionArn != rn.Functions.ARN("f")+":1" || rec.ResponseContext.ExecutedVersion != "1" {
		t.Fatalf("record of f:1: functionArn %s, executedVersion %q; want version 1", rec.RequestContext.FunctionArn, rec.ResponseContext.ExecutedVersion)
	}
}

func TestEventAgeExceeded(t *testing.T) {
	t.Run("with MaximumEventAgeInSeconds 60 the retry due at +3 min is not invoked: EventAgeExceeded", func(t *testing.T) {
		clock := newClock()
		rn := testenv.Start(t, testenv.Options{Clock: clock})
		dest := createQueue(t, rn, "failures", nil)
		f := newFunction(t, rn, function.Config{}, fail("boom"))
		put(t, rn, async.EventInvokeConfig{FunctionName: "f", MaximumEventAgeInSeconds: ptr(60), DestinationConfig: onFailure(dest)})
		out := invoke(t, rn, "f", async.Event, `{"order":42}`)
		waitStats(t, rn, "f", "first attempt", func(s async.Stats) bool { return s.Handled == 1 })
		idle(t, clock, 1)
		clock.Advance(time.Minute) // exactly 60 s old: not older than 60 s, invoked
		waitStats(t, rn, "f", "second attempt", func(s async.Stats) bool { return s.Handled == 2 })
		if f.count() != 2 {
			t.Fatalf("%d attempts at +60s, want 2 (an event exactly MaximumEventAgeInSeconds old is still run)", f.count())
		}
		idle(t, clock, 1)
		clock.Advance(2 * time.Minute)
		st := waitStats(t, rn, "f", "EventAgeExceeded", func(s async.Stats) bool { return s.EventAgeExceeded == 1 && s.Handled == 3 })
		if f.count() != 2 || st.RetriesExhausted != 0 {
			t.Fatalf("%d attempts, stats %+v: the aged event must not be invoked", f.count(), st)
		}
		arn := rn.Functions.ARN("f") + ":$LATEST"
		wantRecord(t, onlyMessage(t, rn, "failures").Body, map[string]any{
			"version":   "1.0",
			"timestamp": awsTime(t0.Add(3 * time.Minute)),
			"requestContext": map[string]any{"requestId": out.RequestID, "functionArn": arn,
				"condition": "EventAgeExceeded", "approximateInvokeCount": 2},
			"requestPayload":  map[string]any{"order": 42},
			"responseContext": map[string]any{"statusCode": 200, "executedVersion": "$LATEST", "functionError": "Unhandled"},
			"responsePayload": map[string]any{"errorMessage": "boom", "errorType": "errorString"},
		}, "")
	})
	t.Run("the record of a version's aged event names the version that ran", func(t *testing.T) {
		// Before, the event's stored state did not keep the version: the
		// EventAgeExceeded record said "$LATEST" after version 1 ran.
		clock := newClock()
		rn := testenv.Start(t, testenv.Options{Clock: clock})
		dest := createQueue(t, rn, "failures", nil)
		newFunction(t, rn, function.Config{}, fail("boom"))
		if _, err := rn.Functions.PublishVersion(context.Background(), "f", nil); err != nil {
			t.Fatal(err)
		}
		put(t, rn, async.EventInvokeConfig{FunctionName: "f:1", MaximumEventAgeInSeconds: ptr(60), DestinationConfig: onFailure(dest)})
		invoke(t, rn, "f:1", async.Event, `{"order":42}`)
		waitStats(t, rn, "f", "first attempt", func(s async.Stats) bool { return s.Handled == 1 })
		idle(t, clock, 1)
		clock.Advance(61 * time.Second)
		waitStats(t, rn, "f", "EventAgeExceeded", func(s async.Stats) bool { return s.EventAgeExceeded == 1 })
		var rec struct {
			RequestContext  struct{ Condition string }
			ResponseContext struct{ ExecutedVersion string }
		}
		if err := json.Unmarshal([]byte(onlyMessage(t, rn, "failures").Body), &rec); err != nil {
			t.Fatal(err)
		}
		if rec.RequestContext.Condition != "EventAgeExceeded" || rec.ResponseContext.ExecutedVersion != "1" {
			t.Fatalf("record %+v: want EventAgeExceeded with executedVersion 1", rec)
		}
	})
	t.Run("an event throttled until it is older than MaximumEventAgeInSeconds is never invoked", func(t *testing.T) {
		clock := newClock()
		rn := testenv.Start(t, testenv.Options{Clock: clock})
		dest := createQueue(t, rn, "failures", nil)
		entered, release := make(chan struct{}), make(chan struct{})
		f := newFunction(t, rn, function.Config{Timeout: 900, ReservedConcurrentExecutions: ptr(1)}, func(p string) (json.RawMessage, error) {
			if p == `"hold"` {
				close(entered)
				<-release
			}
			return nil, nil
		})
		put(t, rn, async.EventInvokeConfig{FunctionName: "f", MaximumEventAgeInSeconds: ptr(60), DestinationConfig: onFailure(dest)})
		held := make(chan struct{})
		go func() {
			defer close(held)
			rn.Async.Invoke(context.Background(), "f", async.RequestResponse, []byte(`"hold"`))
		}()
		<-entered
		out := invoke(t, rn, "f", async.Event, `{"order":42}`)
		// After the k-th throttle the event is due within 2^(k-1) s (full
		// jitter, 1 s doubling): advance by that bound each time until the
		// event is older than 60 s.
		for k := 1; ; k++ {
			st := waitStats(t, rn, "f", fmt.Sprintf("event handled %d times", k), func(s async.Stats) bool { return s.Handled == int64(k) })
			if st.EventAgeExceeded == 1 {
				break
			}
			if k > 20 {
				t.Fatalf("no EventAgeExceeded after %d throttles: %+v", k, st)
			}
			idle(t, clock, 2) // the poller and the held invocation's timeout
			clock.Advance(time.Duration(min(1<<(k-1), 300)) * time.Second)
		}
		st := waitStats(t, rn, "f", "EventAgeExceeded", func(s async.Stats) bool { return s.EventAgeExceeded == 1 })
		close(release)
		<-held
		if f.count() != 1 || st.Invocations != 0 || st.Throttles < 2 || st.Requeued != st.Throttles {
			t.Fatalf("%d calls (want only the held one), stats %+v", f.count(), st)
		}
		wantRecord(t, onlyMessage(t, rn, "failures").Body, map[string]any{
			"version": "1.0",
			"requestContext": map[string]any{"requestId": out.RequestID, "functionArn": rn.Functions.ARN("f") + ":$LATEST",
				"condition": "EventAgeExceeded", "approximateInvokeCount": 0},
			"requestPayload":  map[string]any{"order": 42},
			"responseContext": map[string]any{"statusCode": 429, "executedVersion": "$LATEST"},
			"responsePayload": map[string]any{"errorMessage": "Rate Exceeded. (function f: reserved concurrency 1 in use)", "errorType": "TooManyRequestsException"},
		}, "")
	})
}

func TestThrottleIsNotCountedAsAnAttempt(t *testing.T) {
	clock := newClock()
	rn := testenv.Start(t, testenv.Options{Clock: clock})
	dest := createQueue(t, rn, "failures", nil)
	entered, release := make(chan struct{}), make(chan struct{})
	f := newFunction(t, rn, function.Config{Timeout: 900, ReservedConcurrentExecutions: ptr(1)}, func(p string) (json.RawMessage, error) {
		if p == `"hold"` {
			close(entered)
			<-release
			return nil, nil
		}
		return nil, errors.New("boom")
	})
	put(t, rn, async.EventInvokeConfig{FunctionName: "f", MaximumRetryAttempts: ptr(0), DestinationConfig: onFailure(dest)})
	held := make(chan struct{})
	go func() {
		defer close(held)
		rn.Async.Invoke(context.Background(), "f", async.RequestResponse, []byte(`"hold"`))
	}()
	<-entered
	out := invoke(t, rn, "f", async.Event, `{"order":42}`)
	st := waitStats(t, rn, "f", "the throttled event back in the queue", func(s async.Stats) bool { return s.Throttles == 1 && s.Handled == 1 })
	if st.Invocations != 0 || st.Requeued != 1 || st.RetriesExhausted != 0 {
		t.Fatalf("stats after the throttle = %+v", st)
	}
	close(release)
	<-held
	idle(t, clock, 1)
	clock.Advance(time.Second) // the first throttle backoff is 1 s
	st = waitStats(t, rn, "f", "RetriesExhausted", func(s async.Stats) bool { return s.RetriesExhausted == 1 })
	if f.count() != 2 || st.Invocations != 1 {
		t.Fatalf("%d calls, stats %+v; want the held call and one attempt", f.count(), st)
	}
	// MaximumRetryAttempts 0 and one attempt that ran: the throttle was
	// not an attempt.
	wantRecord(t, onlyMessage(t, rn, "failures").Body, map[string]any{
		"requestContext": map[string]any{"requestId": out.RequestID, "functionArn": rn.Functions.ARN("f") + ":$LATEST",
			"condition": "RetriesExhausted", "approximateInvokeCount": 1},
		"timestamp":       awsTime(t0.Add(time.Second)),
		"responseContext": map[string]any{"statusCode": 200, "executedVersion": "$LATEST", "functionError": "Unhandled"},
		"responsePayload": map[string]any{"errorMessage": "boom", "errorType": "errorString"},
	}, "")
}

func TestReservedConcurrencyZeroSendsStraightToFailureDestinations(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{Clock: newClock()})
	dest := createQueue(t, rn, "failures", nil)
	dlq := createQueue(t, rn, "dlq", nil)
	f := newFunction(t, rn, function.Config{ReservedConcurrentExecutions: ptr(0)}, nil)
	put(t, rn, async.EventInvokeConfig{FunctionName: "f", DestinationConfig: onFailure(dest), DeadLetterConfig: &async.DeadLetterConfig{TargetArn: dlq}})
	out := invoke(t, rn, "f", async.Event, `{"order":42}`)
	st := waitStats(t, rn, "f", "the event failed", func(s async.Stats) bool { return s.Handled == 1 })
	if f.count() != 0 || st.Invocations != 0 || st.Requeued != 0 || st.Retried != 0 || st.RetriesExhausted != 1 {
		t.Fatalf("%d calls, stats %+v: want no invocation and no retry", f.count(), st)
	}
	wantRecord(t, onlyMessage(t, rn, "failures").Body, map[string]any{
		"requestContext": map[string]any{"requestId": out.RequestID, "functionArn": rn.Functions.ARN("f") + ":$LATEST",
			"condition": "RetriesExhausted", "approximateInvokeCount": 0},
		"requestPayload":  map[string]any{"order": 42},
		"responseContext": map[string]any{"statusCode": 429, "executedVersion": "$LATEST"},
	}, "")
	m := onlyMessage(t, rn, "dlq")
	if m.Body != `{"order":42}` || *m.MessageAttributes["ErrorCode"].StringValue != "429" {
		t.Fatalf("DLQ message = %s %v", m.Body, m.MessageAttributes)
	}
	if d := queueDepth(t, rn, async.QueueName("f")); d != 0 {
		t.Fatalf("internal queue holds %d messages, want 0", d)
	}
}

func TestDeadLetterConfig(t *testing.T) {
	t.Run("the DLQ gets the raw event with RequestID, ErrorCode 200 and the first 1 KB of ErrorMessage", func(t *testing.T) {
		rn := testenv.Start(t, testenv.Options{Clock: newClock()})
		dlq := createQueue(t, rn, "dlq", nil)
		long := strings.Repeat("x", 2000)
		newFunction(t, rn, function.Config{}, fail(long))
		put(t, rn, async.EventInvokeConfig{FunctionName: "f", MaximumRetryAttempts: ptr(0), DeadLetterConfig: &async.DeadLetterConfig{TargetArn: dlq}})
		payload := `{"html":"<a & b>"}`
		out := invoke(t, rn, "f", async.Event, payload)
		m := onlyMessage(t, rn, "dlq")
		if m.Body != payload {
			t.Fatalf("body = %s, want the raw event %s", m.Body, payload)
		}
		want := map[string][2]string{
			"RequestID":    {"String", out.RequestID},
			"ErrorCode":    {"Number", "200"},
			"ErrorMessage": {"String", long[:1024]},
		}
		if len(m.MessageAttributes) != len(want) {
			t.Fatalf("attributes = %v", m.MessageAttributes)
		}
		for k, w := range want {
			a := m.MessageAttributes[k]
			if a.DataType != w[0] || a.StringValue == nil || *a.StringValue != w[1] {
				t.Fatalf("attribute %s = %s %v, want %s %.40q", k, a.DataType, a.StringValue, w[0], w[1])
			}
		}
		if _, err := rn.Queues.GetQueueURL(context.Background(), async.DeadLetterStore); err == nil && queueDepth(t, rn, async.DeadLetterStore) != 0 {
			t.Fatal("the built-in store got the event although a DLQ took it")
		}
	})
	t.Run("DLQ and OnFailure coexist: both get the event", func(t *testing.T) {
		rn := testenv.Start(t, testenv.Options{Clock: newClock()})
		dlq := createQueue(t, rn, "dlq", nil)
		dest := createQueue(t, rn, "failures", nil)
		newFunction(t, rn, function.Config{}, fail("boom"))
		put(t, rn, async.EventInvokeConfig{FunctionName: "f", MaximumRetryAttempts: ptr(0),
			DestinationConfig: onFailure(dest), DeadLetterConfig: &async.DeadLetterConfig{TargetArn: dlq}})
		out := invoke(t, rn, "f", async.Event, `{"order":42}`)
		if m := onlyMessage(t, rn, "dlq"); m.Body != `{"order":42}` || *m.MessageAttributes["RequestID"].StringValue != out.RequestID {
			t.Fatalf("DLQ message = %s %v", m.Body, m.MessageAttributes)
		}
		wantRecord(t, onlyMessage(t, rn, "failures").Body, map[string]any{
			"requestContext": map[string]any{"requestId": out.RequestID, "functionArn": rn.Functions.ARN("f") + ":$LATEST",
				"condition": "RetriesExhausted", "approximateInvokeCount": 1},
		}, "")
	})
}

func TestBuiltInDeadLetterStoreKeepsWhatAWSDrops(t *testing.T) {
	ctx := context.Background()
	rn := testenv.Start(t, testenv.Options{Clock: newClock()})
	var logs testenv.LogBuffer
	// A second service on the same engine, to read its log.
	svc, err := async.New(ctx, rn.Engine, rn.Functions, rn.Queues, rn.Streams,
		async.Options{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Close)
	storeARN := rn.Queues.ARN(async.DeadLetterStore)
	warning := func(fn string) string {
		return "function " + fn + " has no OnFailure destination and no DeadLetterConfig: AWS Lambda would drop its failed asynchronous events; " +
			"runnel keeps them in its built-in dead-letter store, queue " + async.DeadLetterStore + " (" + storeARN + ")"
	}

	// CreateFunction: warned about at once (the function has no
	// configuration yet).
	f := newFunction(t, rn, function.Config{}, fail("boom"))
	testenv.Eventually(t, wait, "the warning at CreateFunction", func() bool { return strings.Contains(logs.String(), warning("f")) })
	if l := logs.String(); !strings.Contains(l, "level=WARN") {
		t.Fatalf("log:\n%s", l)
	}
	// PutFunctionEventInvokeConfig without OnFailure or DeadLetterConfig:
	// warned about again.
	mark := len(logs.String())
	if _, err := svc.PutFunctionEventInvokeConfig(ctx, async.EventInvokeConfig{FunctionName: "f", MaximumRetryAttempts: ptr(0)}); err != nil {
		t.Fatal(err)
	}
	if l := logs.String()[mark:]; !strings.Contains(l, warning("f")) {
		t.Fatalf("log after PutFunctionEventInvokeConfig:\n%s", l)
	}
	if got := svc.FailedEventsGoTo("f"); !reflect.DeepEqual(got, []string{storeARN}) {
		t.Fatalf("FailedEventsGoTo = %v", got)
	}

	out, err := svc.Invoke(ctx, "f", async.Event, []byte(`{"order":42}`))
	if err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, wait, "the event kept", func() bool { return svc.Stats("f").KeptInStore == 1 })
	if f.count() != 1 {
		t.Fatalf("%d calls", f.count())
	}
	m := onlyMessage(t, rn, async.DeadLetterStore)
	wantRecord(t, m.Body, map[string]any{
		"requestContext": map[string]any{"requestId": out.RequestID, "functionArn": rn.Functions.ARN("f") + ":$LATEST",
			"condition": "RetriesExhausted", "approximateInvokeCount": 1},
		"requestPayload":  map[string]any{"order": 42},
		"responseContext": map[string]any{"statusCode": 200, "executedVersion": "$LATEST", "functionError": "Unhandled"},
		"responsePayload": map[string]any{"errorMessage": "boom", "errorType": "errorString"},
	}, "")
	for k, v := range map[string]string{"FunctionName": "f", "Condition": "RetriesExhausted", "RequestId": out.RequestID} {
		if a := m.MessageAttributes[k]; a.StringValue == nil || *a.StringValue != v {
			t.Fatalf("attribute %s = %v, want %s", k, a.StringValue, v)
		}
	}

	t.Run("a function given an OnFailure destination is not warned about again", func(t *testing.T) {
		newFunction(t, rn, function.Config{FunctionName: "h"}, nil)
		testenv.Eventually(t, wait, "the warning at CreateFunction", func() bool { return strings.Contains(logs.String(), warning("h")) })
		mark := len(logs.String())
		dest := createQueue(t, rn, "failures", nil)
		if _, err := svc.PutFunctionEventInvokeConfig(ctx, async.EventInvokeConfig{FunctionName: "h", DestinationConfig: onFailure(dest)}); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Invoke(ctx, "h", async.Event, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, wait, "h's event", func() bool { return svc.Stats("h").Handled == 1 })
		if l := logs.String()[mark:]; strings.Contains(l, "function h has") {
			t.Fatalf("log:\n%s", l)
		}
		if got := svc.FailedEventsGoTo("h"); !reflect.DeepEqual(got, []string{dest}) {
			t.Fatalf("FailedEventsGoTo = %v", got)
		}
	})
}
