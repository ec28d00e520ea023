package awsapi

// Fuzz tests over the JSON input of every operation of every service,
// driven by the operations table: the input is an operation (an index
// into the service's rows) and a body. Whatever the body, the answer is
// a success or a well-formed AWS error of the API's shape, below HTTP
// 500: a panic (answered as an internal failure, 500) fails the test. The
// seed corpus is, for each operation, a valid input (built from the
// operation's input shape in the model, or written by hand below) and
// malformed ones. `go test` runs the seeds; CI fuzzes each service for a
// bounded time (.ci/run).

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/internal/testenv"
)

func FuzzKinesis(f *testing.F)         { fuzzService(f, Kinesis) }
func FuzzDynamoDB(f *testing.F)        { fuzzService(f, DynamoDB) }
func FuzzDynamoDBStreams(f *testing.F) { fuzzService(f, DynamoDBStreams) }
func FuzzSQS(f *testing.F)             { fuzzService(f, SQS) }
func FuzzLambda(f *testing.F)          { fuzzService(f, Lambda) }
func FuzzCloudWatchLogs(f *testing.F)  { fuzzService(f, CloudWatchLogs) }
func FuzzEventBridge(f *testing.F)     { fuzzService(f, EventBridge) }

// FuzzIAM and FuzzSTS fuzz the form (query protocol) of their operations.
func FuzzIAM(f *testing.F) { fuzzService(f, IAM) }
func FuzzSTS(f *testing.F) { fuzzService(f, STS) }

// fuzzSeeds are valid inputs the model cannot make (names of the
// resources fuzzService creates, expressions), by operation name.
var fuzzSeeds = map[Service]map[string][]string{
	Kinesis: {
		"PutRecord":        {`{"StreamName":"fuzz","Data":"eA==","PartitionKey":"k"}`},
		"PutRecords":       {`{"StreamName":"fuzz","Records":[{"Data":"eA==","PartitionKey":"k"},{"Data":"","PartitionKey":"j","ExplicitHashKey":"1"}]}`},
		"GetShardIterator": {`{"StreamName":"fuzz","ShardId":"shardId-000000000000","ShardIteratorType":"TRIM_HORIZON"}`, `{"StreamName":"fuzz","ShardId":"shardId-000000000000","ShardIteratorType":"AT_TIMESTAMP","Timestamp":1.5e9}`},
		"GetRecords":       {`{"ShardIterator":"AAAA"}`},
		"DescribeStream":   {`{"StreamName":"fuzz","Limit":1}`},
		"ListShards":       {`{"StreamName":"fuzz","MaxResults":1}`},
	},
	DynamoDB: {
		"PutItem": {`{"TableName":"fuzz","Item":{"id":{"S":"a"},"n":{"N":"1.5"},"l":{"L":[{"M":{"b":{"BS":["eA=="]}}}]}},"ConditionExpression":"attribute_not_exists(id)"}`,
			`{"TableName":"fuzz","Item":{"id":{"S":"b"}},"Expected":{"id":{"Exists":false},"n":{"ComparisonOperator":"BETWEEN","AttributeValueList":[{"N":"1"},{"N":"2"}]}},"ConditionalOperator":"OR"}`},
		"GetItem": {`{"TableName":"fuzz","Key":{"id":{"S":"a"}},"ProjectionExpression":"id, l[0].b"}`,
			`{"TableName":"fuzz","Key":{"id":{"S":"a"}},"AttributesToGet":["id","n"]}`},
		"UpdateItem": {`{"TableName":"fuzz","Key":{"id":{"S":"a"}},"UpdateExpression":"SET #n = :v ADD s :s","ExpressionAttributeNames":{"#n":"n"},"ExpressionAttributeValues":{":v":{"N":"2"},":s":{"SS":["x"]}},"ReturnValues":"ALL_NEW"}`,
			`{"TableName":"fuzz","Key":{"id":{"S":"a"}},"AttributeUpdates":{"n":{"Action":"ADD","Value":{"N":"1"}},"x":{"Action":"DELETE"},"y":{"Value":{"S":"v"}}},"Expected":{"n":{"ComparisonOperator":"IN","AttributeValueList":[{"N":"1"}]}}}`},
		"DeleteItem": {`{"TableName":"fuzz","Key":{"id":{"S":"a"}},"ReturnValues":"ALL_OLD"}`},
		"Query": {`{"TableName":"fuzz","KeyConditionExpression":"id = :v","FilterExpression":"n > :n","ExpressionAttributeValues":{":v":{"S":"a"},":n":{"N":"0"}},"Limit":1}`,
			`{"TableName":"fuzz","KeyConditions":{"id":{"ComparisonOperator":"EQ","AttributeValueList":[{"S":"a"}]}},"QueryFilter":{"n":{"ComparisonOperator":"NOT_NULL"}},"Select":"COUNT"}`},
		"Scan": {`{"TableName":"fuzz","Limit":2,"ExclusiveStartKey":{"id":{"S":"a"}}}`,
			`{"TableName":"fuzz","ScanFilter":{"s":{"ComparisonOperator":"CONTAINS","AttributeValueList":[{"S":"x"}]}},"ConditionalOperator":"AND"}`},
		"TransactWriteItems": {`{"TransactItems":[{"Put":{"TableName":"fuzz","Item":{"id":{"S":"t"}}}},{"ConditionCheck":{"TableName":"fuzz","Key":{"id":{"S":"a"}},"ConditionExpression":"attribute_exists(id)"}}]}`},
		"CreateTable":        {`{"TableName":"fuzz2","AttributeDefinitions":[{"AttributeName":"h","AttributeType":"S"},{"AttributeName":"r","AttributeType":"N"}],"KeySchema":[{"AttributeName":"h","KeyType":"HASH"},{"AttributeName":"r","KeyType":"RANGE"}],"BillingMode":"PAY_PER_REQUEST","StreamSpecification":{"StreamEnabled":true,"StreamViewType":"NEW_AND_OLD_IMAGES"}}`},
	},
	SQS: {
		"SendMessage":    {`{"QueueUrl":"http://localhost/000000000000/fuzz","MessageBody":"x","MessageAttributes":{"a":{"DataType":"String","StringValue":"v"}}}`},
		"ReceiveMessage": {`{"QueueUrl":"http://localhost/000000000000/fuzz","MaxNumberOfMessages":2,"WaitTimeSeconds":0}`},
		"CreateQueue":    {`{"QueueName":"fuzz.fifo","Attributes":{"FifoQueue":"true"}}`},
	},
	Lambda: {
		"CreateFunction": {`{"FunctionName":"fuzz","Runtime":"runnel","Handler":"fuzz","Role":"arn:aws:iam::000000000000:role/r"}`},
		"Invoke":         {`{"x":1}`},
	},
}

// fuzzMalformed are bodies every operation gets as seeds (the form
// services' too, with a valid form among them).
var fuzzMalformed = []string{``, `{`, `[]`, `null`, `"x"`, `{"a":}`, `{}` + "\x00", strings.Repeat(`{"M":`, 200),
	`RoleName=fuzz&AssumeRolePolicyDocument=%7B%7D&Path=%2F&MaxItems=1`, `%zz&=&&a=%`}

func fuzzService(f *testing.F, svc Service) {
	var ops []*Operation
	for _, op := range operations[svc] {
		ops = append(ops, op)
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].Name < ops[j].Name })
	for i, op := range ops {
		var bodies []string
		if s := inputShape(op); s != nil {
			for _, all := range []bool{false, true} {
				b, _ := json.Marshal(exampleOf(s, all, 0))
				bodies = append(bodies, string(b), strings.NewReplacer(`"`+exampleString+`"`, "7", `true`, `"true"`).Replace(string(b)))
			}
		}
		bodies = append(append(bodies, fuzzSeeds[svc][op.Name]...), fuzzMalformed...)
		for _, b := range bodies {
			f.Add(uint8(i), []byte(b))
		}
	}

	rn := testenv.Start(f, testenv.Options{})
	// The panic's stack is logged (RUNNEL_TEST_LOG=1 shows it).
	h := NewEndpoint(rn, Options{Logger: testenv.Logger(f)}, LambdaOptions{WorkDir: f.TempDir()})
	f.Cleanup(h.Close)
	for _, setup := range []struct{ target, body string }{
		{"Kinesis_20131202.CreateStream", `{"StreamName":"fuzz","ShardCount":1}`},
		{"DynamoDB_20120810.CreateTable", `{"TableName":"fuzz","AttributeDefinitions":[{"AttributeName":"id","AttributeType":"S"}],"KeySchema":[{"AttributeName":"id","KeyType":"HASH"}],"StreamSpecification":{"StreamEnabled":true,"StreamViewType":"NEW_IMAGE"}}`},
		{"AmazonSQS.CreateQueue", `{"QueueName":"fuzz"}`},
	} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, jsonRequest(context.Background(), setup.target, []byte(setup.body)))
		if w.Code != 200 {
			f.Fatalf("%s: %d %s", setup.target, w.Code, w.Body)
		}
	}

	f.Fuzz(func(t *testing.T, i uint8, body []byte) {
		op := ops[int(i)%len(ops)]
		// Bounded: a receive or an invocation may wait; cut short, it is
		// answered as RequestCanceled, still an AWS error.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		var r *http.Request
		switch scope := formScope[svc]; {
		case svc == Lambda:
			method, path, _ := strings.Cut(op.Routes[0], " ")
			path = strings.NewReplacer("{name}", "fuzz", "{uuid}", "6d5c1f2e-0000-4000-8000-000000000000", "{alias}", "fuzz", "{layer}", "fuzz", "{version}", "1", "{sid}", "fuzz", "{arn}", "arn:aws:lambda:us-east-1:000000000000:function:fuzz", "{$}", "").Replace(path)
			r = httptest.NewRequestWithContext(ctx, method, path, bytes.NewReader(body))
		case scope != "":
			r = httptest.NewRequestWithContext(ctx, "POST", "/?Action="+op.Name, bytes.NewReader(body))
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			r.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=AKID/20260101/us-east-1/"+scope+"/aws4_request, SignedHeaders=host, Signature=00")
			r.Header.Set("X-Amz-Date", "20260101T000000Z")
		default:
			r = jsonRequest(ctx, targetOf[svc]+op.Name, body)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code >= 500 {
			t.Fatalf("%s %s %q: %d %s", svc, op.Name, body, w.Code, w.Body)
		}
		checkWellFormed(t, svc, op, body, w)
	})
}

// checkWellFormed fails unless w is a success or an AWS error of svc's
// shape.
func checkWellFormed(t *testing.T, svc Service, op *Operation, body []byte, w *httptest.ResponseRecorder) {
	switch {
	case svc == Lambda:
		if w.Code >= 400 && w.Header().Get("X-Amzn-ErrorType") == "" {
			t.Fatalf("Lambda %s %q: %d without X-Amzn-ErrorType: %s", op.Name, body, w.Code, w.Body)
		}
		return
	case formScope[svc] != "":
		if w.Code >= 400 && !bytes.Contains(w.Body.Bytes(), []byte("<Code>")) {
			t.Fatalf("%s %s %q: %d without an XML error: %s", svc, op.Name, body, w.Code, w.Body)
		}
		return
	}
	// Kinesis answers an operation without a result (AddTagsToStream,
	// CreateStream, ...) with an empty body, as AWS does.
	if svc == Kinesis && w.Code == 200 && w.Body.Len() == 0 {
		return
	}
	var e struct {
		Type    *string `json:"__type"`
		Message *string `json:"message"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil {
		t.Fatalf("%s %s %q: %d, not JSON: %v: %s", svc, op.Name, body, w.Code, err, w.Body)
	}
	// Kinesis's SerializationException of a body that is not JSON has no
	// message, as Kinesis's has none.
	// DynamoDB's has none either for an empty body.
	bare := (svc == Kinesis && e.Type != nil && *e.Type == "SerializationException") ||
		(svc == DynamoDB && e.Type != nil && *e.Type == "com.amazon.coral.service#SerializationException")
	if w.Code != 200 && (e.Type == nil || *e.Type == "" || (e.Message == nil && !bare)) {
		t.Fatalf("%s %s %q: %d without __type and message: %s", svc, op.Name, body, w.Code, w.Body)
	}
}

var targetOf = map[Service]string{Kinesis: "Kinesis_20131202.", SQS: "AmazonSQS.", DynamoDB: "DynamoDB_20120810.", DynamoDBStreams: "DynamoDBStreams_20120810.",
	CloudWatchLogs: "Logs_20140328.", EventBridge: "AWSEvents."}

// formScope is the SigV4 scope of the services fuzzed through their form.
var formScope = map[Service]string{IAM: "iam", STS: "sts"}

func jsonRequest(ctx context.Context, target string, body []byte) *http.Request {
	r := httptest.NewRequestWithContext(ctx, "POST", "/", bytes.NewReader(body))
	r.Header.Set("X-Amz-Target", target)
	r.Header.Set("Content-Type", "application/x-amz-json-1.0")
	signInternal(r)
	return r
}

// signInternal gives r a SigV4 Authorization header of the right form
// (every request must be signed; its value is checked only with
// Options.Auth) and an X-Amz-Date.
func signInternal(r *http.Request) {
	r.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=AKID/20260101/us-east-1/runnel/aws4_request, SignedHeaders=host, Signature=00")
	r.Header.Set("X-Amz-Date", "20260101T000000Z")
}

// exampleString is the value exampleOf gives a string without an enum.
const exampleString = "fuzz"

// exampleOf builds a value of s: the required members of a structure (all
// of them with all), the first value of an enum, a list or map of one.
func exampleOf(s *shape, all bool, depth int) any {
	if depth > 6 {
		return nil
	}
	switch s.Type {
	case "structure":
		m := map[string]any{}
		for _, mem := range s.Members {
			if mem.Location != "" || !(all || s.req[mem.name]) {
				continue
			}
			if v := exampleOf(mem.shape, all && depth < 2, depth+1); v != nil {
				m[mem.wireName()] = v
			}
		}
		return m
	case "list":
		if v := exampleOf(s.Member.shape, all, depth+1); v != nil {
			return []any{v}
		}
		return []any{}
	case "map":
		if v := exampleOf(s.Value.shape, all, depth+1); v != nil {
			return map[string]any{"k": v}
		}
		return map[string]any{}
	case "string":
		if len(s.Enum) > 0 {
			return s.Enum[0]
		}
		return exampleString
	case "blob":
		return "eA=="
	case "boolean":
		return true
	case "timestamp":
		return 1.5e9
	}
	if s.Min != nil {
		return *s.Min
	}
	return 1
}
