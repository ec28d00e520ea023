package mapping_test

import (
	"context"
	"reflect"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/mapping"
	"github.com/runnel-dev/runnel/table"
)

// TestDynamoDBHandlerEventIsItsOwn: an in-process DynamoDB stream handler
// gets records that are its own, as a freshly decoded Lambda event is on
// AWS: a handler that redacts its record's NewImage (delete(img,
// "secret")) and marks it changes nothing in the table, and a later write
// logs the item as it was. It used to change the table: the record's
// images were the table's cached item, and the next ADD wrote the
// redacted item to the change log.
func TestDynamoDBHandlerEventIsItsOwn(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	ctx := context.Background()
	desc := createStreamTable(t, rn, "acct", table.ViewNewAndOldImages, 1)
	var seen atomic.Int32
	function.Register("own-redact", function.DynamoDBHandler(func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		for _, r := range ev.Records {
			for _, img := range []map[string]events.DynamoDBAttributeValue{r.Change.NewImage, r.Change.OldImage} {
				if img != nil {
					delete(img, "secret")
					img["forwarded"] = events.NewBooleanAttribute(true)
					if m, ok := img["m"]; ok {
						m.Map()["x"] = S("changed")
					}
				}
			}
			seen.Add(1)
		}
		return events.DynamoDBEventResponse{}, nil
	}))
	if _, err := rn.Functions.CreateFunction(ctx, function.Config{FunctionName: "redact", Handler: "own-redact"}); err != nil {
		t.Fatal(err)
	}
	createMapping(t, rn, mapping.Config{EventSourceArn: desc.LatestStreamArn, FunctionName: "redact", StartingPosition: "TRIM_HORIZON"})
	item := func(balance string) table.Item {
		return table.Item{"id": S("a"), "secret": S("s3cr3t"), "balance": events.NewNumberAttribute(balance),
			"m": events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{"x": S("1")})}
	}
	if _, err := rn.Tables.PutItem(ctx, table.PutItemInput{TableName: "acct", Item: item("100")}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, wait, "handler ran", func() bool { return seen.Load() >= 1 })
	out, err := rn.Tables.GetItem(ctx, table.GetItemInput{TableName: "acct", Key: table.Item{"id": S("a")}})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(out.Item, item("100")) {
		t.Fatalf("after the handler changed its record, GetItem = %v, want %v", out.Item, item("100"))
	}
	up, err := rn.Tables.UpdateItem(ctx, table.UpdateItemInput{TableName: "acct", Key: table.Item{"id": S("a")}, UpdateExpression: "ADD balance :d",
		WriteExpr: table.WriteExpr{ExpressionAttributeValues: table.Item{":d": events.NewNumberAttribute("1")}}, ReturnValues: "ALL_NEW"})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(up.Attributes, item("101")) {
		t.Fatalf("the next ADD wrote %v, want %v", up.Attributes, item("101"))
	}
	testenv.Eventually(t, wait, "handler ran twice", func() bool { return seen.Load() >= 2 })
	out, _ = rn.Tables.GetItem(ctx, table.GetItemInput{TableName: "acct", Key: table.Item{"id": S("a")}})
	if !reflect.DeepEqual(out.Item, item("101")) {
		t.Fatalf("after the handler changed its second record, GetItem = %v, want %v", out.Item, item("101"))
	}
}
