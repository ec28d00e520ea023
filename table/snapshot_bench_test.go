package table_test

import (
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/internal/procstat"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/table"
)

// TestMeasureOpenFromSnapshot measures what an open costs with and
// without an index snapshot (docs/benchmarks/tables.md, "Session 8: table open from an index snapshot"): it builds a
// table of RUNNEL_SNAPSHOT_BENCH_ITEMS items (BatchWriteItem in-process,
// hash key only, as the trades demo's state table), closes (writing the
// snapshot), then times a start of the engine and tables plus the first
// GetItem, from the snapshot and then from the whole log (snapshots
// off). Skipped unless the variable is set; it reports, asserts no time.
func TestMeasureOpenFromSnapshot(t *testing.T) {
	n := measureItems(t, "RUNNEL_SNAPSHOT_BENCH_ITEMS", "2000000")
	dir := t.TempDir()
	rn := testenv.Start(t, testenv.Options{Dir: dir})
	createTable(t, rn.Tables, "state", "", table.ViewNewAndOldImages)
	start := time.Now()
	buildState(t, rn, n)
	t.Logf("built %d items in %v", n, time.Since(start).Round(time.Millisecond))
	for round := range 3 { // the first right after the build, then after a few more writes
		if round > 0 {
			for i := range 1000 {
				if _, err := rn.Tables.PutItem(ctx, table.PutItemInput{TableName: "state", Item: benchItem(int64(n + round*1000 + i))}); err != nil {
					t.Fatal(err)
				}
			}
		}
		start = time.Now()
		table.WriteIndexSnapshots(t, rn.Tables)
		t.Logf("snapshot %d: writes paused %v, written in %v", round+1, table.LastSnapshotPause(rn.Tables).Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	}
	if info, err := rn.Engine.JS.ObjectStore(ctx, table.SnapshotBucket); err == nil {
		if o, err := info.GetInfo(ctx, "state"); err == nil {
			t.Logf("snapshot object: %.1f MB", float64(o.Size)/1e6)
		}
	}
	rn.Close()

	for _, c := range []struct {
		what  string
		every time.Duration
	}{{"from the snapshot", 0}, {"from the whole log", -1}, {"from the snapshot again", 0}} {
		rn := timedOpen(t, "open "+c.what, dir, n, table.Options{SnapshotInterval: c.every})
		rn.Close()
	}
}

// timedOpen starts the engine and tables on dir and logs, as what, how
// long the start and the first GetItem (of item n/2) took, how the table
// opened and the Go heap after it.
func timedOpen(t *testing.T, what, dir string, n int, opts table.Options) *runnel.Runnel {
	t.Helper()
	runtime.GC()
	start := time.Now()
	rn := testenv.Start(t, testenv.Options{Dir: dir, Tables: opts})
	if get(t, rn.Tables, "state", table.Item{"pk": benchItem(int64(n / 2))["pk"]}) == nil {
		t.Fatal("item missing")
	}
	took := time.Since(start)
	from, replayed := table.OpenedFrom(t, rn.Tables, "state")
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	t.Logf("%s: start + first GetItem %v, of which the index %v (from its snapshot %v, %d log records replayed; heap %.0f MiB)",
		what, took.Round(time.Millisecond), table.OpenTook(t, rn.Tables, "state").Round(time.Millisecond), from, replayed, float64(ms.HeapAlloc)/(1<<20))
	return rn
}

// buildState puts items 0..n-1 (benchItem) into the table "state" with
// BatchWriteItem, 8 callers of 25 items a call.
func buildState(t *testing.T, rn *runnel.Runnel, n int) {
	t.Helper()
	const workers = 8
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w * 25; i < n; i += workers * 25 {
				reqs := make([]table.WriteRequest, 0, 25)
				for j := i; j < min(i+25, n); j++ {
					reqs = append(reqs, table.WriteRequest{PutRequest: &table.PutRequest{Item: benchItem(int64(j))}})
				}
				in := table.BatchWriteItemInput{RequestItems: map[string][]table.WriteRequest{"state": reqs}}
				for len(in.RequestItems) > 0 {
					out, err := rn.Tables.BatchWriteItem(ctx, in)
					if err != nil {
						t.Error(err)
						return
					}
					in.RequestItems = out.UnprocessedItems
				}
			}
		})
	}
	wg.Wait()
}

// TestMeasureTableAtScale measures issue 12's table targets in process:
// it builds a table of RUNNEL_TABLE_BENCH_ITEMS items (BatchWriteItem, 8
// callers, hash key only, as the trades demo's state table) in
// RUNNEL_TABLE_BENCH_DIR (kept; a temporary directory if unset; an
// existing table there is reused), closes, then times a start of the
// engine and tables plus the first GetItem, and a full Scan (1 MB pages,
// one caller), with the index where RUNNEL_TABLE_INDEX says (default:
// the index store). Skipped unless the count is set; it reports, asserts
// no time.
func TestMeasureTableAtScale(t *testing.T) {
	n := measureItems(t, "RUNNEL_TABLE_BENCH_ITEMS", "10000000")
	dir := os.Getenv("RUNNEL_TABLE_BENCH_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	rn := testenv.Start(t, testenv.Options{Dir: dir})
	if _, err := rn.Tables.DescribeTable(ctx, "state"); err != nil {
		createTable(t, rn.Tables, "state", "", table.ViewNewAndOldImages)
		start := time.Now()
		buildState(t, rn, n)
		took := time.Since(start)
		t.Logf("built %d items in %v: %.0f items/s; peak RSS %.0f MiB", n, took.Round(time.Millisecond), float64(n)/took.Seconds(), procstat.PeakRSSMiB())
	}
	rn.Close()

	rn = timedOpen(t, "open", dir, n, table.Options{})

	timedScan(t, rn, "scan", n)
}

// timedScan reads the whole table "state" with Scan (1 MB pages, one
// caller) and logs the rate and the memory after it; it fails when fewer
// than n items came.
func timedScan(t *testing.T, rn *runnel.Runnel, what string, n int) {
	t.Helper()
	start := time.Now()
	items, pages := 0, 0
	var from2 table.Item
	for {
		out, err := rn.Tables.Scan(ctx, table.ScanInput{ReadInput: table.ReadInput{TableName: "state", ExclusiveStartKey: from2}})
		if err != nil {
			t.Fatal(err)
		}
		items += len(out.Items)
		pages++
		if out.LastEvaluatedKey == nil {
			break
		}
		from2 = out.LastEvaluatedKey
	}
	took := time.Since(start)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	t.Logf("%s: %d items in %d pages, %v: %.0f items/s (heap %.0f MiB, peak RSS %.0f MiB)", what, items, pages, took.Round(time.Millisecond), float64(items)/took.Seconds(),
		float64(ms.HeapAlloc)/(1<<20), procstat.PeakRSSMiB())
	if items < n {
		t.Fatalf("%s read %d items, want at least %d", what, items, n)
	}
}

// TestMeasureHandOverAtScale measures a cluster's hand-over of a table
// of RUNNEL_HANDOVER_BENCH_ITEMS items (buildState) held in the index
// store by a process that others can reach (so its close writes the
// snapshot object too): the next process starts with an empty store of
// its own, then with the heap's indexes, and each logs its start plus the
// first GetItem, the Go heap, and a full Scan (the store's after its
// images are filled from the log: fillImages); RUNNEL_HANDOVER_BENCH_HEAP=0
// leaves the heap's out (its Scan reads every item from the log). Skipped
// unless the count is set; it reports, asserts no time.
//
// RUNNEL_HANDOVER_BENCH_DIR keeps the engine's directory there, built
// once for a count (a file "built-<n>" marks it) and reused by later
// runs, which then measure only the hand-overs; RUNNEL_HANDOVER_BENCH_CPUPROFILE
// writes a CPU profile of the first hand-over's start and first GetItem;
// RUNNEL_HANDOVER_BENCH_FILL=0 ends the run after that first GetItem
// (no image fill, no Scan).
func TestMeasureHandOverAtScale(t *testing.T) {
	n := measureItems(t, "RUNNEL_HANDOVER_BENCH_ITEMS", "1000000")
	dir := os.Getenv("RUNNEL_HANDOVER_BENCH_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	store := func() table.Options { return table.Options{Index: table.IndexDisk, IndexDir: t.TempDir()} }
	built := filepath.Join(dir, "built-"+strconv.Itoa(n))
	if _, err := os.Stat(built); err != nil {
		rn := testenv.Start(t, testenv.Options{Dir: dir, ListenAddr: "127.0.0.1:0", Tables: store()})
		createTable(t, rn.Tables, "state", "", table.ViewNewAndOldImages)
		start := time.Now()
		buildState(t, rn, n)
		t.Logf("built %d items in %v; peak RSS %.0f MiB", n, time.Since(start).Round(time.Millisecond), procstat.PeakRSSMiB())
		start = time.Now()
		rn.Close()
		t.Logf("close (header and object): %v", time.Since(start).Round(time.Millisecond))
		if err := os.WriteFile(built, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	var prof *os.File
	if f := os.Getenv("RUNNEL_HANDOVER_BENCH_CPUPROFILE"); f != "" {
		var err error
		if prof, err = os.Create(f); err != nil {
			t.Fatal(err)
		}
		if err := pprof.StartCPUProfile(prof); err != nil {
			t.Fatal(err)
		}
	}
	rn := timedOpen(t, "next holder, empty store", dir, n, store())
	if prof != nil {
		pprof.StopCPUProfile()
		if err := prof.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if os.Getenv("RUNNEL_HANDOVER_BENCH_FILL") == "0" {
		rn.Close()
		return
	}
	start := time.Now()
	table.WaitBackfills(rn.Tables)
	t.Logf("the images filled from the log %v after the first GetItem; peak RSS %.0f MiB", time.Since(start).Round(time.Millisecond), procstat.PeakRSSMiB())
	timedScan(t, rn, "scan, store filled from the object and the log", n)
	rn.Close()
	if os.Getenv("RUNNEL_HANDOVER_BENCH_HEAP") == "0" {
		return
	}
	rn = timedOpen(t, "next holder, heap", dir, n, table.Options{Index: table.IndexMemory})
	timedScan(t, rn, "scan, heap", n)
}

// TestMeasureIndexedTableAtScale measures a table with a GSI at scale: it
// builds RUNNEL_GSI_BENCH_ITEMS items (benchItem, as
// TestMeasureTableAtScale) into a table whose GSI byData (data, v;
// KEYS_ONLY) holds every item in one partition, closes, then times a
// start plus the first Query of the index (10 items) and logs the Go
// heap after it, with the index where RUNNEL_TABLE_INDEX says (default:
// the index store). Skipped unless the count is set; it reports, asserts
// no time.
func TestMeasureIndexedTableAtScale(t *testing.T) {
	n := measureItems(t, "RUNNEL_GSI_BENCH_ITEMS", "1000000")
	dir := t.TempDir()
	rn := testenv.Start(t, testenv.Options{Dir: dir})
	if _, err := rn.Tables.CreateTable(ctx, table.CreateTableInput{TableName: "state",
		KeySchema:            []table.KeySchemaElement{{AttributeName: "pk", KeyType: "HASH"}},
		AttributeDefinitions: []table.AttributeDefinition{{AttributeName: "pk", AttributeType: "S"}, {AttributeName: "data", AttributeType: "S"}, {AttributeName: "v", AttributeType: "N"}},
		GlobalSecondaryIndexes: []table.SecondaryIndex{{IndexName: "byData", Projection: table.Projection{ProjectionType: "KEYS_ONLY"},
			KeySchema: []table.KeySchemaElement{{AttributeName: "data", KeyType: "HASH"}, {AttributeName: "v", KeyType: "RANGE"}}}},
	}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	buildState(t, rn, n)
	took := time.Since(start)
	t.Logf("built %d items in %v: %.0f items/s; peak RSS %.0f MiB", n, took.Round(time.Millisecond), float64(n)/took.Seconds(), procstat.PeakRSSMiB())
	rn.Close()

	runtime.GC()
	start = time.Now()
	rn = testenv.Start(t, testenv.Options{Dir: dir})
	q := table.QueryInput{ReadInput: table.ReadInput{TableName: "state", IndexName: "byData", Limit: 10,
		ExpressionAttributeValues: table.Item{":d": benchItem(0)["data"]}}, KeyConditionExpression: "data = :d"}
	out, err := rn.Tables.Query(ctx, q)
	if err != nil || len(out.Items) != 10 {
		t.Fatalf("first Query: %v, %d items", err, len(out.Items))
	}
	took = time.Since(start)
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	t.Logf("start + first Query of the index: %v, %d indexes built from the items (live heap after it %.0f MiB)", took.Round(time.Millisecond), table.IndexBuilds(rn.Tables), float64(ms.HeapAlloc)/(1<<20))
	start = time.Now()
	queries := 0
	for queries < 100 && time.Since(start) < 5*time.Second {
		if _, err := rn.Tables.Query(ctx, q); err != nil {
			t.Fatal(err)
		}
		queries++
	}
	t.Logf("a Query of 10 items of the index's one partition: %v (mean of %d)", (time.Since(start) / time.Duration(queries)).Round(time.Microsecond), queries)
}

// measureItems is the item count the environment variable env asks an
// env-gated measurement for; the test is skipped when it is not set
// (example: a count to suggest).
func measureItems(t *testing.T, env, example string) int {
	t.Helper()
	n, _ := strconv.Atoi(os.Getenv(env))
	if n <= 0 {
		t.Skipf("set %s (e.g. %s) to measure", env, example)
	}
	return n
}
