package table_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/table"
)

// txAdd is a TransactWriteItem that adds v to the item k's attribute v of
// the table "txn".
func txAdd(k, v string) table.TransactWriteItem {
	return table.TransactWriteItem{Update: &table.TransactUpdate{TableName: "txn", Key: table.Item{"pk": S(k)},
		UpdateExpression: "ADD v :v", WriteExpr: table.WriteExpr{ExpressionAttributeValues: table.Item{":v": N(v)}}}}
}

// startTx starts a runnel with the table "txn" (hash key pk).
func startTx(t *testing.T, o testenv.Options) *table.Service {
	t.Helper()
	tb := testenv.Start(t, o).Tables
	createTable(t, tb, "txn", "", "")
	return tb
}

// cancelReasons runs the transaction, which must be cancelled, and
// returns its reasons' codes.
func cancelReasons(t *testing.T, tb *table.Service, items ...table.TransactWriteItem) []table.CancellationReason {
	t.Helper()
	err := tb.TransactWriteItems(ctx, table.TransactWriteItemsInput{TransactItems: items})
	var tce *table.TransactionCanceledError
	if !errors.As(err, &tce) || len(tce.Reasons) != len(items) {
		t.Fatalf("want TransactionCanceledException with %d reasons, got %v", len(items), err)
	}
	return tce.Reasons
}

// txValue is the item k's v in "txn" ("" when there is no item).
func txValue(t *testing.T, tb *table.Service, k string) string {
	t.Helper()
	v, ok := get(t, tb, "txn", table.Item{"pk": S(k)})["v"]
	if !ok {
		return ""
	}
	return v.Number()
}

// TestClientRequestTokenIsAtMost36Characters: a ClientRequestToken of 36
// characters is accepted, one of 37 is a ValidationException
// (API_TransactWriteItems: length 1..36) and nothing is written.
func TestClientRequestTokenIsAtMost36Characters(t *testing.T) {
	tb := startTx(t, testenv.Options{})
	tok := strings.Repeat("t", 36)
	if err := tb.TransactWriteItems(ctx, table.TransactWriteItemsInput{TransactItems: []table.TransactWriteItem{txAdd("a", "1")}, ClientRequestToken: tok}); err != nil {
		t.Fatalf("36-character token: %v", err)
	}
	err := tb.TransactWriteItems(ctx, table.TransactWriteItemsInput{TransactItems: []table.TransactWriteItem{txAdd("b", "1")}, ClientRequestToken: tok + "t"})
	wantError(t, err, awserr.ErrValidation, "at 'clientRequestToken' failed to satisfy constraint: Member must have length less than or equal to 36")
	if v := txValue(t, tb, "b"); v != "" {
		t.Fatalf("a refused transaction wrote b.v = %s", v)
	}
}

// TestTransactActionHasExactlyOneOperation: an action with none or two of
// ConditionCheck, Put, Update and Delete, or a ConditionCheck without a
// ConditionExpression, is a ValidationException naming the action by its
// 1-based position, and nothing is written.
func TestTransactActionHasExactlyOneOperation(t *testing.T) {
	tb := startTx(t, testenv.Options{})
	put := &table.TransactPut{TableName: "txn", Item: table.Item{"pk": S("p")}}
	del := &table.TransactDelete{TableName: "txn", Key: table.Item{"pk": S("q")}}
	for name, c := range map[string]struct {
		second table.TransactWriteItem
		msg    string
	}{
		"none":         {table.TransactWriteItem{}, "The action or operation requested is invalid. Verify that the action is typed correctly."},
		"put+delete":   {table.TransactWriteItem{Put: put, Delete: del}, "transactItems.2: exactly one of"},
		"check+put":    {table.TransactWriteItem{ConditionCheck: &table.ConditionCheck{TableName: "txn", Key: table.Item{"pk": S("c")}, WriteExpr: table.WriteExpr{ConditionExpression: "attribute_exists(pk)"}}, Put: put}, "transactItems.2: exactly one of"},
		"update+put":   {table.TransactWriteItem{Update: txAdd("u", "1").Update, Put: put}, "transactItems.2: exactly one of"},
		"no condition": {table.TransactWriteItem{ConditionCheck: &table.ConditionCheck{TableName: "txn", Key: table.Item{"pk": S("c")}}}, "transactItems.2.conditionCheck.conditionExpression: must not be empty"},
	} {
		err := tb.TransactWriteItems(ctx, table.TransactWriteItemsInput{TransactItems: []table.TransactWriteItem{txAdd("a", "1"), c.second}})
		if !errors.Is(err, awserr.ErrValidation) || !strings.Contains(err.Error(), c.msg) {
			t.Fatalf("%s: %v, want ValidationException %q", name, err, c.msg)
		}
	}
	if n := len(changes(t, tb, "txn")); n != 0 {
		t.Fatalf("refused transactions wrote %d changes", n)
	}
	for _, it := range []table.TransactWriteItem{
		{Put: &table.TransactPut{TableName: "nope", Item: table.Item{"pk": S("p")}}},
		{Update: &table.TransactUpdate{TableName: "nope", Key: table.Item{"pk": S("p")}, UpdateExpression: "SET v = :v", WriteExpr: table.WriteExpr{ExpressionAttributeValues: table.Item{":v": N("1")}}}},
		{Delete: &table.TransactDelete{TableName: "nope", Key: table.Item{"pk": S("p")}}},
		{ConditionCheck: &table.ConditionCheck{TableName: "nope", Key: table.Item{"pk": S("p")}, WriteExpr: table.WriteExpr{ConditionExpression: "attribute_exists(pk)"}}},
	} {
		err := tb.TransactWriteItems(ctx, table.TransactWriteItemsInput{TransactItems: []table.TransactWriteItem{txAdd("a", "1"), it}})
		wantError(t, err, awserr.ErrResourceNotFound, "nope")
	}
}

// TestTransactConditionCheckWritesNothing: a ConditionCheck that holds
// lets the other actions apply and neither changes nor deletes its own
// item; a Delete in the same transaction deletes; the table's change log
// holds exactly the writes.
func TestTransactConditionCheckWritesNothing(t *testing.T) {
	tb := startTx(t, testenv.Options{})
	for _, k := range []string{"checked", "gone"} {
		if _, err := tb.PutItem(ctx, table.PutItemInput{TableName: "txn", Item: table.Item{"pk": S(k), "v": N("5")}}); err != nil {
			t.Fatal(err)
		}
	}
	err := tb.TransactWriteItems(ctx, table.TransactWriteItemsInput{TransactItems: []table.TransactWriteItem{
		{ConditionCheck: &table.ConditionCheck{TableName: "txn", Key: table.Item{"pk": S("checked")}, WriteExpr: table.WriteExpr{ConditionExpression: "v = :five", ExpressionAttributeValues: table.Item{":five": N("5")}}}},
		{Delete: &table.TransactDelete{TableName: "txn", Key: table.Item{"pk": S("gone")}}},
		txAdd("added", "2"),
	}})
	if err != nil {
		t.Fatal(err)
	}
	if v := txValue(t, tb, "checked"); v != "5" {
		t.Fatalf("checked.v = %q after its ConditionCheck, want 5", v)
	}
	if it := get(t, tb, "txn", table.Item{"pk": S("gone")}); it != nil {
		t.Fatalf("deleted item still there: %v", it)
	}
	if v := txValue(t, tb, "added"); v != "2" {
		t.Fatalf("added.v = %q, want 2", v)
	}
	var events []string
	for _, c := range changes(t, tb, "txn") {
		events = append(events, c.EventName+" "+c.Keys["pk"].String())
	}
	if n := len(events); n != 4 { // two puts, then the delete and the insert
		t.Fatalf("change log %v, want 2 puts, 1 REMOVE and 1 INSERT", events)
	}
}

// TestTransactUpdateThatCannotApplyIsAValidationErrorReason: an Update
// whose expression cannot apply to the current item (ADD of a number to a
// string) cancels the transaction with reason ValidationError at its
// position, None elsewhere, and a failed condition with
// ReturnValuesOnConditionCheckFailure ALL_OLD carries the item; nothing
// is written.
func TestTransactUpdateThatCannotApplyIsAValidationErrorReason(t *testing.T) {
	tb := startTx(t, testenv.Options{})
	if _, err := tb.PutItem(ctx, table.PutItemInput{TableName: "txn", Item: table.Item{"pk": S("s"), "v": S("text")}}); err != nil {
		t.Fatal(err)
	}
	reasons := cancelReasons(t, tb, txAdd("a", "1"), txAdd("s", "1"),
		table.TransactWriteItem{Put: &table.TransactPut{TableName: "txn", Item: table.Item{"pk": S("s2")}, WriteExpr: table.WriteExpr{ConditionExpression: "attribute_exists(pk)"}}})
	if reasons[0].Code != "None" || reasons[1].Code != "ValidationError" || reasons[1].Message == "" || reasons[2].Code != "ConditionalCheckFailed" {
		t.Fatalf("reasons %+v, want None, ValidationError, ConditionalCheckFailed", reasons)
	}
	reasons = cancelReasons(t, tb, txAdd("a", "1"),
		table.TransactWriteItem{Delete: &table.TransactDelete{TableName: "txn", Key: table.Item{"pk": S("s")}, WriteExpr: table.WriteExpr{
			ConditionExpression:                 "v = :n",
			ExpressionAttributeValues:           table.Item{":n": N("1")},
			ReturnValuesOnConditionCheckFailure: "ALL_OLD",
		},
		}})
	if reasons[0].Code != "None" || reasons[1].Code != "ConditionalCheckFailed" || reasons[1].Item["v"].String() != "text" {
		t.Fatalf("reasons %+v, want None, then ConditionalCheckFailed with the item", reasons)
	}
	if v := txValue(t, tb, "a"); v != "" {
		t.Fatalf("cancelled transactions wrote a.v = %s", v)
	}
}

// TestClientRequestTokenOutlivesARestart: the token of a committed
// transaction is remembered across a restart for the rest of its 10
// minutes (through 10:00 after completion): the same call is answered
// without applying again, other parameters are refused; 1 ms later the
// token is new.
func TestClientRequestTokenOutlivesARestart(t *testing.T) {
	dir := t.TempDir()
	clock := clockwork.NewFakeClockAt(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	rn := testenv.Start(t, testenv.Options{Dir: dir, Clock: clock})
	tb := rn.Tables
	createTable(t, tb, "txn", "", "")
	in := table.TransactWriteItemsInput{TransactItems: []table.TransactWriteItem{txAdd("a", "1")}, ClientRequestToken: "tok"}
	if err := tb.TransactWriteItems(ctx, in); err != nil {
		t.Fatal(err)
	}
	rn.Crash()
	clock.Advance(table.TokenWindow)
	tb = testenv.Start(t, testenv.Options{Dir: dir, Clock: clock}).Tables
	if err := tb.TransactWriteItems(ctx, in); err != nil {
		t.Fatalf("same call 10:00 after, after a restart: %v", err)
	}
	if v := txValue(t, tb, "a"); v != "1" {
		t.Fatalf("a.v = %s: the remembered transaction was applied again", v)
	}
	other := table.TransactWriteItemsInput{TransactItems: []table.TransactWriteItem{txAdd("a", "2")}, ClientRequestToken: "tok"}
	if err := tb.TransactWriteItems(ctx, other); !errors.Is(err, awserr.ErrIdempotentParameterMismatch) {
		t.Fatalf("other parameters 10:00 after, after a restart: %v", err)
	}
	clock.Advance(time.Millisecond)
	if err := tb.TransactWriteItems(ctx, in); err != nil {
		t.Fatal(err)
	}
	if v := txValue(t, tb, "a"); v != "2" {
		t.Fatalf("a.v = %s after the window, want 2 (the token is new)", v)
	}
}

// TestEveryTokenIsReloadedAfterARestart: opening reads the whole
// transaction log back, however many commit records it holds (more than
// one read of 256), so the token of the last of 300 transactions is still
// remembered after a restart: its call is answered without applying again.
func TestEveryTokenIsReloadedAfterARestart(t *testing.T) {
	dir := t.TempDir()
	clock := clockwork.NewFakeClockAt(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	rn := testenv.Start(t, testenv.Options{Dir: dir, Clock: clock})
	createTable(t, rn.Tables, "txn", "", "")
	in := func(i int) table.TransactWriteItemsInput {
		return table.TransactWriteItemsInput{TransactItems: []table.TransactWriteItem{txAdd("a", "1")}, ClientRequestToken: fmt.Sprint("tok-", i)}
	}
	const n = 300
	for i := 0; i < n; i++ {
		if err := rn.Tables.TransactWriteItems(ctx, in(i)); err != nil {
			t.Fatal(err)
		}
	}
	rn.Crash()
	tb := testenv.Start(t, testenv.Options{Dir: dir, Clock: clock}).Tables
	for _, i := range []int{0, n - 1} {
		if err := tb.TransactWriteItems(ctx, in(i)); err != nil {
			t.Fatalf("token %d after the restart: %v", i, err)
		}
	}
	if v := txValue(t, tb, "a"); v != fmt.Sprint(n) {
		t.Fatalf("a.v = %s after replaying two remembered tokens, want %d", v, n)
	}
}
