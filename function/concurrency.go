package function

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

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
// functions without a reservation never touch it.
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
	take := func(i int) (uint64, bool, error) {
		seq, err := kv.Create(ctx, slotKey(name, i), []byte(c.node), jetstream.KeyTTL(ttl))
		if errors.Is(err, jetstream.ErrKeyExists) {
			return 0, false, nil
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
	var apiErr *jetstream.APIError
	if err != nil && !(errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence) {
		c.eng.Logger.Warn("function: release of a reserved concurrency slot failed; it frees at its TTL", "key", key, "err", err)
	}
}
