// Package lease gives one process at a time the ownership of a named piece
// of work (a queue's index, later a mapping's shard) among all the runnel
// processes that share one JetStream: a `runnel serve`, a CLI command run
// against it with --nats-url, the nodes of a cluster.
//
// A lease is a key of the JetStream key-value bucket "runnel_leases"
// (memory storage, history 1, the bucket's TTL = Options.TTL). Acquire
// creates the key (KV Create: it fails while another holder's value is
// there); the holder renews it every TTL/4 with a KV Update on the revision
// it wrote last, each lease on its own (a renewal left unanswered delays no
// other lease's). A key that is not renewed expires TTL after its last
// write, by the server's clock, and anyone may acquire it then.
//
// # The rule a holder follows
//
// A holder acts on a lease only while Valid: until TTL/2 after the start
// of its last successful write. The key lives at least TTL after that
// write reached the server, so a holder stops acting at least TTL/2 before
// anyone else can acquire the key. Lost closes when the lease stops being
// Valid without a renewal (a timer of the lease's own), or when a renewal
// finds another holder, or at Release: work that stops at Lost stops
// before anyone else can start it. The trap this closes: Lost used to wait
// for a renewal to fail, one lease after another, each waiting up to TTL/4
// for an answer, so a holder with many leases whose renewals went
// unanswered kept acting on some for many seconds after another process
// had taken them (a forwarded call ran on both, a shard's batches were
// invoked by both). A lease lost so (its key still this process's, at the
// revision it wrote last) is taken back at once by Acquire when the
// renewals are answered again: a short stall costs the work a restart, not
// a wait for the key to expire. The trap: validity is measured on this
// process's wall clock (time.Now, never the engine's injected clock; the
// expiry runs on the server's), so clocks that drift apart by more than
// TTL/2 during one TTL break exclusivity. TTL defaults to 10 s, giving a
// failover within about 10 s after a holder dies.
//
// Leases are in memory on the server: when the embedded server restarts
// (the process restarted), every lease of the previous run is gone with
// it, so a restarted runnel does not wait for its own old leases.
package lease

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
	"github.com/runnel-dev/runnel/internal/clocks"
)

// Bucket is the key-value bucket holding the leases.
const Bucket = "runnel_leases"

// DefaultTTL is Options.TTL's default.
const DefaultTTL = 10 * time.Second

// ErrHeld is returned by Acquire when another process holds the lease.
var ErrHeld = errors.New("lease: held by another process")

// Options configures a Manager.
type Options struct {
	// TTL is how long a lease lives after its last renewal. Default
	// DefaultTTL (10 s); at least 1 s. Every process sharing the bucket
	// must use the same TTL (the bucket is created with the first one).
	TTL time.Duration
	// Node names this process in lease values; default a random NUID.
	Node string
	// Replicas of the bucket; default 1.
	Replicas int
	Logger   *slog.Logger
}

// Manager acquires, renews and releases this process's leases.
type Manager struct {
	kv   jetstream.KeyValue
	node string
	ttl  time.Duration
	log  *slog.Logger
	mu   sync.Mutex
	held map[string]*Lease
	// lapsed holds, per key, the revision this process last wrote for a
	// lease it lost when its validity ended unrenewed: Acquire takes the
	// key back on that revision (nobody else wrote it since).
	lapsed   map[string]uint64
	cancel   context.CancelFunc
	done     chan struct{}
	renewing sync.WaitGroup
}

// Lease is one held lease.
type Lease struct {
	m    *Manager
	key  string
	io   sync.Mutex // serializes the renewal and the release writes
	mu   sync.Mutex
	rev  uint64
	good time.Time // Valid until then
	lost chan struct{}
	gone bool
	// expiry closes Lost when the lease stops being Valid unrenewed;
	// reset at every renewal.
	expiry *time.Timer
}

// BucketConfig is the leases bucket's configuration: history 1, the
// bucket's TTL = ttl; memory storage for one replica (a restarted single
// process finds no lease of its previous life to wait out), file storage
// for more.
//
// The trap, found by TestOneRunnelRidesThroughTheLossOfEachNATSServer: a
// replicated memory stream does not survive a rolling restart of its
// servers. A restarted server comes back without the stream's state, and
// with a second server down the group has no quorum: every renewal
// answered "no response from stream" and every lease was lost for good.
func BucketConfig(ttl time.Duration, replicas int) jetstream.KeyValueConfig {
	storage := jetstream.MemoryStorage
	if replicas > 1 {
		storage = jetstream.FileStorage
	}
	return jetstream.KeyValueConfig{Bucket: Bucket, TTL: ttl, History: 1, Storage: storage, Replicas: max(1, replicas)}
}

// New opens (creating if needed) the leases bucket and starts renewing.
func New(ctx context.Context, js jetstream.JetStream, opts Options) (*Manager, error) {
	if opts.TTL == 0 {
		opts.TTL = DefaultTTL
	}
	if opts.TTL < time.Second {
		return nil, fmt.Errorf("lease: TTL %v is below the minimum of 1s", opts.TTL)
	}
	if opts.Node == "" {
		opts.Node = nuid.Next()
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	kv, err := js.KeyValue(ctx, Bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		kv, err = js.CreateKeyValue(ctx, BucketConfig(opts.TTL, opts.Replicas))
		if errors.Is(err, jetstream.ErrBucketExists) {
			kv, err = js.KeyValue(ctx, Bucket)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("lease: open bucket: %w", err)
	}
	bg, cancel := context.WithCancel(context.Background())
	m := &Manager{kv: kv, node: opts.Node, ttl: opts.TTL, log: opts.Logger, held: map[string]*Lease{}, lapsed: map[string]uint64{}, cancel: cancel, done: make(chan struct{})}
	go m.renewLoop(bg)
	return m, nil
}

// Node is this process's name in lease values.
func (m *Manager) Node() string { return m.node }

// Acquire takes the lease named key (a KV key: letters, digits, '-', '_',
// '/', '=' and '.'). It returns ErrHeld when another process holds it,
// and the held lease when this process already does. A lease this process
// lost because its validity ended unrenewed is taken back at once while
// its key is still at the revision this process wrote last.
func (m *Manager) Acquire(ctx context.Context, key string) (*Lease, error) {
	m.mu.Lock()
	if l := m.held[key]; l != nil {
		m.mu.Unlock()
		return l, nil
	}
	lapsedRev, lapsed := m.lapsed[key]
	m.mu.Unlock()
	start := time.Now()
	rev, err := m.kv.Create(ctx, key, []byte(m.node))
	if errors.Is(err, jetstream.ErrKeyExists) && lapsed {
		start = time.Now()
		rev, err = m.kv.Update(ctx, key, []byte(m.node), lapsedRev)
		if err != nil && (errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyNotFound) || isWrongSequence(err)) {
			m.mu.Lock()
			if m.lapsed[key] == lapsedRev {
				delete(m.lapsed, key)
			}
			m.mu.Unlock()
			return nil, ErrHeld
		}
	}
	if errors.Is(err, jetstream.ErrKeyExists) {
		return nil, ErrHeld
	}
	if err != nil {
		return nil, fmt.Errorf("lease %s: %w", key, err)
	}
	l := &Lease{m: m, key: key, rev: rev, good: start.Add(m.ttl / 2), lost: make(chan struct{})}
	m.mu.Lock()
	delete(m.lapsed, key)
	m.held[key] = l
	l.mu.Lock() // the timer's function takes m.mu, then l.mu
	l.expiry = time.AfterFunc(time.Until(l.good), l.lapse)
	l.mu.Unlock()
	m.mu.Unlock()
	return l, nil
}

// Holder returns the node holding key, "" if nobody does.
func (m *Manager) Holder(ctx context.Context, key string) (string, error) {
	e, err := m.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return string(e.Value()), nil
}

// Count returns how many leases whose key starts with prefix are held now
// (by any process).
func (m *Manager) Count(ctx context.Context, prefix string) (int, error) {
	lister, err := m.kv.ListKeysFiltered(ctx, prefix+">")
	if err != nil {
		if errors.Is(err, jetstream.ErrNoKeysFound) {
			return 0, nil
		}
		return 0, err
	}
	n := 0
	for range lister.Keys() {
		n++
	}
	return n, nil
}

// Holders returns every lease held now (by any process): key -> node.
func (m *Manager) Holders(ctx context.Context) (map[string]string, error) {
	return m.HoldersOf(ctx, "")
}

// HoldersOf returns the leases held now (by any process) whose key
// starts with prefix ("": all of them): key -> node.
func (m *Manager) HoldersOf(ctx context.Context, prefix string) (map[string]string, error) {
	out := map[string]string{}
	lister, err := m.kv.ListKeysFiltered(ctx, prefix+">")
	if err != nil {
		if errors.Is(err, jetstream.ErrNoKeysFound) {
			return out, nil
		}
		return nil, err
	}
	for k := range lister.Keys() {
		if h, err := m.Holder(ctx, k); err == nil && h != "" {
			out[k] = h
		}
	}
	return out, nil
}

// Valid reports whether the holder may act on the lease now.
func (l *Lease) Valid() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.gone && time.Now().Before(l.good)
}

// Lost is closed when the lease is lost (another process holds it now) or
// released.
func (l *Lease) Lost() <-chan struct{} { return l.lost }

// Key is the lease's name.
func (l *Lease) Key() string { return l.key }

// Release gives the lease up at once: the key is deleted (only if this
// process still holds it), so another process may acquire it without
// waiting for the TTL.
func (l *Lease) Release(ctx context.Context) error {
	l.io.Lock()
	defer l.io.Unlock()
	l.mu.Lock()
	if l.gone {
		l.mu.Unlock()
		return nil
	}
	l.gone = true
	l.expiry.Stop()
	rev := l.rev
	close(l.lost)
	l.mu.Unlock()
	l.forget()
	err := l.m.kv.Delete(ctx, l.key, jetstream.LastRevision(rev))
	if err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("lease %s: release: %w", l.key, err)
	}
	return nil
}

// lose marks the lease lost after a renewal found another holder.
func (l *Lease) lose() {
	l.mu.Lock()
	if !l.gone {
		l.gone = true
		l.expiry.Stop()
		close(l.lost)
	}
	l.mu.Unlock()
	l.forget()
}

// lapse, the expiry timer's function, marks the lease lost when it has
// stopped being Valid without a renewal, and remembers its revision for
// Acquire.
func (l *Lease) lapse() {
	l.m.mu.Lock()
	l.mu.Lock()
	if l.gone || time.Now().Before(l.good) {
		l.mu.Unlock()
		l.m.mu.Unlock()
		return
	}
	l.gone = true
	close(l.lost)
	if l.m.held[l.key] == l {
		delete(l.m.held, l.key)
		l.m.lapsed[l.key] = l.rev
	}
	l.mu.Unlock()
	l.m.mu.Unlock()
	l.m.log.Warn("lease lost: not renewed while it was valid; this process stops its work now", "lease", l.key)
}

// forget removes the lease from its manager's held leases.
func (l *Lease) forget() {
	l.m.mu.Lock()
	if l.m.held[l.key] == l {
		delete(l.m.held, l.key)
	}
	l.m.mu.Unlock()
}

// snapshot returns the held leases.
func (m *Manager) snapshot() []*Lease {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Collect(maps.Values(m.held))
}

// renewLoop renews every held lease every TTL/4, each in a goroutine of
// its own; a lease whose previous renewal is still waiting for its answer
// is left to it.
func (m *Manager) renewLoop(ctx context.Context) {
	defer close(m.done)
	defer m.renewing.Wait()
	clocks.Every(ctx, clockwork.NewRealClock(), m.ttl/4, func() {
		for _, l := range m.snapshot() {
			if !l.io.TryLock() {
				continue
			}
			m.renewing.Add(1)
			go func() {
				defer m.renewing.Done()
				defer l.io.Unlock()
				m.renew(ctx, l)
			}()
		}
	})
}

// renew writes the lease's key again; the caller holds l.io.
func (m *Manager) renew(ctx context.Context, l *Lease) {
	l.mu.Lock()
	rev, gone := l.rev, l.gone
	l.mu.Unlock()
	if gone {
		return
	}
	start := time.Now()
	c, cancel := context.WithTimeout(ctx, m.ttl/4)
	nrev, err := m.kv.Update(c, l.key, []byte(m.node), rev)
	cancel()
	switch {
	case err == nil:
		m.mu.Lock()
		l.mu.Lock()
		l.rev, l.good = nrev, start.Add(m.ttl/2)
		if !l.gone {
			l.expiry.Reset(time.Until(l.good))
		} else if _, ok := m.lapsed[l.key]; ok && m.held[l.key] == nil {
			// Its validity ended while this renewal waited: the key is
			// still this process's, at nrev.
			m.lapsed[l.key] = nrev
		}
		l.mu.Unlock()
		m.mu.Unlock()
	case errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyNotFound) || isWrongSequence(err):
		m.log.Warn("lease lost: another process holds it now", "lease", l.key, "err", err)
		l.lose()
	default:
		// No answer: the lease stays held until it stops being Valid; the
		// next renewal tries again.
		if ctx.Err() != nil {
			return
		}
		// The expiry timer closes Lost when the lease stops being Valid.
		m.log.Warn("lease renewal failed; will retry", "lease", l.key, "err", err)
	}
}

func isWrongSequence(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence
}

// Close stops renewing and releases every held lease.
func (m *Manager) Close(ctx context.Context) {
	m.cancel()
	<-m.done
	for _, l := range m.snapshot() {
		if err := l.Release(ctx); err != nil {
			m.log.Warn("lease release failed; it expires by its TTL", "lease", l.key, "err", err)
		}
	}
}

// Abandon stops renewing without releasing anything, as a killed process
// would: the leases expire by their TTL. For crash tests.
func (m *Manager) Abandon() {
	m.cancel()
	<-m.done
}

// RunWhileHeld runs run with a context that ends when the lease named key
// is lost, each time this process holds it, until ctx ends: it takes the
// lease when it is free (retrying every TTL/2 while another process holds
// it) and releases it when ctx ends. For work only one process of a
// cluster may do at a time (a schedule timer).
func (m *Manager) RunWhileHeld(ctx context.Context, key string, run func(ctx context.Context)) {
	for ctx.Err() == nil {
		l, err := m.Acquire(ctx, key)
		if err != nil {
			if !errors.Is(err, ErrHeld) && ctx.Err() == nil {
				m.log.Warn("lease not taken; will retry", "lease", key, "err", err)
			}
			select {
			case <-ctx.Done():
			case <-time.After(m.ttl / 2):
			}
			continue
		}
		rctx, cancel := context.WithCancel(ctx)
		go func() {
			select {
			case <-l.Lost():
				cancel()
			case <-rctx.Done():
			}
		}()
		run(rctx)
		cancel()
		if ctx.Err() != nil {
			c, done := context.WithTimeout(context.Background(), 2*time.Second)
			l.Release(c)
			done()
		}
	}
}
