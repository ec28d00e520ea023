package scheduler_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel/awserr"
)

// TestAnUpdateToAStartDateLongPastFiresNoBacklog: CreateSchedule refuses
// a StartDate more than 5 minutes past ("The StartDate you specify cannot
// be earlier than 5 minutes ago."), so a schedule never fires every
// occurrence since a date long gone. UpdateSchedule accepted one (an
// update of a schedule made long ago carries its own StartDate), and a
// schedule not fired yet then fired every occurrence since that date at
// once: 49 messages for rate(1 hour) moved 48 hours back. It now counts
// from the update.
func TestAnUpdateToAStartDateLongPastFiresNoBacklog(t *testing.T) {
	clock := clockwork.NewFakeClockAt(t0)
	rn := start(t, t.TempDir(), clock)
	rn.Queues.CreateQueue(context.Background(), "q", nil)
	s := schedule(rn, "hourly", "rate(1 hour)", "q")
	s.StartDate = ptr(t0.Add(24 * time.Hour))
	create(t, rn, s)
	received(t, rn, "q", 0)
	s.StartDate = ptr(t0.Add(-48 * time.Hour))
	if _, err := rn.Schedules.UpdateSchedule(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	received(t, rn, "q", 0)
	clock.Advance(time.Hour)
	received(t, rn, "q", 1)
}

// TestALambdaTargetsInputIsJSON: API_Target (Scheduler): "If you are
// configuring a templated Lambda, AWS Step Functions, or Amazon
// EventBridge target, the input must be a well-formed JSON." Text was
// accepted, and each occurrence's invocation was then refused and retried
// for up to a day before its dead-letter queue.
func TestALambdaTargetsInputIsJSON(t *testing.T) {
	clock := clockwork.NewFakeClockAt(t0)
	rn := start(t, t.TempDir(), clock)
	s := schedule(rn, "fn", "rate(1 hour)", "q")
	s.Target.Arn = "arn:aws:lambda:us-east-1:000000000000:function:f"
	s.Target.Input = "hello, not json"
	if _, err := rn.Schedules.CreateSchedule(context.Background(), s); !errors.Is(err, awserr.ErrValidation) || !strings.Contains(err.Error(), "Target.Input") {
		t.Fatalf("CreateSchedule of a Lambda target with text Input = %v; want a ValidationException naming Target.Input", err)
	}
	s.Target.Input = `{"ok":"<aws.scheduler.schedule-arn>"}`
	create(t, rn, s)
	q := schedule(rn, "text", "rate(1 hour)", "q")
	q.Target.Input = "plain text for a queue"
	create(t, rn, q)
}
