package awsapi_test

import (
	"testing"

	"github.com/runnel-dev/runnel/awsapi"
	"github.com/runnel-dev/runnel/internal/testenv"
)

// TestTransactEmptyExpressionAttributeMapsAreRefused: an empty
// ExpressionAttributeValues {} on a TransactWriteItems action (Put,
// Update, Delete, ConditionCheck) is a ValidationException
// "ExpressionAttributeValues must not be empty", an empty
// ExpressionAttributeNames {} (also on a TransactGetItems Get)
// "ExpressionAttributeNames must not be empty", reported before an
// expression that does not parse, and nothing is written. Source: moto
// tests/test_dynamodb/exceptions/test_dynamodb_transactions.py::
// test_transact_write_items__empty_expr_attr_values (aws_verified), as
// PutItem and the other single-item operations answer. Before, the
// action ran and its write happened.
func TestTransactEmptyExpressionAttributeMapsAreRefused(t *testing.T) {
	h := awsapi.NewHandler(testenv.Start(t, testenv.Options{}), awsapi.Options{})
	if status, body := rawCall(h, "DynamoDB_20120810.CreateTable", `{"TableName":"txn","AttributeDefinitions":[{"AttributeName":"pk","AttributeType":"S"}],`+
		`"KeySchema":[{"AttributeName":"pk","KeyType":"HASH"}],"BillingMode":"PAY_PER_REQUEST"}`); status != 200 {
		t.Fatalf("CreateTable: %d %v", status, body)
	}
	const values, names = "ExpressionAttributeValues must not be empty", "ExpressionAttributeNames must not be empty"
	for _, tt := range []struct{ target, action, message string }{
		{"TransactWriteItems", `{"Put":{"TableName":"txn","Item":{"pk":{"S":"a"}},"ConditionExpression":"attribute_not_exists(pk)","ExpressionAttributeValues":{}}}`, values},
		{"TransactWriteItems", `{"Put":{"TableName":"txn","Item":{"pk":{"S":"a"}},"ConditionExpression":"attribute_not_exists(pk)","ExpressionAttributeNames":{}}}`, names},
		{"TransactWriteItems", `{"Update":{"TableName":"txn","Key":{"pk":{"S":"a"}},"UpdateExpression":"SET v = :v","ExpressionAttributeValues":{}}}`, values},
		{"TransactWriteItems", `{"Update":{"TableName":"txn","Key":{"pk":{"S":"a"}},"UpdateExpression":"SET","ExpressionAttributeValues":{}}}`, values},
		{"TransactWriteItems", `{"Update":{"TableName":"txn","Key":{"pk":{"S":"a"}},"UpdateExpression":"SET v = :v","ExpressionAttributeNames":{},"ExpressionAttributeValues":{}}}`, names},
		{"TransactWriteItems", `{"Delete":{"TableName":"txn","Key":{"pk":{"S":"a"}},"ConditionExpression":"attribute_not_exists(pk)","ExpressionAttributeValues":{}}}`, values},
		{"TransactWriteItems", `{"ConditionCheck":{"TableName":"txn","Key":{"pk":{"S":"b"}},"ConditionExpression":"attribute_not_exists(pk)","ExpressionAttributeNames":{}}}`, names},
		{"TransactGetItems", `{"Get":{"TableName":"txn","Key":{"pk":{"S":"a"}},"ProjectionExpression":"pk","ExpressionAttributeNames":{}}}`, names},
	} {
		body := `{"TransactItems":[` + tt.action + `]}`
		if tt.target == "TransactWriteItems" {
			// a later action: the check covers every one
			body = `{"TransactItems":[{"Put":{"TableName":"txn","Item":{"pk":{"S":"other"}}}},` + tt.action + `]}`
		}
		status, got := rawCall(h, "DynamoDB_20120810."+tt.target, body)
		want := map[string]any{"__type": "com.amazon.coral.validate#ValidationException", "message": tt.message}
		if status != 400 || !equalJSON(got, want) {
			t.Errorf("%s %s: %d %v, want %q", tt.target, tt.action, status, got, tt.message)
		}
	}
	for _, k := range []string{"a", "other"} {
		if status, got := rawCall(h, "DynamoDB_20120810.GetItem", `{"TableName":"txn","Key":{"pk":{"S":"`+k+`"}}}`); status != 200 || got["Item"] != nil {
			t.Errorf("a refused transaction wrote %s: %d %v", k, status, got)
		}
	}
}

// TestTransactWrongTypedKeyIsACancellationOnTheWire: a TransactWriteItems
// Put whose table key is of the wrong type is answered
// TransactionCanceledException, its CancellationReasons [{"Code":
// "ValidationError","Message":"One or more parameter values were invalid:
// Type mismatch for key pk expected: S actual: N"}]; a TransactGetItems Get
// with an empty Key likewise, its reason "The provided key element does not
// match the schema". Source: paritysuite/dynamodb-conformance
// tests/tier3/error-messages/transactWriteItems.test.ts and
// transactGetItems.test.ts, captured against AWS. Before, both were a
// ValidationException of the request.
func TestTransactWrongTypedKeyIsACancellationOnTheWire(t *testing.T) {
	h := awsapi.NewHandler(testenv.Start(t, testenv.Options{}), awsapi.Options{})
	if status, body := rawCall(h, "DynamoDB_20120810.CreateTable", `{"TableName":"txn","AttributeDefinitions":[{"AttributeName":"pk","AttributeType":"S"}],`+
		`"KeySchema":[{"AttributeName":"pk","KeyType":"HASH"}],"BillingMode":"PAY_PER_REQUEST"}`); status != 200 {
		t.Fatalf("CreateTable: %d %v", status, body)
	}
	for _, tt := range []struct{ target, body, message string }{
		{"TransactWriteItems", `{"TransactItems":[{"Put":{"TableName":"txn","Item":{"pk":{"N":"5"}}}}]}`,
			"One or more parameter values were invalid: Type mismatch for key pk expected: S actual: N"},
		{"TransactGetItems", `{"TransactItems":[{"Get":{"TableName":"txn","Key":{}}}]}`, "The provided key element does not match the schema"},
	} {
		status, got := rawCall(h, "DynamoDB_20120810."+tt.target, tt.body)
		want := map[string]any{"__type": "com.amazonaws.dynamodb.v20120810#TransactionCanceledException",
			"Message":             "Transaction cancelled, please refer cancellation reasons for specific reasons [ValidationError]",
			"CancellationReasons": []any{map[string]any{"Code": "ValidationError", "Message": tt.message}}}
		if status != 400 || !equalJSON(got, want) {
			t.Errorf("%s %s: %d %v, want %v", tt.target, tt.body, status, got, want)
		}
	}
}
