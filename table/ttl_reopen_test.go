package table_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/table"
)

// The expiry a log record carries is computed under the TTL attribute of
// its time. When UpdateTimeToLive changes the attribute while the table
// holds items, an index built again from the log (or from a snapshot
// taken under the old attribute) must have its expiries recomputed from
// the items, or the TTL sweeper deletes the wrong items and misses the
// right ones after a restart.

// TestExpiriesSurviveARebuildFromTheLogAfterTTLWasEnabled: items written
// before TTL was enabled, then a crash before any snapshot: the open
// rebuilds from the whole log and still expires the item whose attribute
// is in the past.
func TestExpiriesSurviveARebuildFromTheLogAfterTTLWasEnabled(t *testing.T) {
	clock, rn, reopen := crashable(t, "sessions")
	now := clock.Now().Unix()
	putExpiring(t, rn.Tables, "sessions", "soon", "expires", now+60)
	putExpiring(t, rn.Tables, "sessions", "later", "expires", now+3600)
	if _, err := rn.Tables.UpdateTimeToLive(ctx, "sessions", table.TimeToLiveSpecification{AttributeName: "expires", Enabled: true}); err != nil {
		t.Fatal(err)
	}
	rn = reopen(rn)
	if from, _ := table.OpenedFrom(t, rn.Tables, "sessions"); from {
		t.Fatal("opened from a snapshot; this test needs a rebuild from the log")
	}
	clock.Advance(2 * time.Minute)
	if n, err := rn.Tables.SweepExpired(ctx); err != nil || n != 1 {
		t.Fatalf("SweepExpired = %d, %v; want 1 (the item expiring in a minute)", n, err)
	}
	if get(t, rn.Tables, "sessions", table.Item{"pk": S("soon")}) != nil || get(t, rn.Tables, "sessions", table.Item{"pk": S("later")}) == nil {
		t.Fatal("the wrong item expired")
	}
}

// TestExpiriesFollowATTLAttributeChangedAfterTheSnapshot: a snapshot
// taken while TTL used attribute "a", then TTL moved to attribute "b",
// then a crash: the open from the snapshot expires by "b", not by "a".
// Each change of the TTL setting waits out the hour DynamoDB requires
// between them (table.TTLChangeInterval); the items expire a minute after
// the last.
func TestExpiriesFollowATTLAttributeChangedAfterTheSnapshot(t *testing.T) {
	clock, rn, reopen := crashable(t, "sessions")
	now := clock.Now().Unix()
	exp := now + int64(2*table.TTLChangeInterval/time.Second) + 60
	putExpiring(t, rn.Tables, "sessions", "by-a", "a", exp)
	putExpiring(t, rn.Tables, "sessions", "by-b", "b", exp)
	ttl := func(attr string, on bool) {
		t.Helper()
		if _, err := rn.Tables.UpdateTimeToLive(ctx, "sessions", table.TimeToLiveSpecification{AttributeName: attr, Enabled: on}); err != nil {
			t.Fatal(err)
		}
	}
	ttl("a", true)
	table.WriteIndexSnapshots(t, rn.Tables)
	clock.Advance(table.TTLChangeInterval)
	ttl("a", false)
	clock.Advance(table.TTLChangeInterval)
	ttl("b", true)
	rn = reopen(rn)
	if from, _ := table.OpenedFrom(t, rn.Tables, "sessions"); !from {
		t.Fatal("not opened from the snapshot")
	}
	clock.Advance(2 * time.Minute)
	if n, err := rn.Tables.SweepExpired(ctx); err != nil || n != 1 {
		t.Fatalf("SweepExpired = %d, %v; want 1", n, err)
	}
	if get(t, rn.Tables, "sessions", table.Item{"pk": S("by-b")}) != nil || get(t, rn.Tables, "sessions", table.Item{"pk": S("by-a")}) == nil {
		t.Fatal("expired by the old attribute, not by the table's")
	}
}

func putExpiring(t *testing.T, tb *table.Service, name, pk, attr string, exp int64) {
	t.Helper()
	if _, err := tb.PutItem(ctx, table.PutItemInput{TableName: name, Item: table.Item{"pk": S(pk), attr: N(fmt.Sprint(exp))}}); err != nil {
		t.Fatal(err)
	}
}

// crashable starts a runnel on its own data directory and a fake clock,
// with table name (hash key "pk", stream on), for a test of what an open
// after a crash rebuilds; reopen crashes rn and opens the directory again.
// Embedded only (testenv.NeedsEmbedded): on a shared cluster the crashed
// process's lease outlives it and the reopened one does not serve the
// tables at once.
func crashable(t *testing.T, name string) (clock *clockwork.FakeClock, rn *runnel.Runnel, reopen func(*runnel.Runnel) *runnel.Runnel) {
	t.Helper()
	testenv.NeedsEmbedded(t, "a crash and reopen of the one process serving the tables, inspected in that process")
	dir := t.TempDir()
	clock = clockwork.NewFakeClockAt(time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC))
	rn = testenv.Start(t, testenv.Options{Dir: dir, Clock: clock})
	createTable(t, rn.Tables, name, "", table.ViewNewAndOldImages)
	return clock, rn, func(old *runnel.Runnel) *runnel.Runnel {
		old.Crash()
		return testenv.Start(t, testenv.Options{Dir: dir, Clock: clock})
	}
}
