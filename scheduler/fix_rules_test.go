package scheduler_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/scheduler"
	"github.com/runnel-dev/runnel/target"
)

// TestAnAtScheduleMovedBackToATimeItFiredAtFiresAgain: UpdateSchedule
// gives an at() schedule a new time, and it fires "at that time (at once
// if the time has passed)" (UpdateSchedule's doc; AWS: a one-time
// schedule invokes its target once at its time, schedule-types). Before,
// an at() schedule moved away and back to a time it had fired at got the
// execution id it fired with (a hash of ARN, creation and occurrence): the
// target poller's claim dropped it as a duplicate while LastFired said it
// fired. The re-armed occurrence now has its own execution id, and a
// restart does not fire it again.
func TestAnAtScheduleMovedBackToATimeItFiredAtFiresAgain(t *testing.T) {
	dir := t.TempDir()
	clock := clockwork.NewFakeClockAt(t0)
	rn := start(t, dir, clock)
	ctx := context.Background()
	rn.Queues.CreateQueue(ctx, "q", nil)
	s := schedule(rn, "once", "at(2026-01-01T00:10:00)", "q")
	s.Target.Input = `{"id":"<aws.scheduler.execution-id>","at":"<aws.scheduler.scheduled-time>"}`
	create(t, rn, s)
	clock.Advance(10 * time.Minute)
	first := received(t, rn, "q", 1)[0]
	for _, at := range []string{"at(2026-01-01T05:00:00)", "at(2026-01-01T00:10:00)"} {
		s.ScheduleExpression = at
		if _, err := rn.Schedules.UpdateSchedule(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	again := received(t, rn, "q", 1)[0]
	var a, b struct{ ID, At string }
	json.Unmarshal([]byte(first), &a)
	json.Unmarshal([]byte(again), &b)
	if b.At != "2026-01-01T00:10:00Z" || a.ID == "" || a.ID == b.ID {
		t.Errorf("fired again %s after %s: want the 00:10 occurrence with a new execution id", again, first)
	}
	if st := rn.Targets.Stats(); st.Duplicates != 0 || st.Delivered != 2 {
		t.Errorf("stats %+v, want 2 delivered and no duplicate dropped", st)
	}
	rn.Crash()
	rn = start(t, dir, clock)
	clock.Advance(time.Minute)
	received(t, rn, "q", 0)
	if sc, err := rn.Schedules.GetSchedule("", "once"); err != nil || sc.LastFired == nil || sc.Generation != 2 {
		t.Errorf("after a restart: %+v %v, want fired, generation 2", sc, err)
	}
}

// TestARepeatedCreateScheduleWithItsClientTokenAnswersItsArn:
// API_CreateSchedule's ClientToken is a "Unique, case-sensitive identifier
// you provide to ensure the idempotency of the request" (1..64,
// ^[a-zA-Z0-9-_]+$); SDKs fill it and send it again when they retry.
// Before, it was ignored: a CreateSchedule retried after a client timeout
// got ConflictException though the first call created the schedule. Now
// the same request with the same token answers the schedule's ARN, also
// after a restart (the token is stored with the schedule); another request
// with that token, or without a token, is a ConflictException.
func TestARepeatedCreateScheduleWithItsClientTokenAnswersItsArn(t *testing.T) {
	dir := t.TempDir()
	clock := clockwork.NewFakeClockAt(t0)
	rn := start(t, dir, clock)
	ctx := context.Background()
	rn.Queues.CreateQueue(ctx, "q", nil)
	s := schedule(rn, "idem", "rate(1 hour)", "q")
	s.ClientToken = "token-1_A"
	arn, err := rn.Schedules.CreateSchedule(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	if got, err := rn.Schedules.CreateSchedule(ctx, s); err != nil || got != arn {
		t.Errorf("the same CreateSchedule with its ClientToken: %q %v, want %q", got, err, arn)
	}
	other := s
	other.Description = "another request"
	if _, err := rn.Schedules.CreateSchedule(ctx, other); !errors.Is(err, awserr.ErrConflict) || !strings.Contains(err.Error(), "ClientToken") {
		t.Errorf("another request with the token: %v, want a ConflictException naming the ClientToken", err)
	}
	noToken := s
	noToken.ClientToken = ""
	if _, err := rn.Schedules.CreateSchedule(ctx, noToken); !errors.Is(err, awserr.ErrConflict) {
		t.Errorf("the request without a token: %v, want ConflictException", err)
	}
	for _, bad := range []string{"a b", strings.Repeat("x", 65)} {
		bt := s
		bt.Name, bt.ClientToken = "other", bad
		if _, err := rn.Schedules.CreateSchedule(ctx, bt); !errors.Is(err, awserr.ErrValidation) || !strings.Contains(err.Error(), "clientToken") {
			t.Errorf("ClientToken %q: %v, want a ValidationException naming clientToken", bad, err)
		}
	}
	rn.Crash()
	rn = start(t, dir, clock)
	if got, err := rn.Schedules.CreateSchedule(ctx, s); err != nil || got != arn {
		t.Errorf("after a restart: %q %v, want %q", got, err, arn)
	}
}

// TestAFIFOTargetNeedsContentBasedDeduplication: API_SqsParameters: "If
// you specify an Amazon SQS FIFO queue as a target, the queue must have
// content-based deduplication enabled." Before, runnel sent the execution
// id as MessageDeduplicationId to any FIFO queue, so a queue without it
// received every occurrence. Now the invocation fails as SQS refuses a
// send without a deduplication id (InvalidParameterValue, a client error:
// not retried) and goes to the DLQ; a queue with content-based
// deduplication gets every occurrence, even with the same fixed Input
// (runnel deduplicates by execution id, where SQS would drop the second
// identical body within 5 minutes).
func TestAFIFOTargetNeedsContentBasedDeduplication(t *testing.T) {
	clock := clockwork.NewFakeClockAt(t0)
	rn := start(t, t.TempDir(), clock)
	ctx := context.Background()
	rn.Queues.CreateQueue(ctx, "dlq", nil)
	rn.Queues.CreateQueue(ctx, "plain.fifo", map[string]string{"FifoQueue": "true"})
	rn.Queues.CreateQueue(ctx, "cbd.fifo", map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true"})
	for _, q := range []string{"plain.fifo", "cbd.fifo"} {
		s := schedule(rn, strings.TrimSuffix(q, ".fifo"), "rate(1 minute)", q)
		s.Target.Input = `{"static":true}`
		s.Target.SqsParameters = &target.SqsParameters{MessageGroupId: "g"}
		s.Target.DeadLetterConfig = &scheduler.DeadLetterConfig{Arn: rn.Queues.ARN("dlq")}
		create(t, rn, s)
	}
	received(t, rn, "cbd.fifo", 1)
	for range 2 {
		clock.Advance(time.Minute)
		received(t, rn, "cbd.fifo", 1)
	}
	received(t, rn, "plain.fifo", 0)
	dead := received(t, rn, "dlq", 3)
	for _, want := range []string{"ERROR_CODE=InvalidParameterValue", "ContentBasedDeduplication", "RETRY_ATTEMPTS=0", "TARGET_ARN=" + rn.Queues.ARN("plain.fifo")} {
		if !strings.Contains(dead[0], want) {
			t.Errorf("DLQ message lacks %q: %s", want, dead[0])
		}
	}
	if st := rn.Targets.Stats(); st.Retried != 0 {
		t.Errorf("stats %+v: the refused sends were retried", st)
	}
}
