package mapping_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/mapping"
	"github.com/runnel-dev/runnel/table"
)

// TestDynamoDBStreamBatchesStayWithinSixMegabytes: Lambda closes a batch
// before its payload passes 6 MB ("the batch size reaches the payload
// limit of 6 MB", with-ddb.html). A DynamoDB stream record used to count
// 4/3 of its stored change plus 400 bytes; an item of many small
// attributes takes about twice as much as JSON ("a0001":{"N":"1"} is 18
// bytes, 9 stored), so batches of such items made events of about 9 MB.
// Each record now counts its event record's JSON exactly.
func TestDynamoDBStreamBatchesStayWithinSixMegabytes(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	ctx := context.Background()
	desc := createStreamTable(t, rn, "wide", table.ViewNewAndOldImages, 1)
	var mu sync.Mutex
	var sizes []int
	records := 0
	function.Register("ddb-sizes", function.DynamoDBHandler(func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		b, err := json.Marshal(ev)
		if err != nil {
			return events.DynamoDBEventResponse{}, err
		}
		mu.Lock()
		defer mu.Unlock()
		sizes = append(sizes, len(b))
		records += len(ev.Records)
		return events.DynamoDBEventResponse{}, nil
	}))
	if _, err := rn.Functions.CreateFunction(ctx, function.Config{FunctionName: "sizes", Handler: "ddb-sizes"}); err != nil {
		t.Fatal(err)
	}
	const items, attrs = 300, 3000
	for i := range items {
		it := table.Item{"id": S(fmt.Sprint("item", i))}
		for a := range attrs {
			it[fmt.Sprintf("a%04d", a)] = N("1")
		}
		if _, err := rn.Tables.PutItem(ctx, table.PutItemInput{TableName: "wide", Item: it}); err != nil {
			t.Fatal(err)
		}
	}
	createMapping(t, rn, mapping.Config{EventSourceArn: desc.LatestStreamArn, FunctionName: "sizes", StartingPosition: "TRIM_HORIZON",
		BatchSize: 10000, MaximumBatchingWindowInSeconds: 2})
	testenv.Eventually(t, 60*time.Second, "every change delivered", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return records >= items
	})
	mu.Lock()
	defer mu.Unlock()
	for i, n := range sizes {
		if n > mapping.MaxBatchPayloadBytes {
			t.Fatalf("invocation %d: event of %d bytes, over Lambda's 6 MB (%d); sizes %v", i, n, mapping.MaxBatchPayloadBytes, sizes)
		}
	}
	if len(sizes) < 2 {
		t.Fatalf("one invocation of %d records, %v bytes: the 6 MB cut never ran", records, sizes)
	}
}
