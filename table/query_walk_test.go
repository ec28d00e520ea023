package table_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/table"
)

// fillPartition writes n items of partition "big" (sort key n 0..n-1,
// attribute f = n mod 3, pad of padBytes) and 5 of partition "small"
// into table "wide" (pk S, n N), 25 a BatchWriteItem.
func fillPartition(t *testing.T, tb *table.Service, n, padBytes int) {
	t.Helper()
	createTable(t, tb, "wide", "n", "")
	pad := strings.Repeat("x", padBytes)
	for i := 0; i < n; i += 25 {
		var reqs []table.WriteRequest
		for j := i; j < min(i+25, n); j++ {
			reqs = append(reqs, table.WriteRequest{PutRequest: &table.PutRequest{Item: table.Item{
				"pk": S("big"), "n": N(fmt.Sprint(j)), "f": N(fmt.Sprint(j % 3)), "pad": S(pad)}}})
		}
		if _, err := tb.BatchWriteItem(ctx, table.BatchWriteItemInput{RequestItems: map[string][]table.WriteRequest{"wide": reqs}}); err != nil {
			t.Fatal(err)
		}
	}
	for j := range 5 {
		putItem(t, tb, "wide", table.Item{"pk": S("small"), "n": N(fmt.Sprint(j))})
	}
}

// TestAQueryStopsReadingItsPartitionAtItsPage: a Query reads the items of
// its partition up to its page, Limit items evaluated or 1 MB of item
// data (API_Query: "A single Query operation will read up to the maximum
// number of items set (if using the Limit parameter) or a maximum of 1 MB
// of data and then apply any filtering"). It used to list every entry of
// the partition under the table's index lock first: Limit 1 on a
// partition of 100,000 items took about 25 ms against 25 µs on 100
// items, and paging through a partition cost O(N²/page). Now it lists
// the partition a chunk at a time and stops with the page: on a partition
// of 3,000 items a Limit 1 Query lists one chunk, a page of 1 MB (2 KB
// items: about 512) at most that page and a chunk, forward and backward,
// and from an ExclusiveStartKey too.
func TestAQueryStopsReadingItsPartitionAtItsPage(t *testing.T) {
	for _, kind := range []string{table.IndexDisk, table.IndexMemory} {
		t.Run(kind, func(t *testing.T) {
			tb := testenv.Start(t, testenv.Options{Tables: table.Options{Index: kind}}).Tables
			const items = 3000
			fillPartition(t, tb, items, 2000)
			const chunk = 64
			table.SetQueryChunk(t, chunk)
			back := false
			for _, tc := range []struct {
				name    string
				limit   int
				forward *bool
				esk     table.Item
				most    int64 // entries the Query may list
			}{
				{"Limit 1", 1, nil, nil, chunk},
				{"Limit 1 backward", 1, &back, nil, chunk},
				{"Limit 1 from a start key", 1, nil, table.Item{"pk": S("big"), "n": N("1500")}, chunk},
				{"Limit 100", 100, nil, nil, 2 * chunk},
				{"1 MB", 0, nil, nil, 600 + chunk},
				{"1 MB backward", 0, &back, nil, 600 + chunk},
			} {
				before := table.PartitionEntriesListed()
				out := query(t, tb, table.QueryInput{ReadInput: table.ReadInput{TableName: "wide", Limit: tc.limit, ExclusiveStartKey: tc.esk,
					ExpressionAttributeValues: table.Item{":p": S("big")}}, KeyConditionExpression: "pk = :p", ScanIndexForward: tc.forward})
				listed := table.PartitionEntriesListed() - before
				if out.LastEvaluatedKey == nil || out.Count == 0 || (tc.limit > 0 && out.Count != tc.limit) {
					t.Fatalf("%s: Count %d, LastEvaluatedKey %v", tc.name, out.Count, out.LastEvaluatedKey)
				}
				if listed > tc.most {
					t.Errorf("%s: the Query listed %d entries of the partition of %d for a page of %d items; want at most %d", tc.name, listed, items, out.ScannedCount, tc.most)
				}
			}
		})
	}
}

// TestAQueryReadInChunksAnswersAsBefore: reading a partition a chunk at a
// time changes no answer of Query (API_Query): the items, their order
// (ScanIndexForward), Count, ScannedCount and LastEvaluatedKey of every
// page, with Limit, an ExclusiveStartKey, a sort key condition and a
// filter, are those of one chunk holding the whole partition (how Query
// read before: every entry of the partition at once), on both index
// kinds, paged to the end, with chunks of 7 entries so pages cross them.
func TestAQueryReadInChunksAnswersAsBefore(t *testing.T) {
	for _, kind := range []string{table.IndexDisk, table.IndexMemory} {
		t.Run(kind, func(t *testing.T) {
			tb := testenv.Start(t, testenv.Options{Tables: table.Options{Index: kind}}).Tables
			fillPartition(t, tb, 300, 10)
			putItem(t, tb, "wide", table.Item{"pk": S("big"), "n": N("-1.5")})
			back := false
			cases := []table.QueryInput{}
			for _, limit := range []int{0, 1, 7, 13, 50} {
				for _, fwd := range []*bool{nil, &back} {
					for _, kc := range []string{"pk = :p", "pk = :p AND n BETWEEN :a AND :b", "pk = :p AND n > :b"} {
						for _, filter := range []string{"", "f = :f"} {
							vals := table.Item{":p": S("big")}
							if strings.Contains(kc, ":a") {
								vals[":a"] = N("20")
							}
							if strings.Contains(kc, ":b") {
								vals[":b"] = N("250")
							}
							if filter != "" {
								vals[":f"] = N("1")
							}
							cases = append(cases, table.QueryInput{ReadInput: table.ReadInput{TableName: "wide", Limit: limit,
								FilterExpression: filter, ExpressionAttributeValues: vals}, KeyConditionExpression: kc, ScanIndexForward: fwd})
						}
					}
				}
			}
			pages := func(q table.QueryInput) []*table.QueryOutput {
				var out []*table.QueryOutput
				for range 400 {
					p := query(t, tb, q)
					out = append(out, p)
					if p.LastEvaluatedKey == nil {
						return out
					}
					q.ExclusiveStartKey = p.LastEvaluatedKey
				}
				t.Fatalf("%+v: more than 400 pages", q)
				return nil
			}
			for _, q := range cases {
				table.SetQueryChunk(t, 1_000_000)
				whole := pages(q)
				table.SetQueryChunk(t, 7)
				chunked := pages(q)
				if !reflect.DeepEqual(whole, chunked) {
					t.Fatalf("Limit %d forward %v %q filter %q: read in chunks, %d pages differ from the whole partition's %d",
						q.Limit, q.ScanIndexForward == nil, q.KeyConditionExpression, q.FilterExpression, len(chunked), len(whole))
				}
			}
		})
	}
}
