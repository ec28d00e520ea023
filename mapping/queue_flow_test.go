package mapping_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/backoff"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/mapping"
	"github.com/runnel-dev/runnel/wire"
)

func TestQueueBatchingWindow(t *testing.T) {
	t.Run("BatchSize above 10 gathers several receives into one invocation and closes at BatchSize", func(t *testing.T) {
		rn := testenv.Start(t, testenv.Options{})
		arn := createQueue(t, rn, "src", nil)
		var data []string
		for i := 0; i < 25; i++ {
			data = append(data, fmt.Sprintf("m%02d", i))
		}
		send(t, rn, "src", data...)
		r := newSQSRecorder(t, rn, function.Config{}, nil)
		// A 300 s window: the batch can only close this soon because it is full.
		m := createQueueMapping(t, rn, mapping.Config{EventSourceArn: arn, FunctionName: r.name, BatchSize: 25, MaximumBatchingWindowInSeconds: 300})
		waitQueueStatus(t, rn, m.UUID, "all deleted", func(qs mapping.QueueStatus) bool { return qs.DeletedMessages == 25 })
		got := r.calls()
		if len(got) != 1 || len(got[0]) != 25 {
			t.Fatalf("invocation sizes %v, want one of 25", sizes(got))
		}
		wantCounts(t, rn, "src", 0, 0)
	})
	t.Run("MaximumBatchingWindowInSeconds closes a partial batch when it ends", func(t *testing.T) {
		clock := newFakeClock()
		rn := testenv.Start(t, testenv.Options{Clock: clock})
		arn := createQueue(t, rn, "src", nil)
		r := newSQSRecorder(t, rn, function.Config{}, nil)
		m := createQueueMapping(t, rn, mapping.Config{EventSourceArn: arn, FunctionName: r.name, BatchSize: 100, MaximumBatchingWindowInSeconds: 5})
		for i := 0; i < 5; i++ {
			send(t, rn, "src", "a", "b", "c", "d", "e")
		}
		testenv.Eventually(t, wait, "25 messages gathered", func() bool { _, nv := counts(t, rn, "src"); return nv == 25 })
		queueIdle(t, clock, 1) // the gathering poller waits for the window
		clock.Advance(4 * time.Second)
		queueIdle(t, clock, 1)
		if qs := queueStatus(t, rn, m.UUID); qs.Invocations != 0 || r.count() != 0 {
			t.Fatalf("invoked before the window ended: %+v", qs)
		}
		clock.Advance(time.Second)
		waitQueueStatus(t, rn, m.UUID, "all deleted", func(qs mapping.QueueStatus) bool { return qs.DeletedMessages == 25 })
		if got := r.calls(); len(got) != 1 || len(got[0]) != 25 {
			t.Fatalf("invocation sizes %v, want one of 25", sizes(got))
		}
	})
}

func sizes(calls [][]string) []int {
	var out []int
	for _, c := range calls {
		out = append(out, len(c))
	}
	return out
}

func TestQueueMaximumConcurrencyBoundsConcurrentInvocations(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	arn := createQueue(t, rn, "src", nil)
	var data []string
	for i := 0; i < 40; i++ {
		data = append(data, fmt.Sprintf("m%02d", i))
	}
	send(t, rn, "src", data...)
	r := newSQSRecorder(t, rn, function.Config{}, func(events.SQSEvent) (events.SQSEventResponse, error) {
		time.Sleep(5 * time.Millisecond) // hold the batch so invocations overlap
		return events.SQSEventResponse{}, nil
	})
	m := createQueueMapping(t, rn, mapping.Config{EventSourceArn: arn, FunctionName: r.name, BatchSize: 1, ScalingConfig: scaling(3)})
	qs := waitQueueStatus(t, rn, m.UUID, "all deleted", func(qs mapping.QueueStatus) bool { return qs.DeletedMessages == 40 })
	if qs.Pollers != 3 {
		t.Fatalf("pollers = %d, want 3", qs.Pollers)
	}
	if p := r.peak.Load(); p > 3 || p < 2 {
		t.Fatalf("peak concurrent invocations = %d, want 2..3 (MaximumConcurrency 3)", p)
	}
	t.Run("the default is 5 concurrent batches", func(t *testing.T) {
		arn := createQueue(t, rn, "other", nil)
		m := createQueueMapping(t, rn, mapping.Config{EventSourceArn: arn, FunctionName: r.name})
		if qs := queueStatus(t, rn, m.UUID); qs.Pollers != mapping.DefaultQueueConcurrency {
			t.Fatalf("pollers = %d, want %d", qs.Pollers, mapping.DefaultQueueConcurrency)
		}
	})
}

func TestQueueRetryPolicy(t *testing.T) {
	setup := func(t *testing.T) (*runnel.Runnel, *clockwork.FakeClock, string) {
		clock := newFakeClock()
		rn := testenv.Start(t, testenv.Options{Clock: clock})
		dlq := createQueue(t, rn, "dlq", nil)
		arn := createQueue(t, rn, "src", map[string]string{"VisibilityTimeout": "300", "RedrivePolicy": redrive(dlq, 100)})
		return rn, clock, arn
	}
	t.Run("each retry waits a full-jitter delay in [BaseDelay, min(MaxDelay, BaseDelay·2^(n-1))] and MaxAttempts moves the message to the DLQ", func(t *testing.T) {
		p := backoff.Policy{BaseDelaySeconds: 10, MaxDelaySeconds: 25, MaxAttempts: 4, MaximumAgeInSeconds: 3600}
		rn, clock, arn := setup(t)
		send(t, rn, "src", "m")
		r := newSQSRecorder(t, rn, function.Config{}, failAlways)
		m := createQueueMapping(t, rn, mapping.Config{EventSourceArn: arn, FunctionName: r.name, ScalingConfig: scaling(2), RetryPolicy: &p})
		for n := 1; n < p.MaxAttempts; n++ {
			waitQueueStatus(t, rn, m.UUID, fmt.Sprintf("backoff %d", n), func(qs mapping.QueueStatus) bool { return qs.BackedOff == int64(n) })
			bound := time.Duration(min(p.MaxDelaySeconds, p.BaseDelaySeconds<<(n-1))) * time.Second
			base := time.Duration(p.BaseDelaySeconds) * time.Second
			_, tn := r.event(n - 1)
			queueIdle(t, clock, 2)
			clock.Advance(base - time.Second)
			queueIdle(t, clock, 2)
			if c := r.count(); c != n {
				t.Fatalf("receive %d: redelivered before BaseDelay", n)
			}
			clock.Advance(bound - base + time.Second)
			testenv.Eventually(t, wait, fmt.Sprintf("redelivery %d within %v", n, bound), func() bool { return r.count() == n+1 })
			ev, at := r.event(n)
			if at.Sub(tn) != bound {
				t.Fatalf("redelivered after %v, want by %v", at.Sub(tn), bound)
			}
			if got := receiveCounts(ev); !reflect.DeepEqual(got, []string{strconv.Itoa(n + 1)}) {
				t.Fatalf("ApproximateReceiveCount = %v, want %d", got, n+1)
			}
		}
		qs := waitQueueStatus(t, rn, m.UUID, "moved to the DLQ", func(qs mapping.QueueStatus) bool { return qs.MovedToDeadLetter == 1 })
		if qs.BackedOff != int64(p.MaxAttempts-1) || qs.FailedMessages != int64(p.MaxAttempts) || r.count() != p.MaxAttempts {
			t.Fatalf("status = %+v, %d invocations", qs, r.count())
		}
		wantCounts(t, rn, "src", 0, 0)
		if got := bodies(receiveAll(t, rn, "dlq")); !reflect.DeepEqual(got, []string{"m"}) {
			t.Fatalf("DLQ holds %v, want [m]", got)
		}
	})
	t.Run("a message older than MaximumAgeInSeconds that fails is moved to the DLQ", func(t *testing.T) {
		p := backoff.Policy{BaseDelaySeconds: 10, MaxDelaySeconds: 60, MaxAttempts: 100, MaximumAgeInSeconds: 60}
		rn, clock, arn := setup(t)
		send(t, rn, "src", "old")
		clock.Advance(61 * time.Second)
		send(t, rn, "src", "young")
		r := newSQSRecorder(t, rn, function.Config{}, failAlways)
		m := createQueueMapping(t, rn, mapping.Config{EventSourceArn: arn, FunctionName: r.name, RetryPolicy: &p})
		qs := waitQueueStatus(t, rn, m.UUID, "old moved, young backed off", func(qs mapping.QueueStatus) bool { return qs.MovedToDeadLetter == 1 && qs.BackedOff == 1 })
		if qs.Invocations != 1 {
			t.Fatalf("status = %+v", qs)
		}
		wantCounts(t, rn, "src", 0, 1)
		if got := bodies(receiveAll(t, rn, "dlq")); !reflect.DeepEqual(got, []string{"old"}) {
			t.Fatalf("DLQ holds %v, want [old]", got)
		}
	})
	t.Run("a retry envelope counts its attempt", func(t *testing.T) {
		p := backoff.Policy{BaseDelaySeconds: 10, MaxDelaySeconds: 60, MaxAttempts: 3, MaximumAgeInSeconds: 3600}
		rn, clock, arn := setup(t)
		env2, _ := wire.WrapRetry([]byte(`{"order":2}`), clock.Now())
		env3, _ := wire.WrapRetry([]byte(`{"order":3}`), clock.Now())
		env3, _ = wire.WrapRetry(env3, clock.Now())
		send(t, rn, "src", string(env2), string(env3))
		r := newSQSRecorder(t, rn, function.Config{}, failAlways)
		m := createQueueMapping(t, rn, mapping.Config{EventSourceArn: arn, FunctionName: r.name, RetryPolicy: &p})
		qs := waitQueueStatus(t, rn, m.UUID, "batch resolved", func(qs mapping.QueueStatus) bool { return qs.MovedToDeadLetter+qs.BackedOff == 2 })
		// Received once, the attempt-3 envelope is at its third attempt
		// (MaxAttempts); the attempt-2 one at its second.
		if qs.MovedToDeadLetter != 1 || qs.Invocations != 1 {
			t.Fatalf("status = %+v", qs)
		}
		if got := bodies(receiveAll(t, rn, "dlq")); !reflect.DeepEqual(got, []string{string(env3)}) {
			t.Fatalf("DLQ holds %v, want the attempt-3 envelope", got)
		}
	})
	t.Run("the delay is capped so the visibility timeout ends within 12 hours of the receive", func(t *testing.T) {
		p := backoff.Policy{BaseDelaySeconds: 43200, MaxDelaySeconds: 43200, MaxAttempts: 10, MaximumAgeInSeconds: 86400}
		rn, clock, arn := setup(t)
		send(t, rn, "src", "m")
		r := newSQSRecorder(t, rn, function.Config{}, func(events.SQSEvent) (events.SQSEventResponse, error) {
			clock.Advance(time.Second) // the invocation takes a second
			return events.SQSEventResponse{}, errBoom
		})
		m := createQueueMapping(t, rn, mapping.Config{EventSourceArn: arn, FunctionName: r.name, RetryPolicy: &p})
		// Without the cap ChangeMessageVisibility refuses 43200 s one second
		// after the receive, and the message is not backed off.
		waitQueueStatus(t, rn, m.UUID, "backed off", func(qs mapping.QueueStatus) bool { return qs.BackedOff == 1 })
		wantCounts(t, rn, "src", 0, 1)
	})
}

func TestQueueThrottlesDoNotLoseMessages(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	arn := createQueue(t, rn, "src", map[string]string{"VisibilityTimeout": "300"})
	send(t, rn, "src", "a", "b")
	r := newSQSRecorder(t, rn, function.Config{ReservedConcurrentExecutions: ptr(0)}, nil)
	m := createQueueMapping(t, rn, mapping.Config{EventSourceArn: arn, FunctionName: r.name})
	qs := waitQueueStatus(t, rn, m.UUID, "throttles", func(qs mapping.QueueStatus) bool { return qs.Throttles >= 3 })
	if qs.DeletedMessages != 0 || qs.Invocations != 0 || r.count() != 0 || qs.LastProcessingResult != "PROBLEM: Function call throttled" {
		t.Fatalf("status = %+v", qs)
	}
	wantCounts(t, rn, "src", 0, 2)
	// Lift the limit: the held batch is invoked, without a new receive.
	if _, err := rn.Functions.PutFunction(context.Background(), function.Config{FunctionName: r.name, Handler: r.handler}); err != nil {
		t.Fatal(err)
	}
	waitQueueStatus(t, rn, m.UUID, "processed", func(qs mapping.QueueStatus) bool { return qs.DeletedMessages == 2 })
	if got := r.calls(); len(got) != 1 || len(got[0]) != 2 {
		t.Fatalf("invocations = %v, want one of [a b]", got)
	}
	if ev, _ := r.event(0); !reflect.DeepEqual(receiveCounts(ev), []string{"1", "1"}) {
		t.Fatalf("ApproximateReceiveCount = %v, want 1 (throttles are retried without receiving again)", receiveCounts(ev))
	}
	wantCounts(t, rn, "src", 0, 0)
}

func TestQueueAsOnFailureDestination(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	arn := createStream(t, rn, "src", 1)
	dest := createQueue(t, rn, "failures", nil)
	seqs := put(t, rn, "src", "k", "x")
	r := newRecorder(t, rn, function.Config{}, failOn("x"))
	m := createMapping(t, rn, mapping.Config{EventSourceArn: arn, FunctionName: r.name, BatchSize: 1, MaximumRetryAttempts: ptr(0), DestinationConfig: withDestination(dest)})
	settle(t, rn, m.UUID, "src")
	msgs := receiveAll(t, rn, "failures")
	if len(msgs) != 1 {
		t.Fatalf("%d messages in the destination queue, want 1", len(msgs))
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(msgs[0].Body), &raw); err != nil {
		t.Fatalf("body %q: %v", msgs[0].Body, err)
	}
	if _, ok := raw["KinesisBatchInfo"]; !ok {
		t.Fatalf("body has no KinesisBatchInfo: %s", msgs[0].Body)
	}
	var f wire.OnFailureRecord
	json.Unmarshal([]byte(msgs[0].Body), &f)
	bi := f.KinesisBatchInfo
	if bi == nil || bi.BatchSize != 1 || bi.StreamArn != arn || bi.ShardID != "shardId-000000000000" || bi.StartSequenceNumber != seqs[0] ||
		f.RequestContext.Condition != mapping.ConditionRetryAttemptsExhausted {
		t.Fatalf("on-failure record = %s", msgs[0].Body)
	}
}

// Before, a mapping kept the RedrivePolicy (and VisibilityTimeout) the
// queue had when the mapping started: a dead-letter queue configured
// later was never used by its RetryPolicy.
func TestQueueSettingsChangedAfterTheMappingStartsAreUsed(t *testing.T) {
	clock := newFakeClock()
	rn := testenv.Start(t, testenv.Options{Clock: clock})
	dlq := createQueue(t, rn, "dlq", nil)
	arn := createQueue(t, rn, "src", map[string]string{"VisibilityTimeout": "30"})
	p := backoff.Policy{BaseDelaySeconds: 1, MaxDelaySeconds: 1, MaxAttempts: 1, MaximumAgeInSeconds: 3600}
	send(t, rn, "src", "m")
	r := newSQSRecorder(t, rn, function.Config{}, failAlways)
	m := createQueueMapping(t, rn, mapping.Config{EventSourceArn: arn, FunctionName: r.name, ScalingConfig: scaling(2), RetryPolicy: &p})
	waitQueueStatus(t, rn, m.UUID, "first failure", func(qs mapping.QueueStatus) bool { return qs.FailedMessages == 1 })
	if qs := queueStatus(t, rn, m.UUID); qs.MovedToDeadLetter != 0 {
		t.Fatalf("status %+v: moved with no RedrivePolicy", qs)
	}
	if err := rn.Queues.SetQueueAttributes(context.Background(), "src", map[string]string{"RedrivePolicy": redrive(dlq, 100)}); err != nil {
		t.Fatal(err)
	}
	queueIdle(t, clock, 2)
	clock.Advance(30 * time.Second)
	waitQueueStatus(t, rn, m.UUID, "moved to the dead-letter queue set later", func(qs mapping.QueueStatus) bool { return qs.MovedToDeadLetter == 1 })
	if got := bodies(receiveAll(t, rn, "dlq")); !reflect.DeepEqual(got, []string{"m"}) {
		t.Fatalf("DLQ holds %v, want [m]", got)
	}
}
