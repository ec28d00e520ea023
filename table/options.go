package table

import (
	"time"

	"github.com/jonboulle/clockwork"
)

// Options tunes the service. The zero value is the default.
type Options struct {
	// TTLInterval is how often expired items are deleted, by the engine's
	// clock. Default 30 seconds; negative disables the sweeper (tests call
	// SweepExpired themselves).
	TTLInterval time.Duration
	// SnapshotInterval is how often, by the wall clock, the process
	// serving the tables writes an index snapshot of each table that
	// changed since its last one (snapshot.go), into the object store
	// "runnel_table_index"; one is also written at Close. Opening a table
	// then reads its snapshot and the log after it instead of the whole
	// log. Default DefaultSnapshotInterval (5 minutes); negative: no
	// snapshot is written or read (every open reads the whole log). With
	// the index store (Options.Index) a snapshot is the store's header:
	// the log positions it covers, a few hundred bytes, no copy.
	// Taking one pauses writes (not reads) for the copy of the changed
	// tables' indexes: about 50 ms per million items, 0.1 s at 2 million
	// and 0.5 to 1.1 s at 10 million on a loaded 2-core machine
	// (docs/benchmarks/tables.md, "Session 8: table open from an index snapshot"), and holds a second copy of them
	// in memory until written.
	SnapshotInterval time.Duration
	// SnapshotClock times SnapshotInterval; default the real clock. Not
	// the engine's clock: a snapshot is an operational matter, like
	// JetStream's sync interval, and a ticker on a test's fake clock
	// would count as one more goroutine waiting on it (tests that wait
	// for "the receive is waiting on the clock" then went on too early).
	SnapshotClock clockwork.Clock
	// ItemCacheBytes bounds each table's cache of items (GetItem, the
	// conditions and updates read their item there before the log): the
	// items' sizes as DynamoDB counts them (TableSizeBytes), plus each
	// one's key bytes and CacheEntryOverhead, not the heap they take
	// (larger). Past it,
	// entries are dropped until half is left; an item counting more than
	// half is not cached. Default DefaultItemCacheBytes (16 MiB, about
	// 50,000 items of 200 bytes); a table's memory for cached items is
	// then bounded whatever its item count and item sizes (before, the
	// bound was 65,536 items of up to 400 KB each).
	ItemCacheBytes int64
	// Index is where the tables' item indexes live: IndexDisk, an
	// embedded Pebble store in IndexDir (memory bounded by
	// IndexCacheBytes and two memtables of 32 MiB, whatever the item
	// count; an open reads only the log written since the last
	// snapshot), or IndexMemory, the heap (about 60 bytes an item).
	// Default: IndexDisk with an embedded engine (each node of a cluster
	// keeps its own store), IndexMemory with an external one. Snapshot
	// objects, which the next process to serve the tables opens from, are
	// written by the heap's indexes always and by the store when another
	// process may serve next (a cluster, a listener, an external engine);
	// a next holder with a store fills it from the object (entries without
	// images: the log serves an item until it next changes).
	Index string
	// IndexDir is the index store's directory. Default: "table-index" in
	// the engine's data directory.
	IndexDir string
	// IndexCacheBytes is the index store's block cache. Default
	// DefaultIndexCacheBytes (64 MiB).
	IndexCacheBytes int64
}

// Options.Index values.
const (
	IndexDisk   = "disk"
	IndexMemory = "memory"
)

// DefaultItemCacheBytes is Options.ItemCacheBytes' default: 16 MiB a
// table.
const DefaultItemCacheBytes = 16 << 20

// CacheEntryOverhead is what each cached item counts towards
// Options.ItemCacheBytes beyond its size and its key's bytes: the map's
// entry and the item's header.
const CacheEntryOverhead = 128
