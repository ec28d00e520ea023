package table_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/table"
)

// TestQueryReadsItemsPastItsHeldImagesOneByOne: on the index store a
// Query holds the images of the first 4 MB of the partition's entries it
// reads and reads the items past them one by one. With 60 items of 100 KB
// and no item cache, a Query of the last ten (forward) and of the first
// ten (backward) reads the whole partition past that budget; every page
// must hold its items once, in order, as written.
func TestQueryReadsItemsPastItsHeldImagesOneByOne(t *testing.T) {
	tb := testenv.Start(t, testenv.Options{Tables: table.Options{ItemCacheBytes: 1}}).Tables
	createTable(t, tb, "big", "n", "")
	data := func(n int) string { return fmt.Sprintf("%03d", n) + strings.Repeat("x", 100_000) }
	for n := range 60 {
		if _, err := tb.PutItem(ctx, table.PutItemInput{TableName: "big", Item: table.Item{"pk": S("p"), "n": N(fmt.Sprint(n)), "data": S(data(n))}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		cond    string
		from    string
		forward bool
		want    []int
	}{
		{"pk = :p AND n >= :n", "50", true, []int{50, 51, 52, 53, 54, 55, 56, 57, 58, 59}},
		{"pk = :p AND n <= :n", "9", false, []int{9, 8, 7, 6, 5, 4, 3, 2, 1, 0}},
	} {
		q := table.QueryInput{ReadInput: table.ReadInput{TableName: "big", ExpressionAttributeValues: table.Item{":p": S("p"), ":n": N(tc.from)}},
			KeyConditionExpression: tc.cond, ScanIndexForward: &tc.forward}
		var got []int
		for pages := 0; ; pages++ {
			out, err := tb.Query(ctx, q)
			if err != nil || pages > 20 {
				t.Fatalf("%s: page %d: %v", tc.cond, pages, err)
			}
			for _, it := range out.Items {
				var n int
				fmt.Sscan(it["n"].Number(), &n)
				if it["data"].String() != data(n) {
					t.Fatalf("%s: item %d has other data (%d bytes)", tc.cond, n, len(it["data"].String()))
				}
				got = append(got, n)
			}
			if out.LastEvaluatedKey == nil {
				break
			}
			q.ExclusiveStartKey = out.LastEvaluatedKey
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s: items %v, want %v", tc.cond, got, tc.want)
		}
	}
}
