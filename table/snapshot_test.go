package table_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/table"
)

// tableState is what a table serves: every item (by its JSON), the item
// count and size DescribeTable gives, and ChangeRecords.
type tableState struct {
	items         map[string]string
	count, size   int64
	changeRecords int64
}

func stateOf(t *testing.T, rn *runnel.Runnel, name string) tableState {
	t.Helper()
	st := tableState{items: map[string]string{}}
	var start table.Item
	for {
		out, err := rn.Tables.Scan(ctx, table.ScanInput{ReadInput: table.ReadInput{TableName: name, ExclusiveStartKey: start}})
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range out.Items {
			key := table.Item{"pk": it["pk"]}
			for _, a := range []string{"n", "sk"} {
				if v, ok := it[a]; ok {
					key[a] = v
				}
			}
			k, _ := json.Marshal(key)
			v, _ := json.Marshal(it)
			st.items[string(k)] = string(v)
		}
		if start = out.LastEvaluatedKey; start == nil {
			break
		}
	}
	d, err := rn.Tables.DescribeTable(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	st.count, st.size = d.ItemCount, d.TableSizeBytes
	tb, err := rn.Tables.Table(name)
	if err != nil {
		t.Fatal(err)
	}
	st.changeRecords = tb.ChangeRecords()
	return st
}

func sameState(t *testing.T, name string, got, want tableState) {
	t.Helper()
	if got.count != want.count || got.size != want.size || got.changeRecords != want.changeRecords {
		t.Errorf("%s: items %d, bytes %d, change records %d; want %d, %d, %d", name, got.count, got.size, got.changeRecords, want.count, want.size, want.changeRecords)
	}
	if !maps.Equal(got.items, want.items) {
		var diff []string
		for k, v := range want.items {
			if got.items[k] != v {
				diff = append(diff, "want "+v+" got "+got.items[k])
			}
		}
		for k, v := range got.items {
			if _, ok := want.items[k]; !ok {
				diff = append(diff, "extra "+v)
			}
		}
		sort.Strings(diff)
		t.Errorf("%s: %d items differ, e.g. %v", name, len(diff), diff[:min(len(diff), 3)])
	}
}

// snapTables are the tables of these tests: one keyed by a partition key
// alone (TTL on "expires"), one with a sort key "n".
var snapTables = []struct{ name, rangeKey string }{{"hashonly", ""}, {"ranged", "n"}}

func snapKey(tableName string, i int) table.Item {
	if tableName == "ranged" {
		return table.Item{"pk": S(fmt.Sprint("p", i%7)), "n": N(fmt.Sprint(i))}
	}
	return table.Item{"pk": S(fmt.Sprint("k", i))}
}

func snapPut(t *testing.T, rn *runnel.Runnel, tableName string, i int, v string, expires int64) {
	t.Helper()
	it := snapKey(tableName, i)
	it["v"] = S(v)
	if expires != 0 {
		it["expires"] = N(fmt.Sprint(expires))
	}
	if _, err := rn.Tables.PutItem(ctx, table.PutItemInput{TableName: tableName, Item: it}); err != nil {
		t.Fatal(err)
	}
}

func snapDelete(t *testing.T, rn *runnel.Runnel, tableName string, i int) {
	t.Helper()
	if _, err := rn.Tables.DeleteItem(ctx, table.DeleteItemInput{TableName: tableName, Key: snapKey(tableName, i)}); err != nil {
		t.Fatal(err)
	}
}

// startSnapTables starts a runnel on dir with both tables, TTL on.
func startSnapTables(t *testing.T, dir string, clock clockwork.Clock, opts ...table.Options) *runnel.Runnel {
	t.Helper()
	o := testenv.Options{Dir: dir, Clock: clock}
	if len(opts) > 0 {
		o.Tables = opts[0]
	}
	rn := testenv.Start(t, o)
	for _, tt := range snapTables {
		createTable(t, rn.Tables, tt.name, tt.rangeKey, table.ViewNewAndOldImages)
		if _, err := rn.Tables.UpdateTimeToLive(ctx, tt.name, table.TimeToLiveSpecification{AttributeName: "expires", Enabled: true}); err != nil {
			t.Fatal(err)
		}
	}
	return rn
}

// TestReopenAfterCloseReadsTheSnapshot: a clean close writes each
// table's index snapshot; the next open reads it and replays no log
// record, and serves every item, the item count and size, ChangeRecords
// and the TTL expiries as before.
func TestReopenAfterCloseReadsTheSnapshot(t *testing.T) {
	dir := t.TempDir()
	clock := clockwork.NewFakeClockAt(time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC))
	rn := startSnapTables(t, dir, clock)
	now := clock.Now().Unix()
	for _, tt := range snapTables {
		for i := range 300 {
			exp := int64(0)
			if i%10 == 0 {
				exp = now + 60 // expires in a minute
			} else if i%10 == 1 {
				exp = now + 3600
			}
			snapPut(t, rn, tt.name, i, fmt.Sprint("v", i), exp)
		}
		for i := 0; i < 300; i += 3 {
			snapPut(t, rn, tt.name, i, fmt.Sprint("w", i), 0) // i%30 == 0: no longer expires
		}
		for i := 1; i < 300; i += 5 {
			snapDelete(t, rn, tt.name, i)
		}
	}
	want := map[string]tableState{}
	for _, tt := range snapTables {
		want[tt.name] = stateOf(t, rn, tt.name)
	}
	rn.Close()

	rn = testenv.Start(t, testenv.Options{Dir: dir, Clock: clock})
	for _, tt := range snapTables {
		if from, replayed := table.OpenedFrom(t, rn.Tables, tt.name); !from || replayed != 0 {
			t.Fatalf("%s: opened from a snapshot %v, %d log records replayed; want the snapshot and none", tt.name, from, replayed)
		}
		sameState(t, tt.name, stateOf(t, rn, tt.name), want[tt.name])
	}
	out, err := rn.Tables.Query(ctx, table.QueryInput{ReadInput: table.ReadInput{
		TableName:                 "ranged",
		ExpressionAttributeValues: table.Item{":p": S("p3"), ":a": N("0"), ":b": N("100")},
	}, KeyConditionExpression: "pk = :p AND n BETWEEN :a AND :b",
	})
	if err != nil || out.Count != 12 { // n = 3, 10, 17, ... 94 with n%7 == 3, minus n%5 == 1 (31, 66)
		t.Fatalf("Query after reopen: %d items, %v", out.Count, err)
	}
	// i%10 == 0 and i%3 != 0 still expire in a minute: i = 10, 20, 40, 50, 70, 80, ... (20 of 30).
	clock.Advance(2 * time.Minute)
	if n, err := rn.Tables.SweepExpired(ctx); err != nil || n != 40 {
		t.Fatalf("SweepExpired = %d, %v; want 40 items expired (20 per table)", n, err)
	}
}

// TestCrashReplaysOnlyTheTail: writes acknowledged after the last
// snapshot, then a crash (no snapshot at close): the open reads the
// snapshot and replays only the records after it, and serves every
// acknowledged write, no deleted item, and ChangeRecords counting both.
// A transaction applied before the snapshot is not applied again.
func TestCrashReplaysOnlyTheTail(t *testing.T) {
	testenv.NeedsEmbedded(t, "a crash and reopen of the one process serving the tables, inspected in that process: on a shared cluster the crashed process's lease outlives it and the reopened one does not serve the tables at once")
	dir := t.TempDir()
	clock := clockwork.NewFakeClockAt(time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC))
	rn := startSnapTables(t, dir, clock)
	for _, tt := range snapTables {
		for i := range 200 {
			snapPut(t, rn, tt.name, i, "before", 0)
		}
	}
	// A transaction, then a later write of the same item, both before
	// the snapshot: the open must not complete the transaction again.
	if err := rn.Tables.TransactWriteItems(ctx, table.TransactWriteItemsInput{TransactItems: []table.TransactWriteItem{
		{Put: &table.TransactPut{TableName: "hashonly", Item: table.Item{"pk": S("k0"), "v": S("txn")}}},
		{Put: &table.TransactPut{TableName: "ranged", Item: table.Item{"pk": S("p0"), "n": N("0"), "v": S("txn")}}},
	}}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range snapTables {
		snapPut(t, rn, tt.name, 0, "after-txn", 0)
	}
	table.WriteIndexSnapshots(t, rn.Tables)
	tail := 0
	for _, tt := range snapTables {
		for i := 200; i < 250; i++ { // new items
			snapPut(t, rn, tt.name, i, "tail", 0)
			tail++
		}
		for i := 10; i < 30; i++ { // replaced
			snapPut(t, rn, tt.name, i, "tail", 0)
			tail++
		}
		for i := 100; i < 130; i++ { // deleted
			snapDelete(t, rn, tt.name, i)
			tail++
		}
	}
	if err := rn.Tables.TransactWriteItems(ctx, table.TransactWriteItemsInput{TransactItems: []table.TransactWriteItem{
		{Put: &table.TransactPut{TableName: "hashonly", Item: table.Item{"pk": S("k1"), "v": S("tail-txn")}}},
		{Delete: &table.TransactDelete{TableName: "ranged", Key: snapKey("ranged", 1)}},
	}}); err != nil {
		t.Fatal(err)
	}
	tail += 2
	want := map[string]tableState{}
	for _, tt := range snapTables {
		want[tt.name] = stateOf(t, rn, tt.name)
	}
	rn.Crash()

	rn = testenv.Start(t, testenv.Options{Dir: dir, Clock: clock})
	replayed := int64(0)
	for _, tt := range snapTables {
		from, n := table.OpenedFrom(t, rn.Tables, tt.name)
		if !from {
			t.Fatalf("%s: not opened from its snapshot", tt.name)
		}
		replayed += n
		sameState(t, tt.name, stateOf(t, rn, tt.name), want[tt.name])
		if v := get(t, rn.Tables, tt.name, snapKey(tt.name, 0))["v"].String(); v != "after-txn" {
			t.Errorf("%s: item 0 = %q after reopen; want the write after the transaction", tt.name, v)
		}
		if it := get(t, rn.Tables, tt.name, snapKey(tt.name, 120)); it != nil {
			t.Errorf("%s: deleted item back: %v", tt.name, it)
		}
	}
	if replayed != int64(tail) {
		t.Fatalf("the open replayed %d log records; want the %d written after the snapshot", replayed, tail)
	}
}

// plantSnapshot replaces the stored snapshot of tableName with data.
func plantSnapshot(t *testing.T, rn *runnel.Runnel, tableName string, data []byte) {
	t.Helper()
	os, err := rn.Engine.JS.ObjectStore(ctx, table.SnapshotBucket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.PutBytes(ctx, tableName, data); err != nil {
		t.Fatal(err)
	}
}

func storedSnapshot(t *testing.T, rn *runnel.Runnel, tableName string) []byte {
	t.Helper()
	os, err := rn.Engine.JS.ObjectStore(ctx, table.SnapshotBucket)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.GetBytes(ctx, tableName)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestUnusableSnapshotFallsBackToTheWholeLog: a snapshot that is cut
// short, has a changed byte, is not a snapshot, or is of an earlier table
// of the same name (deleted and created again) is not used: the open
// reads the whole log and serves exactly what it holds.
func TestUnusableSnapshotFallsBackToTheWholeLog(t *testing.T) {
	testenv.NeedsEmbedded(t, "a crash and reopen of the one process serving the tables, inspected in that process: on a shared cluster the crashed process's lease outlives it and the reopened one does not serve the tables at once")
	cases := map[string]func(good, old []byte) []byte{
		"cut short":        func(good, _ []byte) []byte { return good[:len(good)/2] },
		"a changed byte":   func(good, _ []byte) []byte { b := append([]byte{}, good...); b[len(b)-40] ^= 1; return b },
		"not a snapshot":   func(_, _ []byte) []byte { return []byte("hello") },
		"of another table": func(_, old []byte) []byte { return old },
	}
	for name, spoil := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			// The object store's snapshots are the heap index's.
			rn := startSnapTables(t, dir, clockwork.NewRealClock(), table.Options{Index: table.IndexMemory})
			for _, tt := range snapTables {
				for i := range 100 {
					snapPut(t, rn, tt.name, i, "old", 0)
				}
			}
			table.WriteIndexSnapshots(t, rn.Tables)
			old := map[string][]byte{}
			for _, tt := range snapTables {
				old[tt.name] = storedSnapshot(t, rn, tt.name)
				if _, err := rn.Tables.DeleteTable(ctx, tt.name); err != nil {
					t.Fatal(err)
				}
				createTable(t, rn.Tables, tt.name, tt.rangeKey, "")
				for i := 50; i < 120; i++ {
					snapPut(t, rn, tt.name, i, "new", 0)
				}
			}
			table.WriteIndexSnapshots(t, rn.Tables)
			want := map[string]tableState{}
			for _, tt := range snapTables {
				want[tt.name] = stateOf(t, rn, tt.name)
				plantSnapshot(t, rn, tt.name, spoil(storedSnapshot(t, rn, tt.name), old[tt.name]))
			}
			rn.Crash()

			rn = testenv.Start(t, testenv.Options{Dir: dir, Tables: table.Options{Index: table.IndexMemory}})
			for _, tt := range snapTables {
				if from, _ := table.OpenedFrom(t, rn.Tables, tt.name); from {
					t.Fatalf("%s: opened from a snapshot that is %s", tt.name, name)
				}
				sameState(t, tt.name, stateOf(t, rn, tt.name), want[tt.name])
				if it := get(t, rn.Tables, tt.name, snapKey(tt.name, 10)); it != nil {
					t.Errorf("%s: an item of the deleted table is served: %v", tt.name, it)
				}
			}
		})
	}
}

// TestCommitAfterTheSnapshotCompletesOnOpen: a transaction committed
// after the table's last snapshot whose changes never reached the log (a
// stop between the commit point and the writes) is completed when the
// table opens from that snapshot.
func TestCommitAfterTheSnapshotCompletesOnOpen(t *testing.T) {
	testenv.NeedsEmbedded(t, "a crash and reopen of the one process serving the tables, inspected in that process: on a shared cluster the crashed process's lease outlives it and the reopened one does not serve the tables at once")
	dir := t.TempDir()
	clock := clockwork.NewFakeClockAt(time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC))
	rn := startTTLTable(t, dir, clock)
	if _, err := rn.Tables.PutItem(ctx, table.PutItemInput{TableName: "sessions", Item: table.Item{"pk": S("b")}}); err != nil {
		t.Fatal(err)
	}
	table.WriteIndexSnapshots(t, rn.Tables)
	publishLostCommit(t, rn, "sessions", table.Item{"pk": S("a"), "v": S("committed")}, clock.Now())
	rn.Crash()

	rn = testenv.Start(t, testenv.Options{Dir: dir, Clock: clock})
	if from, _ := table.OpenedFrom(t, rn.Tables, "sessions"); !from {
		t.Fatal("not opened from the snapshot")
	}
	if it := get(t, rn.Tables, "sessions", table.Item{"pk": S("a")}); it == nil || it["v"].String() != "committed" {
		t.Fatalf("the transaction committed after the snapshot was not completed: %v", it)
	}
	if get(t, rn.Tables, "sessions", table.Item{"pk": S("b")}) == nil {
		t.Fatal("the item in the snapshot is gone")
	}
}

// startWriters starts four writers of random changes to table idx
// (randomIndexedWrite, seeds seed to seed+3); stop stops them and waits.
func startWriters(t *testing.T, rn *runnel.Runnel, seed uint64) (written *atomic.Int64, stop func()) {
	var halt atomic.Bool
	var wg sync.WaitGroup
	written = new(atomic.Int64)
	for w := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed+uint64(w), 12))
			for !halt.Load() {
				if err := randomIndexedWrite(rn.Tables, rng, 50, 20); err != nil {
					t.Error(err)
					return
				}
				written.Add(1)
			}
		})
	}
	return written, func() { halt.Store(true); wg.Wait() }
}

// writeWhileSnapshotting takes index snapshots while four writers change
// table idx (startWriters), at least snaps of them and until the writers
// made 1000 changes, then stops the writers.
func writeWhileSnapshotting(t *testing.T, rn *runnel.Runnel, seed uint64, snaps int) {
	t.Helper()
	written, stop := startWriters(t, rn, seed)
	for n := 0; n < snaps || written.Load() < 1000; n++ {
		table.WriteIndexSnapshots(t, rn.Tables)
	}
	stop()
}

// TestSnapshotsTakenDuringWrites: snapshots taken while four writers
// put, update and delete items of a table with secondary indexes, then
// more writes, then a crash: the open from the last snapshot serves
// exactly what the table served, and every index agrees with the table
// (the indexes are built from the table at open).
func TestSnapshotsTakenDuringWrites(t *testing.T) {
	testenv.NeedsEmbedded(t, "a crash and reopen of the one process serving the tables, inspected in that process: on a shared cluster the crashed process's lease outlives it and the reopened one does not serve the tables at once")
	dir := t.TempDir()
	rn := testenv.Start(t, testenv.Options{Dir: dir})
	createIndexed(t, rn.Tables)
	writeWhileSnapshotting(t, rn, 0, 20)
	putItem(t, rn.Tables, "idx", table.Item{"pk": S("after"), "sk": N("1"), "city": S("c9"), "score": N("1")})
	want := stateOf(t, rn, "idx")
	rn.Crash()

	rn = testenv.Start(t, testenv.Options{Dir: dir})
	if from, replayed := table.OpenedFrom(t, rn.Tables, "idx"); !from || replayed == 0 {
		t.Fatalf("opened from a snapshot %v, %d log records replayed; want the snapshot and a tail", from, replayed)
	}
	sameState(t, "idx", stateOf(t, rn, "idx"), want)
	for _, index := range []string{"byCity", "byOwner", "byTime"} {
		if got, want := indexView(t, rn.Tables, index), expectedView(t, rn.Tables, index); !maps.Equal(got, want) {
			t.Fatalf("%s: %d entries, the table says %d", index, len(got), len(want))
		}
	}
}

// TestSnapshotEveryInterval: while serving, a table that changed gets a
// snapshot every SnapshotInterval of its SnapshotClock, without a close:
// after a crash the open reads it.
func TestSnapshotEveryInterval(t *testing.T) {
	testenv.NeedsEmbedded(t, "a crash and reopen of the one process serving the tables, inspected in that process: on a shared cluster the crashed process's lease outlives it and the reopened one does not serve the tables at once")
	dir := t.TempDir()
	clock := clockwork.NewFakeClockAt(time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC))
	opts := testenv.Options{Dir: dir, Clock: clock, Tables: table.Options{SnapshotInterval: time.Minute, SnapshotClock: clock, Index: table.IndexMemory}}
	rn := testenv.Start(t, opts)
	createTable(t, rn.Tables, "hashonly", "", "")
	for i := range 50 {
		snapPut(t, rn, "hashonly", i, "v", 0)
	}
	store, err := rn.Engine.JS.ObjectStore(ctx, table.SnapshotBucket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.GetInfo(ctx, "hashonly"); err == nil {
		t.Fatal("a snapshot before the interval passed")
	}
	// The writer's ticker may start after an advance: advance until it fires.
	testenv.Eventually(t, 20*time.Second, "a snapshot after the interval", func() bool {
		clock.Advance(time.Minute)
		_, err := store.GetInfo(ctx, "hashonly")
		return err == nil
	})
	want := stateOf(t, rn, "hashonly")
	rn.Crash()

	rn = testenv.Start(t, opts)
	if from, replayed := table.OpenedFrom(t, rn.Tables, "hashonly"); !from || replayed != 0 {
		t.Fatalf("opened from a snapshot %v, %d log records replayed; want the periodic snapshot and none", from, replayed)
	}
	sameState(t, "hashonly", stateOf(t, rn, "hashonly"), want)
}
