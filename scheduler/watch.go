package scheduler

// Other processes' changes: schedules live in the KV bucket that every
// process opening the engine shares. Each process watches it, so a
// schedule created, updated or deleted through one node of a cluster is
// fired by the node holding the lease "scheduler", and that node's record
// of the last occurrence fired (LastFired) reaches every node.

import (
	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/engine"
	"github.com/runnel-dev/runnel/scheduler/expr"
)

// applySchedule makes a stored schedule (or its deletion) this process's.
// An entry no newer than the state held here (this process's own write)
// is skipped; entries come in revision order.
func (s *Service) applySchedule(e jetstream.KeyValueEntry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := e.Key()
	if engine.ApplyEntry(s.scheds, e, func(sc *sched) uint64 { return sc.rev }, func(sc Schedule) *sched {
		x, err := expr.ParseStored(sc.ScheduleExpression, sc.ScheduleExpressionTimezone)
		if err != nil {
			s.log.Warn("schedule with an unreadable expression ignored", "key", k, "err", err)
			return nil
		}
		return &sched{s: sc, rev: e.Revision(), e: x}
	}, func(err error) { s.log.Warn("unreadable schedule ignored", "key", k, "err", err) }) {
		s.wake()
	}
}
