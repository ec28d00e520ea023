package mapping_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/engine"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/lease"
	"github.com/runnel-dev/runnel/mapping"
)

// leaseStall leaves the requests of a lease manager unanswered while it
// is on, as when the leases stream has no leader (a node of the cluster
// died): each waits until its context ends or the stall does.
type leaseStall struct {
	mu  sync.Mutex
	on  atomic.Bool
	off chan struct{} // closed when the stall ends
}

func (s *leaseStall) start() {
	s.mu.Lock()
	s.off = make(chan struct{})
	s.on.Store(true)
	s.mu.Unlock()
}

func (s *leaseStall) stop() {
	s.mu.Lock()
	if s.on.Load() {
		s.on.Store(false)
		close(s.off)
	}
	s.mu.Unlock()
}

func (s *leaseStall) wait(ctx context.Context) error {
	if !s.on.Load() {
		return nil
	}
	s.mu.Lock()
	off := s.off
	s.mu.Unlock()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-off:
		return errors.New("nats: timeout (the leases stream had no leader)")
	}
}

type stallingKV struct {
	jetstream.KeyValue
	s *leaseStall
}

func (k stallingKV) Create(ctx context.Context, key string, v []byte, o ...jetstream.KVCreateOpt) (uint64, error) {
	if err := k.s.wait(ctx); err != nil {
		return 0, err
	}
	return k.KeyValue.Create(ctx, key, v, o...)
}

func (k stallingKV) Update(ctx context.Context, key string, v []byte, rev uint64) (uint64, error) {
	if err := k.s.wait(ctx); err != nil {
		return 0, err
	}
	return k.KeyValue.Update(ctx, key, v, rev)
}

func (k stallingKV) Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error) {
	if err := k.s.wait(ctx); err != nil {
		return nil, err
	}
	return k.KeyValue.Get(ctx, key)
}

func (k stallingKV) Delete(ctx context.Context, key string, o ...jetstream.KVDeleteOpt) error {
	if err := k.s.wait(ctx); err != nil {
		return err
	}
	return k.KeyValue.Delete(ctx, key, o...)
}

func (k stallingKV) ListKeysFiltered(ctx context.Context, f ...string) (jetstream.KeyLister, error) {
	if err := k.s.wait(ctx); err != nil {
		return nil, err
	}
	return k.KeyValue.ListKeysFiltered(ctx, f...)
}

type stallingJS struct {
	jetstream.JetStream
	s *leaseStall
}

func (j stallingJS) KeyValue(ctx context.Context, bucket string) (jetstream.KeyValue, error) {
	kv, err := j.JetStream.KeyValue(ctx, bucket)
	if err != nil {
		return nil, err
	}
	return stallingKV{kv, j.s}, nil
}

// startStallingNode starts a process whose mapping service takes its
// leases (TTL ttl, the engine's node name) through a leases bucket that
// stalls while the returned stall is on.
func startStallingNode(t *testing.T, ttl time.Duration) (*runnel.Runnel, *leaseStall) {
	t.Helper()
	st := &leaseStall{}
	mapping.SetLeaseManager(func(ctx context.Context, eng *engine.Engine) (*lease.Manager, error) {
		em, err := eng.Leases(ctx) // the bucket, and this process's name
		if err != nil {
			return nil, err
		}
		m, err := lease.New(ctx, stallingJS{eng.JS, st}, lease.Options{TTL: ttl, Node: em.Node(), Logger: testenv.Logger(t)})
		if err == nil {
			t.Cleanup(m.Abandon)
		}
		return m, err
	})
	rn := testenv.Start(t, testenv.Options{})
	mapping.SetLeaseManager(nil)
	t.Cleanup(st.stop) // before the process closes: its releases are answered
	return rn, st
}

// One shard is processed by one batch at a time, in order, by one
// process (https://docs.aws.amazon.com/lambda/latest/dg/with-kinesis.html;
// SPEC-aws-semantics.md, per-shard ordering): a process whose shard lease
// lapsed invokes none of the shard's batches after it, whatever holds
// the service's lock. Before, only watchLease stopped the shard's worker,
// after taking the lock that a balance held while its leases-bucket
// requests waited out the cluster's 30 s timeout (the very stall that
// makes leases lapse): the worker invoked batches for up to 30 s while
// another node, which took the lease at its TTL, invoked the shard too
// (70 of 2175 records invoked by both nodes in the cluster review).
func TestAShardWhoseLeaseLapsedInvokesNoMoreBatches(t *testing.T) {
	const ttl = 2 * time.Second // Valid for 1 s after a renewal
	rn, st := startStallingNode(t, ttl)
	rec := newRecorder(t, rn, function.Config{}, nil)
	arn := createStream(t, rn, "lapse", 1)
	m := createMapping(t, rn, mapping.Config{EventSourceArn: arn, FunctionName: rec.name, BatchSize: 1})
	const shard = "shardId-000000000000"
	put(t, rn, "lapse", "k", "a0")
	testenv.Eventually(t, 10*time.Second, "the first record processed", func() bool { return rec.processed() == 1 })
	l := rn.Mappings.HeldLease(m.UUID, shard)
	done := rn.Mappings.ShardWorkerDone(m.UUID, shard)
	if l == nil || done == nil {
		t.Fatalf("lease %v, worker %v: the process runs the shard", l, done)
	}

	unlock := rn.Mappings.HoldLock() // as a balance waiting on the bucket
	locked := true
	defer func() {
		if locked {
			unlock()
		}
	}()
	st.start()
	select {
	case <-l.Lost():
	case <-time.After(3 * ttl):
		t.Fatal("the lease was not lost while its renewals went unanswered")
	}
	put(t, rn, "lapse", "k", "b0", "b1", "b2")
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		t.Fatal("the shard's worker still runs after its lease was lost")
	}
	for _, c := range rec.Calls() {
		if strings.Contains(c, "b") {
			t.Fatalf("a batch put after the lease was lost was invoked: %q", rec.Calls())
		}
	}

	// The stall over, the process takes the shard back and goes on.
	st.stop()
	unlock()
	locked = false
	testenv.Eventually(t, 20*time.Second, "every record processed after the stall", func() bool { return rec.processed() == 4 })
}

// A balance holds the mapping service's lock for at most about
// leaseCallTimeout (2 s) when the leases bucket does not answer, below
// TTL/2 (5 s), when a lease is lost. Before, its requests (Count,
// HoldersOf, Acquire) had no deadline but the cluster's 30 s API
// timeout: every status, API call and lease watch of the service waited.
// The bound asserted is the TTL (10 s), not TTL/2: far below the 30 s of
// the bug, and clear of what a loaded CI machine adds to a 2 s timeout
// (the TTL/2 bound failed once under load).
func TestABalanceOnAStalledLeasesBucketGivesItsLockBackWithinALeaseTTL(t *testing.T) {
	rn, st := startStallingNode(t, lease.DefaultTTL)
	rec := newRecorder(t, rn, function.Config{}, nil)
	arn := createStream(t, rn, "stall", 2)
	createMapping(t, rn, mapping.Config{EventSourceArn: arn, FunctionName: rec.name, BatchSize: 1})
	st.start()
	took := make(chan time.Duration, 1)
	go func() { took <- rn.Mappings.Balance() }()
	select {
	case d := <-took:
		if d >= lease.DefaultTTL {
			t.Fatalf("the balance held the lock %v on a stalled leases bucket; want < %v", d, lease.DefaultTTL)
		}
	case <-time.After(2 * lease.DefaultTTL):
		st.stop()
		t.Fatalf("the balance still holds the lock %v after the leases bucket stalled", 2*lease.DefaultTTL)
	}
}

// TestAPresenceLeaseLostInAStallIsTakenAgain: each process holds a
// presence lease "node.<id>" so that the others count it when they take
// their share of the mappings' shards (docs/cluster.md). A stall of the
// leases bucket longer than the lease's TTL loses it; it was taken only at
// start, so after a stall the other processes stopped counting this one
// for good and took more than their share. Now the next balances take it
// again.
func TestAPresenceLeaseLostInAStallIsTakenAgain(t *testing.T) {
	const ttl = 2 * time.Second
	rn, st := startStallingNode(t, ttl)
	l := rn.Mappings.PresenceLease()
	if l == nil {
		t.Fatal("no presence lease at start")
	}
	st.start()
	select {
	case <-l.Lost():
	case <-time.After(3 * ttl):
		t.Fatal("the presence lease was not lost while its renewals went unanswered")
	}
	st.stop()
	testenv.Eventually(t, 20*time.Second, "the presence lease taken again", func() bool {
		rn.Mappings.Balance()
		n := rn.Mappings.PresenceLease()
		return n != nil && n != l && n.Valid()
	})
}
