package stream

import "sync"

// tailCache keeps the stored messages this process put last, so that
// GetRecords reads records put moments ago (a reader at the tip of a
// shard, the common case) from memory instead of through a JetStream
// direct get. An entry is the exact body JetStream acknowledged at its
// sequence; a stored message never changes, and one that retention or a
// purge removed is below the shard's first sequence, which GetRecords
// checks before it reads (so is one of a deleted stream: its ID is not
// reused). A message put by another process, or evicted, is read from
// JetStream as before. The oldest entries go first once the cache holds
// more than max bytes of bodies.
type tailCache struct {
	mu    sync.Mutex
	max   int
	size  int
	msgs  map[tailKey][]byte
	order []tailKey // insertion order, oldest first
}

type tailKey struct {
	id    string // the stream's StreamDescription.ID
	shard int
	seq   uint64
}

// DefaultTailCacheBytes bounds the message bodies a Kinesis streams
// service keeps for GetRecords (tailCache): 64 MiB.
const DefaultTailCacheBytes = 64 << 20

func newTailCache(max int) *tailCache {
	return &tailCache{max: max, msgs: map[tailKey][]byte{}}
}

// put keeps body, stored at sequence seq of shard of the stream with id.
// body must not change afterwards. A nil cache keeps nothing.
func (c *tailCache) put(id string, shard int, seq uint64, body []byte) {
	if c == nil || len(body) > c.max {
		return
	}
	k := tailKey{id, shard, seq}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.msgs[k]; ok {
		return
	}
	c.msgs[k] = body
	c.order = append(c.order, k)
	c.size += len(body)
	for c.size > c.max {
		old := c.order[0]
		c.order[0] = tailKey{}
		c.order = c.order[1:]
		c.size -= len(c.msgs[old])
		delete(c.msgs, old)
	}
}

// get returns the body stored at seq of the shard, if the cache has it.
func (c *tailCache) get(id string, shard int, seq uint64) ([]byte, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	b, ok := c.msgs[tailKey{id, shard, seq}]
	c.mu.Unlock()
	return b, ok
}
