package eventbus

// Other processes' changes: buses, with their rules and targets, live in
// the KV bucket "runnel_event_buses", archives in "runnel_event_archives",
// both shared by every process opening the engine. Each process watches
// them, so a rule put or a target changed through one node of a cluster
// matches events put through every node, the node firing scheduled rules
// sees it, and an archive created through one node keeps the events put
// through every node (within the watch's latency, about a millisecond on
// one machine). A bus's tags (tags.go) are read from their bucket at each
// call, never held.

import (
	"encoding/json"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/engine"
)

// applyBus makes a stored bus (or its deletion) this process's. An entry
// no newer than the state this process holds (its own write, already
// applied) is skipped; entries come in revision order, so a bus deleted
// here and seen again in an older entry is removed again by the deletion
// that follows it. A bus's deletion drops its tags (dropBusTags).
func (s *Service) applyBus(e jetstream.KeyValueEntry) {
	if e.Operation() != jetstream.KeyValuePut {
		s.dropBusTags(s.bg, e.Key())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if engine.ApplyEntry(s.state, e, func(b *busState) uint64 { return b.rev },
		func(b storedBus) *busState { return s.compile(b, e.Revision()) },
		func(err error) { s.log.Warn("unreadable event bus ignored", "bus", e.Key(), "err", err) }) {
		s.wake()
	}
}

// applyArchive makes a stored archive (or its deletion) this process's:
// an archive created through another process archives the events put
// through this one too, and one deleted there stops being filled here.
// An entry no newer than the one this process holds (its own write) is
// skipped. On a deletion the archive's events are purged again, after
// this process stopped archiving into it: each process does so, so the
// events archived by one that had not yet seen the deletion go too.
func (s *Service) applyArchive(e jetstream.KeyValueEntry) {
	k := e.Key()
	s.mu.Lock()
	cur, held := s.arch[k]
	if held && e.Revision() <= cur.rev {
		s.mu.Unlock()
		return
	}
	if e.Operation() != jetstream.KeyValuePut {
		delete(s.arch, k)
		s.mu.Unlock()
		if held {
			if err := s.archive.Purge(s.bg, jetstream.WithPurgeSubject(archiveSubjectPrefix+cur.a.ID)); err != nil && s.bg.Err() == nil {
				s.log.Warn("eventbridge: a deleted archive's events not purged", "archive", k, "err", err)
			}
		}
		return
	}
	s.mu.Unlock()
	var a Archive
	if err := json.Unmarshal(e.Value(), &a); err != nil {
		s.log.Warn("unreadable archive ignored", "archive", k, "err", err)
		return
	}
	s.cacheArchive(a, e.Revision())
	if a.RetentionDays > 0 {
		s.wake() // its retention may start the trim timer
	}
}
