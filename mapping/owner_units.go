package mapping

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/runnel-dev/runnel/lease"
)

// A unit is one lease's worth of work: a queue mapping (shard ""), or one
// shard of a stream or DynamoDB stream mapping. Its lease is
// "esm.<uuid>" or "esm.<uuid>.<shardId>" (see the top of owner.go).
type unit struct{ id, shard string }

// unitKey names the unit of mapping uuid's shard (shard "": the whole
// mapping) in Service.own.held, in ckPut, and after "esm." as its lease.
func unitKey(uuid, shard string) string {
	if shard == "" {
		return uuid
	}
	return uuid + "." + shard
}

// parseUnit splits a unit key; a mapping UUID holds no '.'.
func parseUnit(key string) unit {
	id, shard, _ := strings.Cut(key, ".")
	return unit{id, shard}
}

func (u unit) key() string { return unitKey(u.id, u.shard) }

// unitsLocked lists the units of the enabled mappings, in a stable order:
// a queue mapping is one unit; every shard of a stream mapping's source
// is one, except a closed shard processed to its end (stored checkpoint
// at its end). described holds the mappings whose list is complete: a
// source that cannot be described now (deleted, or an error) lists no
// unit, and its held units are kept.
func (s *Service) unitsLocked(ctx context.Context) (units []unit, described map[string]bool) {
	described = map[string]bool{}
	ids := make([]string, 0, len(s.configs))
	for id, c := range s.configs {
		if *c.Enabled {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		c := s.configs[id]
		if c.sourceKind() == sourceQueue {
			units = append(units, unit{id: id})
			described[id] = true
			continue
		}
		streams, name, _, err := s.sourceStreams(c)
		if err != nil {
			continue
		}
		d, err := streams.DescribeStream(ctx, name)
		if err != nil {
			continue
		}
		complete := true
		for _, sh := range d.Shards {
			done := s.own.done[unitKey(id, sh.ShardID)] == d.ID
			if !done && !sh.Open() {
				end, closed, err := streams.ShardEnd(ctx, name, sh.ShardID)
				next, sid, ok, err2 := s.peekCheckpoint(ctx, id, sh.ShardID)
				if err != nil || err2 != nil {
					complete = false
				} else if closed && ok && sid == d.ID && next >= end {
					// As processedToEnd: a window stored open still needs
					// its final invocation, from a worker of this unit.
					if open, err := s.openWindowStored(ctx, id, d.ID, sh.ShardID); err != nil {
						complete = false
					} else if !open {
						done = true
						s.own.done[unitKey(id, sh.ShardID)] = d.ID
					}
				}
			}
			if !done {
				units = append(units, unit{id, sh.ShardID})
			}
		}
		described[id] = complete
	}
	return units, described
}

// balanceLocked balances the units of the enabled mappings: by load when
// the shards have some (balanceByLoadLocked, owner_load.go); otherwise by
// count, taking free units up to this process's fair share, ceil(units /
// live nodes), and handing over those beyond it. Either way it hands
// over those that are no longer units (a closed shard processed to its
// end).
func (s *Service) balanceLocked(ctx context.Context) {
	if s.own.leases == nil || ctx.Err() != nil {
		return
	}
	s.renewPresenceLocked(ctx)
	units, described := s.unitsLocked(ctx)
	isUnit := map[string]bool{}
	for _, u := range units {
		isUnit[u.key()] = true
	}
	// Units first: a runner whose last shards just ended keeps running
	// when it takes their children.
	s.own.leaseTrouble = false
	nodes, err := s.countLiveNodes(ctx)
	if err != nil {
		// The leases bucket does not answer (its stream has no leader):
		// nothing can be claimed or handed over now; the next balance
		// tries again. Each shard's worker checks its own lease.
		s.eng.Logger.Warn("mapping balance skipped: the leases bucket did not answer", "err", err)
		return
	}
	share := (len(units) + nodes - 1) / nodes
	holding := func() int {
		n := 0
		for key := range s.own.held {
			if isUnit[key] || !described[parseUnit(key).id] {
				n++
			}
		}
		return n
	}
	byLoad := nodes > 1 && s.balanceByLoadLocked(ctx, units, isUnit)
	for _, u := range units {
		if byLoad || holding() >= share || s.own.leaseTrouble {
			break
		}
		if s.own.held[u.key()] == nil {
			s.claimLocked(ctx, u)
		}
	}
	for _, key := range s.heldKeysLocked("") {
		// A shard processed to its end is released once its worker here
		// returned (its tumbling windows' final invocations done); the
		// worker's end kicks the next balance.
		if u := parseUnit(key); described[u.id] && !isUnit[key] && !s.shardRunningLocked(u) {
			s.releaseUnitLocked(key)
		}
	}
	held := s.heldKeysLocked("")
	for i := len(held) - 1; i >= 0 && !byLoad && !s.own.leaseTrouble && holding() > share; i-- {
		if isUnit[held[i]] { // one whose source cannot be described now stays
			s.eng.Logger.Info("handing a mapping's shard over to balance the cluster", "unit", held[i], "share", share, "nodes", nodes)
			s.handOverLocked(held[i])
		}
	}
}

// heldKeysLocked returns the sorted keys of the units held here, of
// mapping id only unless id is "".
func (s *Service) heldKeysLocked(id string) []string {
	var keys []string
	for key := range s.own.held {
		if id == "" || parseUnit(key).id == id {
			keys = append(keys, key)
		}
	}
	slices.Sort(keys)
	return keys
}

// holdsLocked reports whether this process holds a unit of mapping id.
func (s *Service) holdsLocked(id string) bool { return len(s.heldKeysLocked(id)) > 0 }

// heldShardsLocked returns the shards of mapping id whose leases this
// process holds.
func (s *Service) heldShardsLocked(id string) map[string]bool {
	out := map[string]bool{}
	for _, key := range s.heldKeysLocked(id) {
		if u := parseUnit(key); u.shard != "" {
			out[u.shard] = true
		}
	}
	return out
}

// claimLocked takes unit u's lease if it is free and runs it: starts the
// mapping's runner, or, when one runs here already, hands it the shard.
func (s *Service) claimLocked(ctx context.Context, u unit) {
	c, ok := s.configs[u.id]
	if !ok || !*c.Enabled {
		return
	}
	key := u.key()
	if s.own.leaseTrouble {
		return // the leases bucket did not answer this balance
	}
	lctx, cancel := leaseCtx(ctx)
	l, err := s.own.leases.Acquire(lctx, mappingLeasePrefix+key)
	cancel()
	if err != nil {
		s.leaseFailed(err)
		if !errors.Is(err, lease.ErrHeld) {
			s.eng.Logger.Warn("mapping lease not taken; will retry", "unit", key, "err", err)
		}
		return
	}
	s.own.held[key] = l
	go s.watchLease(key, l)
	if r, ok := s.runners[u.id].(*runner); ok && u.shard != "" {
		r.take(u.shard, l)
		return
	}
	if err := s.startLocked(ctx, c); err != nil {
		s.eng.Logger.Warn("mapping did not start", "mapping", u.id, "err", err)
		s.releaseUnitLocked(key)
	}
}

// stopUnitLocked stops the work of the unit key here: its shard's worker
// (final checkpoint), and the runner once it has no shard left. drain is
// as for runner.drop.
func (s *Service) stopUnitLocked(key string, drain time.Duration) {
	u := parseUnit(key)
	if r, ok := s.runners[u.id].(*runner); ok && u.shard != "" {
		if r.drop(u.shard, drain) > 0 {
			return
		}
	}
	s.stopLocked(u.id)
}

// releaseUnitLocked stops the unit key here and gives its lease back, so
// another process may take it at once.
func (s *Service) releaseUnitLocked(key string) { s.releaseUnitDrainedLocked(key, 0) }

// handOverLocked releases the unit key to balance the cluster: its shard's
// worker first resolves the batches it is invoking (Options.HandOverDrain),
// so that the next holder does not deliver them again.
func (s *Service) handOverLocked(key string) { s.releaseUnitDrainedLocked(key, s.opts.HandOverDrain) }

func (s *Service) releaseUnitDrainedLocked(key string, drain time.Duration) {
	s.stopUnitLocked(key, drain)
	l := s.own.held[key]
	if l == nil {
		return
	}
	delete(s.own.held, key)
	releaseLease(s, key, l)
}

// releaseLocked stops mapping id here (every shard's final checkpoint)
// and gives back the leases of all its units.
func (s *Service) releaseLocked(id string) {
	s.stopLocked(id)
	if _, ok := s.configs[id]; !ok { // deleted: forget its finished shards
		for key := range s.own.done {
			if parseUnit(key).id == id {
				delete(s.own.done, key)
			}
		}
	}
	for _, key := range s.heldKeysLocked(id) {
		l := s.own.held[key]
		delete(s.own.held, key)
		releaseLease(s, key, l)
	}
}

func releaseLease(s *Service, key string, l *lease.Lease) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := l.Release(ctx); err != nil {
		s.eng.Logger.Warn("mapping lease release failed; it expires by its TTL", "unit", key, "err", err)
	}
}

// watchLease stops the unit when its lease is lost (not released).
func (s *Service) watchLease(key string, l *lease.Lease) {
	<-l.Lost()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.own.held[key] == l {
		s.eng.Logger.Warn("mapping lease lost: another process runs this work now; stopping it here", "unit", key)
		delete(s.own.held, key)
		s.stopUnitLocked(key, 0)
	}
}

// fenced stops the unit key after one of its writes was fenced.
func (s *Service) fenced(key string) {
	if hook := fencedHook.Load(); hook != nil {
		(*hook)(key)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.own.held[key] != nil {
		s.eng.Logger.Warn("another process moved this shard's checkpoint; stopping it here and giving its lease up", "unit", key)
		s.releaseUnitLocked(key)
	}
}

// fencedHook, if set, is called with the unit of every fenced write
// (tests).
var fencedHook atomic.Pointer[func(unit string)]

// shardRunningLocked reports whether a worker of shard unit u runs here
// and has not returned.
func (s *Service) shardRunningLocked(u unit) bool {
	r, ok := s.runners[u.id].(*runner)
	if !ok || u.shard == "" {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.started[u.shard] && !r.finished[u.shard]
}

// take makes shard one of the runner's (its lease l was taken): the
// lineage loop starts it once its parents are processed to their end.
func (r *runner) take(shard string, l *lease.Lease) {
	r.mu.Lock()
	r.mine[shard] = true
	r.leases[shard] = l
	r.mu.Unlock()
	signal(r.wake)
}

// drop stops shard's worker alone, storing its final checkpoint (its
// lease is being released, or was lost), and returns how many shards the
// runner still holds. With drain > 0 the worker first stops reading and
// gets up to drain (wall clock) to resolve the batches it is invoking;
// then, or at once, they are cancelled.
func (r *runner) drop(shard string, drain time.Duration) int {
	r.startMu.Lock()
	defer r.startMu.Unlock()
	r.mu.Lock()
	delete(r.mine, shard)
	delete(r.leases, shard)
	var w *shardWorker
	i := slices.IndexFunc(r.shards, func(w *shardWorker) bool { return w.shardID == shard })
	if i >= 0 {
		w = r.shards[i]
	}
	r.mu.Unlock()
	if w != nil {
		if drain > 0 {
			w.drain()
			t := time.NewTimer(drain)
			select {
			case <-w.done:
			case <-t.C:
				r.svc.eng.Logger.Warn("a shard handed over did not finish its batches in time; cancelling them (they are delivered again)",
					"mapping", r.cfg.UUID, "shard", shard, "drain", drain)
			}
			t.Stop()
		}
		w.cancel()
		<-w.done
		r.mu.Lock()
		if !r.finished[shard] { // a finished worker stays, in the status
			r.shards = slices.DeleteFunc(r.shards, func(x *shardWorker) bool { return x == w })
			delete(r.started, shard)
		}
		r.mu.Unlock()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.mine)
}

// renewPresenceLocked takes this process's presence lease ("node.<id>")
// again when it was lost: a stall of the leases bucket longer than the
// lease's TTL lets it expire, and it was taken only at start, so the
// other processes stopped counting this one for good and each took more
// than its share. Tried at each balance, for at most leaseCallTimeout; a
// key not yet expired is tried again at the next.
func (s *Service) renewPresenceLocked(ctx context.Context) {
	if n := s.own.node; n != nil {
		select {
		case <-n.Lost():
		default:
			return
		}
	}
	cctx, cancel := context.WithTimeout(ctx, leaseCallTimeout)
	defer cancel()
	l, err := s.own.leases.Acquire(cctx, nodeLeasePrefix+s.own.leases.Node())
	if err != nil {
		s.eng.Logger.Warn("mapping: taking this node's presence lease again failed; will retry", "err", err)
		return
	}
	s.eng.Logger.Info("mapping: took this node's presence lease again after losing it")
	s.own.node = l
}
