package table_test

import (
	"fmt"
	"reflect"
	"slices"
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

// TestAQueryReadsOnlyItsSortKeyRange: a Query's sort key condition
// chooses a run of its partition (API_Query, KeyConditionExpression: "=",
// "<", "<=", ">", ">=", BETWEEN, begins_with on the sort key), and the
// Query reads that run, not the partition: it seeks to the condition's
// first possible entry and stops at the first entry past its last. It
// used to walk the partition from its first entry to its last whatever
// the condition (in chunks, each entry decoded and refused): BETWEEN 1000
// AND 1009 on a partition of 3,000 items listed 3,000 entries. Now at
// most the matches and one entry on each side, forward and backward.
func TestAQueryReadsOnlyItsSortKeyRange(t *testing.T) {
	for _, kind := range []string{table.IndexDisk, table.IndexMemory} {
		t.Run(kind, func(t *testing.T) {
			tb := testenv.Start(t, testenv.Options{Tables: table.Options{Index: kind}}).Tables
			const items = 3000
			fillPartition(t, tb, items, 10)
			table.SetQueryChunk(t, 64)
			back := false
			for _, tc := range []struct {
				cond string
				a, b string
				want int
			}{
				{"n BETWEEN :a AND :b", "1000", "1009", 10},
				{"n = :a", "1500", "", 1},
				{"n < :a", "5", "", 5},
				{"n <= :a", "5", "", 6},
				{"n > :a", "2994", "", 5},
				{"n >= :a", "2994", "", 6},
				{"n > :a", "5000", "", 0},
				{"n < :a", "-1", "", 0},
			} {
				for _, fwd := range []*bool{nil, &back} {
					vals := table.Item{":p": S("big"), ":a": N(tc.a)}
					if tc.b != "" {
						vals[":b"] = N(tc.b)
					}
					before := table.PartitionEntriesListed()
					out := query(t, tb, table.QueryInput{ReadInput: table.ReadInput{TableName: "wide", ExpressionAttributeValues: vals},
						KeyConditionExpression: "pk = :p AND " + tc.cond, ScanIndexForward: fwd})
					listed := table.PartitionEntriesListed() - before
					if out.Count != tc.want || out.LastEvaluatedKey != nil {
						t.Errorf("%s (a %s, b %s) forward %v: Count %d, LastEvaluatedKey %v; want %d, none", tc.cond, tc.a, tc.b, fwd == nil, out.Count, out.LastEvaluatedKey, tc.want)
					}
					if listed > int64(tc.want)+2 {
						t.Errorf("%s (a %s, b %s) forward %v: the Query listed %d entries of the partition of %d for %d matches; want at most %d",
							tc.cond, tc.a, tc.b, fwd == nil, listed, items, tc.want, tc.want+2)
					}
				}
			}
		})
	}
}

// TestASortKeyConditionAnswersAsAFilterOfItsPartition: whatever the walk
// skips, a Query answers what DynamoDB's rules say the condition matches
// (API_Query: strings compare by their UTF-8 bytes, begins_with on S and
// B), in sort order, forward and backward, paged by Limit: each answer is
// checked against the partition filtered by the condition here. Sort keys
// of type S that are prefixes of each other, share prefixes, and hold
// bytes above 0x7f, so a seek or a stop one entry off is seen.
func TestASortKeyConditionAnswersAsAFilterOfItsPartition(t *testing.T) {
	for _, kind := range []string{table.IndexDisk, table.IndexMemory} {
		t.Run(kind, func(t *testing.T) {
			tb := testenv.Start(t, testenv.Options{Tables: table.Options{Index: kind}}).Tables
			if _, err := tb.CreateTable(ctx, table.CreateTableInput{TableName: "sks",
				KeySchema:            []table.KeySchemaElement{{AttributeName: "pk", KeyType: "HASH"}, {AttributeName: "sk", KeyType: "RANGE"}},
				AttributeDefinitions: []table.AttributeDefinition{{AttributeName: "pk", AttributeType: "S"}, {AttributeName: "sk", AttributeType: "S"}},
			}); err != nil {
				t.Fatal(err)
			}
			keys := []string{"a", "ab", "abc", "abd", "ab~", "ab\u00e9", "ac", "b", "ba", "bb", "\u00e9", "\u00e9a", "z", "zz"}
			for _, k := range keys {
				putItem(t, tb, "sks", table.Item{"pk": S("p"), "sk": S(k)})
				putItem(t, tb, "sks", table.Item{"pk": S("q"), "sk": S(k)})
			}
			sorted := slices.Clone(keys)
			slices.Sort(sorted) // Go compares strings by their bytes, as DynamoDB does
			table.SetQueryChunk(t, 2)
			matches := map[string]func(k, a, b string) bool{
				"sk = :a":              func(k, a, _ string) bool { return k == a },
				"sk < :a":              func(k, a, _ string) bool { return k < a },
				"sk <= :a":             func(k, a, _ string) bool { return k <= a },
				"sk > :a":              func(k, a, _ string) bool { return k > a },
				"sk >= :a":             func(k, a, _ string) bool { return k >= a },
				"sk BETWEEN :a AND :b": func(k, a, b string) bool { return k >= a && k <= b },
				"begins_with(sk, :a)":  func(k, a, _ string) bool { return strings.HasPrefix(k, a) },
			}
			operands := []string{"a", "ab", "abc", "abz", "b", "aa", "\u00e9", "0", "\u00ff"}
			back := false
			for cond, match := range matches {
				for _, a := range operands {
					for _, b := range []string{"ab\u00e9", "b", "\u00e9a", "zzz"} {
						if !strings.Contains(cond, ":b") && b != "b" {
							continue
						}
						if strings.Contains(cond, ":b") && a > b {
							continue
						}
						var want []string
						for _, k := range sorted {
							if match(k, a, b) {
								want = append(want, k)
							}
						}
						for _, fwd := range []*bool{nil, &back} {
							for _, limit := range []int{0, 1, 3} {
								vals := table.Item{":p": S("p"), ":a": S(a)}
								if strings.Contains(cond, ":b") {
									vals[":b"] = S(b)
								}
								in := table.QueryInput{ReadInput: table.ReadInput{TableName: "sks", Limit: limit, ExpressionAttributeValues: vals},
									KeyConditionExpression: "pk = :p AND " + cond, ScanIndexForward: fwd}
								var got []string
								for range 50 {
									out := query(t, tb, in)
									for _, it := range out.Items {
										got = append(got, it["sk"].String())
									}
									if out.LastEvaluatedKey == nil {
										break
									}
									in.ExclusiveStartKey = out.LastEvaluatedKey
								}
								w := slices.Clone(want)
								if fwd != nil {
									slices.Reverse(w)
								}
								if !slices.Equal(got, w) {
									t.Errorf("%s (a %q, b %q) forward %v Limit %d: got %q, want %q", cond, a, b, fwd == nil, limit, got, w)
								}
							}
						}
					}
				}
			}
		})
	}
}
