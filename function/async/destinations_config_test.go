package async_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/function/async"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/stream"
)

func TestDestinationKinds(t *testing.T) {
	ctx := context.Background()
	t.Run("a stream gets the record, partition key = requestId", func(t *testing.T) {
		rn := testenv.Start(t, testenv.Options{Clock: newClock()})
		if _, err := rn.Streams.CreateStream(ctx, stream.CreateStreamInput{StreamName: "failures", ShardCount: 1}); err != nil {
			t.Fatal(err)
		}
		newFunction(t, rn, function.Config{}, fail("boom"))
		put(t, rn, async.EventInvokeConfig{FunctionName: "f", MaximumRetryAttempts: ptr(0), DestinationConfig: onFailure(rn.Streams.ARN("failures"))})
		out := invoke(t, rn, "f", async.Event, `{"order":42}`)
		waitStats(t, rn, "f", "delivered", func(s async.Stats) bool { return s.DestinationDeliveries == 1 })
		it, err := rn.Streams.GetShardIterator(ctx, stream.GetShardIteratorInput{StreamName: "failures", ShardID: stream.ShardID(0), ShardIteratorType: stream.TrimHorizon})
		if err != nil {
			t.Fatal(err)
		}
		recs, err := rn.Streams.GetRecords(ctx, it, 10)
		if err != nil || len(recs.Records) != 1 {
			t.Fatalf("records = %+v, err = %v", recs, err)
		}
		r := recs.Records[0]
		if r.PartitionKey != out.RequestID {
			t.Fatalf("partition key %q, want the request id %q", r.PartitionKey, out.RequestID)
		}
		wantRecord(t, string(r.Data), map[string]any{
			"requestContext": map[string]any{"requestId": out.RequestID, "functionArn": rn.Functions.ARN("f") + ":$LATEST",
				"condition": "RetriesExhausted", "approximateInvokeCount": 1},
			"requestPayload": map[string]any{"order": 42},
		}, "")
	})
	t.Run("a function gets the record as its (asynchronous) event", func(t *testing.T) {
		rn := testenv.Start(t, testenv.Options{Clock: newClock()})
		g := newFunction(t, rn, function.Config{FunctionName: "g"}, nil)
		newFunction(t, rn, function.Config{}, func(string) (json.RawMessage, error) { return json.RawMessage(`{"done":1}`), nil })
		put(t, rn, async.EventInvokeConfig{FunctionName: "f", DestinationConfig: &async.DestinationConfig{OnSuccess: &async.OnSuccess{Destination: rn.Functions.ARN("g")}}})
		out := invoke(t, rn, "f", async.Event, `{"order":42}`)
		testenv.Eventually(t, wait, "g invoked", func() bool { return g.count() == 1 })
		wantRecord(t, g.call(0).payload, map[string]any{
			"requestContext": map[string]any{"requestId": out.RequestID, "functionArn": rn.Functions.ARN("f") + ":$LATEST",
				"condition": "Success", "approximateInvokeCount": 1},
			"requestPayload":  map[string]any{"order": 42},
			"responsePayload": map[string]any{"done": 1},
		}, "")
		if st := rn.Async.Stats("g"); st.Accepted != 1 {
			t.Fatalf("g stats = %+v: the record must arrive as an Event invocation", st)
		}
	})
	t.Run("a destination that no longer takes records: the record is kept in the built-in store", func(t *testing.T) {
		rn := testenv.Start(t, testenv.Options{Clock: newClock()})
		dest := createQueue(t, rn, "failures", nil)
		newFunction(t, rn, function.Config{}, fail("boom"))
		put(t, rn, async.EventInvokeConfig{FunctionName: "f", MaximumRetryAttempts: ptr(0), DestinationConfig: onFailure(dest)})
		if err := rn.Queues.DeleteQueue(ctx, "failures"); err != nil {
			t.Fatal(err)
		}
		out := invoke(t, rn, "f", async.Event, `{"order":42}`)
		st := waitStats(t, rn, "f", "kept", func(s async.Stats) bool { return s.KeptInStore == 1 })
		if st.DestinationDeliveryFailures != 1 {
			t.Fatalf("stats = %+v", st)
		}
		m := onlyMessage(t, rn, async.DeadLetterStore)
		if r := m.MessageAttributes["Reason"]; r.StringValue == nil || !strings.Contains(*r.StringValue, dest) {
			t.Fatalf("Reason = %v", r.StringValue)
		}
		wantRecord(t, m.Body, map[string]any{
			"requestContext": map[string]any{"requestId": out.RequestID, "functionArn": rn.Functions.ARN("f") + ":$LATEST",
				"condition": "RetriesExhausted", "approximateInvokeCount": 1},
		}, "")
	})
}

func TestEventInvokeConfigValidation(t *testing.T) {
	ctx := context.Background()
	rn := testenv.Start(t, testenv.Options{Clock: newClock()})
	newFunction(t, rn, function.Config{}, nil)
	newFunction(t, rn, function.Config{FunctionName: "g"}, nil)
	std := createQueue(t, rn, "std", nil)
	fifo := createQueue(t, rn, "q.fifo", map[string]string{"FifoQueue": "true"})
	if _, err := rn.Streams.CreateStream(ctx, stream.CreateStreamInput{StreamName: "s", ShardCount: 1}); err != nil {
		t.Fatal(err)
	}
	region, account := "us-east-1", "000000000000"
	if arn := rn.Queues.ARN("x"); strings.Count(arn, ":") == 5 {
		parts := strings.Split(arn, ":")
		region, account = parts[3], parts[4]
	}
	sqs := func(n string) string { return fmt.Sprintf("arn:aws:sqs:%s:%s:%s", region, account, n) }
	succ := func(arn string) *async.DestinationConfig {
		return &async.DestinationConfig{OnSuccess: &async.OnSuccess{Destination: arn}}
	}
	cases := []struct {
		name string
		cfg  async.EventInvokeConfig
		want *awserr.Error
		msgs []string
	}{
		{"MaximumRetryAttempts above 2", async.EventInvokeConfig{MaximumRetryAttempts: ptr(3)}, awserr.ErrInvalidParameterValue, []string{"MaximumRetryAttempts", "between 0 and 2"}},
		{"MaximumRetryAttempts below 0", async.EventInvokeConfig{MaximumRetryAttempts: ptr(-1)}, awserr.ErrInvalidParameterValue, []string{"MaximumRetryAttempts", "between 0 and 2"}},
		{"MaximumEventAgeInSeconds below 60", async.EventInvokeConfig{MaximumEventAgeInSeconds: ptr(59)}, awserr.ErrInvalidParameterValue, []string{"MaximumEventAgeInSeconds", "between 60 and 21600"}},
		{"MaximumEventAgeInSeconds above 21600", async.EventInvokeConfig{MaximumEventAgeInSeconds: ptr(21601)}, awserr.ErrInvalidParameterValue, []string{"MaximumEventAgeInSeconds", "between 60 and 21600"}},
		{"a queue destination that does not exist", async.EventInvokeConfig{DestinationConfig: onFailure(sqs("nope"))}, awserr.ErrInvalidParameterValue, []string{"DestinationConfig.OnFailure.Destination", "does not exist"}},
		{"a FIFO queue destination (unsupported by Lambda)", async.EventInvokeConfig{DestinationConfig: succ(fifo)}, awserr.ErrInvalidParameterValue, []string{"DestinationConfig.OnSuccess.Destination", "FIFO"}},
		{"an SNS topic destination that does not exist", async.EventInvokeConfig{DestinationConfig: onFailure("arn:aws:sns:us-east-1:000000000000:t")}, awserr.ErrInvalidParameterValue, []string{"DestinationConfig.OnFailure.Destination", "does not exist"}},
		{"an event bus destination that does not exist", async.EventInvokeConfig{DestinationConfig: onFailure("arn:aws:events:us-east-1:000000000000:event-bus/nope")}, awserr.ErrInvalidParameterValue, []string{"DestinationConfig.OnFailure.Destination", "does not exist"}},
		{"an S3 bucket destination", async.EventInvokeConfig{DestinationConfig: onFailure("arn:aws:s3:::bucket")}, awserr.ErrInvalidParameterValue, []string{"DestinationConfig.OnFailure.Destination", "not supported"}},
		{"a destination that is not an ARN", async.EventInvokeConfig{DestinationConfig: onFailure("std")}, awserr.ErrInvalidParameterValue, []string{"DestinationConfig.OnFailure.Destination", "not the ARN"}},
		{"a stream destination that does not exist", async.EventInvokeConfig{DestinationConfig: onFailure(rn.Streams.ARN("nope"))}, awserr.ErrInvalidParameterValue, []string{"DestinationConfig.OnFailure.Destination", "does not exist"}},
		{"a function destination that does not exist", async.EventInvokeConfig{DestinationConfig: succ(rn.Functions.ARN("nope"))}, awserr.ErrInvalidParameterValue, []string{"DestinationConfig.OnSuccess.Destination", "does not exist"}},
		{"the function itself as destination", async.EventInvokeConfig{DestinationConfig: onFailure(rn.Functions.ARN("f"))}, awserr.ErrInvalidParameterValue, []string{"DestinationConfig.OnFailure.Destination", "itself"}},
		{"a DeadLetterConfig that is not a queue", async.EventInvokeConfig{DeadLetterConfig: &async.DeadLetterConfig{TargetArn: rn.Streams.ARN("s")}}, awserr.ErrInvalidParameterValue, []string{"DeadLetterConfig.TargetArn", "not a queue ARN"}},
		{"a FIFO DeadLetterConfig", async.EventInvokeConfig{DeadLetterConfig: &async.DeadLetterConfig{TargetArn: fifo}}, awserr.ErrInvalidParameterValue, []string{"DeadLetterConfig.TargetArn", "FIFO"}},
		{"an unknown function", async.EventInvokeConfig{FunctionName: "nope"}, awserr.ErrResourceNotFound, []string{"nope"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.cfg.FunctionName == "" {
				c.cfg.FunctionName = "f"
			}
			for _, call := range []func(context.Context, async.EventInvokeConfig) (*async.EventInvokeConfig, error){
				rn.Async.PutFunctionEventInvokeConfig, rn.Async.UpdateFunctionEventInvokeConfig} {
				_, err := call(ctx, c.cfg)
				if !errors.Is(err, c.want) {
					t.Fatalf("err = %v, want %s", err, c.want.Code)
				}
				for _, m := range c.msgs {
					if !strings.Contains(err.Error(), m) {
						t.Fatalf("err = %v, want it to mention %q", err, m)
					}
				}
			}
			if _, err := rn.Async.GetFunctionEventInvokeConfig(ctx, "f"); !errors.Is(err, awserr.ErrResourceNotFound) {
				t.Fatalf("a refused configuration was stored: %v", err)
			}
		})
	}
	t.Run("a standard queue, a stream and a function are accepted", func(t *testing.T) {
		c, err := rn.Async.PutFunctionEventInvokeConfig(ctx, async.EventInvokeConfig{FunctionName: rn.Functions.ARN("f"),
			DestinationConfig: &async.DestinationConfig{OnSuccess: &async.OnSuccess{Destination: rn.Functions.ARN("g")},
				OnFailure: &async.OnFailure{Destination: rn.Streams.ARN("s")}},
			DeadLetterConfig: &async.DeadLetterConfig{TargetArn: std}})
		if err != nil {
			t.Fatal(err)
		}
		if c.FunctionName != "f" || c.FunctionArn != rn.Functions.ARN("f") || !c.LastModified.Equal(t0) {
			t.Fatalf("config = %+v", c)
		}
		if err := rn.Async.DeleteFunctionEventInvokeConfig(ctx, "f"); err != nil {
			t.Fatal(err)
		}
	})
}

func TestEventInvokeConfigPutReplacesUpdateMerges(t *testing.T) {
	ctx := context.Background()
	rn := testenv.Start(t, testenv.Options{Clock: newClock()})
	newFunction(t, rn, function.Config{}, nil)
	q1, q2 := createQueue(t, rn, "q1", nil), createQueue(t, rn, "q2", nil)
	get := func() *async.EventInvokeConfig {
		t.Helper()
		c, err := rn.Async.GetFunctionEventInvokeConfig(ctx, "f")
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	if _, err := rn.Async.GetFunctionEventInvokeConfig(ctx, "f"); !errors.Is(err, awserr.ErrResourceNotFound) {
		t.Fatalf("Get before any Put: %v", err)
	}
	put(t, rn, async.EventInvokeConfig{FunctionName: "f", MaximumRetryAttempts: ptr(1), DestinationConfig: onFailure(q1)})
	put(t, rn, async.EventInvokeConfig{FunctionName: "f", MaximumEventAgeInSeconds: ptr(120)})
	if c := get(); c.MaximumRetryAttempts != nil || c.DestinationConfig != nil || *c.MaximumEventAgeInSeconds != 120 {
		t.Fatalf("after the second Put: %+v (Put replaces the whole configuration)", c)
	}
	update := func(c async.EventInvokeConfig) {
		t.Helper()
		c.FunctionName = "f"
		if _, err := rn.Async.UpdateFunctionEventInvokeConfig(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	update(async.EventInvokeConfig{MaximumRetryAttempts: ptr(0), DestinationConfig: onFailure(q1)})
	update(async.EventInvokeConfig{DestinationConfig: &async.DestinationConfig{OnSuccess: &async.OnSuccess{Destination: q2}}})
	c := get()
	if *c.MaximumRetryAttempts != 0 || *c.MaximumEventAgeInSeconds != 120 || c.DestinationConfig.OnFailure.Destination != q1 || c.DestinationConfig.OnSuccess.Destination != q2 {
		t.Fatalf("after the Updates: %s (Update merges the fields it sets)", mustJSON(c))
	}
	update(async.EventInvokeConfig{DestinationConfig: &async.DestinationConfig{OnFailure: &async.OnFailure{Destination: ""}}})
	if c := get(); c.DestinationConfig.OnFailure != nil || c.DestinationConfig.OnSuccess.Destination != q2 {
		t.Fatalf("an empty Destination removes it: %s", mustJSON(c))
	}
	if err := rn.Async.DeleteFunctionEventInvokeConfig(ctx, "f"); err != nil {
		t.Fatal(err)
	}
	if err := rn.Async.DeleteFunctionEventInvokeConfig(ctx, "f"); !errors.Is(err, awserr.ErrResourceNotFound) {
		t.Fatalf("second Delete: %v", err)
	}
	if _, err := rn.Async.GetFunctionEventInvokeConfig(ctx, "f"); !errors.Is(err, awserr.ErrResourceNotFound) {
		t.Fatalf("Get after Delete: %v", err)
	}
}

func TestRestartKeepsPendingEvents(t *testing.T) {
	ctx := context.Background()
	clock := newClock()
	dir := t.TempDir()
	rn := testenv.Start(t, testenv.Options{Dir: dir, Clock: clock})
	dest := createQueue(t, rn, "successes", nil)
	var calls atomic.Int64
	f := newFunction(t, rn, function.Config{}, func(string) (json.RawMessage, error) {
		if calls.Add(1) == 1 {
			return nil, errors.New("first attempt fails")
		}
		return json.RawMessage(`{"ok":true}`), nil
	})
	put(t, rn, async.EventInvokeConfig{FunctionName: "f", DestinationConfig: &async.DestinationConfig{OnSuccess: &async.OnSuccess{Destination: dest}}})
	out := invoke(t, rn, "f", async.Event, `{"order":42}`)
	waitStats(t, rn, "f", "first attempt failed and re-scheduled", func(s async.Stats) bool { return s.Retried == 1 && s.Handled == 1 })
	if err := rn.Close(); err != nil {
		t.Fatal(err)
	}

	rn = testenv.Start(t, testenv.Options{Dir: dir, Clock: clock})
	if c, err := rn.Async.GetFunctionEventInvokeConfig(ctx, "f"); err != nil || c.DestinationConfig.OnSuccess.Destination != dest {
		t.Fatalf("configuration after restart: %+v, %v", c, err)
	}
	idle(t, clock, 1) // the poller started at Open
	if n := queueDepth(t, rn, async.QueueName("f")); n != 1 {
		t.Fatalf("internal queue holds %d messages after restart, want the pending event", n)
	}
	clock.Advance(time.Minute)
	wantRecord(t, onlyMessage(t, rn, "successes").Body, map[string]any{
		"timestamp": awsTime(t0.Add(time.Minute)),
		"requestContext": map[string]any{"requestId": out.RequestID, "functionArn": rn.Functions.ARN("f") + ":$LATEST",
			"condition": "Success", "approximateInvokeCount": 2},
		"requestPayload": map[string]any{"order": 42},
	}, "")
	if f.count() != 2 || f.call(1).at != t0.Add(time.Minute) {
		t.Fatalf("calls = %+v", f.calls)
	}
}

// With the defaults (MaximumEventAgeInSeconds 21600), an event that cannot
// be run — its function was deleted after the first attempt — goes back to
// the queue with backoff, never counted as an attempt, until it is six
// hours old; then it goes to the OnFailure destination as EventAgeExceeded.
func TestDefaultEventAgeIsSixHours(t *testing.T) {
	clock := newClock()
	rn := testenv.Start(t, testenv.Options{Clock: clock})
	dest := createQueue(t, rn, "failures", nil)
	newFunction(t, rn, function.Config{}, fail("boom"))
	put(t, rn, async.EventInvokeConfig{FunctionName: "f", DestinationConfig: onFailure(dest)})
	out := invoke(t, rn, "f", async.Event, `{"order":7}`)
	waitStats(t, rn, "f", "first attempt", func(s async.Stats) bool { return s.Handled == 1 })
	if err := rn.Functions.DeleteFunction(context.Background(), "f"); err != nil {
		t.Fatal(err)
	}
	elapsed := time.Duration(0)
	for k := 1; ; k++ {
		st := async.Stats{}
		if st = rn.Async.Stats("f"); st.EventAgeExceeded == 1 {
			break
		}
		if elapsed > 7*time.Hour {
			t.Fatalf("no EventAgeExceeded after %v: %+v", elapsed, st)
		}
		idle(t, clock, 1)
		step := 5 * time.Minute // the backoff's cap; the first retry is due at +1 min
		clock.Advance(step)
		elapsed += step
		waitStats(t, rn, "f", fmt.Sprintf("event handled again (%d)", k), func(s async.Stats) bool { return s.Handled > int64(k) || s.EventAgeExceeded == 1 })
	}
	if elapsed < 6*time.Hour {
		t.Fatalf("the event aged out after %v, before the default six hours", elapsed)
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(onlyMessage(t, rn, "failures").Body), &rec); err != nil {
		t.Fatal(err)
	}
	rc := rec["requestContext"].(map[string]any)
	if rc["condition"] != "EventAgeExceeded" || rc["requestId"] != out.RequestID || rc["approximateInvokeCount"] != 1.0 {
		t.Fatalf("record %v", rec)
	}
}
