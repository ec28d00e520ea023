package awsapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/runnel-dev/runnel/table"
)

// TestInputFromValidatedValue: a DynamoDB input built from the body as
// the validation read it (fromValue) is what json.Unmarshal makes of the
// body, for the requests of the hot operations (built without a second
// decoding); a body fromValue does not convert as json.Unmarshal would
// is left to json.Unmarshal (false), never a panic.
func TestInputFromValidatedValue(t *testing.T) {
	allTypes := `{"s":{"S":"x"},"n":{"N":"-1.50"},"b":{"B":"eA=="},"t":{"BOOL":true},"z":{"NULL":true},` +
		`"ss":{"SS":["a","b"]},"ns":{"NS":["1","2e3"]},"bs":{"BS":["eA==",""]},"l":{"L":[{"S":"y"},{"M":{"k":{"N":"0"}}}]},"m":{"M":{}},"e":{"L":[]}}`
	cases := []struct {
		name string
		in   func() any
		body string
		fast bool
	}{
		{"PutItem", func() any { return new(table.PutItemInput) }, `{"TableName":"t","Item":` + allTypes + `,"ConditionExpression":"attribute_not_exists(s)","ReturnValues":"ALL_OLD"}`, true},
		{"GetItem", func() any { return new(table.GetItemInput) }, `{"TableName":"t","Key":{"s":{"S":"x"}},"ProjectionExpression":"#a","ExpressionAttributeNames":{"#a":"a"},"ConsistentRead":true}`, true},
		{"UpdateItem", func() any { return new(table.UpdateItemInput) }, `{"TableName":"t","Key":{"s":{"S":"x"}},"UpdateExpression":"SET v = :v","ConditionExpression":"v < :v","ExpressionAttributeValues":{":v":{"N":"7"}},"ReturnValues":"ALL_NEW","ReturnConsumedCapacity":"TOTAL"}`, true},
		{"DeleteItem", func() any { return new(table.DeleteItemInput) }, `{"TableName":"t","Key":{"s":{"S":"x"}},"Unknown":[1,{"a":null}]}`, true},
		{"Query", func() any { return new(queryInput) }, `{"TableName":"t","KeyConditionExpression":"s = :s","ExpressionAttributeValues":{":s":{"S":"x"}},"Limit":5,"ScanIndexForward":false,"ExclusiveStartKey":{"s":{"S":"w"}}}`, true},
		{"Scan", func() any { return new(scanInput) }, `{"TableName":"t","Segment":1,"TotalSegments":4,"Limit":null,"Select":"COUNT"}`, true},
		{"BatchWriteItem", func() any { return new(table.BatchWriteItemInput) }, `{"RequestItems":{"t":[{"PutRequest":{"Item":` + allTypes + `}},{"DeleteRequest":{"Key":{"s":{"S":"y"}}}}]},"ReturnConsumedCapacity":"INDEXES"}`, true},
		{"BatchGetItem", func() any { return new(batchGetItemInput) }, `{"RequestItems":{"t":{"Keys":[{"s":{"S":"x"}}],"ProjectionExpression":"s"}}}`, true},
		{"DescribeTable", func() any { return new(table.GetItemInput) }, `{"TableName":"t"}`, true},

		{"a member name in another case", func() any { return new(table.GetItemInput) }, `{"tablename":"t","Key":{"s":{"S":"x"}}}`, false},
		{"an AttributeValue with an unknown member", func() any { return new(table.PutItemInput) }, `{"TableName":"t","Item":{"s":{"S":"x","X":1}}}`, false},
		{"bad base64", func() any { return new(table.PutItemInput) }, `{"TableName":"t","Item":{"b":{"B":"!!"}}}`, false},
		{"a number in a binary set", func() any { return new(table.PutItemInput) }, `{"TableName":"t","Item":{"b":{"BS":[1]}}}`, false},
		{"a null AttributeValue", func() any { return new(table.PutItemInput) }, `{"TableName":"t","Item":{"s":null}}`, false},
		{"a list element not an AttributeValue", func() any { return new(table.PutItemInput) }, `{"TableName":"t","Item":{"l":{"L":["x"]}}}`, false},
		{"a number not an integer", func() any { return new(queryInput) }, `{"TableName":"t","Limit":1e2}`, false},
		{"a string where a boolean goes", func() any { return new(table.GetItemInput) }, `{"TableName":"t","ConsistentRead":"true"}`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := json.NewDecoder(bytes.NewReader([]byte(c.body)))
			d.UseNumber()
			var v any
			if err := d.Decode(&v); err != nil {
				t.Fatal(err)
			}
			got := c.in()
			if ok := fromValue(v, got); ok != c.fast {
				t.Fatalf("fromValue = %v, want %v", ok, c.fast)
			}
			if !c.fast {
				return
			}
			want := c.in()
			if err := json.Unmarshal([]byte(c.body), want); err != nil {
				t.Fatal(err)
			}
			got, want = decodedBatchGet(t, got), decodedBatchGet(t, want)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("fromValue made\n%#v\njson.Unmarshal\n%#v", got, want)
			}
		})
	}
}

// decodedBatchGet is a BatchGetItem input with each table's part decoded
// (any other input as it is).
func decodedBatchGet(t *testing.T, in any) any {
	b, ok := in.(*batchGetItemInput)
	if !ok {
		return in
	}
	out := map[string]table.KeysAndAttributes{}
	for name, g := range b.RequestItems {
		var ka table.KeysAndAttributes
		if err := g.decode(&ka); err != nil {
			t.Fatal(err)
		}
		out[name] = ka
	}
	return out
}

// TestDynamoDecodeReadsTheValidatedValue: a DynamoDB input is built from
// the value the validation read, not from a second decoding of the body;
// from the body only with a legacy parameter (translated) or a value
// fromValue does not convert, and then nothing of the value stays in it.
func TestDynamoDecodeReadsTheValidatedValue(t *testing.T) {
	decode := func(body string, parsed map[string]any) table.GetItemInput {
		t.Helper()
		var in table.GetItemInput
		rq := &request{body: []byte(body), parsed: parsed}
		if err := rq.dynamoDecodeParsed(&in); err != nil {
			t.Fatal(err)
		}
		return in
	}
	if in := decode(`{"TableName":"body"}`, map[string]any{"TableName": "value"}); in.TableName != "value" {
		t.Fatalf("read %q, want the validated value's", in.TableName)
	}
	in := decode(`{"TableName":"body","AttributesToGet":["a"]}`, map[string]any{"TableName": "value", "AttributesToGet": []any{"a"}})
	if in.TableName != "body" || in.ProjectionExpression == "" {
		t.Fatalf("legacy: read %+v, want the body's, translated", in)
	}
	// Members are converted in the map's (random) order: 20 tries convert
	// ProjectionExpression before failing on Key's null all but surely.
	for range 20 {
		in = decode(`{"TableName":"body"}`, map[string]any{"TableName": "value", "ProjectionExpression": "p", "Key": map[string]any{"k": nil}})
		if in.TableName != "body" || in.ProjectionExpression != "" || in.Key != nil {
			t.Fatalf("not convertible: read %+v, want the body's alone", in)
		}
	}
}

// BenchmarkDynamoDBRequestDecode: a request body validated and read into
// its input, as the endpoint does now (one decoding, "value") and as it
// did before (validateJSON, then dynamoDecode: "twice"), same binary.
func BenchmarkDynamoDBRequestDecode(b *testing.B) {
	item := func(i int) string {
		return fmt.Sprintf(`{"pk":{"S":"item-%d"},"sk":{"N":"%d"},"data":{"S":"0123456789abcdef0123456789abcdef"},"n":{"N":"1.5"},"tags":{"SS":["a","b"]}}`, i, i)
	}
	var reqs []string
	for i := range 25 {
		reqs = append(reqs, `{"PutRequest":{"Item":`+item(i)+`}}`)
	}
	bodies := []struct {
		op   string
		in   func() any
		body string
	}{
		{"PutItem", func() any { return new(table.PutItemInput) }, `{"TableName":"bench","Item":` + item(1) + `}`},
		{"UpdateItem", func() any { return new(table.UpdateItemInput) }, `{"TableName":"bench","Key":{"pk":{"S":"item-1"},"sk":{"N":"1"}},"UpdateExpression":"SET #n = :n","ConditionExpression":"attribute_not_exists(pk) OR #n < :n","ExpressionAttributeNames":{"#n":"n"},"ExpressionAttributeValues":{":n":{"N":"2"}}}`},
		{"BatchWriteItem", func() any { return new(table.BatchWriteItemInput) }, `{"RequestItems":{"bench":[` + strings.Join(reqs, ",") + `]}}`},
	}
	for _, c := range bodies {
		op := lookup(DynamoDB, c.op)
		body := []byte(c.body)
		b.Run(c.op+"/twice", func(b *testing.B) {
			for b.Loop() {
				if err := validateJSON(op, body, nil); err != nil {
					b.Fatal(err)
				}
				if err := dynamoDecode(body, c.in()); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.op+"/value", func(b *testing.B) {
			for b.Loop() {
				rq := &request{body: body}
				v, err := validateJSONValue(op, body, nil)
				if err != nil {
					b.Fatal(err)
				}
				rq.parsed = v
				if err := rq.dynamoDecodeParsed(c.in()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
