package table_test

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/table"
)

// storeProcess starts a runnel on the engine data directory dir whose
// embedded server listens (another process could serve the tables next),
// with its index store in its own directory store: as each node of a
// cluster keeps its own.
func storeProcess(t *testing.T, dir, store string, clock clockwork.Clock) *runnel.Runnel {
	t.Helper()
	return testenv.Start(t, testenv.Options{Dir: dir, Clock: clock, ListenAddr: "127.0.0.1:0",
		Tables: table.Options{Index: table.IndexDisk, IndexDir: store}})
}

// TestTheNextHolderFillsItsStoreFromTheSnapshotObject: a process whose
// tables are in its index store and whose engine others can reach writes
// the tables' snapshot objects too, so that a process serving them next
// with a store of its own (empty) fills it from the object and replays no
// log record, instead of reading the whole log; the first process,
// serving again, replays from its own store's header what the second
// wrote. The entries filled from the object get their items' images from
// the log in the background. Every state agrees with what was served
// before each hand-over.
func TestTheNextHolderFillsItsStoreFromTheSnapshotObject(t *testing.T) {
	dir := t.TempDir()
	storeA, storeB := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	clock := clockwork.NewFakeClockAt(time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC))
	rn := storeProcess(t, dir, storeA, clock)
	for _, tt := range snapTables {
		createTable(t, rn.Tables, tt.name, tt.rangeKey, table.ViewNewAndOldImages)
		for i := range 200 {
			snapPut(t, rn, tt.name, i, fmt.Sprint("v", i), 0)
		}
		for i := 0; i < 200; i += 7 {
			snapDelete(t, rn, tt.name, i)
		}
	}
	want := map[string]tableState{}
	for _, tt := range snapTables {
		want[tt.name] = stateOf(t, rn, tt.name)
	}
	rn.Close()

	rn = storeProcess(t, dir, storeB, clock)
	table.WaitBackfills(rn.Tables) // the images' fill
	for _, tt := range snapTables {
		if from, replayed := table.OpenedFrom(t, rn.Tables, tt.name); !from || replayed != 0 {
			t.Fatalf("%s: the next holder opened from a snapshot %v, replaying %d log records; want the object written at the hand-over, none", tt.name, from, replayed)
		}
		if n := table.EntriesWithoutImage(t, rn.Tables, tt.name); n != 0 {
			t.Errorf("%s: %d entries without their item's image after the fill", tt.name, n)
		}
		sameState(t, tt.name, stateOf(t, rn, tt.name), want[tt.name])
		for i := 1; i < 200; i += 3 {
			snapPut(t, rn, tt.name, i, fmt.Sprint("b", i), 0)
		}
		for i := 2; i < 200; i += 5 {
			snapDelete(t, rn, tt.name, i)
		}
		want[tt.name] = stateOf(t, rn, tt.name)
	}
	rn.Close()

	rn = storeProcess(t, dir, storeA, clock)
	for _, tt := range snapTables {
		if from, replayed := table.OpenedFrom(t, rn.Tables, tt.name); !from || replayed == 0 {
			t.Errorf("%s: the first holder again opened from its store's header %v, replaying %d log records; want the header and the second holder's changes", tt.name, from, replayed)
		}
		sameState(t, tt.name, stateOf(t, rn, tt.name), want[tt.name])
	}
	rn.Close()

	// A process with the heap's indexes (a CLI with --nats-url) reads the
	// same object.
	rn = testenv.Start(t, testenv.Options{Dir: dir, Clock: clock, ListenAddr: "127.0.0.1:0", Tables: table.Options{Index: table.IndexMemory}})
	defer rn.Close()
	for _, tt := range snapTables {
		if from, replayed := table.OpenedFrom(t, rn.Tables, tt.name); !from || replayed != 0 {
			t.Errorf("%s: a heap holder opened from a snapshot %v, replaying %d log records; want the object, none", tt.name, from, replayed)
		}
		sameState(t, tt.name, stateOf(t, rn, tt.name), want[tt.name])
	}
}

// TestAnIndexRedefinedByAnotherHolderIsBuiltAgain: the first holder's
// store holds GSI byOwner built, keyed by owner. The next holder (its own
// store) deletes byOwner and creates it again keyed by city, and writes
// on. When the first serves the table again, its store's byOwner is not
// taken for the new one (an index's keys in the store are those of its
// name and definition): the new byOwner is built from the items and holds
// the items with a city, and the old one's keys are cleared. The other
// indexes move on through the log's replay, as the table does.
func TestAnIndexRedefinedByAnotherHolderIsBuiltAgain(t *testing.T) {
	dir := t.TempDir()
	storeA, storeB := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	clock := clockwork.NewFakeClockAt(time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC))
	rng := rand.New(rand.NewPCG(7, 9))
	writes := func(rn *runnel.Runnel, n int) {
		t.Helper()
		for range n {
			if err := randomIndexedWrite(rn.Tables, rng, 15, 8); err != nil {
				t.Fatal(err)
			}
		}
	}
	rn := storeProcess(t, dir, storeA, clock)
	createIndexed(t, rn.Tables)
	writes(rn, 300)
	wantIndexesAgree(t, rn.Tables)
	rn.Close()

	rn = storeProcess(t, dir, storeB, clock)
	wantIndexesAgree(t, rn.Tables)
	if _, err := rn.Tables.UpdateGlobalSecondaryIndexes(ctx, "idx", nil, []table.GlobalSecondaryIndexUpdate{{Delete: &table.IndexRef{IndexName: "byOwner"}}}); err != nil {
		t.Fatal(err)
	}
	writes(rn, 50)
	if _, err := rn.Tables.UpdateGlobalSecondaryIndexes(ctx, "idx", nil, []table.GlobalSecondaryIndexUpdate{{Create: &table.SecondaryIndex{IndexName: "byOwner",
		KeySchema: []table.KeySchemaElement{{AttributeName: "city", KeyType: "HASH"}}, Projection: table.Projection{ProjectionType: "KEYS_ONLY"}}}}); err != nil {
		t.Fatal(err)
	}
	table.WaitBackfills(rn.Tables)
	writes(rn, 100)
	rn.Close()

	rn = storeProcess(t, dir, storeA, clock)
	defer rn.Close()
	if from, replayed := table.OpenedFrom(t, rn.Tables, "idx"); !from || replayed == 0 {
		t.Fatalf("the first holder again opened from its store's header %v, replaying %d log records; want both", from, replayed)
	}
	stored := 0
	for _, index := range []string{"byCity", "byTime"} {
		got, want := indexView(t, rn.Tables, index), expectedView(t, rn.Tables, index)
		if !maps.Equal(got, want) {
			t.Errorf("%s: %d entries disagree with the table's %d", index, len(got), len(want))
		}
		stored += 2 * len(want)
	}
	withCity, err := rn.Tables.Scan(ctx, table.ScanInput{ReadInput: table.ReadInput{TableName: "idx", FilterExpression: "attribute_exists(city)"}})
	if err != nil {
		t.Fatal(err)
	}
	byOwner := indexView(t, rn.Tables, "byOwner")
	if len(byOwner) != len(withCity.Items) {
		t.Fatalf("byOwner again: %d entries; want %d, the items with a city (the old byOwner held the items with an owner)", len(byOwner), len(withCity.Items))
	}
	for _, it := range withCity.Items {
		if _, ok := byOwner[it["pk"].String()+"/"+it["sk"].Number()]; !ok {
			t.Fatalf("byOwner again lacks %s", printItem(it))
		}
	}
	stored += 2 * len(byOwner)
	if got := table.StoredSecondaryKeys(t, rn.Tables, "idx"); got != stored {
		t.Errorf("the store holds %d forward and reverse keys of the table's indexes; the indexes hold %d (the old byOwner's keys left?)", got, stored)
	}
}

// TestAnObjectTakenDuringWritesFillsAStoreExactly: the store's snapshot
// objects are taken while four writers change a table with three indexes;
// after a crash, a process with an empty store of its own fills it from
// the last object and replays the log after it, and serves exactly the
// table the writers left, every index agreeing with it. An object is the
// store as of its positions: a write half in it would be lost or counted
// twice. Writers change the table again while the images are filled from
// the log (the fill waits after its first chunk until they have): an
// entry a writer moved keeps the writer's image, so a process reading
// the items from the log (the heap's index) serves the same table.
func TestAnObjectTakenDuringWritesFillsAStoreExactly(t *testing.T) {
	testenv.NeedsEmbedded(t, "a crash and reopen of the one process serving the tables")
	dir := t.TempDir()
	storeA, storeB := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	rn := storeProcess(t, dir, storeA, nil)
	createIndexed(t, rn.Tables)
	writeWhileSnapshotting(t, rn, 20, 10)
	putItem(t, rn.Tables, "idx", table.Item{"pk": S("after"), "sk": N("1"), "city": S("c9"), "score": N("1")})
	want := stateOf(t, rn, "idx")
	rn.Crash()

	chunks, rewritten := atomic.Int64{}, make(chan struct{})
	table.SetFillHook(func() {
		if chunks.Add(1) == 2 {
			<-rewritten
		}
	})
	defer table.SetFillHook(nil)
	rn = storeProcess(t, dir, storeB, nil)
	defer rn.Close()
	if from, replayed := table.OpenedFrom(t, rn.Tables, "idx"); !from || replayed == 0 {
		t.Fatalf("opened from a snapshot %v, %d log records replayed; want the object and a tail", from, replayed)
	}
	sameState(t, "idx", stateOf(t, rn, "idx"), want)
	wantIndexesAgree(t, rn.Tables)

	written, stop := startWriters(t, rn, 10)
	for written.Load() < 400 && !t.Failed() {
		runtime.Gosched()
	}
	stop()
	close(rewritten)
	table.WaitBackfills(rn.Tables)
	if chunks.Load() < 2 {
		t.Fatalf("the fill set %d chunks; want it stopped after its first while the writers wrote", chunks.Load())
	}
	if n := table.EntriesWithoutImage(t, rn.Tables, "idx"); n != 0 {
		t.Errorf("%d entries without their item's image after the fill", n)
	}
	want = stateOf(t, rn, "idx")
	wantIndexesAgree(t, rn.Tables)
	rn.Close()
	rn = testenv.Start(t, testenv.Options{Dir: dir, ListenAddr: "127.0.0.1:0", Tables: table.Options{Index: table.IndexMemory}})
	sameState(t, "idx", stateOf(t, rn, "idx"), want)
}

// TestAFillCutShortGoesOnAtTheNextOpen: the next holder's fill of the
// images is stopped by its close before it set any (the fill waits in
// its first chunk until the close has begun), after a write, so the
// close writes the store's header; the next open from that header goes
// on with the fill (the header names what it had left), and every entry
// has its image after it.
func TestAFillCutShortGoesOnAtTheNextOpen(t *testing.T) {
	dir := t.TempDir()
	storeA, storeB := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	rn := storeProcess(t, dir, storeA, nil)
	createTable(t, rn.Tables, "hashonly", "", table.ViewNewAndOldImages)
	for i := range 600 {
		snapPut(t, rn, "hashonly", i, fmt.Sprint("v", i), 0)
	}
	want := stateOf(t, rn, "hashonly")
	rn.Close()

	var once sync.Once
	closing := make(chan struct{})
	table.SetFillHook(func() { once.Do(func() { <-closing }) })
	defer table.SetFillHook(nil)
	rn = storeProcess(t, dir, storeB, nil)
	snapPut(t, rn, "hashonly", 1000, "after", 0)
	want = stateOf(t, rn, "hashonly")
	if n := table.EntriesWithoutImage(t, rn.Tables, "hashonly"); n == 0 {
		t.Fatal("every entry has its image before the fill; want the object's entries without")
	}
	done := make(chan struct{})
	go func() { rn.Close(); close(done) }()
	for !table.BackgroundStopped(rn.Tables) {
		runtime.Gosched()
	}
	close(closing)
	<-done
	table.SetFillHook(nil)

	rn = storeProcess(t, dir, storeB, nil)
	defer rn.Close()
	table.WaitBackfills(rn.Tables)
	if from, _ := table.OpenedFrom(t, rn.Tables, "hashonly"); !from {
		t.Fatal("not opened from the store's header")
	}
	if n := table.EntriesWithoutImage(t, rn.Tables, "hashonly"); n != 0 {
		t.Errorf("%d entries without their item's image after the second open's fill", n)
	}
	sameState(t, "hashonly", stateOf(t, rn, "hashonly"), want)
}
