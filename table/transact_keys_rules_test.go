package table_test

import (
	"errors"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/table"
)

const (
	msgKeySchema = "The provided key element does not match the schema"
	msgEmptyKey  = "One or more parameter values are not valid. The AttributeValue for a key attribute cannot contain an empty string value. Key: pk"
)

// wantKeyCancel runs the transaction, which must be cancelled with
// ValidationError msg at action bad and None elsewhere, writing nothing
// to "txn"'s item "ok".
func wantKeyCancel(t *testing.T, tb *table.Service, bad int, msg string, items ...table.TransactWriteItem) {
	t.Helper()
	reasons := cancelReasons(t, tb, items...)
	for i, r := range reasons {
		want := table.CancellationReason{Code: "None"}
		if i == bad {
			want = table.CancellationReason{Code: "ValidationError", Message: msg}
		}
		if r.Code != want.Code || r.Message != want.Message {
			t.Fatalf("reason %d: %+v, want %+v (all: %+v)", i, r, want, reasons)
		}
	}
	if it := get(t, tb, "txn", table.Item{"pk": S("ok")}); it != nil {
		t.Fatalf("a cancelled transaction wrote %v", it)
	}
}

// TestTransactWriteWrongTypedKeyCancelsTheTransaction: a TransactWriteItems
// action whose table key is of the wrong type cancels the transaction
// (TransactionCanceledException, that action's reason ValidationError, the
// others None): a Put's reason "One or more parameter values were invalid:
// Type mismatch for key pk expected: S actual: N", an Update's, Delete's
// or ConditionCheck's Key "The provided key element does not match the
// schema". An empty string key value stays a ValidationException of the
// whole request, "One or more parameter values are not valid. The
// AttributeValue for a key attribute cannot contain an empty string value.
// Key: pk"; an expression that does not parse, on any action, is reported
// before the cancellation. Source: paritysuite/dynamodb-conformance
// tests/tier3/error-messages/transactWriteItems.test.ts and
// tests/tier3/validation-ordering/transactions.test.ts, captured against
// AWS. Before, a wrong-typed key was a top-level ValidationException ("The
// provided key element does not match the schema" for a Put too), and an
// Update's, Delete's or ConditionCheck's empty key value read "One or more
// parameter values were invalid: ...".
func TestTransactWriteWrongTypedKeyCancelsTheTransaction(t *testing.T) {
	tb := startTx(t, testenv.Options{})
	ok := table.TransactWriteItem{Put: &table.TransactPut{TableName: "txn", Item: table.Item{"pk": S("ok"), "v": N("1")}}}
	list := events.NewListAttribute([]events.DynamoDBAttributeValue{S("x")})
	put := func(k events.DynamoDBAttributeValue) table.TransactWriteItem {
		return table.TransactWriteItem{Put: &table.TransactPut{TableName: "txn", Item: table.Item{"pk": k, "v": N("1")}}}
	}
	update := func(k events.DynamoDBAttributeValue) table.TransactWriteItem {
		return table.TransactWriteItem{Update: &table.TransactUpdate{TableName: "txn", Key: table.Item{"pk": k}, UpdateExpression: "SET v = :v",
			WriteExpr: table.WriteExpr{ExpressionAttributeValues: table.Item{":v": N("1")}}}}
	}
	del := func(k events.DynamoDBAttributeValue) table.TransactWriteItem {
		return table.TransactWriteItem{Delete: &table.TransactDelete{TableName: "txn", Key: table.Item{"pk": k}}}
	}
	check := func(k events.DynamoDBAttributeValue) table.TransactWriteItem {
		return table.TransactWriteItem{ConditionCheck: &table.ConditionCheck{TableName: "txn", Key: table.Item{"pk": k},
			WriteExpr: table.WriteExpr{ConditionExpression: "attribute_not_exists(pk)"}}}
	}

	wantKeyCancel(t, tb, 0, "One or more parameter values were invalid: Type mismatch for key pk expected: S actual: N", put(N("5")))
	wantKeyCancel(t, tb, 1, "One or more parameter values were invalid: Type mismatch for key pk expected: S actual: L", ok, put(list))
	for name, action := range map[string]func(events.DynamoDBAttributeValue) table.TransactWriteItem{"Update": update, "Delete": del, "ConditionCheck": check} {
		t.Run(name, func(t *testing.T) {
			wantKeyCancel(t, tb, 0, msgKeySchema, action(N("5")))
			wantKeyCancel(t, tb, 1, msgKeySchema, ok, action(list))
			err := tb.TransactWriteItems(ctx, table.TransactWriteItemsInput{TransactItems: []table.TransactWriteItem{ok, action(S(""))}})
			wantError(t, err, awserr.ErrValidation, msgEmptyKey)
		})
	}
	// A Key missing its attribute, or with another one, cancels too.
	wantKeyCancel(t, tb, 0, msgKeySchema, table.TransactWriteItem{Delete: &table.TransactDelete{TableName: "txn", Key: table.Item{}}})
	wantKeyCancel(t, tb, 0, msgKeySchema, table.TransactWriteItem{Delete: &table.TransactDelete{TableName: "txn", Key: table.Item{"pk": S("ok"), "x": S("y")}}})

	// Refused as a whole: a Put's empty key, and an expression that does
	// not parse on an action after the wrong-typed one.
	err := tb.TransactWriteItems(ctx, table.TransactWriteItemsInput{TransactItems: []table.TransactWriteItem{ok, put(S(""))}})
	wantError(t, err, awserr.ErrValidation, msgEmptyKey)
	syntax := table.TransactWriteItem{ConditionCheck: &table.ConditionCheck{TableName: "txn", Key: table.Item{"pk": S("cc")},
		WriteExpr: table.WriteExpr{ConditionExpression: "attribute_not_exists("}}}
	err = tb.TransactWriteItems(ctx, table.TransactWriteItemsInput{TransactItems: []table.TransactWriteItem{put(N("5")), syntax}})
	wantError(t, err, awserr.ErrValidation, "Invalid ConditionExpression: Syntax error")
	if it := get(t, tb, "txn", table.Item{"pk": S("ok")}); it != nil {
		t.Fatalf("a refused transaction wrote %v", it)
	}
}

// TestTransactGetKeyNotMatchingSchemaCancelsTheRead: a TransactGetItems Get
// whose Key does not match the table's key schema (empty, or a value of the
// wrong type) cancels the read (TransactionCanceledException, that Get's
// reason ValidationError "The provided key element does not match the
// schema", the others None), while an empty string key value stays a
// ValidationException of the whole request. Source:
// paritysuite/dynamodb-conformance
// tests/tier3/error-messages/transactGetItems.test.ts ("missing key
// attribute: action-level ValidationError surfaces as
// TransactionCanceledException"), captured against AWS. Before, it was a
// top-level ValidationException.
func TestTransactGetKeyNotMatchingSchemaCancelsTheRead(t *testing.T) {
	tb := startTx(t, testenv.Options{})
	okGet := table.TransactGetItem{Get: &table.TransactGet{TableName: "txn", Key: table.Item{"pk": S("a")}}}
	for name, k := range map[string]table.Item{"empty": {}, "wrong type": {"pk": N("5")}} {
		_, err := tb.TransactGetItems(ctx, table.TransactGetItemsInput{TransactItems: []table.TransactGetItem{okGet, {Get: &table.TransactGet{TableName: "txn", Key: k}}}})
		var tce *table.TransactionCanceledError
		if !errors.As(err, &tce) || len(tce.Reasons) != 2 || tce.Reasons[0].Code != "None" ||
			tce.Reasons[1].Code != "ValidationError" || tce.Reasons[1].Message != msgKeySchema {
			t.Fatalf("%s Key: %v, want cancelled [None, ValidationError %q]", name, err, msgKeySchema)
		}
	}
	_, err := tb.TransactGetItems(ctx, table.TransactGetItemsInput{TransactItems: []table.TransactGetItem{okGet, {Get: &table.TransactGet{TableName: "txn", Key: table.Item{"pk": S("")}}}}})
	wantError(t, err, awserr.ErrValidation, "cannot contain an empty string value. Key: pk")
	// A projection that does not parse is reported before the cancellation.
	_, err = tb.TransactGetItems(ctx, table.TransactGetItemsInput{TransactItems: []table.TransactGetItem{{Get: &table.TransactGet{TableName: "txn", Key: table.Item{}, ProjectionExpression: "!!!"}}}})
	wantError(t, err, awserr.ErrValidation, "Invalid ProjectionExpression: Syntax error")
}

// TestTransactPutEmptyIndexKeyIsRefusedUpFront: a TransactWriteItems Put
// whose value for a secondary index key attribute is an empty string is a
// ValidationException of the whole request, "One or more parameter values
// are not valid. A value specified for a secondary index key is not
// supported. The AttributeValue for a key attribute cannot contain an
// empty string value. IndexName: byOwner, IndexKey: owner", as
// BatchWriteItem refuses it; a value of the wrong type for the index key
// still cancels the transaction with reason ValidationError. Source:
// paritysuite/dynamodb-conformance PR #46, moto #5830 and #5873. Before,
// the empty string cancelled the transaction (reason ValidationError).
func TestTransactPutEmptyIndexKeyIsRefusedUpFront(t *testing.T) {
	tb := testenv.Start(t, testenv.Options{}).Tables
	createIndexed(t, tb)
	put := func(owner events.DynamoDBAttributeValue) []table.TransactWriteItem {
		return []table.TransactWriteItem{{Put: &table.TransactPut{TableName: "idx", Item: table.Item{"pk": S("p"), "sk": N("1"), "owner": owner}}}}
	}
	err := tb.TransactWriteItems(ctx, table.TransactWriteItemsInput{TransactItems: put(S(""))})
	wantError(t, err, awserr.ErrValidation, "One or more parameter values are not valid. A value specified for a secondary index key is not supported. "+
		"The AttributeValue for a key attribute cannot contain an empty string value. IndexName: byOwner, IndexKey: owner")
	if errors.Is(err, awserr.ErrTransactionCanceled) {
		t.Fatalf("an empty index key value cancelled the transaction: %v", err)
	}
	err = tb.TransactWriteItems(ctx, table.TransactWriteItemsInput{TransactItems: put(N("1"))})
	var tce *table.TransactionCanceledError
	if !errors.As(err, &tce) || tce.Reasons[0].Code != "ValidationError" {
		t.Fatalf("a wrong-typed index key value: %v, want cancelled with ValidationError", err)
	}
	if it := get(t, tb, "idx", table.Item{"pk": S("p"), "sk": N("1")}); it != nil {
		t.Fatalf("a refused transaction wrote %v", it)
	}
}
