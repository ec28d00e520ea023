package scheduler_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/scheduler/expr"
)

// TestATimezoneIsAnIANAName: ScheduleExpressionTimezone is "The timezone
// in which the scheduling expression is evaluated" (API_CreateSchedule),
// an IANA name. Go's time.LoadLocation takes "Local" for the host's own
// zone: such a schedule was accepted and followed whatever zone the
// machine was set to. It is now a ValidationException naming the field;
// an IANA name still works.
func TestATimezoneIsAnIANAName(t *testing.T) {
	clock := clockwork.NewFakeClockAt(t0)
	rn := start(t, t.TempDir(), clock)
	ctx := context.Background()
	rn.Queues.CreateQueue(ctx, "q", nil)
	for _, tz := range []string{"Local", "Mars/Olympus"} {
		s := schedule(rn, "tz", "cron(0 9 * * ? *)", "q")
		s.ScheduleExpressionTimezone = tz
		_, err := rn.Schedules.CreateSchedule(ctx, s)
		if !errors.Is(err, awserr.ErrValidation) || !strings.Contains(err.Error(), "ScheduleExpressionTimezone") || !strings.Contains(err.Error(), tz) {
			t.Errorf("ScheduleExpressionTimezone %q: %v, want a ValidationException naming the field", tz, err)
		}
		if _, err := expr.Parse("cron(0 9 * * ? *)", tz); err == nil {
			t.Errorf("expr.Parse accepts the zone %q", tz)
		}
	}
	s := schedule(rn, "tz", "cron(0 9 * * ? *)", "q")
	s.ScheduleExpressionTimezone = "America/New_York"
	create(t, rn, s)
}
