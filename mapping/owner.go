package mapping

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/engine"
	"github.com/runnel-dev/runnel/internal/clocks"
	"github.com/runnel-dev/runnel/lease"
)

// Which process runs which mapping, and which shard of it.
//
// Every runnel process that is not passive (a `runnel serve`, a node of a
// cluster, a demo) is a candidate to run mappings. The work is split in
// units, each one lease (package lease): a queue mapping is one unit,
// lease "esm.<uuid>"; each shard of a stream or DynamoDB stream mapping
// is one, lease "esm.<uuid>.<shardId>" (owner_units.go). A closed shard
// processed to its end (its stored checkpoint at its end) is no longer a
// unit. Each candidate holds a presence lease "node.<id>" too, so that
// each can count the live candidates and take no more than its fair
// share of the units of all enabled mappings, ceil(units / live
// candidates), as the Kinesis Client Library balances shard leases by
// count. Every balanceInterval (and at once when a shard of this process
// ends, so that its children are taken) a process takes free units up to
// its share and hands over what it holds beyond it: the shard's worker
// stops and stores its final checkpoint, then the lease is released. A
// joining process therefore gets its share within a few intervals; the
// leases of a process that dies expire after the lease TTL and are taken
// by the others; a process that stops cleanly releases all of its leases
// at Close.
//
// A stream mapping's runner runs in every process holding at least one of
// its shards, and starts workers only for the shards it holds (runner.mine).
// A shard's lineage holds across processes: a child starts once each
// parent is processed to its end, which the runner reads from the stored
// checkpoints wherever the parent ran. Losing or handing over one shard
// stops that shard's worker alone (runner.drop).
//
// Checkpoint, lane batch and window writes are fenced: each is a KV
// Update on the revision this process last read or wrote for the key, so
// a process that lost a shard's lease (and has not noticed yet) cannot
// move a checkpoint the new holder stored; its write fails with
// errFenced and that shard stops here (its lease given up). Reads of
// shards this process may not hold (lineage, status, balance) use
// peekCheckpoint, which leaves the remembered revisions alone.
//
// Configurations are watched: a mapping created, updated, disabled or
// deleted through any process takes effect in the processes running it
// as soon as the change reaches the watch (milliseconds on one machine).
const (
	mappingLeasePrefix = "esm."
	nodeLeasePrefix    = "node."
	balanceInterval    = 2 * time.Second
	// ckWriteTimeout bounds one checkpoint-bucket write (ckPut).
	ckWriteTimeout = 5 * time.Second
	// ckRetryAfter is the pause before a failed checkpoint write is
	// sent again.
	ckRetryAfter = 500 * time.Millisecond
	// balanceSubject is published by a process that handed units over to
	// balance the load; every process balances at once when it hears it.
	balanceSubject = "runnel.mapping.balance"
)

// errFenced is a checkpoint-bucket write refused because another process
// wrote the key since this one last did: it holds the shard now.
var errFenced = errors.New("mapping: another process holds this shard now (its checkpoint moved)")

// owner is the Service's part in the ownership of mappings.
type owner struct {
	leases *lease.Manager
	node   *lease.Lease
	held   map[string]*lease.Lease // unit key (unitKey) -> its lease; under Service.mu
	// done: unit key of a closed shard -> the id of the stream in which
	// it was found processed to its end (no longer a unit); under
	// Service.mu.
	done map[string]string
	kick chan struct{} // a closed shard was processed to its end here: balance now
	// samples: unit key -> its shard's appended bytes read at the last
	// balances, within loadWindow; freeSince: unit key -> when a balance
	// by load first found it free; given: unit key -> who handed it over
	// for load and to whom (this process, or another's message on
	// balanceSubject), until it is held again (owner_load.go). Under
	// Service.mu.
	samples   map[string][]loadSample
	freeSince map[string]time.Time
	given     map[string]handedOver
	settled   time.Time // no hand-over for load before (settleAfterHandOver)
	// leaseTrouble: a leases-bucket request of the balance under way
	// failed (not answered in leaseCallTimeout, or another error): it
	// makes no more (shard_lease.go). Under Service.mu.
	leaseTrouble bool

	revMu sync.Mutex
	revs  map[string]uint64 // checkpoint-bucket key -> last revision read or written
	// unsure: checkpoint-bucket key -> the value of this process's last
	// write to it whose outcome is unknown (it failed by a timeout or a
	// cancellation, after its request may have reached the server).
	unsure map[string][]byte

	// cfgRevs: mapping UUID -> the newest configuration revision this
	// process wrote or applied (under Service.mu): the watch skips older
	// entries, its own writes among them.
	cfgRevs map[string]uint64
}

// startOwnership takes this process's presence lease, claims its share of
// the stored mappings (starting them), and starts the loops applying w
// (the configurations' watch) and balancing. Called by NewService for a
// service that is not passive; w is stopped by the caller on an error.
func (s *Service) startOwnership(ctx context.Context, w jetstream.KeyWatcher) error {
	// A node restarted while the leases' stream elects a leader (another
	// node died) waits through it, for at most 2 minutes.
	var err error
	for start := time.Now(); ; {
		var m *lease.Manager
		if m, err = s.leaseManager(ctx); err == nil {
			s.own.leases = m
			if s.own.node, err = m.Acquire(ctx, nodeLeasePrefix+m.Node()); err == nil {
				break
			}
		}
		if ctx.Err() != nil || time.Since(start) > 2*time.Minute {
			return err
		}
		s.eng.Logger.Warn("mapping: taking this node's presence lease failed; will retry", "err", err)
		if err := engine.Sleep(ctx, clockwork.NewRealClock(), time.Second); err != nil {
			return err
		}
	}
	s.mu.Lock()
	s.balanceLocked(ctx)
	s.mu.Unlock()
	// Another process handed a unit over for load: balance now, so that
	// the least loaded process takes it without waiting for its tick.
	sub, err := s.eng.NC.Subscribe(balanceSubject, func(m *nats.Msg) { go s.heardHandOver(m.Data) })
	if err != nil {
		return err
	}
	s.loops.Add(2)
	go func() {
		defer s.loops.Done()
		s.watchConfigs(w)
	}()
	go func() {
		defer s.loops.Done()
		defer sub.Unsubscribe()
		// kick: a shard ended (take its children), or a unit was handed over.
		clocks.EveryOrKick(s.ctx, clockwork.NewRealClock(), balanceInterval, s.own.kick, func() {
			s.mu.Lock()
			s.balanceLocked(s.ctx)
			s.mu.Unlock()
		})
	}()
	return nil
}

// liveNodes counts the processes holding a presence lease (1 when the
// leases bucket does not answer within leaseCallTimeout).
func (s *Service) liveNodes(ctx context.Context) int {
	n, _ := s.countLiveNodes(ctx)
	return n
}

// watchConfigs applies configuration changes made by other processes.
func (s *Service) watchConfigs(w jetstream.KeyWatcher) {
	defer w.Stop()
	for {
		var e jetstream.KeyValueEntry
		select {
		case <-s.ctx.Done():
			return
		case e = <-w.Updates():
		}
		if e == nil {
			continue // the end of the initial values (none: UpdatesOnly)
		}
		id := e.Key()
		s.mu.Lock()
		if e.Revision() <= s.own.cfgRevs[id] {
			s.mu.Unlock()
			continue // older than what this process wrote or applied
		}
		s.own.cfgRevs[id] = e.Revision()
		if e.Operation() != jetstream.KeyValuePut {
			if _, ok := s.configs[id]; ok {
				delete(s.configs, id)
				s.releaseLocked(id)
			}
			s.mu.Unlock()
			continue
		}
		var c Config
		if err := json.Unmarshal(e.Value(), &c); err != nil {
			s.mu.Unlock()
			s.eng.Logger.Warn("stored mapping does not decode", "uuid", id, "err", err)
			continue
		}
		old, known := s.configs[id]
		if known && sameConfig(old, c) {
			s.mu.Unlock()
			continue // an identical write (a stack applied again): no restart
		}
		s.configs[id] = c
		if s.holdsLocked(id) {
			if *c.Enabled {
				s.stopLocked(id)
				if err := s.startLocked(s.ctx, c); err != nil {
					s.eng.Logger.Warn("updated mapping did not start", "mapping", id, "err", err)
				}
			} else {
				s.releaseLocked(id)
			}
		} else if *c.Enabled {
			s.balanceLocked(s.ctx)
		}
		s.mu.Unlock()
	}
}

func sameConfig(a, b Config) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// ckGet reads a checkpoint-bucket key and remembers its revision for the
// fenced writes that follow.
func (s *Service) ckGet(ctx context.Context, key string) (jetstream.KeyValueEntry, error) {
	e, err := s.ck.Get(ctx, key)
	s.own.revMu.Lock()
	switch {
	case err == nil:
		s.own.revs[key] = e.Revision()
	case errors.Is(err, jetstream.ErrKeyNotFound):
		s.own.revs[key] = 0
	}
	s.own.revMu.Unlock()
	return e, err
}

// ckPut writes a checkpoint-bucket key of the unit named unitKey (a
// mapping's shard, see unitKey), fenced: a KV
// Update on the revision this process last read or wrote (Create when it
// saw none). A key this process never read is read first. errFenced (and
// the unit stopped here, its lease given up) when another process wrote
// it meanwhile.
//
// A write that failed otherwise (a timeout, or a Close cancelling a
// periodic checkpoint write) may still have landed, moving the key's
// revision; the next write to the key reads it first, and takes its
// revision as this process's own if it holds exactly the value of that
// write. Only a process that lost the mapping and wrote the same bytes
// in that window passes the fence this way, and it wrote what this one
// had written.
//
// A write gets at most ckWriteTimeout: one sent while the bucket's
// stream has no leader (a node just died) is never acknowledged and
// would wait out the client's 30 s cluster timeout, holding its shard's
// lane; a write that timed out is tried again by its caller.
func (s *Service) ckPut(ctx context.Context, unitKey, key string, value []byte) error {
	ctx, cancel := context.WithTimeout(ctx, ckWriteTimeout)
	defer cancel()
	if err := stalled(ctx, "checkpoint"); err != nil {
		return err
	}
	s.own.revMu.Lock()
	rev, known := s.own.revs[key]
	tried, unsure := s.own.unsure[key]
	s.own.revMu.Unlock()
	if unsure && known {
		// Without this read the write below could go on the revision
		// before a write that landed, fail its check and fence this
		// process out of its own shard: a write that cannot tell is
		// tried again by its caller instead.
		e, err := s.ck.Get(ctx, key)
		if serr := stalled(ctx, "verify"); serr != nil {
			err = serr // tests: the read failed
		}
		if err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
			return err
		}
		if err == nil && e.Revision() != rev && string(e.Value()) == string(tried) {
			rev = e.Revision() // that write landed
		}
	}
	if !known {
		if _, err := s.ckGet(ctx, key); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
			return err
		}
		s.own.revMu.Lock()
		rev = s.own.revs[key]
		s.own.revMu.Unlock()
	}
	var nrev uint64
	var err error
	if rev == 0 {
		nrev, err = s.ck.Create(ctx, key, value)
	} else {
		nrev, err = s.ck.Update(ctx, key, value, rev)
	}
	if err == nil {
		if hook := writeReplyLost.Load(); hook != nil {
			err = (*hook)(ctx, key) // tests: the write landed, its reply did not
		}
	}
	if err != nil {
		var apiErr *jetstream.APIError
		if errors.Is(err, jetstream.ErrKeyExists) || (errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence) {
			if unsure {
				// The write of unknown outcome may have landed after the
				// check above: if the key holds exactly it, the revision
				// is this process's own; the caller tries again.
				if e, gerr := s.ck.Get(ctx, key); gerr == nil && string(e.Value()) == string(tried) {
					s.own.revMu.Lock()
					s.own.revs[key] = e.Revision()
					delete(s.own.unsure, key)
					s.own.revMu.Unlock()
					return fmt.Errorf("checkpoint %s: an earlier write landed late: %w", key, err)
				}
			}
			s.own.revMu.Lock()
			delete(s.own.revs, key)
			delete(s.own.unsure, key)
			s.own.revMu.Unlock()
			if !s.opts.Passive {
				go s.fenced(unitKey)
			}
			return errFenced
		}
		s.own.revMu.Lock()
		if s.own.unsure == nil {
			s.own.unsure = map[string][]byte{}
		}
		s.own.unsure[key] = append([]byte(nil), value...)
		s.own.revMu.Unlock()
		return err
	}
	s.own.revMu.Lock()
	s.own.revs[key] = nrev
	delete(s.own.unsure, key)
	s.own.revMu.Unlock()
	return nil
}

// writeReplyLost, set by tests only, turns a successful checkpoint-bucket
// write into the error it returns, as a reply lost to a cancellation.
var writeReplyLost atomic.Pointer[func(ctx context.Context, key string) error]

// ckForget drops the remembered revisions of mapping uuid's keys (it was
// deleted: its keys are purged).
func (s *Service) ckForget(uuid string) {
	s.own.revMu.Lock()
	defer s.own.revMu.Unlock()
	for k := range s.own.revs {
		if strings.HasPrefix(k, uuid+".") {
			delete(s.own.revs, k)
			delete(s.own.unsure, k)
		}
	}
}
