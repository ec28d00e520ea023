package table_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/table"
)

// TestALateCacheStoreNeverHidesAnAcknowledgedWrite: a GetItem that
// missed the item cache reads the item from the log and caches it; if a
// PutItem of that item is acknowledged in between, the older item it
// caches must never be served: every read and every condition after the
// acknowledgement sees the newer item (the cache serves an item only for
// the log position the index holds for its key).
func TestALateCacheStoreNeverHidesAnAcknowledgedWrite(t *testing.T) {
	tb := testenv.Start(t, testenv.Options{}).Tables
	createTable(t, tb, "cached", "", table.ViewNewAndOldImages)
	key := table.Item{"pk": S("a")}
	put := func(v string) {
		t.Helper()
		if _, err := tb.PutItem(ctx, table.PutItemInput{TableName: "cached", Item: table.Item{"pk": S("a"), "v": N(v)}}); err != nil {
			t.Fatal(err)
		}
	}
	put("1")
	read, cacheLate := table.ReadLate(t, tb, "cached", key)
	if read["v"].Number() != "1" {
		t.Fatalf("the late reader read %v", read)
	}
	put("2") // acknowledged: its change is in the log and the index
	cacheLate()
	if it := get(t, tb, "cached", key); it["v"].Number() != "2" {
		t.Fatalf("GetItem after the acknowledged PutItem of v=2 returned %v", it)
	}
	out, err := tb.Scan(ctx, table.ScanInput{ReadInput: table.ReadInput{TableName: "cached"}})
	if err != nil || len(out.Items) != 1 || out.Items[0]["v"].Number() != "2" {
		t.Fatalf("Scan: %v %v", out, err)
	}
	if _, err := tb.UpdateItem(ctx, table.UpdateItemInput{TableName: "cached", Key: key, UpdateExpression: "SET v = :three",
		WriteExpr: table.WriteExpr{
			ConditionExpression:       "v = :two",
			ExpressionAttributeValues: table.Item{":two": N("2"), ":three": N("3")},
		}}); err != nil {
		t.Fatalf("UpdateItem conditioned on the acknowledged v=2: %v", err)
	}
	if it := get(t, tb, "cached", key); it["v"].Number() != "3" {
		t.Fatalf("GetItem after UpdateItem to v=3 returned %v", it)
	}
}

// TestItemCacheStaysWithinItsBytes: a table's item cache never counts
// more than Options.ItemCacheBytes, whatever the number of items written
// and read, and every item still reads back as written (from the log
// once its cache entry is dropped).
func TestItemCacheStaysWithinItsBytes(t *testing.T) {
	const limit = 8 << 10
	tb := testenv.Start(t, testenv.Options{Tables: table.Options{ItemCacheBytes: limit}}).Tables
	createTable(t, tb, "bounded", "", "")
	data := strings.Repeat("x", 200)
	const n = 300 // about 10 times what the cache holds
	check := func() {
		t.Helper()
		items, bytes := table.CachedItems(t, tb, "bounded")
		if bytes > limit || items == 0 {
			t.Fatalf("the cache holds %d items counting %d bytes; its limit is %d", items, bytes, limit)
		}
	}
	for i := range n {
		if _, err := tb.PutItem(ctx, table.PutItemInput{TableName: "bounded", Item: table.Item{"pk": S(fmt.Sprint("k", i)), "d": S(data), "i": N(fmt.Sprint(i))}}); err != nil {
			t.Fatal(err)
		}
		check()
	}
	for i := range n {
		it := get(t, tb, "bounded", table.Item{"pk": S(fmt.Sprint("k", i))})
		if it["i"].Number() != fmt.Sprint(i) || it["d"].String() != data {
			t.Fatalf("item k%d read back as %v", i, it)
		}
		check()
	}
}
