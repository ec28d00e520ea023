package scheduler_test

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/mapping"
)

// A schedule created through a process that does not fire schedules (a
// passive one: a CLI command, or a node without the lease "scheduler") is
// fired by the process that does: it watches the schedules. Before the
// watch, the firing process knew only the schedules it had loaded when it
// opened.
func TestAScheduleCreatedThroughAnotherProcessFires(t *testing.T) {
	clock := clockwork.NewFakeClockAt(t0)
	firing := testenv.Start(t, testenv.Options{Clock: clock, ListenAddr: "127.0.0.1:0"})
	cli := testenv.Start(t, testenv.Options{Clock: clock, NATSURL: firing.Engine.ClientURL(), Mappings: mapping.Options{Passive: true}})
	if _, err := firing.Queues.CreateQueue(context.Background(), "q", nil); err != nil {
		t.Fatal(err)
	}
	create(t, cli, schedule(cli, "every5", "rate(5 minutes)", "q"))
	testenv.Eventually(t, 15*time.Second, "the schedule known to the firing process", func() bool {
		_, err := firing.Schedules.GetSchedule("default", "every5")
		return err == nil
	})
	received(t, firing, "q", 1) // the first occurrence, at once
	clock.Advance(5 * time.Minute)
	received(t, firing, "q", 1)
	// Deleted through the CLI process, it fires no more.
	if err := cli.Schedules.DeleteSchedule(context.Background(), "default", "every5"); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 15*time.Second, "the schedule forgotten by the firing process", func() bool {
		_, err := firing.Schedules.GetSchedule("default", "every5")
		return err != nil
	})
	clock.Advance(10 * time.Minute)
	received(t, firing, "q", 0)
}
