package table

import (
	"sync"
	"testing"
)

// DropTables does what the loss of the tables' lease does (Service.drop):
// the loaded tables are forgotten; the next call loads them again.
func DropTables(s *Service) { s.drop() }

// PauseBackfillAt pauses the first index build (a backfill, or a build at
// an open) of table tableName that reaches the item of key keyItem, before
// it reads the item, until release is called; reached is closed when one
// does (after the build checked that it may go on). Builds reaching
// the item later pass. The hook is removed at the
// test's end (release is called then too).
func PauseBackfillAt(t testing.TB, s *Service, tableName string, keyItem Item) (reached <-chan struct{}, release func()) {
	t.Helper()
	_, k := tableKey(t, s, tableName, keyItem, true)
	id := k.id()
	at := make(chan struct{})
	gate := make(chan struct{})
	var once, free sync.Once
	prev := beforeReindex.Load()
	h := func(tb *Table, k key) {
		if prev != nil {
			(*prev)(tb, k)
		}
		if tb.tableName != tableName || k.id() != id {
			return
		}
		first := false
		once.Do(func() { first = true })
		if first {
			close(at)
			<-gate
		}
	}
	beforeReindex.Store(&h)
	release = func() { free.Do(func() { close(gate) }) }
	t.Cleanup(release)
	t.Cleanup(func() { beforeReindex.Store(nil) })
	return at, release
}

// BackfillEnd is one backfill's end: its table, index and build error
// (nil: the index was made ACTIVE).
type BackfillEnd struct {
	Table, Index string
	Err          error
}

// OnBackfillEnd sends each backfill's end on the returned channel (room
// for 16), until the test ends.
func OnBackfillEnd(t testing.TB) <-chan BackfillEnd {
	ch := make(chan BackfillEnd, 16)
	h := func(table, index string, err error) { ch <- BackfillEnd{table, index, err} }
	afterBackfill.Store(&h)
	t.Cleanup(func() { afterBackfill.Store(nil) })
	return ch
}

// IsBuildStopped reports whether err is a build's answer when its table or
// index stopped being served (errBuildStopped).
func IsBuildStopped(err error) bool { return err == errBuildStopped }

// IndexBuiltMark reports whether the index store holds the built mark of
// index of table tableName (false too when the index is in the heap).
func IndexBuiltMark(t testing.TB, s *Service, tableName, index string) bool {
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
		return false
	}
	v, err := s.store.get(x.disk.prefix('z'))
	if err != nil {
		t.Fatal(err)
	}
	return v != nil
}
