package table_test

import (
	"errors"
	"sync/atomic"
	"testing"

	"github.com/runnel-dev/runnel/table"
)

// TestAWriteWhoseOutcomeIsUnknownStopsSnapshotsUntilTheNextOpen: a log
// append that landed but whose reply was lost is not in the index (its
// writer heard an error), so no snapshot may cover its position until
// the table is opened again and reads the log: the next snapshot is
// skipped, and the open after a crash replays the tail from the last good
// snapshot, which makes the landed write visible, as the log and the
// change stream have it. A snapshot taken anyway would cover the write's
// position without it, and the item would be invisible for good.
func TestAWriteWhoseOutcomeIsUnknownStopsSnapshotsUntilTheNextOpen(t *testing.T) {
	_, rn, reopen := crashable(t, "uncertain")
	put := func(pk string) error {
		_, err := rn.Tables.PutItem(ctx, table.PutItemInput{TableName: "uncertain", Item: table.Item{"pk": S(pk)}})
		return err
	}
	if err := put("a"); err != nil {
		t.Fatal(err)
	}
	table.WriteIndexSnapshots(t, rn.Tables) // the last good snapshot: a
	var lose atomic.Bool
	lose.Store(true)
	table.SetReplyLost(rn.Tables, func(string) error {
		if lose.Swap(false) {
			return errors.New("reply lost")
		}
		return nil
	})
	if err := put("b"); err == nil {
		t.Fatal("the write whose reply was lost succeeded")
	}
	if err := put("c"); err != nil {
		t.Fatal(err)
	}
	table.WriteIndexSnapshots(t, rn.Tables) // skipped: b's outcome is unknown
	rn = reopen(rn)
	from, replayed := table.OpenedFrom(t, rn.Tables, "uncertain")
	if !from || replayed != 2 {
		t.Fatalf("opened from a snapshot %v, replayed %d log records; want the snapshot of a, then b and c replayed", from, replayed)
	}
	for _, pk := range []string{"a", "b", "c"} {
		if get(t, rn.Tables, "uncertain", table.Item{"pk": S(pk)}) == nil {
			t.Fatalf("item %s missing after the open; the log holds it", pk)
		}
	}
}
