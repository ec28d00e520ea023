package eventbus

// Other processes' changes: buses, with their rules and targets, live in
// the KV bucket "runnel_event_buses" that every process opening the
// engine shares. Each process watches it, so a rule put or a target
// changed through one node of a cluster matches events put through every
// node, and the node firing scheduled rules sees it (within the watch's
// latency, about a millisecond on one machine).

import (
	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/engine"
)

// applyBus makes a stored bus (or its deletion) this process's. An entry
// no newer than the state this process holds (its own write, already
// applied) is skipped; entries come in revision order, so a bus deleted
// here and seen again in an older entry is removed again by the deletion
// that follows it.
func (s *Service) applyBus(e jetstream.KeyValueEntry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if engine.ApplyEntry(s.state, e, func(b *busState) uint64 { return b.rev },
		func(b storedBus) *busState { return s.compile(b, e.Revision()) },
		func(err error) { s.log.Warn("unreadable event bus ignored", "bus", e.Key(), "err", err) }) {
		s.wake()
	}
}
