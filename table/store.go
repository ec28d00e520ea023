package table

import (
	"crypto/md5"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/runnel-dev/runnel/engine"
)

// The disk index: the tables' item indexes in an embedded Pebble store
// (CockroachDB's LSM) in the process's data directory, instead of the heap
// (docs/design.md, "Tables: where the items live"). One store serves every
// table of the process; a table's keys share a prefix made of the MD5 of
// its TableId, so a table created again under the same name starts empty.
//
//	'i' tid(16) h(16) rk   an item: where its latest image is (diskIndex)
//	'c' tid(16)            the table's item count and size, written in the
//	                       batch of every change, so they always agree
//	                       with the items the store holds
//	'h' tid(16)            the table's header: the log positions the store
//	                       is known to cover (a snapHeader, JSON), written
//	                       with every log write stopped (snapshot.go)
//
// The store is a cache of the change log, never the only copy, so it
// keeps no write-ahead log of its own (Pebble's DisableWAL): what a crash
// of the process or the machine loses is the memtables' changes since the
// last flush to a file. Pebble flushes whole memtables in commit order, so
// what survives is every batch up to some point: the store may be behind
// the log, never ahead of it, and never holds a later batch without an
// earlier one. A header is flushed when written (set with sync) and at
// close. An open replays the log after the
// header's positions; replaying a change the store already holds is
// harmless (each change sets its item to what the log says, and the count
// moves by what the store held), so a store that got further than its
// header converges to the log. A store without a header, or with one of
// another table or log, is cleared and rebuilt from the whole log.
//
// Trap: a Pebble error (a full or failing disk) is sticky: the table
// answers every later call with a ServiceException naming it, and the
// next open rebuilds the index from the log.
type store struct {
	mu     sync.RWMutex // held for reading by every use, for writing by Close
	db     *pebble.DB
	closed bool
	log    *slog.Logger
	dir    string          // the store's directory
	opts   *pebble.Options // the options it was opened with, defaults filled (ingestion's file writer)
}

// DefaultIndexCacheBytes is Options.IndexCacheBytes' default: 64 MiB of
// Pebble block cache for every table of the process together.
const DefaultIndexCacheBytes = 64 << 20

// indexMemtableBytes is the size of each of the store's memtables (Pebble
// keeps up to two, plus the block cache), and indexL0Files the number of
// flushed files level 0 gathers before Pebble compacts them down
// (L0CompactionThreshold; Pebble's defaults are 4 files and 4 MiB
// memtables).
//
// A table's keys are hashes, so an insert walks the memtable's skiplist
// to a random place and every compaction into a level overlaps all of
// it. 8 MiB memtables make the walk cheaper, and 16 files in level 0
// before a compaction keep the bytes a compaction gathers what four
// 32 MiB flushes gave: in a saturated 2M trades run the store had been
// 23 % of the CPU (compactions 9.5 %, memtable inserts 8.3 %). Alternated
// over 12 rounds, 8 MiB and 16 files ran at about 9 % more messages/s
// than 32 MiB and 4 files, ahead in 10 of the 12; 4 MiB and 32 files,
// and 16 MiB and 8, were in between (docs/benchmarks/trades-cpu.md,
// "Session 21"). Session 15 found 8 and 32 MiB equal with the default 4
// files: the smaller memtables alone compact four times as often.
//
// The cost, measured in the same hour: the paced 10M trades run, whose
// table grows to 10M items, used 2–6 % more CPU (still keeping pace,
// mean latency 141–322 ms against 100–153), and a Scan of a 1M-item
// store just filled ran at 559,000–598,000 items/s against 647,000: up
// to 16 files in level 0 (more while compactions lag) are that many more
// places a read and a Scan look in. The key filter spares reads of
// absent items. At 10M items the Scan after a fill did not slow:
// 750,484 items/s (session 19: 734,521–817,223).
const (
	indexMemtableBytes = 8 << 20
	indexL0Files       = 16
)

var errStoreClosed = errors.New("table index store closed")

// sharedEngine reports whether another process may serve this process's
// tables next: the engine is external, clustered or reachable by others
// (a listener).
func sharedEngine(eng *engine.Engine) bool {
	return eng.DataDir() == "" || eng.Replicas() > 1 || eng.Shared()
}

// openIndexStore opens the index store that opts.Index asks for: nil for
// the heap's indexes (IndexMemory), the store in opts.IndexDir (default
// "table-index" in the engine's data directory) for IndexDisk. The
// default is IndexDisk for an embedded engine (each node of a cluster
// keeps its own store), IndexMemory with an external one.
func openIndexStore(eng *engine.Engine, opts Options) (*store, error) {
	mode := opts.Index
	if mode == "" {
		mode = IndexMemory
		if eng.DataDir() != "" {
			mode = IndexDisk
		}
	}
	switch mode {
	case IndexMemory:
		return nil, nil
	case IndexDisk:
	default:
		return nil, fmt.Errorf("table: Options.Index %q: must be %q or %q", opts.Index, IndexDisk, IndexMemory)
	}
	dir := opts.IndexDir
	if dir == "" {
		if eng.DataDir() == "" {
			return nil, errors.New("table: Options.Index disk needs Options.IndexDir with an external engine")
		}
		dir = filepath.Join(eng.DataDir(), "table-index")
	}
	return openStore(dir, opts.IndexCacheBytes, eng.Logger)
}

// openStore opens (or creates) the store in dir.
func openStore(dir string, cacheBytes int64, log *slog.Logger) (*store, error) {
	if cacheBytes <= 0 {
		cacheBytes = DefaultIndexCacheBytes
	}
	opts := &pebble.Options{
		// Pebble counts its memtables against the block cache (they
		// reserve their size in it): with a cache no larger than the
		// memtables no block stayed cached and every read went to the
		// files. The cache is cacheBytes beyond the two memtables.
		CacheSize:    cacheBytes + 2*indexMemtableBytes,
		MemTableSize: indexMemtableBytes,
		// Writes stop at three times the compaction threshold, as with
		// Pebble's defaults (4 and 12).
		L0CompactionThreshold: indexL0Files,
		L0StopWritesThreshold: 3 * indexL0Files,
		Logger:                pebbleLogger{log},
		// No write-ahead log: the change log is the store's (above). It
		// cost 3 to 4 % of the trades demo's CPU (its write calls and
		// record encoding) for changes the log's replay restores anyway.
		DisableWAL: true,
		FS:         storeFS{vfs.Default},
	}
	opts.EventListener = stallListener(log)
	// Bloom filters (10 bits a key, about 1 % false positives) in every
	// level: a lookup of a key the table does not hold (every write
	// creating an item reads it first) skips the files without reading
	// their blocks. Without them the trades demo's state table ran at a
	// third of its speed, its lookups reading and decompressing blocks.
	for i := range opts.Levels {
		opts.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
	}
	// No block compression (Pebble's default is Snappy at every level).
	// The keys are hashes and the images mostly numbers and short strings:
	// on the trades demo's state table Snappy saved nothing on disk (204 MB
	// ingested, 202 MB of files), yet every flush and compaction encoded
	// and every read of a block not cached decoded (3.3 % of the CPU
	// profile). In messages/s the gain is within this machine's noise:
	// 13 and 14 alternating saturated 2M-message runs averaged 72,600
	// without and 72,000 with (docs/benchmarks/trades-cpu.md). Trap: a
	// table of long, repetitive text attributes takes more disk here than
	// it would compressed; the change log, the source of truth, is
	// unaffected.
	opts.ApplyCompressionSettings(func() pebble.DBCompressionSettings { return pebble.DBCompressionNone })
	opts.EnsureDefaults()
	dir = filepath.Clean(dir)
	if err := removeIngestDirs(dir); err != nil {
		return nil, fmt.Errorf("table: open the index store in %s: %w", dir, err)
	}
	db, err := pebble.Open(dir, opts)
	if err != nil {
		return nil, fmt.Errorf("table: open the index store in %s: %w", dir, err)
	}
	return &store{db: db, log: log, dir: dir, opts: opts}, nil
}

// close flushes the memtables (without a write-ahead log their changes
// would be replayed from the change log at the next open) and closes.
// Without flush it drops them, as a killed process would (tests of
// crashes: Engine.Crashed).
func (st *store) close(flush bool) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.closed {
		return nil
	}
	st.closed = true
	var ferr error
	if flush {
		ferr = st.db.Flush()
	}
	return errors.Join(ferr, st.db.Close())
}

// stallListener logs the store's write stalls (Pebble holds every write
// while its memtables or level 0 wait on a flush or compaction), with the
// reason at the start and the length at the end, at Warn: a stall holds
// every table write of the process, and the disk is usually why.
func stallListener(log *slog.Logger) *pebble.EventListener {
	var began atomic.Int64
	return &pebble.EventListener{
		WriteStallBegin: func(i pebble.WriteStallBeginInfo) {
			began.Store(time.Now().UnixNano())
			log.Warn("index store: write stall", "reason", i.Reason)
		},
		WriteStallEnd: func() {
			d := time.Duration(time.Now().UnixNano() - began.Load())
			log.Warn("index store: write stall ended", "duration", d.Round(time.Millisecond))
		},
	}
}

// pebbleLogger sends Pebble's lines to the engine's logger.
type pebbleLogger struct{ l *slog.Logger }

func (p pebbleLogger) Infof(f string, a ...any)  { p.l.Debug("index store: " + fmt.Sprintf(f, a...)) }
func (p pebbleLogger) Errorf(f string, a ...any) { p.l.Error("index store: " + fmt.Sprintf(f, a...)) }
func (p pebbleLogger) Fatalf(f string, a ...any) {
	p.l.Error("index store: fatal: " + fmt.Sprintf(f, a...))
	panic(fmt.Sprintf(f, a...))
}

// tablePrefix is the 16 bytes that begin every key of a table.
func tablePrefix(tableID string) [16]byte { return md5.Sum([]byte(tableID)) }

func storeKey(kind byte, tid [16]byte, n int) []byte {
	k := make([]byte, 1, 1+16+n)
	k[0] = kind
	return append(k, tid[:]...)
}

// get returns a copy of key's value, nil if there is none.
func (st *store) get(key []byte) ([]byte, error) {
	st.mu.RLock()
	defer st.mu.RUnlock()
	if st.closed {
		return nil, errStoreClosed
	}
	v, c, err := st.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := append([]byte(nil), v...)
	return out, c.Close()
}

// snapshot is a consistent view of the store as it is now (Pebble's
// snapshot: reads through it see no later write); the caller closes it.
func (st *store) snapshot() (*pebble.Snapshot, error) {
	st.mu.RLock()
	defer st.mu.RUnlock()
	if st.closed {
		return nil, errStoreClosed
	}
	return st.db.NewSnapshot(), nil
}

// set writes key; with sync, it then flushes the memtables to files, so
// that key and every change before it survive a crash.
func (st *store) set(key, value []byte, sync bool) error {
	st.mu.RLock()
	defer st.mu.RUnlock()
	if st.closed {
		return errStoreClosed
	}
	if err := st.db.Set(key, value, pebble.NoSync); err != nil || !sync {
		return err
	}
	return st.db.Flush()
}

// clear deletes every key of a table (its items, count and header) and
// flushes the memtables: without a write-ahead log a crash would
// otherwise forget the deletion and leave the keys of a deleted table
// behind (never read, but on disk for good).
func (st *store) clear(tid [16]byte) error {
	var ps [][]byte
	for _, kind := range []byte{'i', 'c', 'h', 'x', 'w', 'y', 'z'} {
		ps = append(ps, storeKey(kind, tid, 0))
	}
	return st.clearPrefixes(ps...)
}

// iterate calls each with copies of up to n keys and values of [lo, hi)
// strictly after from (nil: from the first) in the direction asked.
func (st *store) iterate(lo, hi, from []byte, forward bool, n int, each func(k, v []byte) error) error {
	st.mu.RLock()
	defer st.mu.RUnlock()
	if st.closed {
		return errStoreClosed
	}
	it, err := st.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return err
	}
	defer it.Close()
	var ok bool
	switch {
	case from == nil && forward:
		ok = it.First()
	case from == nil:
		ok = it.Last()
	case forward:
		ok = it.SeekGE(from)
		if ok && string(it.Key()) == string(from) {
			ok = it.Next()
		}
	default:
		ok = it.SeekLT(from)
	}
	for i := 0; ok && i < n; i++ {
		if err := each(append([]byte(nil), it.Key()...), append([]byte(nil), it.Value()...)); err != nil {
			return err
		}
		ok = step(it, forward)
	}
	return it.Error()
}

// clearPrefixes deletes every key that begins with one of ps, in one
// batch, and flushes (see clear).
func (st *store) clearPrefixes(ps ...[]byte) error {
	st.mu.RLock()
	defer st.mu.RUnlock()
	if st.closed {
		return errStoreClosed
	}
	b := st.db.NewBatch()
	defer b.Close()
	for _, p := range ps {
		// A prefix without keys gets no range deletion (and the store no
		// flush): a tombstone would overlap every file written under the
		// prefix after it until a compaction drops it. The usual case: a
		// node filling its store from an object for a table it never held.
		held, err := st.holds(p)
		if err != nil {
			return err
		}
		if !held {
			continue
		}
		if err := b.DeleteRange(p, prefixEnd(p), nil); err != nil {
			return err
		}
	}
	if b.Empty() {
		return nil
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		return err
	}
	return st.db.Flush()
}

// holds reports whether the store holds a key under prefix p. The caller
// holds st.mu.
func (st *store) holds(p []byte) (bool, error) {
	it, err := st.db.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: prefixEnd(p)})
	if err != nil {
		return false, err
	}
	held := it.First()
	return held, errors.Join(it.Error(), it.Close())
}

// ids returns the distinct 16 bytes that follow prefix in the store's
// keys (an index's id after a kind and table prefix), skipping from one
// to the next: one seek each, whatever the keys under each.
func (st *store) ids(prefix []byte) ([][16]byte, error) {
	st.mu.RLock()
	defer st.mu.RUnlock()
	if st.closed {
		return nil, errStoreClosed
	}
	it, err := st.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return nil, err
	}
	var ids [][16]byte
	for ok := it.First(); ok; {
		k := it.Key()
		if len(k) < len(prefix)+16 {
			ok = it.Next()
			continue
		}
		var id [16]byte
		copy(id[:], k[len(prefix):])
		ids = append(ids, id)
		next := prefixEnd(append(append([]byte(nil), prefix...), id[:]...))
		if next == nil {
			break
		}
		ok = it.SeekGE(next)
	}
	return ids, errors.Join(it.Error(), it.Close())
}

// prefixEnd is the first key after every key that begins with p.
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		end[i]++
		if end[i] != 0 {
			return end[:i+1]
		}
	}
	return nil // p is all 0xff: no end
}

// encodeCount is a table's 'c' value: item count and bytes.
func encodeCount(n, bytes int64) []byte {
	b := binary.AppendVarint(nil, n)
	return binary.AppendVarint(b, bytes)
}

func decodeCount(v []byte) (n, bytes int64, err error) {
	n, w := binary.Varint(v)
	if w <= 0 {
		return 0, 0, errors.New("bad item count")
	}
	bytes, w2 := binary.Varint(v[w:])
	if w2 <= 0 {
		return 0, 0, errors.New("bad item bytes")
	}
	return n, bytes, nil
}
