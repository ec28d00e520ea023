package scheduler_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel/internal/testenv"
)

// TestAScheduleStoredWithTheLocalZoneStillLoads: "Local" is refused as a
// ScheduleExpressionTimezone now (AWS takes IANA names only), but earlier
// runnel versions accepted and stored it. Such a schedule refused at load
// was a ghost: never fired, GetSchedule and DeleteSchedule said it did
// not exist, ListSchedules left it out, and its name was taken. A stored
// "Local" keeps meaning the host's zone: the schedule loads, can be read,
// and can be deleted.
func TestAScheduleStoredWithTheLocalZoneStillLoads(t *testing.T) {
	dir := t.TempDir()
	clock := clockwork.NewFakeClockAt(t0)
	rn := start(t, dir, clock)
	ctx := context.Background()
	rn.Queues.CreateQueue(ctx, "q", nil)
	create(t, rn, schedule(rn, "old", "rate(5 minutes)", "q"))
	kv, err := rn.Engine.Bucket(ctx, "runnel_schedules")
	if err != nil {
		t.Fatal(err)
	}
	// The occurrence at its creation fired and was recorded (LastFired)
	// before the entry is rewritten, so the restart fires only what is due.
	received(t, rn, "q", 1)
	var stored map[string]any
	testenv.Eventually(t, 10*time.Second, "the first occurrence recorded", func() bool {
		e, err := kv.Get(ctx, "default/old")
		if err != nil {
			t.Fatal(err)
		}
		stored = nil
		if err := json.Unmarshal(e.Value(), &stored); err != nil {
			t.Fatal(err)
		}
		return stored["LastFired"] != nil
	})
	stored["ScheduleExpressionTimezone"] = "Local" // as an earlier version stored it
	b, _ := json.Marshal(stored)
	if _, err := kv.Put(ctx, "default/old", b); err != nil {
		t.Fatal(err)
	}
	rn.Close()
	rn = start(t, dir, clock)
	got, err := rn.Schedules.GetSchedule("", "old")
	if err != nil || got.ScheduleExpressionTimezone != "Local" {
		t.Fatalf("GetSchedule of a schedule stored with the Local zone = %+v, %v", got, err)
	}
	clock.Advance(5 * time.Minute)
	received(t, rn, "q", 1) // the occurrence 5 minutes on
	if err := rn.Schedules.DeleteSchedule(ctx, "", "old"); err != nil {
		t.Fatalf("DeleteSchedule: %v", err)
	}
}
