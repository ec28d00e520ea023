package eventbus_test

import (
	"encoding/json"
	"sort"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel/eventbus"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/target"
)

// TestMissedScheduledRuleOccurrencesOlderThanTheTargetsMaximumAgeAreDeadLettered:
// a target's RetryPolicy.MaximumEventAgeInSeconds is "the maximum amount
// of time, in seconds, to continue to make retry attempts" after which the
// event goes to the target's dead-letter queue
// (https://docs.aws.amazon.com/eventbridge/latest/APIReference/API_RetryPolicy.html,
// eb-rule-dlq.html). The occurrences of a scheduled rule missed while
// runnel was stopped fire at the next start, each once; each delivery is
// stamped with its occurrence's time, so those older than the target's
// maximum age go to the dead-letter queue with EXHAUSTED_RETRY_CONDITION
// MaximumEventAgeInSeconds. Before, the age counted from the restart, and
// every missed occurrence (here 10, 8 of them older than 60 s) reached
// the target.
func TestMissedScheduledRuleOccurrencesOlderThanTheTargetsMaximumAgeAreDeadLettered(t *testing.T) {
	dir := t.TempDir()
	clock := clockwork.NewFakeClockAt(t0)
	rn := testenv.Start(t, testenv.Options{Dir: dir, Clock: clock})
	q, dlq := newQueue(t, rn, "ticks", nil), newQueue(t, rn, "dlq", nil)
	rule(t, rn, eventbus.Rule{Name: "tick", ScheduleExpression: "rate(1 minute)"}, eventbus.Target{Id: "q", Arn: q,
		RetryPolicy:      &target.RetryPolicy{MaximumEventAgeInSeconds: ptr(60), MaximumRetryAttempts: ptr(0)},
		DeadLetterConfig: &eventbus.DeadLetterConfig{Arn: dlq}})
	clock.Advance(time.Minute)
	drain(t, rn, clock, "ticks", 1, 0) // t0+1m, on time
	rn.Close()
	clock.Advance(10 * time.Minute) // t0+2m .. t0+11m missed
	rn = testenv.Start(t, testenv.Options{Dir: dir, Clock: clock})
	times := func(queue string, n int) []string {
		var out []string
		for _, m := range drain(t, rn, clock, queue, n, 0) {
			var ev struct{ Time string }
			json.Unmarshal([]byte(m.Body), &ev)
			out = append(out, ev.Time)
			if queue == "dlq" {
				if a := m.MessageAttributes["EXHAUSTED_RETRY_CONDITION"].StringValue; a == nil || *a != "MaximumEventAgeInSeconds" {
					t.Errorf("dead-lettered %s without EXHAUSTED_RETRY_CONDITION MaximumEventAgeInSeconds: %v", ev.Time, m.MessageAttributes)
				}
			}
		}
		sort.Strings(out)
		return out
	}
	// At t0+11m, the occurrences of t0+10m (60 s old) and t0+11m are
	// within the maximum age; the 8 before them are not.
	if got := times("ticks", 2); got[0] != "2026-01-01T00:10:00Z" || got[1] != "2026-01-01T00:11:00Z" {
		t.Errorf("delivered %v, want the occurrences of 00:10 and 00:11", got)
	}
	if got := times("dlq", 8); got[0] != "2026-01-01T00:02:00Z" || got[7] != "2026-01-01T00:09:00Z" {
		t.Errorf("dead-lettered %v, want the occurrences of 00:02 .. 00:09", got)
	}
	empty(t, rn, "ticks")
	if st := rn.Targets.Stats(); st.DeadLettered != 8 {
		t.Errorf("stats %+v, want 8 dead-lettered", st)
	}
}
