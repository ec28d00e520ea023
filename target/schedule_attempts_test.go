package target_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/queue"
	"github.com/runnel-dev/runnel/scheduler"
	"github.com/runnel-dev/runnel/target"
)

// TestEachAttemptOfAScheduleHasItsOwnExecutionIDAndNumber:
// managing-schedule-context-attributes.html: <aws.scheduler.execution-id>
// is "The unique ID that EventBridge Scheduler assigns for each attempted
// invocation of a target", <aws.scheduler.attempt-number> "A counter that
// identifies the attempt number for the current invocation". Before, the
// payload was templated once when the occurrence fired: every retry said
// attempt 1 with the first attempt's execution id. Each attempt now fills
// them again; a FIFO target (with content-based deduplication) still gets
// one MessageDeduplicationId for every attempt (the first attempt's
// execution id), so a retry is not stored twice.
func TestEachAttemptOfAScheduleHasItsOwnExecutionIDAndNumber(t *testing.T) {
	clock := clockwork.NewFakeClockAt(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rn := testenv.Start(t, testenv.Options{Dir: t.TempDir(), Clock: clock})
	ctx := context.Background()
	rn.Queues.CreateQueue(ctx, "q.fifo", map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true"})
	type attempt struct{ ID, N string }
	var mu sync.Mutex
	var seen []attempt
	// Attempts 1 and 2 are throttled (retryable); attempt 3 is delivered.
	target.SetAttemptFault(func(d *target.Delivery) error {
		var a attempt
		json.Unmarshal([]byte(d.Payload), &a)
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, a)
		if d.Attempts < 2 {
			return awserr.New(awserr.ErrTooManyRequests, "Rate exceeded")
		}
		return nil
	})
	t.Cleanup(func() { target.SetAttemptFault(nil) })
	_, err := rn.Schedules.CreateSchedule(ctx, scheduler.Schedule{Name: "s", ScheduleExpression: "at(2026-01-01T00:00:00)",
		FlexibleTimeWindow: scheduler.FlexibleTimeWindow{Mode: "OFF"},
		Target: scheduler.Target{Arn: rn.Queues.ARN("q.fifo"), RoleArn: "arn:aws:iam::000000000000:role/s",
			Input:         `{"id":"<aws.scheduler.execution-id>","n":"<aws.scheduler.attempt-number>"}`,
			SqsParameters: &target.SqsParameters{MessageGroupId: "g"}}})
	if err != nil {
		t.Fatal(err)
	}
	var got []queue.Message
	testenv.Eventually(t, 15*time.Second, "the third attempt delivered", func() bool {
		zero := 0
		msgs, _ := rn.Queues.ReceiveMessage(ctx, "q.fifo", queue.ReceiveMessageInput{MaxNumberOfMessages: 10, WaitTimeSeconds: &zero,
			AttributeNames: []string{"All"}})
		got = append(got, msgs...)
		if len(got) == 0 {
			clock.Advance(5 * time.Second) // the retries' backoff
		}
		return len(got) > 0
	})
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 3 || len(got) != 1 {
		t.Fatalf("attempts %v, delivered %d: want 3 attempts, 1 delivered", seen, len(got))
	}
	ids := map[string]bool{}
	for i, a := range seen {
		if want := string(rune('1' + i)); a.N != want || a.ID == "" {
			t.Errorf("attempt %d: %+v, want attempt-number %s and an execution id", i+1, a, want)
		}
		ids[a.ID] = true
	}
	if len(ids) != 3 {
		t.Errorf("execution ids %v: want one per attempt", seen)
	}
	var body attempt
	json.Unmarshal([]byte(got[0].Body), &body)
	if body != seen[2] {
		t.Errorf("delivered %s, want the third attempt's payload %+v", got[0].Body, seen[2])
	}
	if dedup := got[0].Attributes["MessageDeduplicationId"]; dedup != seen[0].ID {
		t.Errorf("MessageDeduplicationId %q, want the first attempt's execution id %q (the same for every attempt)", dedup, seen[0].ID)
	}
}
