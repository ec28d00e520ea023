package stream

import (
	"context"
	"fmt"
	"math/big"
	"sort"
	"sync/atomic"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/engine"
)

// handle caches what the put and read paths need of a stream. Slices
// other than open and starts are indexed by shard index; shards is nil at
// the index of a shard not in the description.
type handle struct {
	desc   StreamDescription
	open   []int     // indexes of the open shards, by starting hash key
	starts []hashKey // starting hash key of each open shard, ascending
	shards []jetstream.Stream
	subj   []string
	// guard is, per shard, the headers every put carries: the publish
	// fails once the shard is sealed (see reshard.go).
	guard    []nats.Header
	shardIDs []string // ShardID(i), formatted once
	// perMsg is, per shard, the records per stored message GetRecords saw
	// last: how many messages to ask for to fill a page.
	perMsg []atomic.Int64
	// seal is, per shard, the JetStream sequence of its seal message once
	// known (0 while open or not yet seen).
	seal []atomic.Uint64
	// rates is, per shard of an ON_DEMAND stream, its write counter (nil
	// for a provisioned stream; ondemand.go).
	rates []*writeRate
}

// handle returns the cached handle of a stream, loading it if needed.
func (s *Service) handle(ctx context.Context, name string) (*handle, error) {
	s.mu.Lock()
	h, ok := s.handles[name]
	gen := s.gens[name]
	s.mu.Unlock()
	if ok {
		return h, nil
	}
	d, err := s.DescribeStream(ctx, name)
	if err != nil {
		return nil, err
	}
	h = &handle{desc: *d}
	n := 0
	for _, sh := range d.Shards {
		i, err := ShardIndex(sh.ShardID)
		if err != nil {
			return nil, fmt.Errorf("stream %s: %v", name, err)
		}
		n = max(n, i+1)
	}
	h.shards, h.subj, h.shardIDs = make([]jetstream.Stream, n), make([]string, n), make([]string, n)
	h.guard = make([]nats.Header, n)
	h.perMsg, h.seal = make([]atomic.Int64, n), make([]atomic.Uint64, n)
	for _, sh := range d.Shards {
		i, _ := ShardIndex(sh.ShardID)
		js, err := engine.AskAgain(ctx, func(c context.Context) (jetstream.Stream, error) { return s.eng.JS.Stream(c, jsName(d.ID, i)) })
		if err != nil {
			return nil, awserr.New(awserr.ErrService, "open shard %d of %s: %v", i, name, err)
		}
		h.shards[i], h.subj[i], h.shardIDs[i] = js, jsSubject(d.ID, i), sh.ShardID
		if s.keep {
			s.setDuplicateWindow(ctx, js)
		}
		if s.eng.Replicas() <= 1 {
			// Replicated streams serialize messages carrying these
			// headers (one in flight per checked subject): there the
			// seal relies on removing the records' subject alone.
			h.guard[i] = nats.Header{
				jetstream.ExpectedLastSubjSeqHeader:     []string{"0"},
				jetstream.ExpectedLastSubjSeqSubjHeader: []string{sealSubject(d.ID, i)},
			}
		}
		if sh.SequenceNumberRange.EndingSequenceNumber != "" {
			if _, end, err := DecodeSequenceNumber(d.Numbering(), sh.SequenceNumberRange.EndingSequenceNumber); err == nil {
				h.seal[i].Store(end>>PositionBits + 1)
			}
		}
		if sh.Open() {
			h.open = append(h.open, i)
			if d.Mode() == StreamModeOnDemand {
				if h.rates == nil {
					h.rates = make([]*writeRate, n)
				}
				h.rates[i] = s.rateOf(d, i)
			}
		}
	}
	sort.Slice(h.open, func(a, b int) bool {
		return startKey(&d.Shards[indexIn(d, h.open[a])]).less(startKey(&d.Shards[indexIn(d, h.open[b])]))
	})
	for _, i := range h.open {
		h.starts = append(h.starts, startKey(&d.Shards[indexIn(d, i)]))
	}
	s.mu.Lock()
	if s.gens[name] == gen {
		s.handles[name] = h
	}
	s.mu.Unlock()
	return h, nil
}

// shardFor returns the index of the open shard owning hash key k.
func (h *handle) shardFor(k hashKey) int {
	// first open shard whose start is > k, minus one
	i := sort.Search(len(h.starts), func(i int) bool { return k.less(h.starts[i]) })
	return h.open[i-1]
}

// startKey returns a shard's starting hash key.
func startKey(sh *Shard) hashKey {
	v, _ := new(big.Int).SetString(sh.HashKeyRange.StartingHashKey, 10)
	if v == nil {
		v = new(big.Int)
	}
	return hashKeyFromBig(v)
}

// indexIn returns the position in d.Shards of the shard with index i.
func indexIn(d *StreamDescription, i int) int {
	id := ShardID(i)
	for k := range d.Shards {
		if d.Shards[k].ShardID == id {
			return k
		}
	}
	return -1
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
