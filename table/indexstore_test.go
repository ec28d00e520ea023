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
