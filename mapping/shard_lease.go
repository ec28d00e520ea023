package mapping

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/runnel-dev/runnel/engine"
	"github.com/runnel-dev/runnel/lease"
)

// A shard is processed by one batch at a time per ParallelizationFactor
// lane, in order, by one process (the Lambda docs, "Using Lambda with
// Kinesis Data Streams": one batch per shard at a time, per lane with a
// parallelization factor). The process that may do so is the holder of
// the shard's lease, and only while the lease is Valid (package lease):
// a holder stops acting at least TTL/2 (5 s by default) before anyone
// else can take the key.
//
// So the shard's worker checks the lease itself, never through
// Service.mu: it stops when the lease's Lost closes (stopOnLostLease),
// and each lane checks Valid before it invokes a batch or a window's
// final invocation (leaseHeld). The trap this closes: the worker was
// stopped only by watchLease, which takes Service.mu; a balance holds it
// while it calls the leases bucket, and those calls wait out the
// cluster's 30 s API timeout when the leases stream has no leader, the
// very condition that makes leases lapse. The node whose lease had lapsed
// kept invoking the shard for up to 30 s while the node that took the
// lease (at TTL) invoked it too: 70 of 2175 records were invoked by both
// nodes, 6 invocations overlapping.
//
// What remains: an invocation that started while the lease was Valid
// runs on (its context is cancelled at Lost, but a handler may not
// heed it, and a process function is not killed); its records stay
// pending and the next holder delivers them again. One longer than TTL/2
// overlaps the next holder's first batch.

// leaseCallTimeout bounds each leases-bucket request a balance makes
// under Service.mu (counting the live nodes, reading the holders, taking
// a lease): 2 s, below TTL/2 (5 s). A request sent while the leases
// stream has no leader is never answered and waited out the client's
// 30 s cluster timeout, holding every status, API call and lease watch
// of the mapping service. After one such failure a balance makes no
// further leases-bucket request (leaseTrouble): it claims nothing and
// hands nothing over until the next balance.
const leaseCallTimeout = 2 * time.Second

// leaseCtx bounds one leases-bucket request (leaseCallTimeout).
func leaseCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, leaseCallTimeout)
}

// countLiveNodes counts the processes holding a presence lease, within
// leaseCallTimeout; at least 1 when it answered.
func (s *Service) countLiveNodes(ctx context.Context) (int, error) {
	ctx, cancel := leaseCtx(ctx)
	defer cancel()
	n, err := s.own.leases.Count(ctx, nodeLeasePrefix)
	if err != nil {
		return 1, err
	}
	return max(n, 1), nil
}

// heldLeasesLocked returns the leases this process holds for the shards
// of mapping id: shard -> lease.
func (s *Service) heldLeasesLocked(id string) map[string]*lease.Lease {
	out := map[string]*lease.Lease{}
	for _, key := range s.heldKeysLocked(id) {
		if u := parseUnit(key); u.shard != "" {
			out[u.shard] = s.own.held[key]
		}
	}
	return out
}

// leaseHeld reports whether the worker may invoke its shard's batches now:
// its lease (if it has one) is Valid. When it is not, it stops the
// worker (its batches stay pending) and reports false.
func (w *shardWorker) leaseHeld() bool {
	if w.lease == nil || w.lease.Valid() {
		return true
	}
	w.cancel()
	return false
}

// stopOnLostLease stops the worker (cancels ctx's worker, batches being
// invoked included: they stay pending) when its lease is lost, without
// waiting for Service.mu; watchLease does the bookkeeping once it gets
// it. A lease released by a hand-over is released after its worker
// stopped, so the drain is not cut short.
func (w *shardWorker) stopOnLostLease(ctx context.Context) {
	l := w.lease
	if l == nil {
		return
	}
	go func() {
		select {
		case <-ctx.Done():
		case <-l.Lost():
			if ctx.Err() == nil {
				w.r.svc.eng.Logger.Warn("mapping shard lease lost: this process invokes none of the shard's batches any more", "mapping", w.r.cfg.UUID, "shard", w.shardID)
			}
			w.cancel()
		}
	}()
}

// leaseManagerHook, set by tests only, replaces the lease manager a
// service takes from its engine (startOwnership).
var leaseManagerHook atomic.Pointer[func(ctx context.Context, eng *engine.Engine) (*lease.Manager, error)]

// leaseManager returns the engine's lease manager, or the test hook's.
func (s *Service) leaseManager(ctx context.Context) (*lease.Manager, error) {
	if hook := leaseManagerHook.Load(); hook != nil {
		return (*hook)(ctx, s.eng)
	}
	return s.eng.Leases(ctx)
}

// leaseFailed records, for the balance under way, that a leases-bucket
// request failed otherwise than by the lease being held: the balance
// makes no more of them.
func (s *Service) leaseFailed(err error) {
	if err != nil && !errors.Is(err, lease.ErrHeld) {
		s.own.leaseTrouble = true
	}
}
