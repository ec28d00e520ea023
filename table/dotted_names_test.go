package table_test

import (
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel/internal/testenv"
)

// TestTheStreamOfATableNamedWithDotsIsListedAndKeptForADay: a table name
// is [a-zA-Z0-9_.-]+, 3 to 255 characters (DynamoDB API Reference,
// CreateTable, TableName), so ".ab", "ab." and "a..b" are names;
// ListStreams with a TableName lists that table's streams, and the stream
// of a deleted table stays readable for 24 hours ("this also applies if
// you delete the table", DynamoDB developer guide, Streams.html). Before,
// the deleted streams were listed with the key filter name+".>", which
// for such a name is no NATS filter: ListStreams failed ("nats: invalid
// key", a 500) even for a live table, and the stream of such a deleted
// table could not be found at once instead of for 24 hours.
func TestTheStreamOfATableNamedWithDotsIsListedAndKeptForADay(t *testing.T) {
	clock := clockwork.NewFakeClockAt(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rn := testenv.Start(t, testenv.Options{Clock: clock})
	names := []string{".ab", "ab.", "a..b", "a.b"}
	labels := map[string]string{}
	for _, name := range names {
		createTable(t, rn.Tables, name, "", "KEYS_ONLY")
		if ds, err := rn.Tables.DeletedStreams(ctx, name); err != nil || len(ds) != 0 {
			t.Fatalf("DeletedStreams(%q) of the live table: %v %v, want none", name, ds, err)
		}
		d, err := rn.Tables.DescribeTable(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		labels[name] = d.LatestStreamLabel
	}
	for _, name := range names {
		if _, err := rn.Tables.DeleteTable(ctx, name); err != nil {
			t.Fatal(err)
		}
	}
	kept := func(want int) {
		t.Helper()
		for _, name := range names {
			ds, err := rn.Tables.DeletedStreams(ctx, name)
			if err != nil || len(ds) != want || want == 1 && ds[0].TableName != name {
				t.Fatalf("DeletedStreams(%q): %+v %v, want %d of that table", name, ds, err, want)
			}
			if _, err := rn.Tables.DeletedStreamOf(ctx, name, labels[name]); (err == nil) != (want == 1) {
				t.Fatalf("DeletedStreamOf(%q, %s): %v", name, labels[name], err)
			}
		}
		if all, err := rn.Tables.DeletedStreams(ctx, ""); err != nil || len(all) != want*len(names) {
			t.Fatalf("DeletedStreams of all tables: %d %v, want %d", len(all), err, want*len(names))
		}
	}
	kept(1)
	clock.Advance(23 * time.Hour)
	kept(1)
	clock.Advance(2 * time.Hour)
	kept(0)
}
