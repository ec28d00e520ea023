package sns

// Other processes' changes: topics and subscriptions live in KV buckets
// that every process opening the engine shares; each process watches
// them, so a topic created or a subscription changed through one process
// is published to, and delivered, through all (each runs its own
// delivery workers; the internal queues hand a message to one of them).

import (
	"context"
	"encoding/json"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/engine"
)

// watch follows a bucket until the service closes; apply is called for
// each value (nil on a delete) with its key and revision.
func (s *Service) watch(ctx context.Context, kv jetstream.KeyValue, apply func(key string, value []byte, rev uint64)) error {
	return engine.Watch(ctx, &s.wg, kv, func(e jetstream.KeyValueEntry) {
		if e.Operation() == jetstream.KeyValuePut {
			apply(e.Key(), e.Value(), e.Revision())
		} else {
			apply(e.Key(), nil, e.Revision())
		}
	})
}

// newerLocked records rev as key's newest and reports whether it is newer
// than what this process wrote or applied. Under s.mu.
func (s *Service) newerLocked(key string, rev uint64) bool {
	if rev <= s.revs[key] {
		return false
	}
	s.revs[key] = rev
	return true
}

// applyTopic makes a stored topic (nil: a deleted one) this process's.
func (s *Service) applyTopic(key string, value []byte, rev uint64) {
	var m topicMeta
	if value != nil && json.Unmarshal(value, &m) != nil {
		s.log.Error("sns: a stored topic does not decode; skipped", "key", key)
		return
	}
	s.mu.Lock()
	if !s.newerLocked("t."+key, rev) {
		s.mu.Unlock()
		return
	}
	t := s.topics[key]
	switch {
	case value == nil && t != nil:
		delete(s.topics, key)
	case value != nil && t == nil:
		t = newTopic(m)
		s.topics[key] = t
		s.startWorker(t)
		t = nil
	case value != nil:
		t.m.Store(&m)
		t = nil
	}
	s.mu.Unlock()
	if t != nil && t.stop != nil {
		t.stop() // deleted by another process
	}
}

// applySubscription makes a stored subscription (nil: a deleted one)
// this process's.
func (s *Service) applySubscription(key string, value []byte, rev uint64) {
	if value == nil {
		s.mu.Lock()
		if s.newerLocked("s."+key, rev) {
			delete(s.subs, key)
		}
		s.mu.Unlock()
		return
	}
	var m subMeta
	err := json.Unmarshal(value, &m)
	var sub *subscription
	if err == nil {
		sub, err = newSubscription(m)
	}
	if err != nil {
		s.log.Error("sns: a stored subscription does not load; skipped", "key", key, "err", err)
		return
	}
	s.mu.Lock()
	if s.newerLocked("s."+key, rev) {
		s.subs[m.ID] = sub
	}
	s.mu.Unlock()
}
