package eventbus

// Scheduled rules (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-create-rule-schedule.html):
// a rule with a ScheduleExpression on the default bus puts, at each
// occurrence on the engine's clock, the event
//
//	{"version":"0","id":...,"detail-type":"Scheduled Event","source":"aws.events",
//	 "account":...,"time":<the occurrence>,"region":...,"resources":[<rule ARN>],"detail":{}}
//
// to its targets. rate() counts from the rule's creation; cron() is UTC.
// Occurrences missed while no process fired them (runnel stopped) fire at
// the next start, each once, in order; each delivery is stamped with its
// occurrence's time as its acceptance time (target.Delivery.Accepted), so
// one older than its target's RetryPolicy.MaximumEventAgeInSeconds
// (default 24 hours) goes to the target's dead-letter queue (or
// target.DeadLetterStore), counted and logged, instead of being delivered.
// The last occurrence fired is stored with the rule after its deliveries
// are stored: none is skipped, and a crash in between fires that
// occurrence again with the same event id, whose second copies package
// target drops (Delivery.Once).

import (
	"context"
	"encoding/json"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
)

// fireSchedules fires every scheduled rule whose occurrence is due (and
// every trimInterval trims the archives) and returns when to run again.
func (s *Service) fireSchedules(now time.Time) time.Time {
	var next time.Time
	if s.retained() { // no timer waits on the clock without an archive to trim
		if !now.Before(s.nextTrim) {
			s.trimArchives(s.bg, now)
			s.nextTrim = now.Add(trimInterval)
		}
		next = s.nextTrim
	}
	st, err := s.busOf(DefaultBus)
	if err != nil {
		return next
	}
	type due struct {
		name string
		at   time.Time
	}
	var todo []due
	s.mu.Lock()
	for name, e := range st.sched {
		r := st.b.Rules[name]
		from := time.UnixMilli(max(r.LastFired, r.Created))
		at, ok := e.Next(from)
		if !ok || !enabled(r.State) {
			continue
		}
		if !at.After(now) {
			todo = append(todo, due{name, at})
			at, _ = e.Next(at)
		}
		if next.IsZero() || at.Before(next) {
			next = at
		}
	}
	s.mu.Unlock()
	for _, d := range todo {
		if err := s.fireRule(s.bg, d.name, d.at); err != nil {
			s.log.Warn("eventbridge: scheduled rule not fired; retrying in a second", "rule", d.name, "at", d.at, "err", err)
			next = now.Add(time.Second)
		}
	}
	return next
}

// crashAfterStore, set by tests, runs between storing an occurrence's
// deliveries and recording the occurrence; an error stops fireRule there,
// as a crash would.
var crashAfterStore atomic.Pointer[func() error]

// fireRule puts a scheduled rule's event for the occurrence at, then
// records the occurrence.
func (s *Service) fireRule(ctx context.Context, name string, at time.Time) error {
	r, err := s.rule(DefaultBus, name)
	if err != nil {
		return nil // deleted meanwhile
	}
	// The event id is derived from the rule and the occurrence: fired
	// again after a crash, the occurrence's deliveries have the same ids
	// and are Once, so only one copy reaches each target.
	id := uuid.NewSHA1(uuid.NameSpaceURL, []byte(r.Arn+"|"+strconv.FormatInt(r.Created, 10)+"|"+at.UTC().Format(time.RFC3339Nano))).String()
	ev := event{Version: "0", ID: id, DetailType: "Scheduled Event", Source: "aws.events", Account: s.eng.AccountID(),
		Time: at.UTC().Format(time.RFC3339), Region: s.eng.Region(), Resources: []string{r.Arn}, Detail: json.RawMessage("{}")}
	raw, _ := marshal(ev)
	var m map[string]any
	json.Unmarshal(raw, &m)
	s.mu.Lock()
	ds := deliveries(r, m, raw, ev.ID, s.eng.Clock.Now())
	for i := range ds {
		ds[i].Once = true
		// The occurrence's own time is its acceptance time: a missed
		// occurrence fired at restart is as old as its time says, and the
		// target poller dead-letters it when that is past the target's
		// MaximumEventAgeInSeconds (before, its age counted from the
		// restart, and every missed occurrence was delivered).
		ds[i].Accepted = at.UnixMilli()
	}
	s.statsLocked(r.Arn, len(r.Targets)).matched.Add(1)
	s.mu.Unlock()
	if err := s.targets.Enqueue(ctx, ds); err != nil {
		return err
	}
	if f := crashAfterStore.Load(); f != nil {
		if err := (*f)(); err != nil {
			return err
		}
	}
	return s.update(ctx, DefaultBus, func(b *storedBus) error {
		if cur := b.Rules[name]; cur != nil && cur.ScheduleExpression == r.ScheduleExpression {
			cur.LastFired = at.UnixMilli()
		}
		return nil
	})
}
