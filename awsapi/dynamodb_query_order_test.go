package awsapi_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/runnel-dev/runnel/awsapi"
	"github.com/runnel-dev/runnel/internal/testenv"
)

// queryOrderTables creates dynalite's range table as the query tests
// have it: a (S) and b (S), an LSI index1 on a and c (S), a GSI index3 on
// c alone and a GSI index4 on c and d (S), projecting the keys only.
func queryOrderTables(t *testing.T, h *awsapi.Handler) {
	t.Helper()
	status, body := rawCall(h, "DynamoDB_20120810.CreateTable", `{"TableName":"rng","BillingMode":"PAY_PER_REQUEST",`+
		`"KeySchema":[{"AttributeName":"a","KeyType":"HASH"},{"AttributeName":"b","KeyType":"RANGE"}],`+
		`"AttributeDefinitions":[{"AttributeName":"a","AttributeType":"S"},{"AttributeName":"b","AttributeType":"S"},{"AttributeName":"c","AttributeType":"S"},{"AttributeName":"d","AttributeType":"S"}],`+
		`"LocalSecondaryIndexes":[{"IndexName":"index1","KeySchema":[{"AttributeName":"a","KeyType":"HASH"},{"AttributeName":"c","KeyType":"RANGE"}],"Projection":{"ProjectionType":"ALL"}}],`+
		`"GlobalSecondaryIndexes":[{"IndexName":"index3","KeySchema":[{"AttributeName":"c","KeyType":"HASH"}],"Projection":{"ProjectionType":"ALL"}},`+
		`{"IndexName":"index4","KeySchema":[{"AttributeName":"c","KeyType":"HASH"},{"AttributeName":"d","KeyType":"RANGE"}],"Projection":{"ProjectionType":"KEYS_ONLY"}}]}`)
	if status != 200 {
		t.Fatalf("CreateTable rng: %d %v", status, body)
	}
	status, body = rawCall(h, "DynamoDB_20120810.CreateTable", `{"TableName":"hsh","BillingMode":"PAY_PER_REQUEST",`+
		`"KeySchema":[{"AttributeName":"a","KeyType":"HASH"}],"AttributeDefinitions":[{"AttributeName":"a","AttributeType":"S"}]}`)
	if status != 200 {
		t.Fatalf("CreateTable hsh: %d %v", status, body)
	}
}

// TestDynamoDBQueryKeyOrder: a Query's key conditions (KeyConditions or
// a KeyConditionExpression) and ExclusiveStartKey are checked against the
// key schema of the table or index read in DynamoDB's order and words
// (dynalite's query tests, recorded from AWS): the start key's number of
// attributes, then key attribute by key attribute its value and the
// condition on it, then the start key against the table's key and the
// conditions' values; Select ALL_ATTRIBUTES on a GSI that projects less
// only after.
func TestDynamoDBQueryKeyOrder(t *testing.T) {
	h := awsapi.NewHandler(testenv.Start(t, testenv.Options{}), awsapi.Options{})
	queryOrderTables(t, h)
	const (
		aEQ   = `"KeyConditions":{"a":{"ComparisonOperator":"EQ","AttributeValueList":[{"S":"b"}]}}`
		zNULL = `"KeyConditions":{"z":{"ComparisonOperator":"NULL"}}`
		cEQ   = `"KeyConditions":{"c":{"ComparisonOperator":"EQ","AttributeValueList":[{"S":"b"}]}}`
	)
	for _, tt := range []struct{ body, message string }{
		// the start key's number of attributes, first
		{`{"TableName":"hsh",` + zNULL + `,"ExclusiveStartKey":{}}`, "The provided starting key is invalid"},
		{`{"TableName":"hsh",` + zNULL + `,"ExclusiveStartKey":{"a":{"S":"a"},"b":{"S":"a"}}}`, "The provided starting key is invalid"},
		{`{"TableName":"rng","IndexName":"index3",` + zNULL + `,"ExclusiveStartKey":{"c":{"S":"1"}}}`, "The provided starting key is invalid"},
		// the index's attribute missing, or of another type, before the conditions
		{`{"TableName":"rng","IndexName":"index3","KeyConditionExpression":"z = :a","ExpressionAttributeValues":{":a":{"N":"1"}},"ExclusiveStartKey":{"a":{"S":"a"},"b":{"S":"a"},"z":{"S":"a"}}}`,
			"The provided starting key is invalid"},
		{`{"TableName":"hsh",` + zNULL + `,"ExclusiveStartKey":{"a":{"N":"1"}}}`, "The provided key element does not match the schema"},
		{`{"TableName":"rng","IndexName":"index3",` + zNULL + `,"ExclusiveStartKey":{"x":{"S":"1"},"y":{"S":"1"},"c":{"N":"1"}}}`, "The provided key element does not match the schema"},
		// the partition key's condition before the sort key's start value
		{`{"TableName":"rng",` + zNULL + `,"ExclusiveStartKey":{"a":{"S":"a"},"b":{"N":"1"}}}`, "Query condition missed key schema element: a"},
		{`{"TableName":"rng",` + aEQ + `,"ExclusiveStartKey":{"a":{"S":"a"},"b":{"N":"1"}}}`, "The provided key element does not match the schema"},
		{`{"TableName":"rng","KeyConditions":{"a":{"ComparisonOperator":"EQ","AttributeValueList":[{"S":"b"}]},"c":{"ComparisonOperator":"NULL"}},"ExclusiveStartKey":{"a":{"S":"a"},"b":{"S":"a"}}}`,
			"Query condition missed key schema element: b"},
		// operators a key may not take, in KeyConditions' words
		{`{"TableName":"hsh","KeyConditions":{"a":{"ComparisonOperator":"NOT_NULL"}}}`, "Attempted conditional constraint is not an indexable operation"},
		{`{"TableName":"hsh","KeyConditions":{"a":{"ComparisonOperator":"IN","AttributeValueList":[{"S":"a"}]}}}`, "Attempted conditional constraint is not an indexable operation"},
		{`{"TableName":"rng","IndexName":"index1","KeyConditions":{"a":{"ComparisonOperator":"EQ","AttributeValueList":[{"S":"a"}]},"c":{"ComparisonOperator":"CONTAINS","AttributeValueList":[{"S":"a"}]}}}`,
			"Attempted conditional constraint is not an indexable operation"},
		// a value of another type than the key's, before the operator
		{`{"TableName":"hsh","KeyConditionExpression":":a > a","ExpressionAttributeValues":{":a":{"N":"1"}}}`,
			"One or more parameter values were invalid: Condition parameter type does not match schema type"},
		{`{"TableName":"hsh","KeyConditions":{"a":{"ComparisonOperator":"GT","AttributeValueList":[{"S":"a"}]}}}`, "Query key condition not supported"},
		{`{"TableName":"hsh","KeyConditions":{"z":{"ComparisonOperator":"NULL"},"y":{"ComparisonOperator":"NULL"}}}`, "Query key condition not supported"},
		{`{"TableName":"rng","KeyConditions":{"a":{"ComparisonOperator":"GT","AttributeValueList":[{"S":"a"}]}},"ExclusiveStartKey":{"a":{"S":"a"},"b":{"N":"1"}}}`,
			"Query key condition not supported"},
		{`{"TableName":"hsh","KeyConditions":{"a":{"ComparisonOperator":"EQ","AttributeValueList":[{"S":"a"}]},"b":{"ComparisonOperator":"EQ","AttributeValueList":[{"S":"a"}]}}}`,
			"Query key condition not supported"},
		// the table's key of an index's start key
		{`{"TableName":"rng","IndexName":"index3",` + cEQ + `,"ExclusiveStartKey":{"a":{"N":"1"},"b":{"S":"1"},"c":{"S":"a"}}}`,
			"The provided starting key is invalid: The provided key element does not match the schema"},
		// the start key against the conditions
		{`{"TableName":"rng",` + aEQ + `,"ExclusiveStartKey":{"a":{"S":"a"},"b":{"S":"a"}}}`,
			"The provided starting key is outside query boundaries based on provided conditions"},
		{`{"TableName":"rng","IndexName":"index3",` + cEQ + `,"ExclusiveStartKey":{"a":{"S":"a"},"b":{"S":"a"},"c":{"S":"a"}}}`,
			"The provided starting key is outside query boundaries based on provided conditions"},
		{`{"TableName":"rng","KeyConditionExpression":"a = :a and b > :a","ExpressionAttributeValues":{":a":{"S":"b"}},"ExclusiveStartKey":{"a":{"S":"a"},"b":{"S":"a"}}}`,
			"The provided starting key does not match the range key predicate"},
		{`{"TableName":"rng","KeyConditionExpression":"a = :a and b < :a","ExpressionAttributeValues":{":a":{"S":"b"}},"ExclusiveStartKey":{"a":{"S":"a"},"b":{"S":"a"}}}`,
			"The query can return at most one row and cannot be restarted"},
		{`{"TableName":"rng","IndexName":"index4","KeyConditions":{"c":{"ComparisonOperator":"EQ","AttributeValueList":[{"S":"a"}]},"d":{"ComparisonOperator":"EQ","AttributeValueList":[{"S":"a"}]}},` +
			`"ExclusiveStartKey":{"a":{"S":"a"},"b":{"S":"a"},"c":{"S":"c"},"d":{"S":"a"}}}`, "The query can return at most one row and cannot be restarted"},
		// Select ALL_ATTRIBUTES on index4 (KEYS_ONLY) after the start key and the filter's keys
		{`{"TableName":"rng","IndexName":"index4","Select":"ALL_ATTRIBUTES",` + cEQ + `,"ExclusiveStartKey":{"c":{"S":"1"}}}`, "The provided starting key is invalid"},
		{`{"TableName":"rng","IndexName":"index4","Select":"ALL_ATTRIBUTES",` + cEQ[:len(cEQ)-1] + `},"QueryFilter":{"d":{"ComparisonOperator":"NULL"}}}`,
			"QueryFilter can only contain non-primary key attributes: Primary key attribute: d"},
		{`{"TableName":"rng","IndexName":"index4","Select":"ALL_ATTRIBUTES",` + cEQ + `}`,
			"One or more parameter values were invalid: Select type ALL_ATTRIBUTES is not supported for global secondary index index4 because its projection type is not ALL"},
	} {
		status, body := rawCall(h, "DynamoDB_20120810.Query", tt.body)
		if status != 400 || body["message"] != tt.message {
			t.Errorf("Query %s: %d %v, want %q", tt.body, status, body, tt.message)
		}
	}
	// a start key within the conditions reads on
	status, body := rawCall(h, "DynamoDB_20120810.Query", `{"TableName":"rng","KeyConditionExpression":"a = :a and b > :b","ExpressionAttributeValues":{":a":{"S":"a"},":b":{"S":"a"}},"ExclusiveStartKey":{"a":{"S":"a"},"b":{"S":"b"}}}`)
	if status != 200 {
		t.Errorf("Query with a start key in bounds: %d %v", status, body)
	}
}

// TestDynamoDBLegacyConditionsBeforeTable: KeyConditions', QueryFilter's
// and ScanFilter's argument counts, operand types and number are checked
// before the table is looked up, in DynamoDB's order: a Query's
// QueryFilter before AttributesToGet's duplicates and the start key's
// values, its KeyConditions after them; a Scan's AttributesToGet first.
func TestDynamoDBLegacyConditionsBeforeTable(t *testing.T) {
	h := awsapi.NewHandler(testenv.Start(t, testenv.Options{}), awsapi.Options{})
	const dupsAndStart = `"AttributesToGet":["a","a"],"ExclusiveStartKey":{"a":{}}`
	for _, tt := range []struct{ target, body, message string }{
		{"Query", `{"TableName":"abc",` + dupsAndStart + `,"KeyConditions":{"a":{"ComparisonOperator":"EQ","AttributeValueList":[{}]}},"QueryFilter":{"a":{"ComparisonOperator":"EQ"}}}`,
			"One or more parameter values were invalid: Invalid number of argument(s) for the EQ ComparisonOperator"},
		{"Query", `{"TableName":"abc","QueryFilter":{},"KeyConditions":{"a":{"ComparisonOperator":"BETWEEN","AttributeValueList":[{"S":"a"}]}}}`,
			"One or more parameter values were invalid: Invalid number of argument(s) for the BETWEEN ComparisonOperator"},
		{"Query", `{"TableName":"abc","KeyConditions":{"a":{"ComparisonOperator":"LT","AttributeValueList":[{"BOOL":true}]}}}`,
			"One or more parameter values were invalid: ComparisonOperator LT is not valid for BOOL AttributeValue type"},
		{"Query", `{"TableName":"abc","QueryFilter":{"a":{"ComparisonOperator":"CONTAINS","AttributeValueList":[{"SS":["a"]}]}}}`,
			"One or more parameter values were invalid: ComparisonOperator CONTAINS is not valid for SS AttributeValue type"},
		{"Query", `{"TableName":"abc","KeyConditions":{"a":{"ComparisonOperator":"BEGINS_WITH","AttributeValueList":[{"N":"1"}]}}}`,
			"One or more parameter values were invalid: ComparisonOperator BEGINS_WITH is not valid for N AttributeValue type"},
		{"Query", `{"TableName":"abc","KeyConditions":{"a":{"ComparisonOperator":"IN","AttributeValueList":[{"S":"b"},{"N":"1"}]}}}`,
			"One or more parameter values were invalid: AttributeValues inside AttributeValueList must be of same type"},
		{"Query", `{"TableName":"abc","KeyConditions":{"a":{"ComparisonOperator":"BETWEEN","AttributeValueList":[{"S":"b"},{"S":"a"}]}}}`,
			"The BETWEEN condition was provided a range where the lower bound is greater than the upper bound"},
		{"Query", `{"TableName":"abc","QueryFilter":{},"KeyConditions":{}}`, "Conditions can be of length 1 or 2 only"},
		{"Query", `{"TableName":"abc","KeyConditions":{"a":{"ComparisonOperator":"NULL"},"b":{"ComparisonOperator":"NULL"},"c":{"ComparisonOperator":"NULL"}}}`,
			"Conditions can be of length 1 or 2 only"},
		{"Scan", `{"TableName":"abc","Segment":1,"ScanFilter":{"a":{"ComparisonOperator":"EQ","AttributeValueList":[{}]}},` + dupsAndStart + `}`,
			"One or more parameter values were invalid: Duplicate value in attribute name: a"},
		{"Scan", `{"TableName":"abc","Segment":1,"ExclusiveStartKey":{"a":{}},"ScanFilter":{"a":{"ComparisonOperator":"LT"}}}`,
			"One or more parameter values were invalid: Invalid number of argument(s) for the LT ComparisonOperator"},
		{"Scan", `{"TableName":"abc","Segment":1,"ExclusiveStartKey":{"a":{}},"ScanFilter":{"a":{"ComparisonOperator":"BETWEEN","AttributeValueList":[{"NULL":true},{"NULL":true}]}}}`,
			"One or more parameter values were invalid: ComparisonOperator BETWEEN is not valid for NULL AttributeValue type"},
	} {
		status, body := rawCall(h, "DynamoDB_20120810."+tt.target, tt.body)
		if status != 400 || body["message"] != tt.message {
			t.Errorf("%s %s: %d %v, want %q", tt.target, tt.body, status, body, tt.message)
		}
	}
}

// TestDynamoDBScanStartKeyOrder: a Scan's ExclusiveStartKey against the
// index's key, then Select, then the table's key, then the segment, in
// DynamoDB's words.
func TestDynamoDBScanStartKeyOrder(t *testing.T) {
	h := awsapi.NewHandler(testenv.Start(t, testenv.Options{}), awsapi.Options{})
	queryOrderTables(t, h)
	var inOther string
	for _, k := range []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"} {
		if status, body := rawCall(h, "DynamoDB_20120810.PutItem", `{"TableName":"hsh","Item":{"a":{"S":"`+k+`"}}}`); status != 200 {
			t.Fatalf("PutItem: %d %v", status, body)
		}
	}
	status, body := rawCall(h, "DynamoDB_20120810.Scan", `{"TableName":"hsh","Segment":1,"TotalSegments":2}`)
	items, _ := body["Items"].([]any)
	if status != 200 || len(items) == 0 {
		t.Fatalf("Scan of segment 1: %d %v", status, body)
	}
	inOther = items[0].(map[string]any)["a"].(map[string]any)["S"].(string)
	for _, tt := range []struct{ body, message string }{
		{`{"TableName":"rng","IndexName":"index3","ExclusiveStartKey":{"a":{"S":"a"},"b":{"S":"a"},"z":{"S":"a"}}}`, "The provided starting key is invalid"},
		{`{"TableName":"hsh","ExclusiveStartKey":{"a":{"S":"a"},"b":{"S":"a"}}}`, "The provided starting key is invalid: The provided key element does not match the schema"},
		{`{"TableName":"rng","IndexName":"index3","ExclusiveStartKey":{"a":{"S":"a"},"b":{"S":"a"},"c":{"N":"1"}}}`, "The provided key element does not match the schema"},
		{`{"TableName":"rng","IndexName":"index4","Select":"ALL_ATTRIBUTES","ExclusiveStartKey":{"c":{"S":"1"}}}`, "The provided starting key is invalid"},
		{`{"TableName":"rng","IndexName":"index4","Select":"ALL_ATTRIBUTES","ExclusiveStartKey":{"a":{"N":"1"},"b":{"S":"1"},"c":{"S":"1"},"d":{"S":"1"}}}`,
			"One or more parameter values were invalid: Select type ALL_ATTRIBUTES is not supported for global secondary index index4 because its projection type is not ALL"},
		{`{"TableName":"rng","IndexName":"index3","ExclusiveStartKey":{"a":{"N":"1"},"b":{"S":"1"},"c":{"S":"1"}}}`,
			"The provided starting key is invalid: The provided key element does not match the schema"},
		{`{"TableName":"hsh","Segment":0,"TotalSegments":2,"FilterExpression":"attribute_exists(a.b.c)","ExclusiveStartKey":{"a":{"S":"` + inOther + `"}}}`,
			"The provided starting key is invalid: Invalid ExclusiveStartKey. Please use ExclusiveStartKey with correct Segment. TotalSegments: 2 Segment: 0"},
	} {
		status, body := rawCall(h, "DynamoDB_20120810.Scan", tt.body)
		if status != 400 || body["message"] != tt.message {
			t.Errorf("Scan %s: %d %v, want %q", tt.body, status, body, tt.message)
		}
	}
	status, body = rawCall(h, "DynamoDB_20120810.Scan", `{"TableName":"hsh","Segment":1,"TotalSegments":2,"ExclusiveStartKey":{"a":{"S":"`+inOther+`"}}}`)
	if status != 200 {
		t.Errorf("Scan from a start key of its segment: %d %v", status, body)
	}
}

// TestDynamoDBScanFilterLongIN: a legacy ScanFilter's IN takes more than
// an expression's 100 values (AWS takes 27 500: dynalite's scan test).
func TestDynamoDBScanFilterLongIN(t *testing.T) {
	h := awsapi.NewHandler(testenv.Start(t, testenv.Options{}), awsapi.Options{})
	queryOrderTables(t, h)
	for _, item := range []string{`{"a":{"S":"v0"}}`, `{"a":{"S":"v249"},"b":{"S":"x"}}`, `{"a":{"S":"other"},"b":{"S":"x"}}`} {
		if status, body := rawCall(h, "DynamoDB_20120810.PutItem", `{"TableName":"hsh","Item":`+item+`}`); status != 200 {
			t.Fatalf("PutItem: %d %v", status, body)
		}
	}
	vals := make([]string, 250)
	for i := range vals {
		vals[i] = fmt.Sprintf(`{"S":"v%d"}`, i)
	}
	status, body := rawCall(h, "DynamoDB_20120810.Scan", `{"TableName":"hsh","ScanFilter":{"a":{"ComparisonOperator":"IN","AttributeValueList":[`+strings.Join(vals, ",")+`]}}}`)
	if status != 200 || body["Count"] != float64(2) || body["ScannedCount"] != float64(3) {
		t.Fatalf("Scan with 250 IN values: %d %v, want 2 of 3", status, body)
	}
	// and the IN is one condition among the others
	status, body = rawCall(h, "DynamoDB_20120810.Scan", `{"TableName":"hsh","ScanFilter":{"a":{"ComparisonOperator":"IN","AttributeValueList":[`+strings.Join(vals, ",")+`]},"b":{"ComparisonOperator":"NOT_NULL"}}}`)
	if items, _ := body["Items"].([]any); status != 200 || len(items) != 1 || !strings.Contains(fmt.Sprint(items[0]), "v249") {
		t.Fatalf("Scan with 250 IN values and b NOT_NULL: %d %v, want v249 alone", status, body)
	}
}
