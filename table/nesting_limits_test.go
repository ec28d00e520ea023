package table_test

import (
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/jonboulle/clockwork"
	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/table"
)

// The refusals of a value nested past 32 levels, as a conformance suite
// recorded them against AWS (us-east-1, eu-west-2 and three more regions).
const (
	nestBare   = "Nesting Levels have exceeded supported limits: Attributes in the item have nested levels beyond supported limit"
	nestSingle = "1 validation error detected: " + nestBare
	nestReason = "Nesting Levels have exceeded supported limits"
)

func nestForKey(k string) string {
	return "ExpressionAttributeValues contains invalid value: " + nestBare + " for key " + k
}

// nestedMap wraps a string leaf in n single-key maps ({"n": ...}).
func nestedMap(n int) events.DynamoDBAttributeValue {
	v := S("leaf")
	for range n {
		v = events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{"n": v})
	}
	return v
}

// nestedList wraps a string leaf in n single-element lists.
func nestedList(n int) events.DynamoDBAttributeValue {
	v := S("leaf")
	for range n {
		v = events.NewListAttribute([]events.DynamoDBAttributeValue{v})
	}
	return v
}

// wantNestRefused fails unless err is a ValidationException with message
// want.
func wantNestRefused(t *testing.T, what string, err error, want string) {
	t.Helper()
	var e *awserr.Error
	if !errors.As(err, &e) || e.Code != "ValidationException" || e.Message != want {
		t.Errorf("%s: got %v; want ValidationException %q", what, err, want)
	}
}

// TestAnItemNestsAtMost32Levels: DynamoDB supports nested attributes up
// to 32 levels deep (Constraints page; SPEC-fanout-tables.md §4.6), the
// attribute's own value being level 1: a conformance suite recorded
// against AWS accepts a value inside 31 maps (or lists) and refuses one
// inside 32 — PutItem with "1 validation error detected: Nesting Levels
// have exceeded supported limits: Attributes in the item have nested
// levels beyond supported limit" (the bare sentence past 61 levels),
// BatchWriteItem and a TransactWriteItems Put with the bare sentence.
// Before, every write stored items nested 32 to 70 levels deep, which
// the change log's decoder (64 levels) then could not read: the process
// could not open the table again, Streams answered 500.
func TestAnItemNestsAtMost32Levels(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	tb := rn.Tables
	createTable(t, tb, "nest", "", table.ViewNewAndOldImages)
	for _, shape := range []struct {
		name string
		wrap func(int) events.DynamoDBAttributeValue
	}{{"maps", nestedMap}, {"lists", nestedList}} {
		put := func(n int) error {
			_, err := tb.PutItem(ctx, table.PutItemInput{TableName: "nest", Item: table.Item{"pk": S("p-" + shape.name), "data": shape.wrap(n)}})
			return err
		}
		if err := put(31); err != nil {
			t.Errorf("PutItem of a value inside 31 %s: %v; want it stored", shape.name, err)
		}
		wantNestRefused(t, "PutItem inside 32 "+shape.name, put(32), nestSingle)
		wantNestRefused(t, "PutItem inside 61 "+shape.name, put(61), nestSingle)
		wantNestRefused(t, "PutItem inside 63 "+shape.name, put(63), nestBare)

		batch := func(n int) error {
			_, err := tb.BatchWriteItem(ctx, table.BatchWriteItemInput{RequestItems: map[string][]table.WriteRequest{"nest": {
				{PutRequest: &table.PutRequest{Item: table.Item{"pk": S("b-" + shape.name), "data": shape.wrap(n)}}}}}})
			return err
		}
		if err := batch(31); err != nil {
			t.Errorf("BatchWriteItem of a value inside 31 %s: %v; want it stored", shape.name, err)
		}
		wantNestRefused(t, "BatchWriteItem inside 32 "+shape.name, batch(32), nestBare)

		transact := func(n int) error {
			return tb.TransactWriteItems(ctx, table.TransactWriteItemsInput{TransactItems: []table.TransactWriteItem{
				{Put: &table.TransactPut{TableName: "nest", Item: table.Item{"pk": S("t-" + shape.name), "data": shape.wrap(n)}}}}})
		}
		if err := transact(31); err != nil {
			t.Errorf("TransactWriteItems Put of a value inside 31 %s: %v; want it stored", shape.name, err)
		}
		wantNestRefused(t, "TransactWriteItems Put inside 32 "+shape.name, transact(32), nestBare)
	}
	for _, pk := range []string{"p-maps", "b-lists", "t-maps"} {
		out, err := tb.GetItem(ctx, table.GetItemInput{TableName: "nest", Key: table.Item{"pk": S(pk)}})
		if err != nil || out.Item == nil {
			t.Errorf("GetItem %s: %v, %v; want the 31-level item", pk, out, err)
		}
	}
}

// TestAnUpdateCannotNestTheItemPast32Levels: what an UpdateItem makes of
// the item obeys the same 32-level limit (Constraints page), whichever
// path nests it deeper: a SET into the leaf of a 31-level map (or list)
// that puts a map (or list) there is refused, one level less is stored.
// In TransactWriteItems the update cancels, its reason ValidationError
// "Nesting Levels have exceeded supported limits" (the suite recorded
// against AWS, 30 regions). Before, the update was stored.
func TestAnUpdateCannotNestTheItemPast32Levels(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	tb := rn.Tables
	createTable(t, tb, "nest", "", table.ViewNewAndOldImages)
	if _, err := tb.PutItem(ctx, table.PutItemInput{TableName: "nest", Item: table.Item{"pk": S("a"), "m": nestedMap(31), "l": nestedList(31)}}); err != nil {
		t.Fatal(err)
	}
	leafOfMap := "m" + strings.Repeat(".n", 31)   // level 32
	leafOfList := "l" + strings.Repeat("[0]", 31) // level 32
	parentOfMap := "m" + strings.Repeat(".n", 30) // level 31
	update := func(expr string, v events.DynamoDBAttributeValue) error {
		_, err := tb.UpdateItem(ctx, table.UpdateItemInput{TableName: "nest", Key: table.Item{"pk": S("a")}, UpdateExpression: expr,
			WriteExpr: table.WriteExpr{ExpressionAttributeValues: table.Item{":v": v}}})
		return err
	}
	wantNestRefused(t, "SET a map into the 32nd level of a map", update("SET "+leafOfMap+" = :v", nestedMap(1)), nestReason)
	wantNestRefused(t, "SET a list into the 32nd level of a list", update("SET "+leafOfList+" = :v", nestedList(1)), nestReason)
	if err := update("SET "+parentOfMap+".x = :v", S("x")); err != nil {
		t.Errorf("SET of a scalar at level 32: %v; want it stored", err)
	}
	if err := update("SET "+leafOfList+" = :v", S("y")); err != nil {
		t.Errorf("SET of a scalar at level 32 of a list: %v; want it stored", err)
	}
	err := tb.TransactWriteItems(ctx, table.TransactWriteItemsInput{TransactItems: []table.TransactWriteItem{
		{Update: &table.TransactUpdate{TableName: "nest", Key: table.Item{"pk": S("b")}, UpdateExpression: "SET deep = :deep",
			WriteExpr: table.WriteExpr{ExpressionAttributeValues: table.Item{":deep": nestedMap(32)}}}}}})
	var tc *table.TransactionCanceledError
	if !errors.As(err, &tc) || len(tc.Reasons) != 1 || tc.Reasons[0].Code != "ValidationError" || tc.Reasons[0].Message != nestReason {
		t.Errorf("TransactWriteItems SET of a value inside 32 maps: %v; want cancelled, reason ValidationError %q", err, nestReason)
	}
	out, err := tb.GetItem(ctx, table.GetItemInput{TableName: "nest", Key: table.Item{"pk": S("b")}})
	if err != nil || out.Item != nil {
		t.Errorf("the cancelled transaction's item: %v, %v; want none", out, err)
	}
}

// TestExpressionAttributeValuesNestAtMost32Levels: an
// ExpressionAttributeValues value of PutItem, UpdateItem or DeleteItem is
// refused past 32 levels before anything is evaluated ("1 validation
// error detected: Nesting Levels ...", and past 61 levels
// "ExpressionAttributeValues contains invalid value: Nesting Levels ...
// for key :deep"); a transaction's, one level later (a value inside 32
// maps is compared, so the condition fails; inside 33 the transaction is
// refused naming the key). The suite recorded against AWS (us-east-1,
// eu-west-2). Before, any depth was compared, and stored by a SET.
func TestExpressionAttributeValuesNestAtMost32Levels(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	tb := rn.Tables
	createTable(t, tb, "nest", "", table.ViewNewAndOldImages)
	if _, err := tb.PutItem(ctx, table.PutItemInput{TableName: "nest", Item: table.Item{"pk": S("a"), "marker": S("x")}}); err != nil {
		t.Fatal(err)
	}
	cond := func(n int) table.WriteExpr {
		return table.WriteExpr{ConditionExpression: "#d = :deep", ExpressionAttributeNames: map[string]string{"#d": "data"},
			ExpressionAttributeValues: table.Item{":deep": nestedMap(n)}}
	}
	update := func(n int) error {
		_, err := tb.UpdateItem(ctx, table.UpdateItemInput{TableName: "nest", Key: table.Item{"pk": S("a")}, UpdateExpression: "REMOVE gone", WriteExpr: cond(n)})
		return err
	}
	if err := update(31); !errors.Is(err, awserr.ErrConditionalCheckFailed) {
		t.Errorf("UpdateItem comparing a value inside 31 maps: %v; want the condition evaluated and false", err)
	}
	wantNestRefused(t, "UpdateItem value inside 32 maps", update(32), nestSingle)
	wantNestRefused(t, "UpdateItem value inside 63 maps", update(63), nestForKey(":deep"))
	_, err := tb.DeleteItem(ctx, table.DeleteItemInput{TableName: "nest", Key: table.Item{"pk": S("a")}, WriteExpr: cond(32)})
	wantNestRefused(t, "DeleteItem value inside 32 maps", err, nestSingle)
	_, err = tb.PutItem(ctx, table.PutItemInput{TableName: "nest", Item: table.Item{"pk": S("a")}, WriteExpr: cond(32)})
	wantNestRefused(t, "PutItem value inside 32 maps", err, nestSingle)

	check := func(n int) error {
		return tb.TransactWriteItems(ctx, table.TransactWriteItemsInput{TransactItems: []table.TransactWriteItem{
			{ConditionCheck: &table.ConditionCheck{TableName: "nest", Key: table.Item{"pk": S("a")}, WriteExpr: cond(n)}}}})
	}
	var tc *table.TransactionCanceledError
	if err := check(32); !errors.As(err, &tc) || tc.Reasons[0].Code != "ConditionalCheckFailed" {
		t.Errorf("ConditionCheck comparing a value inside 32 maps: %v; want cancelled on the condition", err)
	}
	wantNestRefused(t, "ConditionCheck value inside 33 maps", check(33), nestForKey(":deep"))
	out, err := tb.GetItem(ctx, table.GetItemInput{TableName: "nest", Key: table.Item{"pk": S("a")}})
	if err != nil || out.Item["marker"].String() != "x" {
		t.Errorf("the item after the refused writes: %v, %v; want it unchanged", out, err)
	}
}

// reopenable starts a runnel on its own data directory, logging to buf,
// and returns a function that crashes it and opens the directory again.
func reopenable(t *testing.T, buf *testenv.LogBuffer) (*runnel.Runnel, func(*runnel.Runnel) *runnel.Runnel) {
	t.Helper()
	testenv.NeedsEmbedded(t, "a crash and reopen of the one process serving the tables, inspected in that process")
	dir := t.TempDir()
	clock := clockwork.NewFakeClockAt(time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC))
	opts := testenv.Options{Dir: dir, Clock: clock, Logger: slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelInfo}))}
	return testenv.Start(t, opts), func(old *runnel.Runnel) *runnel.Runnel {
		old.Crash()
		return testenv.Start(t, opts)
	}
}

// TestAnItemStoredPastTheLimitStillOpens: items nested deeper than 32
// levels that were stored before writes refused them stay readable: the
// change log's decoder follows far deeper nesting than the write limit
// (10000 levels, above anything the JSON API could store). Before, its
// bound was 64 levels, and one record of an item nested 70 levels kept
// the table from opening ("rebuild index: table: change record is
// truncated or malformed"), so the process did not start.
func TestAnItemStoredPastTheLimitStillOpens(t *testing.T) {
	var buf testenv.LogBuffer
	rn, reopen := reopenable(t, &buf)
	createTable(t, rn.Tables, "deep", "", table.ViewNewAndOldImages)
	createTable(t, rn.Tables, "deeprk", "sk", table.ViewNewAndOldImages)
	table.PlantChange(t, rn.Tables, "deep", table.Item{"pk": S("d"), "data": nestedMap(70)}, nil)
	table.PlantChange(t, rn.Tables, "deeprk", table.Item{"pk": S("d"), "sk": N("1"), "data": nestedList(70)}, nil)
	rn = reopen(rn)
	for _, c := range []struct {
		name string
		key  table.Item
	}{{"deep", table.Item{"pk": S("d")}}, {"deeprk", table.Item{"pk": S("d"), "sk": N("1")}}} {
		out, err := rn.Tables.GetItem(ctx, table.GetItemInput{TableName: c.name, Key: c.key})
		if err != nil || out.Item == nil {
			t.Errorf("%s: GetItem of the 70-level item after the open: %v, %v; want it", c.name, out, err)
		}
	}
	if _, err := rn.Tables.PutItem(ctx, table.PutItemInput{TableName: "deeprk", Item: table.Item{"pk": S("n"), "sk": N("2")}}); err != nil {
		t.Errorf("a write after the open: %v", err)
	}
}

// TestAnUndecodableChangeRecordIsSkippedAtOpen: a change record the open
// cannot decode does not keep the table (and so the process) from
// opening: the index rebuild leaves it out, counts it and logs it with
// the item's key (its MD5, from the record's partition key) and the
// record's sequence number, at level ERROR; the table's other items are
// served. Before, one such record failed the open ("open runnel: table
// deep: rebuild index: table: change record is truncated or malformed").
func TestAnUndecodableChangeRecordIsSkippedAtOpen(t *testing.T) {
	var buf testenv.LogBuffer
	rn, reopen := reopenable(t, &buf)
	createTable(t, rn.Tables, "bad", "sk", table.ViewNewAndOldImages)
	if _, err := rn.Tables.PutItem(ctx, table.PutItemInput{TableName: "bad", Item: table.Item{"pk": S("ok"), "sk": N("1"), "v": S("x")}}); err != nil {
		t.Fatal(err)
	}
	table.PlantChange(t, rn.Tables, "bad", table.Item{"pk": S("broken"), "sk": N("1")}, []byte{0xB1, 0xFF, 0xFF})
	var seq, itemKey string
	for _, r := range logRecords(t, rn.Tables, "bad") {
		if len(r.Data) == 3 && r.Data[0] == 0xB1 {
			seq, itemKey = r.SequenceNumber, table.ItemKeyOf(r.PartitionKey)
		}
	}
	if seq == "" {
		t.Fatal("the planted record is not in the log")
	}
	rn = reopen(rn)
	out, err := rn.Tables.GetItem(ctx, table.GetItemInput{TableName: "bad", Key: table.Item{"pk": S("ok"), "sk": N("1")}})
	if err != nil || out.Item["v"].String() != "x" {
		t.Errorf("the good item after the open: %v, %v; want it", out, err)
	}
	out, err = rn.Tables.GetItem(ctx, table.GetItemInput{TableName: "bad", Key: table.Item{"pk": S("broken"), "sk": N("1")}})
	if err != nil || out.Item != nil {
		t.Errorf("the item of the skipped record: %v, %v; want none (as before that record)", out, err)
	}
	if n := table.SkippedAtOpen(t, rn.Tables, "bad"); n != 1 {
		t.Errorf("records skipped at open: %d; want 1", n)
	}
	logged := buf.String()
	found := false
	for _, line := range strings.Split(logged, "\n") {
		if strings.Contains(line, "skipped a change record") && strings.Contains(line, "level=ERROR") &&
			strings.Contains(line, "itemKey="+itemKey) && strings.Contains(line, "sequence="+seq) {
			found = true
		}
	}
	if !found {
		t.Errorf("no ERROR line naming item key %s and sequence %s in the log:\n%s", itemKey, seq, logged)
	}
}
