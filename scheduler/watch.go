package scheduler

// Other processes' changes: schedules live in the KV bucket that every
// process opening the engine shares. Each process watches it, so a
// schedule created, updated or deleted through one node of a cluster is
// fired by the node holding the lease "scheduler", and that node's record
// of the last occurrence fired (LastFired) reaches every node.

import (
	"encoding/json"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/scheduler/expr"
)

// applySchedule makes a stored schedule (or its deletion) this process's.
// An entry no newer than the state held here (this process's own write)
// is skipped; entries come in revision order.
func (s *Service) applySchedule(e jetstream.KeyValueEntry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := e.Key()
	if cur := s.scheds[k]; cur != nil && e.Revision() <= cur.rev {
		return
	}
	if e.Operation() != jetstream.KeyValuePut {
		delete(s.scheds, k)
		return
	}
	var sc Schedule
	if err := json.Unmarshal(e.Value(), &sc); err != nil {
		s.log.Warn("unreadable schedule ignored", "key", k, "err", err)
		return
	}
	x, err := expr.Parse(sc.ScheduleExpression, sc.ScheduleExpressionTimezone)
	if err != nil {
		s.log.Warn("schedule with an unreadable expression ignored", "key", k, "err", err)
		return
	}
	s.scheds[k] = &sched{s: sc, rev: e.Revision(), e: x}
	s.wake()
}
