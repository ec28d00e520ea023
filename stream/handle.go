package stream

import (
	"context"
	"fmt"
	"math/big"
	"sort"
	"sync/atomic"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/awserr"
)

// handle caches what the put and read paths need of a stream.
type handle struct {
	desc     StreamDescription
	starts   []hashKey // starting hash key of each shard, ascending
	shards   []jetstream.Stream
	subj     []string
	shardIDs []string // ShardID(i), formatted once
	// perMsg is, per shard, the records per stored message GetRecords saw
	// last: how many messages to ask for to fill a page.
	perMsg []atomic.Int64
}

// handle returns the cached handle of a stream, loading it if needed.
func (s *Service) handle(ctx context.Context, name string) (*handle, error) {
	s.mu.Lock()
	h, ok := s.handles[name]
	s.mu.Unlock()
	if ok {
		return h, nil
	}
	d, err := s.DescribeStream(ctx, name)
	if err != nil {
		return nil, err
	}
	h = &handle{desc: *d}
	for i, sh := range d.Shards {
		v, ok := new(big.Int).SetString(sh.HashKeyRange.StartingHashKey, 10)
		if !ok {
			return nil, fmt.Errorf("stream %s: bad hash key range", name)
		}
		h.starts = append(h.starts, hashKeyFromBig(v))
		js, err := s.eng.JS.Stream(ctx, jsName(d.ID, i))
		if err != nil {
			return nil, awserr.New(awserr.ErrService, "open shard %d of %s: %v", i, name, err)
		}
		h.shards = append(h.shards, js)
		h.subj = append(h.subj, jsSubject(d.ID, i))
		h.shardIDs = append(h.shardIDs, ShardID(i))
	}
	h.perMsg = make([]atomic.Int64, len(h.shards))
	s.mu.Lock()
	s.handles[name] = h
	s.mu.Unlock()
	return h, nil
}

// shardFor returns the index of the shard owning hash key k.
func (h *handle) shardFor(k hashKey) int {
	// first shard whose start is > k, minus one
	i := sort.Search(len(h.starts), func(i int) bool { return k.less(h.starts[i]) })
	return i - 1
}

// lastEpoch makes stream epochs unique within the process even when two
// streams (or a deleted and a re-created one) are created in the same
// millisecond.
var lastEpoch atomic.Int64

func nextEpoch(now int64) int64 {
	for {
		last := lastEpoch.Load()
		e := max(now, last+1)
		if lastEpoch.CompareAndSwap(last, e) {
			return e
		}
	}
}
