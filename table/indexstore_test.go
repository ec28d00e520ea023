package table_test

import (
	"bytes"
	"testing"

	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/table"
)

// TestUnusableIndexStoreHeaderFallsBackToTheWholeLog: with the index
// store (Options.Index disk), a table whose header is missing, is not a
// header, or covers log positions past the log's end is cleared and
// rebuilt from the whole log, and serves exactly what it held; the items
// the store held are not served twice or from another table.
func TestUnusableIndexStoreHeaderFallsBackToTheWholeLog(t *testing.T) {
	testenv.NeedsEmbedded(t, "the index store is an embedded node's")
	cases := map[string]func(good []byte) []byte{
		"missing":      func([]byte) []byte { return nil },
		"not a header": func([]byte) []byte { return []byte("hello") },
		"past the log's end": func(good []byte) []byte {
			return bytes.Replace(good, []byte(`"pos":[`), []byte(`"pos":[99999999999,`), 1)
		},
		"another transaction": func(good []byte) []byte {
			return bytes.Replace(good, []byte(`"tx_seq":`), []byte(`"tx_seq":99999999`), 1)
		},
	}
	for name, spoil := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			opts := table.Options{Index: table.IndexDisk}
			rn := startSnapTables(t, dir, clockwork.NewRealClock(), opts)
			for _, tt := range snapTables {
				for i := range 100 {
					snapPut(t, rn, tt.name, i, "old", 0)
				}
			}
			table.WriteIndexSnapshots(t, rn.Tables)
			for _, tt := range snapTables {
				for i := 50; i < 120; i++ {
					snapPut(t, rn, tt.name, i, "new", 0)
				}
			}
			want := map[string]tableState{}
			for _, tt := range snapTables {
				want[tt.name] = stateOf(t, rn, tt.name)
				good := table.IndexHeader(t, rn.Tables, tt.name)
				if good == nil {
					t.Fatalf("%s: no header after a snapshot", tt.name)
				}
				bad := spoil(good)
				if bad != nil && bytes.Equal(bad, good) {
					t.Fatalf("%s: the header was not spoiled: %s", tt.name, good)
				}
				table.PlantIndexHeader(t, rn.Tables, tt.name, bad)
			}
			rn.Crash()

			rn = testenv.Start(t, testenv.Options{Dir: dir, Tables: opts})
			for _, tt := range snapTables {
				if from, replayed := table.OpenedFrom(t, rn.Tables, tt.name); from || replayed != want[tt.name].changeRecords {
					t.Fatalf("%s: opened from the store %v, replayed %d; want the whole log, %d records (the header is %s)", tt.name, from, replayed, want[tt.name].changeRecords, name)
				}
				sameState(t, tt.name, stateOf(t, rn, tt.name), want[tt.name])
			}
		})
	}
}

// TestADeletedTablesKeysLeaveTheIndexStoreThroughACrash: DeleteTable clears
// the table's keys from the index store, and the clearing survives a crash
// right after it (the store keeps no write-ahead log: the deletion is
// flushed), so no deleted table's keys stay on disk.
func TestADeletedTablesKeysLeaveTheIndexStoreThroughACrash(t *testing.T) {
	testenv.NeedsEmbedded(t, "the index store is an embedded node's")
	dir := t.TempDir()
	opts := table.Options{Index: table.IndexDisk}
	rn := startSnapTables(t, dir, clockwork.NewRealClock(), opts)
	for i := range 50 {
		snapPut(t, rn, "hashonly", i, "v", 0)
	}
	table.WriteIndexSnapshots(t, rn.Tables) // the items and a header on disk
	d, err := rn.Tables.DescribeTable(ctx, "hashonly")
	if err != nil {
		t.Fatal(err)
	}
	if n := table.StoreKeys(t, rn.Tables, d.TableId); n < 50 {
		t.Fatalf("%d keys of the table in the store before the delete; want at least 50", n)
	}
	if _, err := rn.Tables.DeleteTable(ctx, "hashonly"); err != nil {
		t.Fatal(err)
	}
	rn.Crash()

	rn = testenv.Start(t, testenv.Options{Dir: dir, Tables: opts})
	if n := table.StoreKeys(t, rn.Tables, d.TableId); n != 0 {
		t.Fatalf("%d keys of the deleted table in the store after a crash; want 0", n)
	}
}
