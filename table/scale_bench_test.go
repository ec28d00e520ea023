package table_test

import (
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/internal/procstat"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/table"
)

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
	n, _ := strconv.Atoi(os.Getenv("RUNNEL_TABLE_BENCH_ITEMS"))
	if n <= 0 {
		t.Skip("set RUNNEL_TABLE_BENCH_ITEMS (e.g. 10000000) to measure")
	}
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

	runtime.GC()
	start := time.Now()
	rn = testenv.Start(t, testenv.Options{Dir: dir})
	if get(t, rn.Tables, "state", table.Item{"pk": benchItem(int64(n / 2))["pk"]}) == nil {
		t.Fatal("item missing")
	}
	took := time.Since(start)
	from, replayed := table.OpenedFrom(t, rn.Tables, "state")
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	t.Logf("open: start + first GetItem %v, of which the index %v (from its snapshot %v, %d log records replayed; heap %.0f MiB)",
		took.Round(time.Millisecond), table.OpenTook(t, rn.Tables, "state").Round(time.Millisecond), from, replayed, float64(ms.HeapAlloc)/(1<<20))

	start = time.Now()
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
	took = time.Since(start)
	runtime.ReadMemStats(&ms)
	t.Logf("scan: %d items in %d pages, %v: %.0f items/s (heap %.0f MiB, peak RSS %.0f MiB)", items, pages, took.Round(time.Millisecond), float64(items)/took.Seconds(),
		float64(ms.HeapAlloc)/(1<<20), procstat.PeakRSSMiB())
	if items < n {
		t.Fatalf("scan read %d items, want at least %d", items, n)
	}
}
