package scheduler

import (
	"context"
	"encoding/json"
	"hash/fnv"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/runnel-dev/runnel/scheduler/expr"
	"github.com/runnel-dev/runnel/target"
)

// next returns a schedule's next occurrence after its last fired one and
// when to invoke it (the occurrence plus its flexible offset); ok is false
// when none is left. A rate() schedule's first occurrence is its StartDate,
// or its creation ("If you don't provide a StartDate for a rate-based
// schedule, your schedule starts invoking the target immediately",
// schedule-types).
func next(sc *Schedule, x *expr.Expr) (occ, at time.Time, ok bool) {
	switch {
	case x.Kind == expr.At:
		if sc.LastFired != nil {
			return occ, at, false
		}
		occ, _ = x.Next(time.Time{})
	default:
		from := sc.CreationDate
		if sc.StartDate != nil {
			from = *sc.StartDate
		}
		// A StartDate later than the last occurrence (moved on by
		// UpdateSchedule) counts as a schedule not fired yet: it starts
		// there, as "the date after which the schedule can begin invoking
		// its target" (API_CreateSchedule) says.
		switch {
		case sc.LastFired != nil && (sc.StartDate == nil || !sc.LastFired.Before(*sc.StartDate)):
			occ, ok = x.Next(*sc.LastFired)
		case x.Kind == expr.Rate:
			occ, ok = from, true // the first occurrence: StartDate, or at once
		default:
			occ, ok = x.Next(from.Add(-time.Nanosecond)) // StartDate itself may match
		}
		if !ok {
			return occ, at, false
		}
		if sc.EndDate != nil && !occ.Before(*sc.EndDate) { // "before which the schedule can invoke its target"
			return occ, at, false
		}
	}
	return occ, invokeAt(sc, occ), true
}

// invokeAt is when an occurrence is invoked: occ plus its flexible offset
// (a hash of the schedule's ARN and the occurrence, within
// MaximumWindowInMinutes), occ itself when the window is OFF.
func invokeAt(sc *Schedule, occ time.Time) time.Time {
	if w := sc.FlexibleTimeWindow; w.Mode == "FLEXIBLE" && w.MaximumWindowInMinutes != nil && *w.MaximumWindowInMinutes > 0 {
		h := fnv.New64a()
		h.Write([]byte(sc.Arn + "@" + occ.UTC().Format(time.RFC3339)))
		return occ.Add(time.Duration(h.Sum64()%uint64(*w.MaximumWindowInMinutes*60)) * time.Second)
	}
	return occ
}

// fire invokes every occurrence that is due at now, completes schedules
// with none left, and returns when the next one is due.
func (s *Service) fire(now time.Time) time.Time {
	type due struct {
		k   string
		occ time.Time
	}
	var todo []due
	var done []string
	var wake time.Time
	s.mu.Lock()
	for k, sc := range s.scheds {
		if sc.s.State != "ENABLED" {
			continue
		}
		occ, at, ok := next(&sc.s, sc.e)
		switch {
		case !ok:
			if sc.s.ActionAfterCompletion == "DELETE" {
				done = append(done, k)
			}
		case !at.After(now):
			todo = append(todo, due{k, occ})
		case wake.IsZero() || at.Before(wake):
			wake = at
		}
	}
	s.mu.Unlock()
	ctx := context.Background()
	for _, k := range done {
		group, name, _ := strings.Cut(k, "/")
		if err := s.DeleteSchedule(ctx, group, name); err == nil {
			s.log.Info("scheduler: schedule complete; deleted (ActionAfterCompletion DELETE)", "schedule", k)
		}
	}
	for _, d := range todo {
		if err := s.fireOne(ctx, d.k, d.occ); err != nil {
			s.log.Warn("scheduler: occurrence not fired; retrying in a second", "schedule", d.k, "at", d.occ, "err", err)
			return now.Add(time.Second)
		}
	}
	if len(todo) > 0 {
		return now // look again: more occurrences may be due
	}
	return wake
}

// crashAfterStore, set by tests, runs between storing an occurrence's
// delivery and recording the occurrence; an error stops fireOne there,
// as a crash would.
var crashAfterStore atomic.Pointer[func() error]

// executionID is an occurrence's execution id (its first attempt's;
// target.AttemptExecutionID gives the retries theirs): a name-based UUID
// of the schedule (its ARN, creation and Generation) and the occurrence,
// so that firing it again (after a crash, or by another process taking
// over) yields the same id, and an occurrence re-armed by UpdateSchedule
// (an at() schedule given back a time it already fired at) a new one.
// Before, the Generation was not part of it: the re-armed occurrence had
// the id already claimed, and the target poller dropped it as a duplicate
// while the schedule said it fired.
func executionID(sc *Schedule, occ time.Time) string {
	name := sc.Arn + "|" + sc.CreationDate.UTC().Format(time.RFC3339Nano) + "|" + occ.UTC().Format(time.RFC3339Nano)
	if sc.Generation > 0 {
		name += "|" + strconv.Itoa(sc.Generation)
	}
	return uuid.NewSHA1(uuid.NameSpaceURL, []byte(name)).String()
}

// fireOne stores the delivery of one occurrence, then records it as the
// schedule's last fired one. A crash between the two fires the
// occurrence again at restart with the same execution id; the delivery
// is Once, so only one stored copy is delivered (target/once.go).
func (s *Service) fireOne(ctx context.Context, k string, occ time.Time) error {
	s.mu.Lock()
	sc := s.scheds[k]
	s.mu.Unlock()
	if sc == nil {
		return nil
	}
	t := &sc.s.Target
	id := executionID(&sc.s, occ)
	// Accepted is the occurrence's own invocation time (with its flexible
	// offset), not now: an occurrence missed while runnel was stopped and
	// fired at restart is as old as that time says, and the target poller
	// dead-letters it when that is past the target's
	// MaximumEventAgeInSeconds. Before, its age counted from the restart
	// and every missed occurrence was delivered.
	// Template: each attempt fills the context attributes again, with its
	// own execution id and attempt number (target/schedule.go).
	d := target.Delivery{ID: id, Once: true, ScheduleArn: sc.s.Arn, ScheduledTime: occ.UnixMilli(), TargetArn: t.Arn,
		Payload: payload(&sc.s, id, occ), Template: t.Input, Accepted: invokeAt(&sc.s, occ).UnixMilli()}
	d.Set(t.RetryPolicy, t.DeadLetterConfig, t.SqsParameters)
	if t.KinesisParameters != nil {
		d.PartitionKey = t.KinesisParameters.PartitionKey
	}
	if err := s.targets.Enqueue(ctx, []target.Delivery{d}); err != nil {
		return err
	}
	if f := crashAfterStore.Load(); f != nil {
		if err := (*f)(); err != nil {
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.scheds[k]
	if cur == nil || cur.s.ScheduleExpression != sc.s.ScheduleExpression || cur.s.Generation != sc.s.Generation {
		return nil // deleted, changed or re-armed meanwhile
	}
	upd := cur.s
	fired := occ.UTC()
	upd.LastFired = &fired
	data, _ := json.Marshal(upd)
	rev, err := s.kv.Update(ctx, k, data, cur.rev)
	if err != nil {
		return err
	}
	s.scheds[k] = &sched{s: upd, rev: rev, e: cur.e}
	return nil
}

// payload is the target's Input with the context attributes of the
// first attempt ("{}" without Input).
func payload(sc *Schedule, executionID string, occ time.Time) string {
	if sc.Target.Input == "" {
		return "{}"
	}
	return target.SchedulePayload(sc.Target.Input, sc.Arn, occ, executionID, 1)
}
