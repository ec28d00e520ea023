package awsapi_test

// DynamoDB's wording, as dynalite's tests (recorded against AWS) expect
// it; see dynamodb_fidelity.go.

import (
	"encoding/json"
	"testing"

	"github.com/runnel-dev/runnel/awsapi"
	"github.com/runnel-dev/runnel/internal/testenv"
)

// rawCall sends body to target and returns the status and the error body
// as it is on the wire.
func rawCall(h *awsapi.Handler, target, body string) (int, map[string]any) {
	rec := &recorder{header: map[string][]string{}}
	h.ServeHTTP(rec, httpRequest("POST", "/", body, map[string]string{"X-Amz-Target": target, "Content-Type": "application/x-amz-json-1.0"}))
	var out map[string]any
	_ = json.Unmarshal(rec.body.Bytes(), &out)
	if rec.status == 0 {
		rec.status = 200
	}
	return rec.status, out
}

// TestDynamoDBErrorBodies: a ValidationException in the validation
// framework's namespace with "message", a SerializationException with
// "Message".
func TestDynamoDBErrorBodies(t *testing.T) {
	h := awsapi.NewHandler(testenv.Start(t, testenv.Options{}), awsapi.Options{})
	status, body := rawCall(h, "DynamoDB_20120810.ListTables", `{"Limit":0}`)
	want := map[string]any{"__type": "com.amazon.coral.validate#ValidationException",
		"message": "1 validation error detected: Value '0' at 'limit' failed to satisfy constraint: Member must have value greater than or equal to 1"}
	if status != 400 || !equalJSON(body, want) {
		t.Errorf("ListTables Limit 0: %d %v, want %v", status, body, want)
	}
	status, body = rawCall(h, "DynamoDB_20120810.ListTables", `{"Limit":true}`)
	want = map[string]any{"__type": "com.amazon.coral.service#SerializationException", "Message": "TRUE_VALUE cannot be converted to Integer"}
	if status != 400 || !equalJSON(body, want) {
		t.Errorf("ListTables Limit true: %d %v, want %v", status, body, want)
	}
}

// TestDynamoDBSerializationWording: a value of the wrong JSON type in
// DynamoDB's reader's words, which depend on where the value is.
func TestDynamoDBSerializationWording(t *testing.T) {
	h := awsapi.NewHandler(testenv.Start(t, testenv.Options{}), awsapi.Options{})
	for _, tt := range []struct{ target, body, message string }{
		{"DescribeTable", `{"TableName":34.56}`, "DECIMAL_VALUE cannot be converted to String"},
		{"DescribeTable", `{"TableName":false}`, "FALSE_VALUE cannot be converted to String"},
		{"DescribeTable", `{"TableName":[]}`, "Unrecognized collection type class java.lang.String"},
		{"DescribeTable", `{"TableName":{}}`, "Start of structure or map found where not expected"},
		{"ListTables", `{"Limit":[]}`, "Unrecognized collection type class java.lang.Integer"},
		{"GetItem", `{"ConsistentRead":"23"}`, "Unexpected token received from parser"},
		{"GetItem", `{"ConsistentRead":34.56}`, "DECIMAL_VALUE cannot be converted to Boolean"},
		{"GetItem", `{"AttributesToGet":"23"}`, "Unexpected field type"},
		{"GetItem", `{"AttributesToGet":{}}`, "Start of structure or map found where not expected"},
		{"GetItem", `{"Key":23}`, "Unexpected field type"},
		{"GetItem", `{"Key":[]}`, "Unrecognized collection type java.util.Map<java.lang.String, com.amazonaws.dynamodb.v20120810.AttributeValue>"},
		{"GetItem", `{"Key":{"a":true}}`, "Unexpected value type in payload"},
		{"GetItem", `{"Key":{"a":{"B":23}}}`, "only base-64-encoded strings are convertible to bytes"},
		{"GetItem", `{"Key":{"a":{"B":"23456"}}}`, "Base64 encoded length is expected a multiple of 4 bytes but found: 5"},
		{"GetItem", `{"Key":{"a":{"B":"=+/="}}}`, "Invalid last non-pad Base64 character dectected"},
		{"GetItem", `{"ExpressionAttributeNames":[]}`, "Unrecognized collection type java.util.Map<java.lang.String, java.lang.String>"},
		{"PutItem", `{"Expected":{"a":{"Value":true}}}`, "Unexpected field type"},
		{"PutItem", `{"Expected":{"a":[]}}`, "Unrecognized collection type class com.amazonaws.dynamodb.v20120810.ExpectedAttributeValue"},
		{"BatchWriteItem", `{"RequestItems":[]}`, "Unrecognized collection type java.util.Map<java.lang.String, java.util.List<com.amazonaws.dynamodb.v20120810.WriteRequest>>"},
		{"BatchWriteItem", `{"RequestItems":{"a":23}}`, "class sun.reflect.generics.reflectiveObjects.ParameterizedTypeImpl cannot be cast to class java.lang.Class " +
			"(sun.reflect.generics.reflectiveObjects.ParameterizedTypeImpl and java.lang.Class are in module java.base of loader 'bootstrap')"},
		{"TagResource", `{"Tags":[[]]}`, "Unrecognized collection type class com.amazonaws.dynamodb.v20120810.Tag"},
	} {
		status, body := rawCall(h, "DynamoDB_20120810."+tt.target, tt.body)
		want := map[string]any{"__type": "com.amazon.coral.service#SerializationException", "Message": tt.message}
		if status != 400 || !equalJSON(body, want) {
			t.Errorf("%s %s: %d %v, want %q", tt.target, tt.body, status, body, tt.message)
		}
	}
}

// TestDynamoDBMissingTableWording: the item operations say only
// "Requested resource not found"; the table operations name the table.
func TestDynamoDBMissingTableWording(t *testing.T) {
	h := awsapi.NewHandler(testenv.Start(t, testenv.Options{}), awsapi.Options{})
	for _, tt := range []struct{ target, body, message string }{
		{"GetItem", `{"TableName":"nope","Key":{"a":{"S":"x"}}}`, "Requested resource not found"},
		{"PutItem", `{"TableName":"nope","Item":{"a":{"S":"x"}}}`, "Requested resource not found"},
		{"BatchWriteItem", `{"RequestItems":{"nope":[{"PutRequest":{"Item":{"a":{"S":"x"}}}}]}}`, "Requested resource not found"},
		{"DescribeTable", `{"TableName":"nope"}`, "Requested resource not found: Table: nope not found"},
	} {
		status, body := rawCall(h, "DynamoDB_20120810."+tt.target, tt.body)
		want := map[string]any{"__type": "com.amazonaws.dynamodb.v20120810#ResourceNotFoundException", "message": tt.message}
		if status != 400 || !equalJSON(body, want) {
			t.Errorf("%s: %d %v, want %q", tt.target, status, body, tt.message)
		}
	}
}

func equalJSON(a, b map[string]any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
