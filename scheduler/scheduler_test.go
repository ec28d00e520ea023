package scheduler_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/queue"
	"github.com/runnel-dev/runnel/scheduler"
	"github.com/runnel-dev/runnel/target"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func ptr[T any](v T) *T { return &v }

func start(t *testing.T, dir string, clock *clockwork.FakeClock) *runnel.Runnel {
	t.Helper()
	return testenv.Start(t, testenv.Options{Dir: dir, Clock: clock})
}

// received returns the bodies of the messages a queue holds now (and
// deletes them), after the pending deliveries are done.
func received(t *testing.T, rn *runnel.Runnel, name string, want int) []string {
	t.Helper()
	var got []string
	for _, m := range testenv.Drain(t, rn.Queues, name, want, nil) {
		b := m.Body
		for k, v := range m.MessageAttributes {
			b += "\n" + k + "=" + *v.StringValue
		}
		got = append(got, b)
	}
	time.Sleep(30 * time.Millisecond)
	zero := 0
	if more, _ := rn.Queues.ReceiveMessage(context.Background(), name, queue.ReceiveMessageInput{MaxNumberOfMessages: 10, WaitTimeSeconds: &zero}); len(more)+len(got) != want {
		t.Fatalf("%s: %d messages, want %d: %v %v", name, len(more)+len(got), want, got, more)
	}
	return got
}

func schedule(rn *runnel.Runnel, name, expression string, q string) scheduler.Schedule {
	return scheduler.Schedule{Name: name, ScheduleExpression: expression, FlexibleTimeWindow: scheduler.FlexibleTimeWindow{Mode: "OFF"},
		Target: scheduler.Target{Arn: rn.Queues.ARN(q), RoleArn: "arn:aws:iam::000000000000:role/s",
			Input: `{"arn":"<aws.scheduler.schedule-arn>","at":"<aws.scheduler.scheduled-time>"}`}}
}

func create(t *testing.T, rn *runnel.Runnel, s scheduler.Schedule) {
	t.Helper()
	if _, err := rn.Schedules.CreateSchedule(context.Background(), s); err != nil {
		t.Fatal(err)
	}
}

func TestRateScheduleFiresEachOccurrenceOnce(t *testing.T) {
	clock := clockwork.NewFakeClockAt(t0)
	rn := start(t, t.TempDir(), clock)
	rn.Queues.CreateQueue(context.Background(), "q", nil)
	create(t, rn, schedule(rn, "every5", "rate(5 minutes)", "q"))
	// Without a StartDate, the first occurrence is at once.
	if got := received(t, rn, "q", 1); !strings.Contains(got[0], "2026-01-01T00:00:00Z") {
		t.Errorf("first occurrence %s, want at the creation", got[0])
	}
	clock.Advance(4 * time.Minute)
	received(t, rn, "q", 0)
	clock.Advance(time.Minute)
	got := received(t, rn, "q", 1)
	var p struct{ Arn, At string }
	json.Unmarshal([]byte(got[0]), &p)
	if p.At != "2026-01-01T00:05:00Z" || !strings.HasSuffix(p.Arn, ":schedule/default/every5") {
		t.Errorf("payload %s", got[0])
	}
	clock.Advance(10 * time.Minute) // two occurrences due at once: both fire
	received(t, rn, "q", 2)
}

func TestCronInATimeZoneWithStartAndEndDates(t *testing.T) {
	clock := clockwork.NewFakeClockAt(t0)
	rn := start(t, t.TempDir(), clock)
	rn.Queues.CreateQueue(context.Background(), "q", nil)
	s := schedule(rn, "nine", "cron(0 9 * * ? *)", "q") // 09:00 in Paris = 08:00 UTC in winter
	s.ScheduleExpressionTimezone = "Europe/Paris"
	s.StartDate = ptr(t0.Add(24 * time.Hour)) // not on 1 January
	s.EndDate = ptr(t0.Add(48 * time.Hour))   // 2 January is the last
	create(t, rn, s)
	clock.Advance(9 * time.Hour)
	received(t, rn, "q", 0)
	clock.Advance(24 * time.Hour) // 2 January 09:00 UTC
	got := received(t, rn, "q", 1)
	if !strings.Contains(got[0], "2026-01-02T08:00:00Z") {
		t.Errorf("payload %s, want the 08:00 UTC occurrence", got[0])
	}
	clock.Advance(48 * time.Hour)
	received(t, rn, "q", 0)
}

func TestAtScheduleDeletedAfterCompletion(t *testing.T) {
	clock := clockwork.NewFakeClockAt(t0)
	rn := start(t, t.TempDir(), clock)
	rn.Queues.CreateQueue(context.Background(), "q", nil)
	s := schedule(rn, "once", "at(2026-01-01T01:00:00)", "q")
	s.ActionAfterCompletion = "DELETE"
	create(t, rn, s)
	clock.Advance(time.Hour)
	received(t, rn, "q", 1)
	testenv.Eventually(t, 5*time.Second, "the schedule deleted", func() bool {
		_, err := rn.Schedules.GetSchedule("", "once")
		return errors.Is(err, awserr.ErrResourceNotFound)
	})
}

func TestFlexibleTimeWindow(t *testing.T) {
	clock := clockwork.NewFakeClockAt(t0)
	rn := start(t, t.TempDir(), clock)
	rn.Queues.CreateQueue(context.Background(), "q", nil)
	s := schedule(rn, "flex", "at(2026-01-01T01:00:00)", "q")
	s.FlexibleTimeWindow = scheduler.FlexibleTimeWindow{Mode: "FLEXIBLE", MaximumWindowInMinutes: ptr(10)}
	create(t, rn, s)
	clock.Advance(time.Hour)
	received(t, rn, "q", 0)         // at its time: not yet (this schedule's offset in the window is not 0)
	clock.Advance(10 * time.Minute) // the end of the window
	received(t, rn, "q", 1)
	bad := schedule(rn, "bad", "rate(1 minute)", "q")
	bad.FlexibleTimeWindow = scheduler.FlexibleTimeWindow{Mode: "FLEXIBLE", MaximumWindowInMinutes: ptr(1441)}
	if _, err := rn.Schedules.CreateSchedule(context.Background(), bad); !errors.Is(err, awserr.ErrValidation) || !strings.Contains(err.Error(), "1..1440") {
		t.Errorf("window 1441: %v", err)
	}
}

// A stopped runnel fires the occurrences it missed at restart, and no
// occurrence fired before the stop fires again.
func TestSchedulesKeptAcrossARestart(t *testing.T) {
	dir := t.TempDir()
	clock := clockwork.NewFakeClockAt(t0)
	rn := start(t, dir, clock)
	rn.Queues.CreateQueue(context.Background(), "q", nil)
	s := schedule(rn, "every5", "rate(5 minutes)", "q")
	s.StartDate = ptr(t0.Add(5 * time.Minute)) // the first occurrence
	create(t, rn, s)
	received(t, rn, "q", 0)
	clock.Advance(5 * time.Minute)
	received(t, rn, "q", 1)
	rn.Close()
	clock.Advance(10 * time.Minute) // two occurrences while stopped
	rn = start(t, dir, clock)
	got := received(t, rn, "q", 2)
	for i, want := range []string{"00:10:00Z", "00:15:00Z"} {
		if !strings.Contains(strings.Join(got, " "), want) {
			t.Errorf("occurrence %d (%s) missing: %v", i, want, got)
		}
	}
}

// fireEvery5 opens an instance on dir that stores deliveries but attempts
// none, with schedule every5 (rate(5 minutes), first at 00:05) to queue
// q, and advances the clock to its first occurrence.
func fireEvery5(t *testing.T, dir string, clock *clockwork.FakeClock) *runnel.Runnel {
	t.Helper()
	rn := testenv.Start(t, testenv.Options{Dir: dir, Clock: clock, Targets: target.Options{Passive: true}})
	rn.Queues.CreateQueue(context.Background(), "q", nil)
	s := schedule(rn, "every5", "rate(5 minutes)", "q")
	s.StartDate = ptr(t0.Add(5 * time.Minute))
	create(t, rn, s)
	clock.Advance(5 * time.Minute)
	return rn
}

// A crash between an occurrence's firing and its delivery neither loses
// nor doubles it: the delivery is stored (deliveries not attempted here),
// the occurrence recorded, then the process dies.
func TestCrashBetweenFiringAndDelivery(t *testing.T) {
	dir := t.TempDir()
	clock := clockwork.NewFakeClockAt(t0)
	rn := fireEvery5(t, dir, clock)
	testenv.Eventually(t, 10*time.Second, "the occurrence recorded", func() bool {
		s, err := rn.Schedules.GetSchedule("", "every5")
		return err == nil && s.LastFired != nil
	})
	received(t, rn, "q", 0)
	rn.Crash()
	rn = start(t, dir, clock)
	got := received(t, rn, "q", 1)
	if !strings.Contains(got[0], "00:05:00Z") {
		t.Errorf("delivered %v, want the 00:05 occurrence", got)
	}
	clock.Advance(4 * time.Minute)
	received(t, rn, "q", 0)
}

// A crash after an occurrence's delivery is stored but before the
// occurrence is recorded fires it again at restart; the target still
// gets it once, and the second copy is counted as a duplicate.
func TestCrashBetweenStoringAndRecordingAnOccurrence(t *testing.T) {
	dir := t.TempDir()
	clock := clockwork.NewFakeClockAt(t0)
	reached := testenv.CrashHook(t, scheduler.SetCrashAfterStore)
	rn := fireEvery5(t, dir, clock) // both copies meet after the restart
	reached()
	rn.Crash()
	scheduler.SetCrashAfterStore(nil)
	rn = start(t, dir, clock)
	testenv.Eventually(t, 10*time.Second, "both copies settled", func() bool {
		st := rn.Targets.Stats()
		return st.Delivered+st.Duplicates >= 2
	})
	got := received(t, rn, "q", 1)
	if !strings.Contains(got[0], "00:05:00Z") {
		t.Errorf("delivered %v, want the 00:05 occurrence", got)
	}
	// The first process may have fired the occurrence more than once
	// before the crash (each try stops at the hook): at least 1 dropped.
	if st := rn.Targets.Stats(); st.Delivered != 1 || st.Duplicates < 1 {
		t.Errorf("stats %+v, want 1 delivered and at least 1 duplicate dropped", st)
	}
	clock.Advance(4 * time.Minute)
	received(t, rn, "q", 0)
}

// A schedule disabled for a while fires nothing for that time once
// enabled again.
func TestDisabledTimeIsNotFiredLater(t *testing.T) {
	clock := clockwork.NewFakeClockAt(t0)
	rn := start(t, t.TempDir(), clock)
	ctx := context.Background()
	rn.Queues.CreateQueue(ctx, "q", nil)
	s := schedule(rn, "every5", "rate(5 minutes)", "q")
	s.StartDate = ptr(t0.Add(5 * time.Minute))
	s.State = "DISABLED"
	create(t, rn, s)
	clock.Advance(30 * time.Minute)
	received(t, rn, "q", 0)
	s.State = "ENABLED"
	if _, err := rn.Schedules.UpdateSchedule(ctx, s); err != nil {
		t.Fatal(err)
	}
	received(t, rn, "q", 0)
	clock.Advance(5 * time.Minute)
	if got := received(t, rn, "q", 1); !strings.Contains(got[0], "00:35:00Z") {
		t.Errorf("fired %v, want only the 00:35 occurrence", got)
	}
}

// TestFailedInvocationGoesToTheDLQ: a failed invocation goes to the
// schedule's dead-letter queue with the attributes of
// configuring-schedule-dlq.html ("Retrieve the dead-letter event"):
// ERROR_CODE is the target service's own code (here
// "AWS.SimpleQueueService.NonExistentQueue"), ERROR_MESSAGE its message,
// IS_PAYLOAD_TRUNCATED "false", with EXECUTION_ID, SCHEDULE_ARN,
// SCHEDULED_TIME and TARGET_ARN. Before, ERROR_CODE was an EventBridge
// rule's (NO_RESOURCE) and IS_PAYLOAD_TRUNCATED was never set.
func TestFailedInvocationGoesToTheDLQ(t *testing.T) {
	clock := clockwork.NewFakeClockAt(t0)
	rn := start(t, t.TempDir(), clock)
	rn.Queues.CreateQueue(context.Background(), "dlq", nil)
	s := schedule(rn, "lost", "rate(1 minute)", "gone") // the target queue does not exist
	s.Target.DeadLetterConfig = &scheduler.DeadLetterConfig{Arn: rn.Queues.ARN("dlq")}
	s.Target.RetryPolicy = &target.RetryPolicy{MaximumRetryAttempts: ptr(0)}
	s.StartDate = ptr(t0.Add(time.Minute))
	create(t, rn, s)
	clock.Advance(time.Minute)
	got := received(t, rn, "dlq", 1)[0]
	for _, want := range []string{"ERROR_CODE=AWS.SimpleQueueService.NonExistentQueue", "ERROR_MESSAGE=", "IS_PAYLOAD_TRUNCATED=false",
		"SCHEDULE_ARN=" + rn.Schedules.ARNOf("default", "lost"), "SCHEDULED_TIME=2026-01-01T00:01:00Z", "EXECUTION_ID=",
		"TARGET_ARN=" + rn.Queues.ARN("gone"), "RETRY_ATTEMPTS=0"} {
		if !strings.Contains(got, want) {
			t.Errorf("DLQ message lacks %q: %s", want, got)
		}
	}
}

func TestScheduleGroupsAndErrors(t *testing.T) {
	clock := clockwork.NewFakeClockAt(t0)
	rn := start(t, t.TempDir(), clock)
	ctx := context.Background()
	if _, err := rn.Schedules.CreateScheduleGroup(ctx, "default"); !errors.Is(err, awserr.ErrConflict) {
		t.Errorf("default group again: %v, want ConflictException", err)
	}
	s := schedule(rn, "x", "rate(1 minute)", "q")
	s.GroupName = "nope"
	if _, err := rn.Schedules.CreateSchedule(ctx, s); !errors.Is(err, awserr.ErrResourceNotFound) {
		t.Errorf("schedule in a missing group: %v", err)
	}
	if _, err := rn.Schedules.CreateScheduleGroup(ctx, "g"); err != nil {
		t.Fatal(err)
	}
	s.GroupName = "g"
	create(t, rn, s)
	if _, err := rn.Schedules.CreateSchedule(ctx, s); !errors.Is(err, awserr.ErrConflict) {
		t.Errorf("a second schedule x: %v", err)
	}
	s.Target.RetryPolicy = &target.RetryPolicy{MaximumEventAgeInSeconds: ptr(59)}
	if _, err := rn.Schedules.UpdateSchedule(ctx, s); !errors.Is(err, awserr.ErrValidation) || !strings.Contains(err.Error(), "MaximumEventAgeInSeconds") {
		t.Errorf("MaximumEventAgeInSeconds 59: %v", err)
	}
	if err := rn.Schedules.DeleteScheduleGroup(ctx, "g"); err != nil {
		t.Fatal(err)
	}
	if got := rn.Schedules.ListSchedules("g", "", ""); len(got) != 0 {
		t.Errorf("schedules of a deleted group remain: %v", got)
	}
}

// TestAnAtScheduleFiresOnceWhateverUpdatesItGets: an at() schedule invokes
// its target once, at its time (schedule-types, "One-time schedules"). A
// schedule created disabled and enabled before its time fires at its
// time; one given a new time fires at the new time; with
// ActionAfterCompletion DELETE it is deleted only after it fired. (An
// update marked it fired: it never fired, and DELETE deleted it unfired.)
func TestAnAtScheduleFiresOnceWhateverUpdatesItGets(t *testing.T) {
	clock := clockwork.NewFakeClockAt(t0)
	rn := start(t, t.TempDir(), clock)
	ctx := context.Background()
	rn.Queues.CreateQueue(ctx, "q", nil)
	enabled := schedule(rn, "enabled-later", "at(2026-01-01T01:00:00)", "q")
	enabled.State = "DISABLED"
	create(t, rn, enabled)
	moved := schedule(rn, "moved", "at(2026-01-01T01:00:00)", "q")
	moved.ActionAfterCompletion = "DELETE"
	create(t, rn, moved)
	enabled.State = "ENABLED"
	moved.ScheduleExpression = "at(2026-01-01T02:00:00)"
	for _, s := range []scheduler.Schedule{enabled, moved} {
		if _, err := rn.Schedules.UpdateSchedule(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	clock.Advance(time.Hour)
	if got := received(t, rn, "q", 1); !strings.Contains(got[0], "enabled-later") || !strings.Contains(got[0], "01:00:00Z") {
		t.Errorf("at 01:00: %v, want the schedule enabled again", got)
	}
	if _, err := rn.Schedules.GetSchedule("", "moved"); err != nil {
		t.Fatalf("the moved schedule before its new time: %v", err)
	}
	clock.Advance(time.Hour)
	if got := received(t, rn, "q", 1); !strings.Contains(got[0], "moved") || !strings.Contains(got[0], "02:00:00Z") {
		t.Errorf("at 02:00: %v, want the moved schedule", got)
	}
	testenv.Eventually(t, 5*time.Second, "the moved schedule deleted after it fired", func() bool {
		_, err := rn.Schedules.GetSchedule("", "moved")
		return errors.Is(err, awserr.ErrResourceNotFound)
	})
	// Enabled again after it fired, it does not fire again.
	enabled.State = "DISABLED"
	rn.Schedules.UpdateSchedule(ctx, enabled)
	enabled.State = "ENABLED"
	rn.Schedules.UpdateSchedule(ctx, enabled)
	clock.Advance(time.Hour)
	received(t, rn, "q", 0)
}

// TestAStartDateMovedLaterHoldsBackTheSchedule: StartDate is "the date
// after which the schedule can begin invoking its target"
// (API_CreateSchedule); moved later by UpdateSchedule, with the same
// expression, nothing fires before it. (The next occurrence was counted
// from the last fired one, StartDate unread.)
func TestAStartDateMovedLaterHoldsBackTheSchedule(t *testing.T) {
	clock := clockwork.NewFakeClockAt(t0)
	rn := start(t, t.TempDir(), clock)
	ctx := context.Background()
	rn.Queues.CreateQueue(ctx, "q", nil)
	s := schedule(rn, "every5", "rate(5 minutes)", "q")
	create(t, rn, s)
	received(t, rn, "q", 1) // 00:00
	s.StartDate = ptr(t0.Add(24 * time.Hour))
	if _, err := rn.Schedules.UpdateSchedule(ctx, s); err != nil {
		t.Fatal(err)
	}
	clock.Advance(5 * time.Minute)
	received(t, rn, "q", 0)
	clock.Advance(24*time.Hour - 5*time.Minute) // the StartDate: the first occurrence
	if got := received(t, rn, "q", 1); !strings.Contains(got[0], "2026-01-02T00:00:00Z") {
		t.Errorf("fired %v, want the occurrence at the StartDate", got)
	}
}

// TestAStartDateLongPastIsRefused: CreateSchedule refuses a StartDate more
// than 5 minutes past ("The StartDate you specify cannot be earlier than 5
// minutes ago."), which would otherwise fire every occurrence since it at
// once; at() ignores StartDate.
func TestAStartDateLongPastIsRefused(t *testing.T) {
	clock := clockwork.NewFakeClockAt(t0)
	rn := start(t, t.TempDir(), clock)
	rn.Queues.CreateQueue(context.Background(), "q", nil)
	s := schedule(rn, "hourly", "rate(1 hour)", "q")
	s.StartDate = ptr(t0.Add(-24 * time.Hour))
	if _, err := rn.Schedules.CreateSchedule(context.Background(), s); !errors.Is(err, awserr.ErrValidation) || !strings.Contains(err.Error(), "5 minutes ago") {
		t.Fatalf("StartDate a day past: %v, want ValidationException", err)
	}
	s.StartDate = ptr(t0.Add(-4 * time.Minute)) // within the 5 minutes: accepted
	create(t, rn, s)
	received(t, rn, "q", 1)
	once := schedule(rn, "once", "at(2026-01-01T01:00:00)", "q")
	once.StartDate = ptr(t0.Add(-24 * time.Hour))
	create(t, rn, once)
}

// TestNothingFiresAtEndDate: EndDate is "the date, in UTC, before which
// the schedule can invoke its target" (API_CreateSchedule): an occurrence
// at EndDate itself does not fire. (It fired.)
func TestNothingFiresAtEndDate(t *testing.T) {
	clock := clockwork.NewFakeClockAt(t0)
	rn := start(t, t.TempDir(), clock)
	rn.Queues.CreateQueue(context.Background(), "q", nil)
	s := schedule(rn, "nine", "cron(0 9 * * ? *)", "q")
	s.EndDate = ptr(t0.Add(33 * time.Hour)) // 2 January 09:00
	create(t, rn, s)
	clock.Advance(9 * time.Hour)
	received(t, rn, "q", 1) // 1 January 09:00
	clock.Advance(24 * time.Hour)
	received(t, rn, "q", 0)
}
