package mapping

import (
	"context"
	"time"

	"github.com/runnel-dev/runnel/engine"
	"github.com/runnel-dev/runnel/lease"
)

// SetLeaseManager makes every NewService take its lease manager from f
// instead of its engine (nil f: the engine's).
func SetLeaseManager(f func(ctx context.Context, eng *engine.Engine) (*lease.Manager, error)) {
	if f == nil {
		leaseManagerHook.Store(nil)
		return
	}
	leaseManagerHook.Store(&f)
}

// HoldLock takes the service's lock, as a balance, an update or a
// hand-over holding it, and returns its unlock.
func (s *Service) HoldLock() (unlock func()) {
	s.mu.Lock()
	return s.mu.Unlock
}

// HeldLease returns the lease this process holds for mapping id's shard
// (nil: none).
func (s *Service) HeldLease(id, shard string) *lease.Lease {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.own.held[unitKey(id, shard)]
}

// ShardWorkerDone returns a channel closed when the worker of mapping
// id's shard here returns (nil: no worker).
func (s *Service) ShardWorkerDone(id, shard string) <-chan struct{} {
	s.mu.Lock()
	r, ok := s.runners[id].(*runner)
	s.mu.Unlock()
	if !ok {
		return nil
	}
	for _, w := range r.workers() {
		if w.shardID == shard {
			return w.done
		}
	}
	return nil
}

// Balance runs one balance as the balance loop does and returns how long
// it held the lock.
func (s *Service) Balance() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	start := time.Now()
	s.balanceLocked(s.ctx)
	return time.Since(start)
}

// PresenceLease returns this process's presence lease (nil: none).
func (s *Service) PresenceLease() *lease.Lease {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.own.node
}
