package table

import (
	"context"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// HoldItems holds the items of keys as a TransactWriteItems in progress
// does (claimed, their stripes locked), until the returned release is
// called (tests of conflicts).
func HoldItems(t testing.TB, s *Service, tableName string, keys ...Item) (release func()) {
	t.Helper()
	tb, err := s.table(tableName)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(keys))
	for i, ki := range keys {
		k, err := tb.schema.keyOf(ki, true)
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = (&op{t: tb, k: k}).itemID()
	}
	if busy := s.held.claim(ids); busy != nil {
		t.Fatalf("items %v already held", busy)
	}
	ops := make([]*op, len(keys))
	for i, ki := range keys {
		k, _ := tb.schema.keyOf(ki, true)
		ops[i] = &op{t: tb, k: k}
	}
	unlock := lockItems(ops)
	return func() {
		s.held.release(ids)
		unlock()
	}
}

// IndexAs makes index's entry of item's key what it would be for item,
// whatever the table holds: the view of a reader that took the index's
// entries just before a write moved them.
func IndexAs(t testing.TB, s *Service, tableName, index string, item Item) {
	t.Helper()
	tb, k := tableKey(t, s, tableName, item, false)
	tb.index(index).put(k, item)
}

// tableKey returns the table and the key of item (keyOnly: item is the
// key and nothing else).
func tableKey(t testing.TB, s *Service, tableName string, item Item, keyOnly bool) (*Table, key) {
	t.Helper()
	tb, err := s.table(tableName)
	if err != nil {
		t.Fatal(err)
	}
	k, err := tb.schema.keyOf(item, keyOnly)
	if err != nil {
		t.Fatal(err)
	}
	return tb, k
}

// SetReplyLost makes every log append of the service's tables that
// JetStream acknowledges ask lost (nil: none): an error makes the
// writer see the append as failed although it landed.
func SetReplyLost(s *Service, lost func(table string) error) { s.replyLost = lost }

// SetCommitLost makes every transaction commit record JetStream
// acknowledges ask lost (nil: none), as SetReplyLost does for log
// appends; pause and within (when positive) set the resolvers' first
// pause and how long a commit is published again before its resolver
// takes over.
func SetCommitLost(s *Service, lost func() error, pause, within time.Duration) {
	s.commitLost, s.resolvePause, s.resolveWithin = lost, pause, within
}

// SetResolvePause sets the resolvers' first pause (0: a second).
func SetResolvePause(s *Service, pause time.Duration) { s.resolvePause = pause }

// WaitResolved makes the resolvers of writes of unknown outcome try at
// once, waits for them to end, and returns how many items are still held.
func WaitResolved(s *Service) int {
	s.wakeResolvers()
	s.resolving.Wait()
	return s.heldUnsure()
}

// ResolveOnce wakes the resolvers of writes of unknown outcome and waits
// until one of them has made an attempt (at most a minute).
func ResolveOnce(t testing.TB, s *Service) {
	t.Helper()
	before := s.resolveAttempts.Load()
	s.wakeResolvers()
	deadline := time.Now().Add(time.Minute)
	for s.resolveAttempts.Load() == before {
		if time.Now().After(deadline) {
			t.Fatal("no resolver attempt within a minute")
		}
		time.Sleep(time.Millisecond)
	}
}

// WaitBackfills waits for the GSI backfills running to end.
func WaitBackfills(s *Service) { s.backfills.Wait() }

// SetHolding replaces s's answer to "may this process still count its
// writes as the tables' holder" (nil: the lease's own answer).
func SetHolding(s *Service, holding func() bool) { s.holdingHook = holding }

// HoldLogWrite makes the table's group commit behave as if a log write
// of each lane given (none: every lane) were running: appends to those
// lanes queue behind them. queued is how many appends wait; release ends
// the "writes": the queued appends are written as the ending writes'
// goroutines write them (flushAppends).
func HoldLogWrite(t testing.TB, s *Service, tableName string, lanes ...int) (queued func() int, release func()) {
	t.Helper()
	tb, err := s.table(tableName)
	if err != nil {
		t.Fatal(err)
	}
	if len(lanes) == 0 {
		for l := range tb.gc {
			lanes = append(lanes, l)
		}
	}
	for _, l := range lanes {
		tb.gc[l].mu.Lock()
		tb.gc[l].inFlight++
		tb.gc[l].mu.Unlock()
	}
	queued = func() int {
		n := 0
		for _, l := range lanes {
			tb.gc[l].mu.Lock()
			n += len(tb.gc[l].queue)
			tb.gc[l].mu.Unlock()
		}
		return n
	}
	return queued, func() {
		for _, l := range lanes {
			tb.flushAppends(context.Background(), l, nil)
		}
	}
}

// LaneOf is the group-commit lane of the item with key keyItem.
func LaneOf(t testing.TB, s *Service, tableName string, keyItem Item) int {
	t.Helper()
	tb, k := tableKey(t, s, tableName, keyItem, true)
	return tb.laneOf(k)
}

// WriteIndexSnapshots writes the index snapshot of every loaded table
// changed since its last one, as the periodic writer does.
func WriteIndexSnapshots(t testing.TB, s *Service) {
	t.Helper()
	if err := s.writeSnapshots(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// OpenedFrom tells how the table's index was built when the tables were
// loaded: from its snapshot or from the whole log, and how many log
// records the open replayed.
func OpenedFrom(t testing.TB, s *Service, name string) (fromSnapshot bool, replayed int64) {
	t.Helper()
	tb, err := s.table(name)
	if err != nil {
		t.Fatal(err)
	}
	return tb.openedFromSnapshot, tb.replayed
}

// SnapshotBucket is the object store of the index snapshots.
const SnapshotBucket = snapBucket

// LastSnapshotPause is how long the last index snapshot held the writes.
func LastSnapshotPause(s *Service) time.Duration { return time.Duration(s.snapPause.Load()) }

// OpenTook is how long the table's index took to load at open.
func OpenTook(t testing.TB, s *Service, name string) time.Duration {
	t.Helper()
	tb, err := s.table(name)
	if err != nil {
		t.Fatal(err)
	}
	return tb.openTook
}

// ReadLate starts a read of keyItem's item that misses the cache: it
// looks the item's index entry up and reads the item from the log now,
// and returns what it read and the step such a read takes last, caching
// it, for the test to run after other writes (a reader descheduled
// between its log read and its cache store).
func ReadLate(t testing.TB, s *Service, tableName string, keyItem Item) (read Item, cache func()) {
	t.Helper()
	tb, k := tableKey(t, s, tableName, keyItem, true)
	e, ok := tb.lookup(k)
	if !ok {
		t.Fatalf("no item %v", keyItem)
	}
	tb.cacheMu.Lock()
	delete(tb.cache, k.id())
	tb.cacheMu.Unlock()
	it, err := tb.fetch(context.Background(), k, e)
	if err != nil {
		t.Fatal(err)
	}
	return it, func() { tb.remember(k.id(), e.shard, e.pos, it, e.size) }
}

// CachedItems is how many items the table's cache holds and what they
// count towards Options.ItemCacheBytes.
func CachedItems(t testing.TB, s *Service, tableName string) (items int, bytes int64) {
	t.Helper()
	tb, err := s.table(tableName)
	if err != nil {
		t.Fatal(err)
	}
	tb.cacheMu.Lock()
	defer tb.cacheMu.Unlock()
	return len(tb.cache), tb.cacheBytes
}

// PlantIndexHeader replaces the index store's header of table name with
// data (nil: deletes it), as a damaged or missing header would be.
func PlantIndexHeader(t testing.TB, s *Service, name string, data []byte) {
	t.Helper()
	tb, err := s.table(name)
	if err != nil {
		t.Fatal(err)
	}
	if s.store == nil {
		t.Fatal("the tables have no index store")
	}
	k := storeKey('h', tablePrefix(tb.st.TableId), 0)
	if data == nil {
		s.store.mu.RLock()
		err = s.store.db.Delete(k, pebble.NoSync)
		if err == nil {
			err = s.store.db.Flush()
		}
		s.store.mu.RUnlock()
	} else {
		err = s.store.set(k, data, true)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// IndexHeader returns the index store's header of table name (nil: none).
func IndexHeader(t testing.TB, s *Service, name string) []byte {
	t.Helper()
	tb, err := s.table(name)
	if err != nil {
		t.Fatal(err)
	}
	v, err := s.store.get(storeKey('h', tablePrefix(tb.st.TableId), 0))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// StoreKeys counts the index store's keys of the table with id tableID
// (items, count and header).
func StoreKeys(t testing.TB, s *Service, tableID string) int {
	t.Helper()
	if s.store == nil {
		t.Fatal("the tables have no index store")
	}
	s.store.mu.RLock()
	defer s.store.mu.RUnlock()
	n := 0
	tid := tablePrefix(tableID)
	for _, kind := range []byte{'i', 'c', 'h', 'x', 'w', 'y', 'z'} {
		n += countPrefix(t, s.store, storeKey(kind, tid, 0))
	}
	return n
}

// countPrefix counts the store's keys that begin with p; the caller holds
// st.mu for reading.
func countPrefix(t testing.TB, st *store, p []byte) int {
	it, err := st.db.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: prefixEnd(p)})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	return n
}

// StoredIndexKeys counts the forward and reverse keys the index store
// holds of index of table tableName; ok is false when the index is in
// the heap.
func StoredIndexKeys(t testing.TB, s *Service, tableName, index string) (fwd, rev int, ok bool) {
	t.Helper()
	tb, err := s.table(tableName)
	if err != nil {
		t.Fatal(err)
	}
	x := tb.index(index)
	if x == nil {
		t.Fatalf("table %s has no index %s", tableName, index)
	}
	if x.disk == nil {
		return 0, 0, false
	}
	s.store.mu.RLock()
	defer s.store.mu.RUnlock()
	return countPrefix(t, s.store, x.disk.prefix('x')), countPrefix(t, s.store, x.disk.prefix('w')), true
}

// IndexBuilds counts the secondary indexes the service has built from
// their table's items (at an open, a backfill).
func IndexBuilds(s *Service) int64 {
	return s.indexBuilds.Load()
}

// StoredSecondaryKeys counts the forward and reverse keys of every
// secondary index the index store holds for table tableName, of the
// indexes the table has and of any other.
func StoredSecondaryKeys(t testing.TB, s *Service, tableName string) int {
	t.Helper()
	dx := storedIndex(t, s, tableName)
	s.store.mu.RLock()
	defer s.store.mu.RUnlock()
	return countPrefix(t, s.store, storeKey('x', dx.tid, 0)) + countPrefix(t, s.store, storeKey('w', dx.tid, 0))
}

// EntriesWithoutImage counts the entries of table tableName in the index
// store that hold no image of their item.
func EntriesWithoutImage(t testing.TB, s *Service, tableName string) int {
	t.Helper()
	dx := storedIndex(t, s, tableName)
	n := 0
	dx.iterate(nil, true, func(_ entry, img []byte) bool {
		if len(img) == 0 {
			n++
		}
		return true
	})
	return n
}

// SetFillHook sets a function run before each chunk of images the fill
// from the log sets (fillImages), for every service of the process; nil
// removes it.
func SetFillHook(hook func()) { fillHook = hook }

// storedIndex is table tableName's index in the index store.
func storedIndex(t testing.TB, s *Service, tableName string) *diskIndex {
	t.Helper()
	tb, err := s.table(tableName)
	if err != nil {
		t.Fatal(err)
	}
	dx, ok := tb.idx.(*diskIndex)
	if !ok {
		t.Fatalf("table %s is not in the index store", tableName)
	}
	return dx
}

// BackgroundStopped reports whether the service's background work was
// told to stop (Close began).
func BackgroundStopped(s *Service) bool { return s.bg.Err() != nil }

// OnIndexWalkChunk makes walkIndex copy chunk entries at a time and call
// f after each chunk with whether a writer could take the table's index
// at that moment, until the test ends.
func OnIndexWalkChunk(t testing.TB, chunk int, f func(indexFree bool)) {
	old := indexWalkChunk
	indexWalkChunk = chunk
	afterWalkChunk = func(tb *Table) {
		free := tb.idxMu.TryLock()
		if free {
			tb.idxMu.Unlock()
		}
		f(free)
	}
	t.Cleanup(func() { indexWalkChunk, afterWalkChunk = old, nil })
}

// PartitionEntriesListed counts the entries table Queries have listed of
// their partitions (walkPartition), for every service of the process.
func PartitionEntriesListed() int64 { return partitionListed.Load() }

// SetQueryChunk makes a table Query list n entries of its partition per
// hold of the table's index lock, until the test ends.
func SetQueryChunk(t testing.TB, n int) {
	old := queryChunk
	queryChunk = n
	t.Cleanup(func() { queryChunk = old })
}
