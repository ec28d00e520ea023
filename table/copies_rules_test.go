package table_test

import (
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/table"
)

// copyBase is an item with a value of every kind a caller could change in
// place: a nested map, a list, a binary, a string set.
func copyBase(pk string) table.Item {
	return table.Item{
		"pk":     S(pk),
		"v":      S("1"),
		"secret": S("s"),
		"m":      events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{"x": S("1"), "in": events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{"y": S("1")})}),
		"l":      events.NewListAttribute([]events.DynamoDBAttributeValue{S("1"), events.NewListAttribute([]events.DynamoDBAttributeValue{S("1")})}),
		"b":      events.NewBinaryAttribute([]byte("abc")),
		"ss":     events.NewStringSetAttribute([]string{"a", "b"}),
	}
}

// vandalize does to an item what a careless caller or a redacting stream
// handler does: every change in place it can make.
func vandalize(it table.Item) {
	if it == nil {
		return
	}
	delete(it, "secret")
	it["v"] = S("changed")
	if m, ok := it["m"]; ok && m.DataType() == events.DataTypeMap {
		m.Map()["x"] = S("changed")
		if in, ok := m.Map()["in"]; ok && in.DataType() == events.DataTypeMap {
			in.Map()["y"] = S("changed")
		}
	}
	if l, ok := it["l"]; ok && l.DataType() == events.DataTypeList && len(l.List()) == 2 {
		l.List()[0] = S("changed")
		l.List()[1].List()[0] = S("changed")
	}
	if b, ok := it["b"]; ok && b.DataType() == events.DataTypeBinary {
		b.Binary()[0] = 'Z'
	}
	if ss, ok := it["ss"]; ok && ss.DataType() == events.DataTypeStringSet {
		ss.StringSet()[0] = "changed"
	}
}

// TestItemsHandedOutAreTheCallersOwn: every item the in-process API hands
// out (GetItem, Scan, BatchGetItem, TransactGetItems, ReturnValues
// ALL_OLD/ALL_NEW/UPDATED_OLD, ConditionalCheckFailedError.Item, a
// CancellationReason's Item, a stream record's Keys and images from
// EventRecord) is the caller's own, at every depth, as a freshly decoded
// response or Lambda event is on AWS; and an item or a value a caller
// writes is copied in. Changing any of them changes nothing in the table
// and nothing a later write logs. It used to: they were the table's
// cached maps (GetItem's copy was one level deep), so a handler's
// delete(img, "secret") deleted it from the table and the next write saved
// the damaged item to the change log.
func TestItemsHandedOutAreTheCallersOwn(t *testing.T) {
	tb := testenv.Start(t, testenv.Options{}).Tables
	createTable(t, tb, "own", "", table.ViewNewAndOldImages)
	key := table.Item{"pk": S("a")}
	check := func(step string) {
		t.Helper()
		if got := get(t, tb, "own", key); !reflect.DeepEqual(got, copyBase("a")) {
			t.Fatalf("after a caller changed what %s handed out, the table holds %v, want %v", step, got, copyBase("a"))
		}
	}
	in := copyBase("a")
	if _, err := tb.PutItem(ctx, table.PutItemInput{TableName: "own", Item: in}); err != nil {
		t.Fatal(err)
	}
	vandalize(in)
	check("PutItem's request (Item)")

	vandalize(get(t, tb, "own", key))
	check("GetItem")

	sc, err := tb.Scan(ctx, table.ScanInput{ReadInput: table.ReadInput{TableName: "own"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range sc.Items {
		vandalize(it)
	}
	check("Scan")

	bg, err := tb.BatchGetItem(ctx, table.BatchGetItemInput{RequestItems: map[string]table.KeysAndAttributes{"own": {Keys: []table.Item{key}}}})
	if err != nil {
		t.Fatal(err)
	}
	vandalize(bg.Responses["own"][0])
	check("BatchGetItem")

	tg, err := tb.TransactGetItems(ctx, table.TransactGetItemsInput{TransactItems: []table.TransactGetItem{tget("own", "a")}})
	if err != nil {
		t.Fatal(err)
	}
	vandalize(tg.Responses[0].Item)
	check("TransactGetItems")

	pw, err := tb.PutItem(ctx, table.PutItemInput{TableName: "own", Item: copyBase("a"), ReturnValues: "ALL_OLD"})
	if err != nil {
		t.Fatal(err)
	}
	vandalize(pw.Attributes)
	check("PutItem's ReturnValues ALL_OLD")

	sameV := table.WriteExpr{ExpressionAttributeValues: table.Item{":v": S("1")}}
	for _, rv := range []string{"ALL_NEW", "ALL_OLD"} {
		uw, err := tb.UpdateItem(ctx, table.UpdateItemInput{TableName: "own", Key: key, UpdateExpression: "SET v = :v", WriteExpr: sameV, ReturnValues: rv})
		if err != nil {
			t.Fatal(err)
		}
		vandalize(uw.Attributes)
		check("UpdateItem's ReturnValues " + rv)
	}
	sameM := copyBase("a")["m"]
	uw, err := tb.UpdateItem(ctx, table.UpdateItemInput{TableName: "own", Key: key, UpdateExpression: "SET m = :m",
		WriteExpr: table.WriteExpr{ExpressionAttributeValues: table.Item{":m": sameM}}, ReturnValues: "UPDATED_OLD"})
	if err != nil {
		t.Fatal(err)
	}
	vandalize(uw.Attributes)
	check("UpdateItem's ReturnValues UPDATED_OLD")

	// A value an update stores (SET m2 = :m) is copied in from the request.
	m2 := copyBase("a")["m"]
	if _, err := tb.UpdateItem(ctx, table.UpdateItemInput{TableName: "own", Key: key, UpdateExpression: "SET m2 = :m",
		WriteExpr: table.WriteExpr{ExpressionAttributeValues: table.Item{":m": m2}}}); err != nil {
		t.Fatal(err)
	}
	vandalize(table.Item{"m": m2})
	if got := get(t, tb, "own", key)["m2"]; !reflect.DeepEqual(got, copyBase("a")["m"]) {
		t.Fatalf("after a caller changed its UpdateItem's ExpressionAttributeValues, the table holds m2 = %v", got)
	}
	if _, err := tb.UpdateItem(ctx, table.UpdateItemInput{TableName: "own", Key: key, UpdateExpression: "REMOVE m2"}); err != nil {
		t.Fatal(err)
	}
	check("UpdateItem's ExpressionAttributeValues")

	_, err = tb.PutItem(ctx, table.PutItemInput{TableName: "own", Item: copyBase("a"),
		WriteExpr: table.WriteExpr{ConditionExpression: "attribute_not_exists(pk)", ReturnValuesOnConditionCheckFailure: "ALL_OLD"}})
	var ccf *table.ConditionalCheckFailedError
	if !errors.As(err, &ccf) || ccf.Item == nil {
		t.Fatalf("PutItem: %v, want ConditionalCheckFailedError with the item", err)
	}
	vandalize(ccf.Item)
	check("ConditionalCheckFailedError.Item")

	err = tb.TransactWriteItems(ctx, table.TransactWriteItemsInput{TransactItems: []table.TransactWriteItem{
		{Put: &table.TransactPut{TableName: "own", Item: copyBase("a"), WriteExpr: table.WriteExpr{ConditionExpression: "attribute_not_exists(pk)", ReturnValuesOnConditionCheckFailure: "ALL_OLD"}}},
	}})
	var tc *table.TransactionCanceledError
	if !errors.As(err, &tc) || tc.Reasons[0].Item == nil {
		t.Fatalf("TransactWriteItems: %v, want a cancellation with the item", err)
	}
	vandalize(tc.Reasons[0].Item)
	check("a CancellationReason's Item")

	// The stream record an in-process handler gets, built from the
	// table's ring of recent changes.
	tt, _ := tb.Table("own")
	n := 0
	for _, rec := range logRecords(t, tb, "own") {
		idx, _ := strconv.Atoi(strings.TrimPrefix(rec.ShardID, "shardId-"))
		c := tt.RecentChange(idx, rec.Seq)
		if c == nil {
			continue
		}
		n++
		ev := table.EventRecord(&rec, c, "us-east-1", "arn:stream")
		vandalize(ev.Change.NewImage)
		vandalize(ev.Change.OldImage)
		ev.Change.Keys["pk"] = S("changed")
	}
	if n == 0 {
		t.Fatal("no change in the ring of recent changes")
	}
	check("EventRecord (a stream record's images)")

	// Nothing damaged reaches the log through a later, unrelated write.
	if _, err := tb.UpdateItem(ctx, table.UpdateItemInput{TableName: "own", Key: key, UpdateExpression: "SET w = :w",
		WriteExpr: table.WriteExpr{ExpressionAttributeValues: table.Item{":w": S("x")}}}); err != nil {
		t.Fatal(err)
	}
	cs := changes(t, tb, "own")
	last := cs[len(cs)-1]
	delete(last.NewImage, "w")
	if !reflect.DeepEqual(last.OldImage, copyBase("a")) || !reflect.DeepEqual(last.NewImage, copyBase("a")) {
		t.Fatalf("the next write logged OldImage %v NewImage %v (without w), want %v", last.OldImage, last.NewImage, copyBase("a"))
	}
}
