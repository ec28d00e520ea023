package table_test

import (
	"errors"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/table"
)

// benchCallers is how many goroutines the write benchmarks run at once:
// the endpoint target's 8 concurrent callers (issue 12).
const benchCallers = 8

// benchTable starts an engine with one table (hash key pk, stream on, as
// the trades demo's state table) and returns its service.
func benchTable(b *testing.B) *table.Service {
	rn := testenv.Start(b, testenv.Options{})
	in := table.CreateTableInput{TableName: "bench",
		KeySchema:            []table.KeySchemaElement{{AttributeName: "pk", KeyType: "HASH"}},
		AttributeDefinitions: []table.AttributeDefinition{{AttributeName: "pk", AttributeType: "S"}},
		StreamSpecification:  &table.StreamSpecification{StreamEnabled: true, StreamViewType: table.ViewNewAndOldImages},
	}
	if _, err := rn.Tables.CreateTable(ctx, in); err != nil {
		b.Fatal(err)
	}
	return rn.Tables
}

func benchItem(i int64) table.Item {
	return table.Item{"pk": S("item-" + strconv.FormatInt(i, 10)), "v": N(strconv.FormatInt(i, 10)), "data": S("0123456789abcdef0123456789abcdef")}
}

// runCallers runs fn b.N times over benchCallers goroutines, each call
// with its own number.
func runCallers(b *testing.B, fn func(i int64) error) {
	var next atomic.Int64
	b.SetParallelism((benchCallers + 1) / max(1, testingProcs()))
	b.ResetTimer()
	defer testenv.ReportCPU(b, testenv.CPUTime())
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := fn(next.Add(1)); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkPutItem: new items put by 8 concurrent callers (items/s is
// 1/(ns/op)).
func BenchmarkPutItem(b *testing.B) {
	tb := benchTable(b)
	runCallers(b, func(i int64) error {
		_, err := tb.PutItem(ctx, table.PutItemInput{TableName: "bench", Item: benchItem(i)})
		return err
	})
}

// BenchmarkUpdateItemConditional: the trades state function's update
// (condition on the current item) by 8 concurrent callers over 1,000
// items.
func BenchmarkUpdateItemConditional(b *testing.B) {
	tb := benchTable(b)
	runCallers(b, func(i int64) error {
		_, err := tb.UpdateItem(ctx, table.UpdateItemInput{TableName: "bench", Key: table.Item{"pk": S("item-" + strconv.FormatInt(i%1000, 10))},
			UpdateExpression: "SET #v = :v",
			WriteExpr: table.WriteExpr{
				ConditionExpression:       "attribute_not_exists(pk) OR #v < :v",
				ExpressionAttributeNames:  map[string]string{"#v": "v"},
				ExpressionAttributeValues: table.Item{":v": N(strconv.FormatInt(i, 10))},
			},
		})
		if errors.Is(err, awserr.ErrConditionalCheckFailed) {
			return nil // a caller with a higher number wrote the item first
		}
		return err
	})
}

// BenchmarkBatchWriteItem: batches of 25 new items by 8 concurrent
// callers; one op is one item (items/s is 1/(ns/op)).
func BenchmarkBatchWriteItem(b *testing.B) {
	tb := benchTable(b)
	var next atomic.Int64
	b.SetParallelism((benchCallers + 1) / max(1, testingProcs()))
	b.ResetTimer()
	defer testenv.ReportCPU(b, testenv.CPUTime())
	b.RunParallel(func(pb *testing.PB) {
		for {
			reqs := make([]table.WriteRequest, 0, table.MaxBatchWrite)
			for len(reqs) < table.MaxBatchWrite && pb.Next() {
				reqs = append(reqs, table.WriteRequest{PutRequest: &table.PutRequest{Item: benchItem(next.Add(1))}})
			}
			if len(reqs) == 0 {
				return
			}
			out, err := tb.BatchWriteItem(ctx, table.BatchWriteItemInput{RequestItems: map[string][]table.WriteRequest{"bench": reqs}})
			if err != nil {
				b.Error(err)
				return
			}
			if n := len(out.UnprocessedItems["bench"]); n > 0 {
				b.Errorf("%d unprocessed", n)
				return
			}
		}
	})
}

func testingProcs() int { return runtime.GOMAXPROCS(0) }

// BenchmarkGetItemPastTheCaches: GetItem of random items of a table
// about four times larger than the index store's block cache, with no
// item cache, so that most reads read a block of the store's files
// (through the OS page cache). It prices the store's block size for
// reads (table/store.go).
func BenchmarkGetItemPastTheCaches(b *testing.B) {
	const items = 100_000
	rn := testenv.Start(b, testenv.Options{Tables: table.Options{ItemCacheBytes: 1, IndexCacheBytes: 8 << 20}})
	tb := rn.Tables
	in := table.CreateTableInput{TableName: "bench",
		KeySchema:            []table.KeySchemaElement{{AttributeName: "pk", KeyType: "HASH"}},
		AttributeDefinitions: []table.AttributeDefinition{{AttributeName: "pk", AttributeType: "S"}},
	}
	if _, err := tb.CreateTable(ctx, in); err != nil {
		b.Fatal(err)
	}
	pad := S(strings.Repeat("x", 300))
	for i := 0; i < items; i += table.MaxBatchWrite {
		reqs := make([]table.WriteRequest, 0, table.MaxBatchWrite)
		for k := i; k < i+table.MaxBatchWrite; k++ {
			it := benchItem(int64(k))
			it["pad"] = pad
			reqs = append(reqs, table.WriteRequest{PutRequest: &table.PutRequest{Item: it}})
		}
		out, err := tb.BatchWriteItem(ctx, table.BatchWriteItemInput{RequestItems: map[string][]table.WriteRequest{"bench": reqs}})
		if err != nil || len(out.UnprocessedItems) > 0 {
			b.Fatal(err, len(out.UnprocessedItems))
		}
	}
	runCallers(b, func(i int64) error {
		k := (i * 7919) % items // a stride through the keys: no two neighbours in a row
		out, err := tb.GetItem(ctx, table.GetItemInput{TableName: "bench", Key: table.Item{"pk": S("item-" + strconv.FormatInt(k, 10))}})
		if err == nil && out.Item == nil {
			err = errors.New("item " + strconv.FormatInt(k, 10) + " missing")
		}
		return err
	})
}
