package mapping_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel/batch"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/mapping"
	"github.com/runnel-dev/runnel/table"
)

// A DynamoDB stream mapping with tumbling windows: events.DynamoDBTimeWindowEvent
// fields, a count per window through batch.AggregateDynamoDB, the final
// invocation once the engine clock passes the window's end.
func TestTumblingWindowDynamoDBStream(t *testing.T) {
	ctx := context.Background()
	clock := clockwork.NewFakeClockAt(t0.Add(10 * time.Second))
	rn := testenv.Start(t, testenv.Options{Clock: clock})
	desc := createStreamTable(t, rn, "win", table.ViewNewImage, 1)
	var mu sync.Mutex
	folded, counts := 0, map[time.Time]int{}
	var evs []batch.DynamoDBWindowEvent[wcount]
	agg := batch.AggregateDynamoDB(
		func(ctx context.Context, s wcount, r events.DynamoDBEventRecord) (wcount, error) {
			mu.Lock()
			folded++
			mu.Unlock()
			s.N++
			return s, nil
		},
		func(ctx context.Context, e batch.WindowEmit, s wcount) error {
			mu.Lock()
			counts[e.Window.Start.UTC()] += s.N
			mu.Unlock()
			return nil
		})
	function.Register("ddb-window", func(ctx context.Context, ev batch.DynamoDBWindowEvent[wcount]) (batch.WindowResponse[wcount], error) {
		mu.Lock()
		evs = append(evs, ev)
		mu.Unlock()
		return agg(ctx, ev)
	})
	if _, err := rn.Functions.CreateFunction(ctx, function.Config{FunctionName: "wfn", Handler: "ddb-window"}); err != nil {
		t.Fatal(err)
	}
	_, err := rn.Mappings.CreateEventSourceMapping(ctx, mapping.Config{EventSourceArn: desc.LatestStreamArn, FunctionName: "wfn",
		StartingPosition: mapping.TrimHorizon, TumblingWindowInSeconds: ptr(30)})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b", "c"} {
		if _, err := rn.Tables.PutItem(ctx, table.PutItemInput{TableName: "win", Item: table.Item{"id": S(id)}}); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, wait, "three changes folded", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return folded == 3
	})
	clock.Advance(30 * time.Second)
	testenv.Eventually(t, wait, "the window closed", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(counts) == 1
	})
	mu.Lock()
	defer mu.Unlock()
	if counts[t0] != 3 {
		t.Fatalf("counts = %v, want 3 in the window at %v", counts, t0)
	}
	last := evs[len(evs)-1]
	if !last.IsFinalInvokeForWindow || last.EventSourceARN != desc.LatestStreamArn || last.ShardID == "" ||
		!last.Window.Start.Equal(t0) || !last.Window.End.Equal(t0.Add(30*time.Second)) {
		t.Fatalf("final invocation: %+v", last.TimeWindowProperties)
	}
	if r := evs[0].Records[0]; r.EventSource != "aws:dynamodb" || r.Change.Keys["id"].String() != "a" {
		t.Fatalf("first record: %+v", r)
	}
}
