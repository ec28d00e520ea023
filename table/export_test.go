package table

import "testing"

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

// SetHolding replaces s's answer to "may this process still count its
// writes as the tables' holder" (nil: the lease's own answer).
func SetHolding(s *Service, holding func() bool) { s.holdingHook = holding }
