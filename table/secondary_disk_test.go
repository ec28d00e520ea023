package table_test

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/table"
)

// wantIndexesAgree checks that each index of createIndexed's table holds
// what the table's items say (through Scan), that DescribeTable counts
// them, and, for an index in the store, that the store holds one forward
// and one reverse key per item in it and nothing else (a read passes over
// an entry its item no longer matches, so only the keys show a stale
// one).
func wantIndexesAgree(t *testing.T, tb *table.Service) {
	t.Helper()
	d, err := tb.DescribeTable(ctx, "idx")
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int64{}
	for _, x := range append(d.GlobalSecondaryIndexes, d.LocalSecondaryIndexes...) {
		counts[x.IndexName] = x.ItemCount
	}
	for _, index := range []string{"byCity", "byOwner", "byTime"} {
		got, want := indexView(t, tb, index), expectedView(t, tb, index)
		if len(want) == 0 || len(got) != len(want) {
			t.Fatalf("%s: %d entries, the table says %d", index, len(got), len(want))
		}
		for k, w := range want {
			if got[k] != w {
				t.Fatalf("%s: %s is %q, the table says %q", index, k, got[k], w)
			}
		}
		if counts[index] != int64(len(want)) {
			t.Fatalf("%s: ItemCount %d, the table says %d", index, counts[index], len(want))
		}
		if fwd, rev, ok := table.StoredIndexKeys(t, tb, "idx", index); ok && (fwd != len(want) || rev != len(want)) {
			t.Fatalf("%s: the store holds %d forward and %d reverse keys, the table says %d items", index, fwd, rev, len(want))
		}
	}
}

// An index in the index store opens as the store holds it: a table's
// open reads neither its history nor its items to build it (issue 12:
// "opening a table does not replay its history"), and it agrees with
// the table. The heap's indexes are built from the items at every open.
func TestStoredIndexesOpenWithoutABuild(t *testing.T) {
	dir := t.TempDir()
	rn := testenv.Start(t, testenv.Options{Dir: dir})
	createIndexed(t, rn.Tables)
	rng := rand.New(rand.NewPCG(3, 5))
	for range 400 {
		if err := randomIndexedWrite(rn.Tables, rng, 15, 8); err != nil {
			t.Fatal(err)
		}
	}
	wantIndexesAgree(t, rn.Tables)
	_, _, stored := table.StoredIndexKeys(t, rn.Tables, "idx", "byCity")
	rn.Close()

	rn = testenv.Start(t, testenv.Options{Dir: dir})
	want := int64(3) // byCity, byOwner, byTime
	if stored {
		want = 0
	}
	if got := table.IndexBuilds(rn.Tables); got != want {
		t.Fatalf("the open built %d indexes from the items; want %d (indexes in the store: %v)", got, want, stored)
	}
	wantIndexesAgree(t, rn.Tables)
	for range 200 { // and they move on with the table
		if err := randomIndexedWrite(rn.Tables, rng, 15, 8); err != nil {
			t.Fatal(err)
		}
	}
	wantIndexesAgree(t, rn.Tables)
}

// A GSI deleted and created again under its name starts empty: the new
// index holds the items by its own key, and counts only them, whatever
// the deleted one held.
func TestARecreatedIndexHoldsNothingOfTheDeletedOne(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	createIndexed(t, rn.Tables)
	rng := rand.New(rand.NewPCG(4, 6))
	for range 300 {
		if err := randomIndexedWrite(rn.Tables, rng, 15, 8); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := rn.Tables.UpdateGlobalSecondaryIndexes(ctx, "idx", nil, []table.GlobalSecondaryIndexUpdate{{Delete: &table.IndexRef{IndexName: "byOwner"}}}); err != nil {
		t.Fatal(err)
	}
	// byOwner again, now keyed by city: every item with a city is in it.
	if _, err := rn.Tables.UpdateGlobalSecondaryIndexes(ctx, "idx", nil, []table.GlobalSecondaryIndexUpdate{{Create: &table.SecondaryIndex{IndexName: "byOwner",
		KeySchema: []table.KeySchemaElement{{AttributeName: "city", KeyType: "HASH"}}, Projection: table.Projection{ProjectionType: "KEYS_ONLY"}}}}); err != nil {
		t.Fatal(err)
	}
	table.WaitBackfills(rn.Tables)
	sc, err := rn.Tables.Scan(ctx, table.ScanInput{ReadInput: table.ReadInput{TableName: "idx", FilterExpression: "attribute_exists(city)"}})
	if err != nil {
		t.Fatal(err)
	}
	d, err := rn.Tables.DescribeTable(ctx, "idx")
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range d.GlobalSecondaryIndexes {
		if x.IndexName == "byOwner" && (x.ItemCount != int64(len(sc.Items)) || x.IndexStatus != table.IndexActive) {
			t.Fatalf("byOwner again: %s with ItemCount %d; want ACTIVE with %d (the items with a city)", x.IndexStatus, x.ItemCount, len(sc.Items))
		}
	}
	if fwd, rev, ok := table.StoredIndexKeys(t, rn.Tables, "idx", "byOwner"); ok && (fwd != len(sc.Items) || rev != len(sc.Items)) {
		t.Fatalf("byOwner again: the store holds %d forward and %d reverse keys; want %d", fwd, rev, len(sc.Items))
	}
}

// A Query of an index returns a partition in the index's sort key order
// (numbers compared as numbers), forward or backward, page by page with
// ExclusiveStartKey, every item once, however many entries the read
// takes (an index is read a chunk of 256 entries at a time); other
// partitions' items never appear.
func TestIndexQueryOrderAcrossChunksAndPages(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	createIndexed(t, rn.Tables)
	rng := rand.New(rand.NewPCG(8, 9))
	const n = 700
	scores := map[string]int{}
	for i := range n {
		score := rng.IntN(2000) - 1000
		city := "c0"
		if i%7 == 0 {
			city = "c1" // another partition, between the pages
		} else {
			scores[fmt.Sprint("p", i)] = score
		}
		putItem(t, rn.Tables, "idx", table.Item{"pk": S(fmt.Sprint("p", i)), "sk": N("1"), "city": S(city), "score": N(fmt.Sprint(score))})
	}
	for _, c := range []struct {
		forward bool
		limit   int
	}{{true, 0}, {false, 0}, {true, 97}, {false, 97}} { // 0: one page of every item
		forward := c.forward
		var got []int
		seen := map[string]bool{}
		var start table.Item
		for {
			out := query(t, rn.Tables, table.QueryInput{ReadInput: table.ReadInput{TableName: "idx", IndexName: "byCity", Limit: c.limit, ExclusiveStartKey: start,
				ExpressionAttributeValues: table.Item{":c": S("c0")}}, KeyConditionExpression: "city = :c", ScanIndexForward: &forward})
			for _, it := range out.Items {
				pk := it["pk"].String()
				if _, ok := scores[pk]; !ok || seen[pk] {
					t.Fatalf("forward %v, Limit %d: item %s returned (in c0: %v, seen before: %v)", forward, c.limit, pk, ok, seen[pk])
				}
				seen[pk] = true
				v, _ := strconv.Atoi(it["score"].Number())
				got = append(got, v)
			}
			if start = out.LastEvaluatedKey; start == nil {
				break
			}
		}
		if len(got) != len(scores) {
			t.Fatalf("forward %v, Limit %d: %d items, want %d", forward, c.limit, len(got), len(scores))
		}
		for i := 1; i < len(got); i++ {
			if (forward && got[i] < got[i-1]) || (!forward && got[i] > got[i-1]) {
				t.Fatalf("forward %v, Limit %d: score %d after %d at position %d", forward, c.limit, got[i], got[i-1], i)
			}
		}
	}
}
