package table_test

import (
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/table"
)

// TestCanonicalNumbers: numbers outside keys, at any depth, and the ones
// an update copies, are stored and returned in DynamoDB's canonical form.
func TestCanonicalNumbers(t *testing.T) {
	tb := testenv.Start(t, testenv.Options{}).Tables
	createTable(t, tb, "numbers", "", "")
	if _, err := tb.PutItem(ctx, table.PutItemInput{TableName: "numbers", Item: table.Item{"pk": S("a"),
		"n": N("01.50"), "ns": events.NewNumberSetAttribute([]string{"1.0", "2"}),
		"m": events.NewMapAttribute(table.Item{"x": N("1e2")}), "l": events.NewListAttribute([]events.DynamoDBAttributeValue{N("-0"), S("s")}),
	}}); err != nil {
		t.Fatal(err)
	}
	if _, err := tb.UpdateItem(ctx, table.UpdateItemInput{TableName: "numbers", Key: table.Item{"pk": S("a")}, UpdateExpression: "SET u = :u",
		ExpressionAttributeValues: table.Item{":u": N("2.50")}}); err != nil {
		t.Fatal(err)
	}
	it := get(t, tb, "numbers", table.Item{"pk": S("a")})
	if it["n"].Number() != "1.5" || it["ns"].NumberSet()[0] != "1" || it["m"].Map()["x"].Number() != "100" ||
		it["l"].List()[0].Number() != "0" || it["l"].List()[1].String() != "s" || it["u"].Number() != "2.5" {
		t.Fatalf("item %v", it)
	}
}
