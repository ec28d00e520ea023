package table

import (
	"sync"
	"sync/atomic"

	"github.com/bits-and-blooms/bloom/v3"
	"github.com/cockroachdb/pebble/v2"
)

// keyFilter is an index store table's filter of the keys it may hold, in
// the heap: a key the filter has never seen is surely absent, so the
// lookup that every write creating an item does first (the trades demo's
// state and reduce tables: nearly every write) needs no read of the store.
// Pebble's own Get reads the bottom level's data blocks for such a key
// (it skips that level's bloom filters, which are large: "UseL6Filters"),
// and that read was the index store's largest cost on the write path.
//
// It is a scalable bloom filter (bits-and-blooms/bloom): parts of growing
// capacity (256 Ki keys, then 4 times the one before: 4 parts at 10
// million keys, so few probes a lookup), each with half the
// false-positive rate of the one before (0.5 %, 0.25 %, …: at most 1 %
// together), the last one taking the adds. A key is hashed once for
// every part (Locations).
// A deleted key stays in it (a later lookup reads the store and finds
// nothing). About 2 bytes a key: 10 million items, about 30 MB.
//
// At an open of a table the store already holds, the filter is not ready
// (every lookup reads the store) until a goroutine has added every key of
// the store's table to it; writers add theirs meanwhile, so a key the
// store gets during the pass is in the filter whether or not the pass saw
// it. Trap: that pass reads the table's whole key range (about a second
// per million items on a 2-core machine), beside the table's own work.
//
// Writers add under Table.idxMu (exclusively) and mu; the builder adds
// under mu; readers test under Table.idxMu (for reading) once ready, and
// readers and writers never meet.
type keyFilter struct {
	mu    sync.Mutex
	parts []*bloom.BloomFilter
	cap   uint // the last part's capacity
	maxK  uint // the most hash functions of a part
	n     uint // keys added to the last part
	gen   uint64
	ready atomic.Bool
	built chan struct{} // closed once no build runs (at once if ready at creation)
}

// First part's capacity and false-positive rate (keyFilter).
const (
	keyFilterFirstCap = 1 << 18
	keyFilterFirstFP  = 0.005
	keyFilterGrowth   = 4
)

func (f *keyFilter) newPart(fp float64) {
	p := bloom.NewWithEstimates(f.cap, fp)
	f.parts = append(f.parts, p)
	f.maxK = max(f.maxK, p.K())
}

// newKeyFilter returns an empty filter sized for about n keys, ready
// (the table holds none) or not (a builder must add the store's keys).
func newKeyFilter(n int64, ready bool) *keyFilter {
	f := &keyFilter{built: make(chan struct{})}
	f.resetLocked(n)
	f.ready.Store(ready)
	if ready {
		close(f.built)
	}
	return f
}

func (f *keyFilter) resetLocked(n int64) {
	f.cap = max(keyFilterFirstCap, uint(2*max(n, 0)))
	f.maxK = 0
	f.parts = nil
	f.newPart(keyFilterFirstFP)
	f.n = 0
	f.gen++
}

// mayHold reports whether the store may hold key: false only when the
// filter is ready and has never seen it.
func (f *keyFilter) mayHold(key []byte) bool {
	if !f.ready.Load() {
		return true
	}
	locs := bloom.Locations(key, f.maxK)
	for _, p := range f.parts {
		if p.TestLocations(locs[:p.K()]) {
			return true
		}
	}
	return false
}

// add records key (a writer's, under Table.idxMu).
func (f *keyFilter) add(key []byte) {
	f.mu.Lock()
	f.addLocked(key)
	f.mu.Unlock()
}

func (f *keyFilter) addLocked(key []byte) {
	if f.n >= f.cap {
		f.cap *= keyFilterGrowth
		fp := keyFilterFirstFP
		for range f.parts {
			fp /= 2
		}
		f.newPart(fp)
		f.n = 0
	}
	f.parts[len(f.parts)-1].Add(key)
	f.n++
}

// clear empties the filter and makes it ready (the store's table was
// cleared); a builder still running stops. The caller holds Table.idxMu
// exclusively.
func (f *keyFilter) clear() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.resetLocked(0)
	f.ready.Store(true)
}

// rebuild empties the filter, sized for about n keys, and makes it not
// ready until a build started after it (buildFilter) has added every key
// of the store's table; a build still running stops. It is called at a
// table's open (diskFill), before the table serves.
func (f *keyFilter) rebuild(n int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.resetLocked(n)
	f.ready.Store(false)
	f.built = make(chan struct{})
}

// keyFilterChunk is how many keys the builder reads under one iterator
// and one hold of the filter's lock.
const keyFilterChunk = 1024

// build adds every key of x's table in the store to the filter, a chunk
// at a time (each under a new iterator: a key created between chunks is
// added by its writer), then makes the filter ready. It stops, leaving
// the filter not ready, when the store closes or fails, or when the
// filter is cleared.
func (x *diskIndex) buildFilter() {
	f := x.filter
	f.mu.Lock()
	gen, built := f.gen, f.built
	f.mu.Unlock()
	defer close(built)
	seek := x.lo
	for seek != nil {
		next, ok := x.filterChunk(f, gen, seek)
		if !ok {
			return
		}
		seek = next
	}
	f.mu.Lock()
	if f.gen == gen {
		f.ready.Store(true)
	}
	f.mu.Unlock()
}

// filterChunk adds up to keyFilterChunk keys from seek on, and returns
// the key to go on from (nil: the table's keys are done); ok false: stop.
func (x *diskIndex) filterChunk(f *keyFilter, gen uint64, seek []byte) (next []byte, ok bool) {
	x.st.mu.RLock()
	defer x.st.mu.RUnlock()
	if x.st.closed {
		return nil, false
	}
	it, err := x.st.db.NewIter(&pebble.IterOptions{LowerBound: seek, UpperBound: x.hi})
	if err != nil {
		x.st.log.Warn("table index store: key filter not built (every lookup reads the store)", "err", err)
		return nil, false
	}
	defer it.Close()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.gen != gen {
		return nil, false
	}
	n := 0
	for valid := it.First(); valid; valid = it.Next() {
		if n == keyFilterChunk {
			return append([]byte(nil), it.Key()...), true
		}
		f.addLocked(it.Key())
		n++
	}
	if err := it.Error(); err != nil {
		x.st.log.Warn("table index store: key filter not built (every lookup reads the store)", "err", err)
		return nil, false
	}
	return nil, true
}
