package awsapi_test

// DynamoDB's wording, as dynalite's tests (recorded against AWS) expect
// it; see dynamodb_fidelity.go.

import (
	"encoding/json"
	"strings"
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

// TestDynamoDBRefusalOrder: what DynamoDB refuses before it looks the
// table up, in its order and words (dynamodb_order.go); "abc" does not
// exist.
func TestDynamoDBRefusalOrder(t *testing.T) {
	h := awsapi.NewHandler(testenv.Start(t, testenv.Options{}), awsapi.Options{})
	big := `"` + strings.Repeat("a", 400*1024) + `"`
	for _, tt := range []struct{ target, body, message string }{
		{"DescribeTable", `{}`, "The parameter 'TableName' is required but was not present in the request"},
		{"UpdateTimeToLive", `{"TableName":""}`, "TableName must be at least 3 characters long and at most 255 characters long"},
		{"TagResource", `{}`, "Invalid TableArn"},
		{"GetItem", `{"TableName":"abc","Key":{"a":{}},"AttributesToGet":["a"],"ProjectionExpression":""}`,
			"Can not use both expression and non-expression parameters in the same request: Non-expression parameters: {AttributesToGet} Expression parameters: {ProjectionExpression}"},
		{"DeleteItem", `{"TableName":"abc","Key":{},"ExpressionAttributeValues":{}}`,
			"ExpressionAttributeValues can only be specified when using expressions: ConditionExpression is null"},
		{"GetItem", `{"TableName":"abc","Key":{"a":{"S":"","N":""}}}`, "The parameter cannot be converted to a numeric value"},
		{"GetItem", `{"TableName":"abc","Key":{"a":{"NS":["1","1"]}}}`, "Input collection contains duplicates"},
		{"GetItem", `{"TableName":"abc","Key":{},"AttributesToGet":["a","a"]}`, "One or more parameter values were invalid: Duplicate value in attribute name: a"},
		{"UpdateItem", `{"TableName":"abc","Key":{},"ExpressionAttributeNames":{"a":"a"},"ExpressionAttributeValues":{},"UpdateExpression":""}`,
			`ExpressionAttributeNames contains invalid key: Syntax error; key: "a"`},
		{"DeleteItem", `{"TableName":"abc","Key":{},"ExpressionAttributeValues":{":b":{"a":""},"b":{"S":"a"}},"ConditionExpression":""}`,
			`ExpressionAttributeValues contains invalid key: Syntax error; key: "b"`},
		{"DeleteItem", `{"TableName":"abc","Key":{},"ExpressionAttributeValues":{":b":{"SS":[]}},"ConditionExpression":""}`,
			"ExpressionAttributeValues contains invalid value: One or more parameter values were invalid: An string set  may not be empty for key :b"},
		{"UpdateItem", `{"TableName":"abc","Key":{},"ConditionExpression":"","UpdateExpression":""}`, "Invalid UpdateExpression: The expression can not be empty;"},
		{"GetItem", `{"TableName":"abc","Key":{},"ProjectionExpression":"a","ExpressionAttributeNames":{"#a":"a"}}`,
			"Value provided in ExpressionAttributeNames unused in expressions: keys: {#a}"},
		{"PutItem", `{"TableName":"abc","Item":{},"ReturnValues":"ALL_NEW"}`, "ReturnValues can only be ALL_OLD or NONE"},
		{"PutItem", `{"TableName":"abc","Item":{"a":{"S":"x"},"b":{"S":` + big + `}},"Expected":{"a":{}}}`, "Item size has exceeded the maximum allowed size"},
		{"PutItem", `{"TableName":"abc","Item":{},"Expected":{"a":{}}}`, "One or more parameter values were invalid: Value must be provided when Exists is null for Attribute: a"},
		{"PutItem", `{"TableName":"abc","Item":{},"Expected":{"a":{"ComparisonOperator":"LT"}}}`,
			"One or more parameter values were invalid: Value or AttributeValueList must be used with ComparisonOperator: LT for Attribute: a"},
		{"DeleteItem", `{"TableName":"abc","Key":{},"Expected":{"a":{"Value":{"S":"a"},"AttributeValueList":[]}}}`,
			"One or more parameter values were invalid: Value and AttributeValueList cannot be used together for Attribute: a"},
		{"BatchGetItem", `{"RequestItems":{"abc":{"Keys":[{"a":{"S":"x"},"b":{"N":"1"}},{"b":{"N":"1"},"a":{"S":"x"}}]}}}`, "Provided list of item keys contains duplicates"},
		{"BatchWriteItem", `{"RequestItems":{"abc":[{}]}}`, "Supplied AttributeValue has more than one datatypes set, must contain exactly one of the supported datatypes"},
		{"UpdateTable", `{"TableName":"abc","ProvisionedThroughput":{"WriteCapacityUnits":1000000000001,"ReadCapacityUnits":1000000000001}}`,
			"Given value 1000000000001 for ReadCapacityUnits is out of bounds"},
		{"UpdateTable", `{"TableName":"abc","GlobalSecondaryIndexUpdates":[{"Delete":{"IndexName":"abc"}},{"Delete":{"IndexName":"abc"}}]}`,
			"One or more parameter values were invalid: Only one global secondary index update per index is allowed simultaneously. Index: abc"},
		{"TransactWriteItems", `{"TransactItems":[{"NotARealAction":{}}]}`, "The action or operation requested is invalid. Verify that the action is typed correctly."},
		{"UpdateItem", `{"TableName":"abc","Key":{},"AttributeUpdates":{"a":{"Action":"DELETE","Value":{"S":"1"}}}}`,
			"One or more parameter values were invalid: DELETE action with value is not supported for the type S"},
		{"UpdateItem", `{"TableName":"abc","Key":{},"AttributeUpdates":{"a":{"Action":"ADD","Value":{"B":"Yg=="}}}}`,
			"One or more parameter values were invalid: ADD action is not supported for the type B"},
		{"UpdateItem", `{"TableName":"abc","Key":{},"Expected":{"a":{}},"AttributeUpdates":{"a":{"x":"whatever"}}}`,
			"One or more parameter values were invalid: Only DELETE action is allowed when no attribute value is specified"},
		{"DeleteItem", `{"TableName":"abc","Key":{},"Expected":{"a":{"ComparisonOperator":"BETWEEN","AttributeValueList":[{"S":"b"},{"S":"a"}]}}}`,
			"The BETWEEN condition was provided a range where the lower bound is greater than the upper bound"},
		{"GetItem", `{"TableName":"abc","Key":{"a":{"NULL":"no"}}}`, "One or more parameter values were invalid: Null attribute value types must have the true value"},
		{"Scan", `{"TableName":"abc","Segment":1,"FilterExpression":"","ExpressionAttributeNames":{},"ExpressionAttributeValues":{}}`,
			"The TotalSegments parameter is required but was not present in the request when Segment parameter is present"},
		{"Scan", `{"TableName":"abc","Segment":1,"TotalSegments":1,"FilterExpression":"","ExpressionAttributeNames":{}}`,
			"The Segment parameter is zero-based and must be less than parameter TotalSegments: Segment: 1 is not less than TotalSegments: 1"},
		{"Query", `{"TableName":"abc","KeyConditionExpression":"a > b and size(b) > c or a > c"}`, "Invalid operator used in KeyConditionExpression: OR"},
		{"Query", `{"TableName":"abc","KeyConditionExpression":"","FilterExpression":"","ExpressionAttributeValues":{":0":{"S":"b"}}}`,
			"Invalid KeyConditionExpression: The expression can not be empty;"},
		{"Query", `{"TableName":"abc","KeyConditionExpression":"attribute_type(a, :a)","FilterExpression":"","ExpressionAttributeValues":{":a":{"S":"N"}}}`,
			"Invalid FilterExpression: The expression can not be empty;"},
		{"Query", `{"TableName":"abc","KeyConditionExpression":":a = a and b = :a and :a = c","ExpressionAttributeValues":{":a":{"S":"a"}}}`,
			"Conditions can be of length 1 or 2 only"},
		{"Query", `{"TableName":"abc","KeyConditionExpression":"b > :a AND b < :a and c = :a and d = :a","ExpressionAttributeValues":{":a":{"N":"1"}}}`,
			"KeyConditionExpressions must only contain one condition per key"},
		{"Query", `{"TableName":"abc","KeyConditions":{"a":{"ComparisonOperator":"EQ","AttributeValueList":[{}]}},"AttributesToGet":["a"],"FilterExpression":"","ProjectionExpression":""}`,
			"Can not use both expression and non-expression parameters in the same request: Non-expression parameters: {AttributesToGet} Expression parameters: {ProjectionExpression, FilterExpression}"},
		{"UpdateTable", `{"TableName":"abc","ProvisionedThroughput":{}}`,
			"2 validation errors detected: Value null at 'provisionedThroughput.writeCapacityUnits' failed to satisfy constraint: Member must not be null; " +
				"Value null at 'provisionedThroughput.readCapacityUnits' failed to satisfy constraint: Member must not be null"},
	} {
		status, body := rawCall(h, "DynamoDB_20120810."+tt.target, tt.body)
		want := map[string]any{"__type": "com.amazon.coral.validate#ValidationException", "message": tt.message}
		if status != 400 || !equalJSON(body, want) {
			got, _ := json.Marshal(body)
			t.Errorf("%s %.200s: %d %.300s, want %q", tt.target, tt.body, status, got, tt.message)
		}
	}
}

// TestDynamoDBKeyWording: a Key that does not match the table's key is
// "The provided key element does not match the schema", as is an item
// BatchWriteItem or TransactWriteItems writes without its key; PutItem
// names the key. (A TransactWriteItems item with a wrong-typed key
// cancels the transaction instead: TestTransactWrongTypedKeyIsACancellationOnTheWire.)
func TestDynamoDBKeyWording(t *testing.T) {
	h := awsapi.NewHandler(testenv.Start(t, testenv.Options{}), awsapi.Options{})
	if status, body := rawCall(h, "DynamoDB_20120810.CreateTable", `{"TableName":"hash","AttributeDefinitions":[{"AttributeName":"a","AttributeType":"S"}],`+
		`"KeySchema":[{"AttributeName":"a","KeyType":"HASH"}],"BillingMode":"PAY_PER_REQUEST"}`); status != 200 {
		t.Fatalf("CreateTable: %d %v", status, body)
	}
	for _, tt := range []struct{ target, body, message string }{
		{"GetItem", `{"TableName":"hash","Key":{"a":{"N":"1"}}}`, "The provided key element does not match the schema"},
		{"GetItem", `{"TableName":"hash","Key":{"a":{"S":""}}}`,
			"One or more parameter values were invalid: The AttributeValue for a key attribute cannot contain an empty string value. Key: a"},
		{"BatchWriteItem", `{"RequestItems":{"hash":[{"PutRequest":{"Item":{"b":{"S":"x"}}}}]}}`, "The provided key element does not match the schema"},
		{"TransactWriteItems", `{"TransactItems":[{"Put":{"TableName":"hash","Item":{"b":{"S":"x"}}}}]}`, "The provided key element does not match the schema"},
		{"PutItem", `{"TableName":"hash","Item":{"a":{"N":"1"}}}`, "One or more parameter values were invalid: Type mismatch for key a expected: S actual: N"},
		{"GetItem", `{"TableName":"hash","Key":{"a":{"S":"x"}},"ProjectionExpression":"#a.b","ExpressionAttributeNames":{"#a":"a"}}`,
			"Key attributes must be scalars; list random access '[]' and map lookup '.' are not allowed: Key: a"},
	} {
		status, body := rawCall(h, "DynamoDB_20120810."+tt.target, tt.body)
		want := map[string]any{"__type": "com.amazon.coral.validate#ValidationException", "message": tt.message}
		if status != 400 || !equalJSON(body, want) {
			t.Errorf("%s %s: %d %v, want %q", tt.target, tt.body, status, body, tt.message)
		}
	}
}

// TestDynamoDBBareErrors: an empty body is a SerializationException
// without a message, an operation DynamoDB does not have an
// UnknownOperationException without one, as DynamoDB answers.
func TestDynamoDBBareErrors(t *testing.T) {
	h := awsapi.NewHandler(testenv.Start(t, testenv.Options{}), awsapi.Options{})
	for _, tt := range []struct{ target, typ string }{
		{"DynamoDB_20120810.ListTables", "com.amazon.coral.service#SerializationException"},
		{"DynamoDB_20120810.ListTable", "com.amazon.coral.service#UnknownOperationException"},
	} {
		status, body := rawCall(h, tt.target, "")
		if want := map[string]any{"__type": tt.typ}; status != 400 || !equalJSON(body, want) {
			t.Errorf("%s: %d %v, want %v", tt.target, status, body, want)
		}
	}
}

// TestDynamoDBLegacyAndLimits: AttributeUpdates' ADD of a list appends to
// it; a name that begins with "_" is a syntax error; DynamoDB reports at
// most ten model failures.
func TestDynamoDBLegacyAndLimits(t *testing.T) {
	h := awsapi.NewHandler(testenv.Start(t, testenv.Options{}), awsapi.Options{})
	if status, body := rawCall(h, "DynamoDB_20120810.CreateTable", `{"TableName":"hash","AttributeDefinitions":[{"AttributeName":"a","AttributeType":"S"}],`+
		`"KeySchema":[{"AttributeName":"a","KeyType":"HASH"}],"BillingMode":"PAY_PER_REQUEST"}`); status != 200 {
		t.Fatalf("CreateTable: %d %v", status, body)
	}
	for i, list := range []string{`[{"S":"a"}]`, `[{"N":"1"}]`} {
		status, body := rawCall(h, "DynamoDB_20120810.UpdateItem", `{"TableName":"hash","Key":{"a":{"S":"k"}},"ReturnValues":"UPDATED_NEW",`+
			`"AttributeUpdates":{"l":{"Action":"ADD","Value":{"L":`+list+`}}}}`)
		want := []string{`{"Attributes":{"l":{"L":[{"S":"a"}]}}}`, `{"Attributes":{"l":{"L":[{"S":"a"},{"N":"1"}]}}}`}[i]
		if got, _ := json.Marshal(body); status != 200 || string(got) != want {
			t.Fatalf("ADD %s: %d %s, want %s", list, status, got, want)
		}
	}
	status, body := rawCall(h, "DynamoDB_20120810.PutItem", `{"TableName":"hash","Item":{"a":{"S":"k"}},"ConditionExpression":"attribute_not_exists(_c)"}`)
	if msg, _ := body["message"].(string); status != 400 || !strings.HasPrefix(msg, "Invalid ConditionExpression: Syntax error; ") {
		t.Errorf("_c: %d %v, want a syntax error", status, body)
	}
	lsis := strings.Repeat(`{},`, 8) + `{}`
	status, body = rawCall(h, "DynamoDB_20120810.CreateTable", `{"TableName":"abc","LocalSecondaryIndexes":[`+lsis+`]}`)
	if msg, _ := body["message"].(string); status != 400 || !strings.HasPrefix(msg, "10 validation errors detected: ") {
		t.Errorf("nine empty LSIs: %d %v, want 10 failures", status, body)
	}
}

// TestDynamoDBQueryKeyConditionsWithExpressions: a Query's KeyConditions
// go with a ProjectionExpression or a FilterExpression (and their
// placeholders); only a KeyConditionExpression makes them a mix.
func TestDynamoDBQueryKeyConditionsWithExpressions(t *testing.T) {
	h := awsapi.NewHandler(testenv.Start(t, testenv.Options{}), awsapi.Options{})
	status, body := rawCall(h, "DynamoDB_20120810.CreateTable", `{"TableName":"kcq","KeySchema":[{"AttributeName":"a","KeyType":"HASH"},{"AttributeName":"b","KeyType":"RANGE"}],`+
		`"AttributeDefinitions":[{"AttributeName":"a","AttributeType":"S"},{"AttributeName":"b","AttributeType":"S"}],"BillingMode":"PAY_PER_REQUEST"}`)
	if status != 200 {
		t.Fatalf("CreateTable: %d %v", status, body)
	}
	for _, item := range []string{`{"a":{"S":"x"},"b":{"S":"1"},"d":{"S":"d1"},"e":{"S":"e1"}}`, `{"a":{"S":"x"},"b":{"S":"2"},"e":{"S":"e2"}}`} {
		if status, body := rawCall(h, "DynamoDB_20120810.PutItem", `{"TableName":"kcq","Item":`+item+`}`); status != 200 {
			t.Fatalf("PutItem: %d %v", status, body)
		}
	}
	for _, tt := range []struct{ body, items string }{
		{`{"TableName":"kcq","KeyConditions":{"a":{"ComparisonOperator":"EQ","AttributeValueList":[{"S":"x"}]}},"ProjectionExpression":"b, d"}`,
			`[{"b":{"S":"1"},"d":{"S":"d1"}},{"b":{"S":"2"}}]`},
		{`{"TableName":"kcq","KeyConditions":{"a":{"ComparisonOperator":"EQ","AttributeValueList":[{"S":"x"}]}},"ProjectionExpression":"#e",` +
			`"FilterExpression":"attribute_exists(d) AND e = :e","ExpressionAttributeNames":{"#e":"e"},"ExpressionAttributeValues":{":e":{"S":"e1"}}}`,
			`[{"e":{"S":"e1"}}]`},
	} {
		status, body := rawCall(h, "DynamoDB_20120810.Query", tt.body)
		got, _ := json.Marshal(body["Items"])
		var want any
		_ = json.Unmarshal([]byte(tt.items), &want)
		wantJSON, _ := json.Marshal(want)
		if status != 200 || string(got) != string(wantJSON) {
			t.Errorf("Query %s: %d %v, want Items %s", tt.body, status, body, tt.items)
		}
	}
	// a key attribute in a QueryFilter is named as DynamoDB names it
	for _, tt := range []struct{ body, message string }{
		{`{"TableName":"kcq","KeyConditions":{"a":{"ComparisonOperator":"EQ","AttributeValueList":[{"S":"x"}]}},"QueryFilter":{"b":{"ComparisonOperator":"EQ","AttributeValueList":[{"S":"1"}]}}}`,
			"QueryFilter can only contain non-primary key attributes: Primary key attribute: b"},
		{`{"TableName":"kcq","KeyConditionExpression":"a = :a","FilterExpression":"b = :b","ExpressionAttributeValues":{":a":{"S":"x"},":b":{"S":"1"}}}`,
			"Filter Expression can only contain non-primary key attributes: Primary key attribute: b"},
	} {
		status, body := rawCall(h, "DynamoDB_20120810.Query", tt.body)
		if status != 400 || body["message"] != tt.message {
			t.Errorf("Query %s: %d %v, want %q", tt.body, status, body, tt.message)
		}
	}
	// an ExclusiveStartKey that is not the table's key, in DynamoDB's words
	// (a Query's without the prefix: the key read is checked first)
	for _, target := range []string{"Scan", "Query"} {
		req := `{"TableName":"kcq","ExclusiveStartKey":{"a":{"S":"x"},"b":{"N":"1"}}}`
		want := "The provided starting key is invalid: The provided key element does not match the schema"
		if target == "Query" {
			req = `{"TableName":"kcq","KeyConditionExpression":"a = :a","ExpressionAttributeValues":{":a":{"S":"x"}},"ExclusiveStartKey":{"a":{"S":"x"},"b":{"N":"1"}}}`
			want = "The provided key element does not match the schema"
		}
		status, body := rawCall(h, "DynamoDB_20120810."+target, req)
		if status != 400 || body["message"] != want {
			t.Errorf("%s with a bad ExclusiveStartKey: %d %v, want %q", target, status, body, want)
		}
	}
}

// TestDynamoDBStartKeyValuesFirst: an invalid attribute value in a
// Query's or Scan's ExclusiveStartKey is reported after a filter's values
// and AttributesToGet's duplicates and before the KeyConditions' values,
// most of them as "The provided starting key is invalid: …", as
// dynalite's query and scan tests record them from AWS.
func TestDynamoDBStartKeyValuesFirst(t *testing.T) {
	h := awsapi.NewHandler(testenv.Start(t, testenv.Options{}), awsapi.Options{})
	const keyConds = `"KeyConditions":{"a":{"ComparisonOperator":"EQ","AttributeValueList":[{},{}]}}`
	for _, tt := range []struct{ target, body, message string }{
		{"DynamoDB_20120810.Query", `{"TableName":"abc",` + keyConds + `,"ExclusiveStartKey":{"a":{}}}`,
			"The provided starting key is invalid: Supplied AttributeValue is empty, must contain exactly one of the supported datatypes"},
		{"DynamoDB_20120810.Query", `{"TableName":"abc",` + keyConds + `,"ExclusiveStartKey":{"a":{"S":"a","N":"1"}}}`,
			"The provided starting key is invalid: Supplied AttributeValue has more than one datatypes set, must contain exactly one of the supported datatypes"},
		{"DynamoDB_20120810.Query", `{"TableName":"abc",` + keyConds + `,"ExclusiveStartKey":{"a":{"SS":["a","a"]}}}`,
			"One or more parameter values were invalid: Input collection [a, a] contains duplicates."},
		{"DynamoDB_20120810.Scan", `{"TableName":"abc","ExclusiveStartKey":{"a":{"NULL":false}}}`,
			"The provided starting key is invalid: One or more parameter values were invalid: Null attribute value types must have the value of true"},
		// A QueryFilter's value, then AttributesToGet's duplicates, come
		// before the start key.
		{"DynamoDB_20120810.Query", `{"TableName":"abc","ExclusiveStartKey":{"a":{}},"AttributesToGet":["a","a"],` + keyConds +
			`,"QueryFilter":{"a":{"ComparisonOperator":"EQ","AttributeValueList":[{"S":"x","N":"1"}]}}}`,
			"Supplied AttributeValue has more than one datatypes set, must contain exactly one of the supported datatypes"},
		{"DynamoDB_20120810.Query", `{"TableName":"abc","QueryFilter":{},"ExclusiveStartKey":{"a":{}},"AttributesToGet":["a","a"]}`,
			"One or more parameter values were invalid: Duplicate value in attribute name: a"},
	} {
		code, message, status := call(h, tt.target, tt.body)
		if status != 400 || code != "ValidationException" || message != tt.message {
			t.Errorf("%s %s: %d %s %q\nwant 400 ValidationException %q", tt.target, tt.body, status, code, message, tt.message)
		}
	}
}
