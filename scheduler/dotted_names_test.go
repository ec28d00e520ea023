package scheduler_test

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/mapping"
)

// TestAScheduleNamedWithADotCanBeDisabledAfterItFired: a schedule name
// is ^[0-9a-zA-Z-_.]+$, 1 to 64 characters (EventBridge Scheduler API
// Reference, CreateSchedule, Name), so "tick." and ".tock" are names, and
// UpdateSchedule with State DISABLED stops its invocations. Before, the
// schedules bucket's watch handed the process the key "default/tick=2E"
// (the bucket's escape of a name ending in '.'), so the process held the
// schedule twice: its first firing updated the copy the API never reads,
// UpdateSchedule then failed (ServiceException: wrong last sequence), the
// schedule went on firing, its stale occurrence was stored again every
// second, and ListSchedules listed it twice.
func TestAScheduleNamedWithADotCanBeDisabledAfterItFired(t *testing.T) {
	clock := clockwork.NewFakeClockAt(t0)
	rn := start(t, t.TempDir(), clock)
	ctx := context.Background()
	if _, err := rn.Queues.CreateQueue(ctx, "q", nil); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"tick.", ".tock", "a..b"} {
		create(t, rn, schedule(rn, name, "rate(5 minutes)", "q"))
	}
	received(t, rn, "q", 3) // the first occurrences, at once
	for _, name := range []string{"tick.", ".tock", "a..b"} {
		testenv.Eventually(t, 15*time.Second, name+"'s firing recorded", func() bool {
			s, err := rn.Schedules.GetSchedule("default", name)
			return err == nil && s.LastFired != nil
		})
		s := schedule(rn, name, "rate(5 minutes)", "q")
		s.State = "DISABLED"
		if _, err := rn.Schedules.UpdateSchedule(ctx, s); err != nil {
			t.Fatalf("UpdateSchedule(%q, DISABLED) after it fired: %v", name, err)
		}
	}
	if l := rn.Schedules.ListSchedules("", "", ""); len(l) != 3 {
		t.Errorf("ListSchedules: %d schedules, want 3: %+v", len(l), l)
	}
	clock.Advance(5 * time.Minute)
	received(t, rn, "q", 0)
	for range 5 {
		clock.Advance(time.Second)
	}
	received(t, rn, "q", 0)
	for _, s := range rn.Schedules.ListSchedules("", "", "") {
		if s.State != "DISABLED" {
			t.Errorf("%s is %s, want DISABLED", s.Name, s.State)
		}
	}
}

// TestAScheduleNamedWithADotCreatedThroughAnotherProcessIsKnownToTheFiringOne:
// a schedule created through any process is the firing process's to
// read, update and fire (the Scheduler API has one set of schedules per
// account and Region). Before, a schedule named "tick." created through
// a CLI process reached the firing process as "tick=2E": GetSchedule and
// UpdateSchedule of "tick." answered ResourceNotFoundException there.
func TestAScheduleNamedWithADotCreatedThroughAnotherProcessIsKnownToTheFiringOne(t *testing.T) {
	clock := clockwork.NewFakeClockAt(t0)
	firing := testenv.Start(t, testenv.Options{Clock: clock, ListenAddr: "127.0.0.1:0"})
	cli := testenv.Start(t, testenv.Options{Clock: clock, NATSURL: firing.Engine.ClientURL(), Mappings: mapping.Options{Passive: true}})
	ctx := context.Background()
	if _, err := firing.Queues.CreateQueue(ctx, "q", nil); err != nil {
		t.Fatal(err)
	}
	create(t, cli, schedule(cli, "tick.", "rate(5 minutes)", "q"))
	testenv.Eventually(t, 15*time.Second, "the schedule known to the firing process", func() bool {
		_, err := firing.Schedules.GetSchedule("default", "tick.")
		return err == nil
	})
	received(t, firing, "q", 1)
	testenv.Eventually(t, 15*time.Second, "its firing recorded", func() bool {
		s, err := firing.Schedules.GetSchedule("default", "tick.")
		return err == nil && s.LastFired != nil
	})
	if _, err := firing.Schedules.UpdateSchedule(ctx, schedule(firing, "tick.", "rate(10 minutes)", "q")); err != nil {
		t.Fatalf("UpdateSchedule through the firing process: %v", err)
	}
	if l := firing.Schedules.ListSchedules("", "", ""); len(l) != 1 {
		t.Errorf("ListSchedules: %d schedules, want 1: %+v", len(l), l)
	}
	clock.Advance(5 * time.Minute) // the new rate counts from the update
	received(t, firing, "q", 0)
	clock.Advance(5 * time.Minute)
	received(t, firing, "q", 1)
}
