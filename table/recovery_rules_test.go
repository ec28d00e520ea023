package table_test

import (
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/table"
)

// publishLostCommit writes the commit record of a transaction that put
// image (key pk "a") in tableName, as runTransaction writes it, with no
// change in the table's log after it: a process that stopped between the
// commit point and its writes.
func publishLostCommit(t *testing.T, rn *runnel.Runnel, tableName string, image table.Item, at time.Time) {
	t.Helper()
	tt, err := rn.Tables.Table(tableName)
	if err != nil {
		t.Fatal(err)
	}
	sum := md5.Sum([]byte("S" + "a"))
	change, _ := json.Marshal(&table.Change{EventName: "INSERT", Keys: table.Item{"pk": S("a")}, NewImage: image,
		TimeMs: at.UnixMilli(), Txn: "tx-lost", TxnIndex: 0})
	rec, _ := json.Marshal(map[string]any{"id": "tx-lost", "token": "tok-lost", "hash": "h", "t": at.UnixMilli(),
		"changes": []map[string]any{{"table": tableName, "log": tt.LogName(), "pk": hex.EncodeToString(sum[:]) + "|I|0|20|tx-lost|0|",
			"hk": new(big.Int).SetBytes(sum[:]).String(), "data": change}}})
	if _, err := rn.Engine.JS.Publish(ctx, "runnel.txlog", rec); err != nil {
		t.Fatal(err)
	}
}

// TestItemOfACompletedTransactionExpiresByItsTTL: an item that a
// committed transaction wrote only when the table opened again (its
// changes had not landed before the stop) expires by the table's TTL
// attribute like any other item.
func TestItemOfACompletedTransactionExpiresByItsTTL(t *testing.T) {
	dir := t.TempDir()
	clock := clockwork.NewFakeClockAt(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	rn := startTTLTable(t, dir, clock)
	publishLostCommit(t, rn, "sessions", table.Item{"pk": S("a"), "expires": N(fmt.Sprint(clock.Now().Unix() + 60))}, clock.Now())
	rn.Crash()

	rn = testenv.Start(t, testenv.Options{Dir: dir, Clock: clock})
	if get(t, rn.Tables, "sessions", table.Item{"pk": S("a")}) == nil {
		t.Fatal("the committed transaction was not completed on open")
	}
	clock.Advance(2 * time.Minute)
	if n, err := rn.Tables.SweepExpired(ctx); err != nil || n != 1 {
		t.Fatalf("SweepExpired = %d, %v; want the completed transaction's item expired", n, err)
	}
	if get(t, rn.Tables, "sessions", table.Item{"pk": S("a")}) != nil {
		t.Fatal("expired item still there after the sweep")
	}
}

// startTTLTable starts a runnel on dir with the table "sessions", TTL on
// its attribute "expires".
func startTTLTable(t *testing.T, dir string, clock clockwork.Clock) *runnel.Runnel {
	t.Helper()
	rn := testenv.Start(t, testenv.Options{Dir: dir, Clock: clock})
	createTable(t, rn.Tables, "sessions", "", "")
	if _, err := rn.Tables.UpdateTimeToLive(ctx, "sessions", table.TimeToLiveSpecification{AttributeName: "expires", Enabled: true}); err != nil {
		t.Fatal(err)
	}
	return rn
}

// TestAnItemOfACompletedTransactionCountsItsOwnSize: the item that a
// transaction completed at open wrote counts its size in TableSizeBytes,
// as the same item put by PutItem does. Before, it counted the length of
// its encoded change record.
func TestAnItemOfACompletedTransactionCountsItsOwnSize(t *testing.T) {
	dir := t.TempDir()
	clock := clockwork.NewFakeClockAt(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	rn := startTTLTable(t, dir, clock)
	item := table.Item{"pk": S("a"), "blob": S(strings.Repeat("x", 10000))}
	publishLostCommit(t, rn, "sessions", item, clock.Now())
	rn.Crash()

	rn = testenv.Start(t, testenv.Options{Dir: dir, Clock: clock})
	d, err := rn.Tables.DescribeTable(ctx, "sessions")
	if err != nil {
		t.Fatal(err)
	}
	recovered := d.TableSizeBytes
	twin := table.Item{"pk": S("b"), "blob": S(strings.Repeat("x", 10000))} // the same size
	if _, err := rn.Tables.PutItem(ctx, table.PutItemInput{TableName: "sessions", Item: twin}); err != nil {
		t.Fatal(err)
	}
	d, _ = rn.Tables.DescribeTable(ctx, "sessions")
	if d.ItemCount != 2 || d.TableSizeBytes != 2*recovered {
		t.Fatalf("TableSizeBytes %d with the recovered item, %d with its twin put by PutItem: want twice as much", recovered, d.TableSizeBytes)
	}
}
