package function

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/runnel-dev/runnel/engine"
)

// concurrencyBucket holds the slots of the functions with a reserved
// concurrency, cluster-wide: key "<function>.<i>", i in 0..reserved-1,
// one per invocation running on any node sharing the JetStream. Value:
// the node's id. Per-key TTL: the invocation's time limit and
// slotMargin, so that the slots of a node that died free themselves.
const concurrencyBucket = "runnel_function_concurrency"

const (
	// slotMargin is how long a slot's key outlives the invocation's time
	// limit (Timeout; for a process function its MaxInvocationTime and
	// grace). An invocation deletes its key when it ends; the TTL only
	// frees the slots of a node that died.
	slotMargin = 30 * time.Second
	// slotMarkerTTL is how long the bucket keeps the marker an expired
	// key leaves (LimitMarkerTTL, which allows per-key TTLs; 1 s is
	// JetStream's least). A slot with a marker counts as taken in the
	// subject count (acquire) for that long.
	slotMarkerTTL = time.Second
	// slotOpTimeout bounds a slot's release, which runs without the
	// invocation's context.
	slotOpTimeout = 10 * time.Second
)

// errSlotsFull is acquire's answer when every slot is taken.
var errSlotsFull = errors.New("function: every reserved slot is taken")

// clusterSlots counts the running invocations of the functions with a
// reserved concurrency across every node sharing the engine's JetStream.
// The bucket is opened at the first invocation of such a function: the
// functions without a reservation never touch it, and neither does an
// engine no other process can reach (engine.Shared false: the node's
// semaphore counts every invocation there is).
type clusterSlots struct {
	eng  *engine.Engine
	node string

	mu sync.Mutex
	kv jetstream.KeyValue
}

// open returns the bucket, creating the bucket (memory
// storage for one replica, as the leases bucket: a restarted single node
// finds none of its previous life's slots; file storage for more).
func (c *clusterSlots) open(ctx context.Context) (jetstream.KeyValue, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.kv != nil {
		return c.kv, nil
	}
	storage := jetstream.MemoryStorage
	if c.eng.Replicas() > 1 {
		storage = jetstream.FileStorage
	}
	kv, err := c.eng.EnsureBucket(ctx, jetstream.KeyValueConfig{Bucket: concurrencyBucket, History: 1,
		Storage: storage, Replicas: max(1, c.eng.Replicas()), LimitMarkerTTL: slotMarkerTTL})
	if err != nil {
		return nil, err
	}
	c.kv = kv
	return kv, nil
}

func slotKey(name string, i int) string { return fmt.Sprintf("%s.%d", name, i) }

// acquire takes one of function name's n slots for an invocation whose
// time limit is limit, and returns its key and revision for release;
// errSlotsFull when all n are taken (by invocations on any node), or the
// bucket's error. It tries one slot at random; when that one is taken,
// it lists the function's live slot keys (one ordered consumer; deleted
// keys are not listed) and tries the others that are free.
func (c *clusterSlots) acquire(ctx context.Context, name string, n int, limit time.Duration) (string, uint64, error) {
	kv, err := c.open(ctx)
	if err != nil {
		return "", 0, err
	}
	ttl := limit + slotMargin
	if r := ttl % time.Second; r > 0 {
		ttl += time.Second - r // JetStream counts TTLs in whole seconds
	}
	first := rand.IntN(n)
	// Each take writes a value of its own, so that a Create whose answer
	// was lost (the caller gave up, a timeout in a stall) can be told
	// apart from another invocation's and undone: it would hold the slot
	// for its whole TTL (the time limit + 30 s) otherwise.
	mine := []byte(c.node + "/" + nuid.Next())
	take := func(i int) (uint64, bool, error) {
		key := slotKey(name, i)
		seq, err := kv.Create(ctx, key, mine, jetstream.KeyTTL(ttl))
		if slotTaken(err) {
			return 0, false, nil
		}
		if err != nil {
			c.undo(key, mine)
		}
		return seq, err == nil, err
	}
	if seq, ok, err := take(first); ok || err != nil {
		return slotKey(name, first), seq, err
	}
	if n == 1 {
		return "", 0, errSlotsFull
	}
	lister, err := kv.ListKeysFiltered(ctx, name+".*")
	if err != nil {
		return "", 0, err
	}
	taken := map[string]bool{}
	for k := range lister.Keys() {
		taken[k] = true
	}
	for _, i := range rand.Perm(n) {
		if i == first || taken[slotKey(name, i)] {
			continue
		}
		if seq, ok, err := take(i); ok || err != nil {
			return slotKey(name, i), seq, err
		}
	}
	return "", 0, errSlotsFull
}

// slotTaken says a Create found its slot key there: ErrKeyExists, or,
// for a key whose last entry is a delete marker (a slot released), the
// server's wrong-last-sequence answer, which nats.go passes on as is (a
// replicated bucket answers 10164 where one replica answers 10071; the
// rule of stream/put.go).
func slotTaken(err error) bool {
	if errors.Is(err, jetstream.ErrKeyExists) {
		return true
	}
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}

// undo deletes slot key if it holds mine: a Create that failed without an
// answer may have been stored.
func (c *clusterSlots) undo(key string, mine []byte) {
	c.mu.Lock()
	kv := c.kv
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), slotOpTimeout)
	defer cancel()
	e, err := kv.Get(ctx, key)
	if err != nil || !bytes.Equal(e.Value(), mine) {
		return
	}
	if err := kv.Delete(ctx, key, jetstream.LastRevision(e.Revision())); err != nil && !slotTaken(err) {
		c.eng.Logger.Warn("function: undoing a reserved concurrency slot whose take failed did not work; it frees at its TTL", "key", key, "err", err)
	}
}

// release frees slot key, taken at revision rev: a Delete on that
// revision only (a slot taken again after its TTL expired is another
// invocation's, left alone). A failure leaves the slot to its TTL.
func (c *clusterSlots) release(key string, rev uint64) {
	c.mu.Lock()
	kv := c.kv
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), slotOpTimeout)
	defer cancel()
	err := kv.Delete(ctx, key, jetstream.LastRevision(rev))
	if err != nil && !slotTaken(err) {
		c.eng.Logger.Warn("function: release of a reserved concurrency slot failed; it frees at its TTL", "key", key, "err", err)
	}
}

// limiter is the semaphore of a function's concurrency on this node: one
// per function name in a Service, shared by $LATEST and its versions
// (Lambda reserves concurrency for the function as a whole), replaced
// when the reservation changes (an invocation releases the one it took).
// With a reservation it is the fast first gate; the cluster-wide count
// (clusterSlots) is the second. Without one, in a Service, it points to
// the service's pool, which every function without a reservation shares.
type limiter struct{ g atomic.Pointer[gate] }

// gate is a limiter's semaphore: ch's capacity is the limit; reserved
// says it is a reservation (ReservedConcurrentExecutions) rather than the
// account's unreserved concurrency; pool, when set, is the shared
// limiter to use instead (ch and reserved unused).
type gate struct {
	ch       chan struct{}
	reserved bool
	pool     *limiter
}

func newLimiter(n int, reserved bool) *limiter {
	l := &limiter{}
	l.resize(n, reserved)
	return l
}

// get returns the semaphore to take a slot of: the limiter's own, or its
// pool's.
func (l *limiter) get() *gate {
	g := l.g.Load()
	if g.pool != nil {
		return g.pool.get()
	}
	return g
}

// resize gives the limiter n slots of its own, unless it has n already.
func (l *limiter) resize(n int, reserved bool) {
	if g := l.g.Load(); g == nil || g.pool != nil || cap(g.ch) != n || g.reserved != reserved {
		l.g.Store(&gate{ch: make(chan struct{}, n), reserved: reserved})
	}
}

// share makes the limiter take its slots from pool.
func (l *limiter) share(pool *limiter) {
	if g := l.g.Load(); g == nil || g.pool != pool {
		l.g.Store(&gate{pool: pool})
	}
}

// Throttle reasons, the Reason of Lambda's TooManyRequestsException
// (API_Invoke, ThrottleReason).
const (
	// ReasonReserved: the function's reserved concurrency is in use.
	ReasonReserved = "ReservedFunctionConcurrentInvocationLimitExceeded"
	// ReasonUnreserved: the account's unreserved concurrency, which the
	// functions without a reservation share, is in use.
	ReasonUnreserved = "ConcurrentInvocationLimitExceeded"
)

// unreservedPhrase is in the message of every throttle by the shared
// pool, and in no other (ThrottleReason).
const unreservedPhrase = "account's unreserved concurrency"

// ThrottleReason is the Reason of a throttle (a TooManyRequestsException)
// whose message is msg, as Invoke wrote it: ReasonUnreserved for the
// shared pool's, ReasonReserved for any other.
func ThrottleReason(msg string) string {
	if strings.Contains(msg, unreservedPhrase) {
		return ReasonUnreserved
	}
	return ReasonReserved
}

// unreservedConcurrency is what the functions without a reservation
// share: DefaultAccountConcurrency less every function's reservation
// (cfg's for its function, the known $LATEST's for the others), never
// below 0.
func (s *Service) unreservedConcurrency(cfg Config) int {
	n := DefaultAccountConcurrency
	if r := cfg.ReservedConcurrentExecutions; r != nil {
		n -= *r
	}
	for name, f := range s.fns {
		if r := f.cfg.ReservedConcurrentExecutions; name != cfg.FunctionName && r != nil {
			n -= *r
		}
	}
	return max(0, n)
}
