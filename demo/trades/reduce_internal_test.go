package trades

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/table"
)

// A reduce batch re-formed after a crash is added once, however long the
// process stayed down. Before the fix the transaction's only guard was
// its ClientRequestToken, which DynamoDB keeps 10 minutes: the same batch
// invoked again after 11 minutes added its sums a second time. Now the
// transaction also puts the batch's marker item, and a replay is
// cancelled on it.
func TestAReduceBatchReplayedAfterItsTokenExpiredIsAddedOnce(t *testing.T) {
	clk := clockwork.NewFakeClockAt(time.Date(2026, 11, 28, 8, 0, 0, 0, time.UTC))
	rn := testenv.Start(t, testenv.Options{Clock: clk})
	ctx := context.Background()
	if _, err := rn.Tables.CreateTable(ctx, table.CreateTableInput{TableName: aggTable,
		KeySchema:            []table.KeySchemaElement{{AttributeName: "Key", KeyType: table.KeyTypeHash}},
		AttributeDefinitions: []table.AttributeDefinition{{AttributeName: "Key", AttributeType: table.TypeS}}}); err != nil {
		t.Fatal(err)
	}
	f := &functions{agg: aggTable}
	f.tables.Store(rn.Tables)
	msg, _ := json.Marshal(preAggregate{Deltas: map[string]string{"Region:g": "1.5"}, Changes: 1, Trades: 1, Stamps: map[int64]int64{}})
	batch := events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{{EventName: "INSERT", Change: events.DynamoDBStreamRecord{SequenceNumber: "1",
		NewImage: map[string]events.DynamoDBAttributeValue{"MessageHash": events.NewStringAttribute("h"), "Message": events.NewStringAttribute(string(msg))}}}}}
	value := func() string {
		out, err := rn.Tables.GetItem(ctx, table.GetItemInput{TableName: aggTable, Key: table.Item{"Key": events.NewStringAttribute("Region:g")}})
		if err != nil || out.Item == nil {
			t.Fatalf("GetItem Region:g: %+v, %v", out, err)
		}
		return out.Item["Value"].Number()
	}
	for i, wait := range []time.Duration{0, time.Minute, 11 * time.Minute} {
		clk.Advance(wait)
		if _, err := f.Reduce(ctx, batch); err != nil {
			t.Fatalf("Reduce, time %d: %v", i+1, err)
		}
		if v := value(); v != "1.5" {
			t.Fatalf("after the batch's invocation %d (%v later): Region:g = %s, want 1.5", i+1, wait, v)
		}
	}
	if n := f.reducer.replayed.Load(); n != 1 {
		t.Fatalf("replayed = %d, want 1 (the invocation past the token's 10 minutes)", n)
	}
}
