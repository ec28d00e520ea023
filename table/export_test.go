package table

import (
	"context"
	"testing"
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
	tb, err := s.table(tableName)
	if err != nil {
		t.Fatal(err)
	}
	k, err := tb.schema.keyOf(item, false)
	if err != nil {
		t.Fatal(err)
	}
	tb.index(index).put(k, item)
}

// WaitBackfills waits for the GSI backfills running to end.
func WaitBackfills(s *Service) { s.backfills.Wait() }

// HoldLogWrite makes the table's group commit behave as if a log write
// of the table were running: appends queue behind it. queued is how many
// appends wait; release ends the "write": the queued appends are written
// as the ending write's goroutine writes them (flushAppends).
func HoldLogWrite(t testing.TB, s *Service, tableName string) (queued func() int, release func()) {
	t.Helper()
	tb, err := s.table(tableName)
	if err != nil {
		t.Fatal(err)
	}
	tb.gc.mu.Lock()
	tb.gc.inFlight++
	tb.gc.mu.Unlock()
	queued = func() int {
		tb.gc.mu.Lock()
		defer tb.gc.mu.Unlock()
		return len(tb.gc.queue)
	}
	return queued, func() { tb.flushAppends(context.Background()) }
}
