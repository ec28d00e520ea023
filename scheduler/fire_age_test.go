package scheduler_test

import (
	"context"
	"encoding/json"
	"hash/fnv"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel/scheduler"
	"github.com/runnel-dev/runnel/target"
)

// TestMissedScheduleOccurrencesOlderThanTheTargetsMaximumAgeAreDeadLettered:
// a schedule target's RetryPolicy.MaximumEventAgeInSeconds (60..86400) is
// "the maximum amount of time, in seconds, to continue to make retry
// attempts", after which the event goes to the dead-letter queue
// (https://docs.aws.amazon.com/scheduler/latest/APIReference/API_RetryPolicy.html,
// configuring-schedule-dlq.html). The occurrences missed while runnel was
// stopped fire at the next start, each once; each is stamped with its own
// invocation time (the occurrence plus its flexible offset), so those
// older than the maximum age go to the dead-letter queue. Before, the age
// counted from the restart and all 10 missed occurrences were delivered.
// A flexible window's offset is not age: an occurrence invoked at its
// offset is delivered.
func TestMissedScheduleOccurrencesOlderThanTheTargetsMaximumAgeAreDeadLettered(t *testing.T) {
	dir := t.TempDir()
	clock := clockwork.NewFakeClockAt(t0)
	rn := start(t, dir, clock)
	ctx := context.Background()
	for _, q := range []string{"q", "dlq", "flex"} {
		rn.Queues.CreateQueue(ctx, q, nil)
	}
	retry := &target.RetryPolicy{MaximumEventAgeInSeconds: ptr(60), MaximumRetryAttempts: ptr(0)}
	s := schedule(rn, "m", "rate(1 minute)", "q")
	s.Target.RetryPolicy = retry
	s.Target.DeadLetterConfig = &scheduler.DeadLetterConfig{Arn: rn.Queues.ARN("dlq")}
	create(t, rn, s)
	received(t, rn, "q", 1) // t0: a rate schedule starts at once
	rn.Close()
	clock.Advance(10 * time.Minute) // t0+1m .. t0+10m missed
	rn = start(t, dir, clock)
	times := func(name string, n int) []string {
		var out []string
		for _, b := range received(t, rn, name, n) {
			var in struct{ At string }
			body, _, _ := strings.Cut(b, "\n") // the attributes follow
			json.Unmarshal([]byte(body), &in)
			out = append(out, in.At)
		}
		sort.Strings(out)
		return out
	}
	// At t0+10m, the occurrences of t0+9m (60 s old) and t0+10m are
	// within the maximum age; the 8 before them are not.
	if got := times("q", 2); got[0] != "2026-01-01T00:09:00Z" || got[1] != "2026-01-01T00:10:00Z" {
		t.Errorf("delivered %v, want the occurrences of 00:09 and 00:10", got)
	}
	if got := times("dlq", 8); got[0] != "2026-01-01T00:01:00Z" || got[7] != "2026-01-01T00:08:00Z" {
		t.Errorf("dead-lettered %v, want the occurrences of 00:01 .. 00:08", got)
	}

	// A flexible window: invoked at its offset, more than 60 s after the
	// occurrence, and delivered.
	if err := rn.Schedules.DeleteSchedule(ctx, "default", "m"); err != nil {
		t.Fatal(err)
	}
	f := schedule(rn, "flex", "at(2026-01-01T01:00:00)", "flex")
	f.FlexibleTimeWindow = scheduler.FlexibleTimeWindow{Mode: "FLEXIBLE", MaximumWindowInMinutes: ptr(10)}
	f.Target.RetryPolicy = retry
	f.Target.DeadLetterConfig = &scheduler.DeadLetterConfig{Arn: rn.Queues.ARN("dlq")}
	create(t, rn, f)
	occ := time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC)
	h := fnv.New64a()
	h.Write([]byte(rn.Schedules.ARNOf("default", "flex") + "@" + occ.Format(time.RFC3339)))
	offset := time.Duration(h.Sum64()%600) * time.Second
	if offset <= time.Minute {
		t.Fatalf("offset %v: pick a schedule name whose offset is over 60 s", offset)
	}
	clock.Advance(occ.Add(offset).Sub(clock.Now()))
	received(t, rn, "flex", 1)
	received(t, rn, "dlq", 0)
}
