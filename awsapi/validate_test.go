package awsapi_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/runnel-dev/runnel/awsapi"
	"github.com/runnel-dev/runnel/internal/testenv"
)

// TestValidationAsAWS sends requests AWS refused, with the code and
// message AWS answered as quoted in public issues (each case names its
// source), and expects the same: the model's validation comes before any
// stream or table is looked up (none of these exists).
func TestValidationAsAWS(t *testing.T) {
	h := awsapi.NewHandler(testenv.Start(t, testenv.Options{}), awsapi.Options{})
	for _, tt := range []struct {
		name, target, body string
		code, message      string
	}{
		{
			// localstack/localstack#4048 (botocore's ClientError from AWS).
			name: "Kinesis stream name pattern", target: "Kinesis_20131202.PutRecord",
			body: `{"StreamName":"test_stream_tablelsbat-kclapp2/stream/2021-05-18T20:27:22.715","Data":"eA==","PartitionKey":"k"}`,
			code: "ValidationException",
			message: "1 validation error detected: Value 'test_stream_tablelsbat-kclapp2/stream/2021-05-18T20:27:22.715' at 'streamName' failed to satisfy constraint: " +
				"Member must satisfy regular expression pattern: [a-zA-Z0-9_.-]+",
		},
		{
			// bizreach/aws-kinesis-scala#19 (AmazonKinesisException, Error Code: ValidationException).
			name: "Kinesis stream ARN as a name", target: "Kinesis_20131202.PutRecords",
			body: `{"StreamName":"arn:aws:kinesis:us-east-1:968336292dfd411:stream/XXXXX","Records":[{"Data":"eA==","PartitionKey":"k"}]}`,
			code: "ValidationException",
			message: "1 validation error detected: Value 'arn:aws:kinesis:us-east-1:968336292dfd411:stream/XXXXX' at 'streamName' failed to satisfy constraint: " +
				"Member must satisfy regular expression pattern: [a-zA-Z0-9_.-]+",
		},
		{
			// Netflix-Skunkworks/iep-apps#527, AllocZero/EfficientDynamoDb#164.
			name: "DynamoDB missing table name", target: "DynamoDB_20120810.GetItem",
			body:    `{"Key":{"id":{"S":"x"}}}`,
			code:    "ValidationException",
			message: "1 validation error detected: Value null at 'tableName' failed to satisfy constraint: Member must not be null",
		},
		{
			// paritysuite/dynamodb-conformance, PutItem's exact error messages.
			name: "DynamoDB table name pattern", target: "DynamoDB_20120810.PutItem",
			body:    `{"TableName":"bad table!@#","Item":{"pk":{"S":"test"}}}`,
			code:    "ValidationException",
			message: "1 validation error detected: Value 'bad table!@#' at 'tableName' failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9_.-]+",
		},
		{
			// paritysuite/dynamodb-conformance, PutItem's exact error messages.
			name: "DynamoDB table name length", target: "DynamoDB_20120810.PutItem",
			body:    `{"TableName":"` + strings.Repeat("a", 256) + `","Item":{"pk":{"S":"test"}}}`,
			code:    "ValidationException",
			message: "1 validation error detected: Value '" + strings.Repeat("a", 256) + "' at 'tableName' failed to satisfy constraint: Member must have length less than or equal to 255",
		},
		{
			// aws/aws-sdk-js#381 and #43.
			name: "DynamoDB empty attribute value", target: "DynamoDB_20120810.PutItem",
			body:    `{"TableName":"missing","Item":{"id":{"S":"x"},"a":{}}}`,
			code:    "ValidationException",
			message: "Supplied AttributeValue is empty, must contain exactly one of the supported datatypes",
		},
		{
			// aws/aws-sdk-net#428.
			name: "DynamoDB attribute value of two types", target: "DynamoDB_20120810.PutItem",
			body:    `{"TableName":"missing","Item":{"id":{"S":"x","N":"1"}}}`,
			code:    "ValidationException",
			message: "Supplied AttributeValue has more than one datatypes set, must contain exactly one of the supported datatypes",
		},
		{
			// zio/zio-dynamodb#113 (DynamoDbException from AWS).
			name: "DynamoDB empty string set", target: "DynamoDB_20120810.PutItem",
			body:    `{"TableName":"missing","Item":{"id":{"S":"x"},"s":{"SS":[]}}}`,
			code:    "ValidationException",
			message: "One or more parameter values were invalid: An string set  may not be empty",
		},
		{
			// aws/aws-sdk-net#3297.
			name: "DynamoDB empty number set", target: "DynamoDB_20120810.PutItem",
			body:    `{"TableName":"missing","Item":{"id":{"S":"x"},"s":{"NS":[]}}}`,
			code:    "ValidationException",
			message: "One or more parameter values were invalid: An number set  may not be empty",
		},
		{
			// localstack/localstack#9412 (the JavaScript SDK's error from AWS).
			name: "DynamoDB number sent as a JSON number", target: "DynamoDB_20120810.PutItem",
			body:    `{"TableName":"missing","Item":{"id":{"S":"x"},"n":{"N":5}}}`,
			code:    "SerializationException",
			message: "NUMBER_VALUE cannot be converted to String",
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, message, status := call(h, tt.target, tt.body)
			if status != 400 || code != tt.code || message != tt.message {
				t.Errorf("%d %s %q\nwant 400 %s %q", status, code, message, tt.code, tt.message)
			}
		})
	}
}

// TestMalformedAttributeValues sends attribute values no typed SDK sends:
// each is an error in AWS's words, never a dropped connection.
func TestMalformedAttributeValues(t *testing.T) {
	h := awsapi.NewHandler(testenv.Start(t, testenv.Options{}), awsapi.Options{})
	for _, tt := range []struct{ value, code, message string }{
		{`{"BS":[1]}`, "SerializationException", "only base-64-encoded strings are convertible to bytes"},
		{`{"BS":["not base64!"]}`, "SerializationException", ""},
		{`{"SS":[1]}`, "SerializationException", "NUMBER_VALUE cannot be converted to String"},
		{`{"L":[1]}`, "SerializationException", "Unexpected value type in payload"},
		{`{"M":{"a":"b"}}`, "SerializationException", "Unexpected value type in payload"},
		{`{"M":{"a":{"BS":[true]}}}`, "SerializationException", "only base-64-encoded strings are convertible to bytes"},
		{`{"BOOL":"23"}`, "SerializationException", "Unexpected token received from parser"}, // "yes", "no", "1", "0" read as booleans
		{`"x"`, "SerializationException", "Unexpected value type in payload"},
		{`[]`, "SerializationException", "Unrecognized collection type class com.amazonaws.dynamodb.v20120810.AttributeValue"},
		{`{"NULL":false}`, "ValidationException", "One or more parameter values were invalid: Null attribute value types must have the true value"},
		{`{"N":"abc"}`, "ValidationException", "The parameter cannot be converted to a numeric value: abc"},
		{`{"N":"1e200"}`, "ValidationException", "Number overflow. Attempting to store a number with magnitude larger than supported range"},
		{`{"N":"1e-200"}`, "ValidationException", "Number underflow. Attempting to store a number with magnitude smaller than supported range"},
		{`{"N":"123456789012345678901234567890123456789"}`, "ValidationException", "Attempting to store more than 38 significant digits in a Number"},
		{`{"SS":["a","a"]}`, "ValidationException", "One or more parameter values were invalid: Input collection [a, a] contains duplicates."},
		{`{"NS":["1","1.0"]}`, "ValidationException", "One or more parameter values were invalid: Input collection [1, 1.0] contains duplicates."},
		{`{"BS":[]}`, "ValidationException", "One or more parameter values were invalid: Binary sets should not be empty"},
		{`{"L":[{"M":{"x":{"SS":[]}}}]}`, "ValidationException", "One or more parameter values were invalid: An string set  may not be empty"},
	} {
		for _, body := range []string{
			`{"TableName":"missing","Item":{"id":{"S":"x"},"v":` + tt.value + `}}`,
			`{"TableName":"missing","Key":{"id":` + tt.value + `}}`,
			`{"TableName":"missing","KeyConditionExpression":"id = :v","ExpressionAttributeValues":{":v":` + tt.value + `}}`,
		} {
			var op string
			switch {
			case strings.Contains(body, `"Item"`):
				op = "PutItem"
			case strings.Contains(body, `"Key"`):
				op = "GetItem"
			default:
				op = "Query"
			}
			want := tt.message
			if op == "Query" && tt.code == "ValidationException" {
				// A value of ExpressionAttributeValues is named, as DynamoDB does.
				want = "ExpressionAttributeValues contains invalid value: " + want + " for key :v"
			}
			code, message, status := call(h, "DynamoDB_20120810."+op, body)
			if status != 400 || code != tt.code || (want != "" && message != want) {
				t.Errorf("%s %s: %d %s %q, want %s %q", op, tt.value, status, code, message, tt.code, want)
			}
		}
	}
}

// call sends body to the operation of target and returns the error's code
// (the __type after its namespace), message and status.
func call(h *awsapi.Handler, target, body string) (code, message string, status int) {
	rec := &recorder{header: map[string][]string{}}
	h.ServeHTTP(rec, httpRequest("POST", "/", body, map[string]string{"X-Amz-Target": target}))
	typ, message := rec.jsonError()
	if rec.status == 0 {
		rec.status = 200
	}
	return shortType(typ), message, rec.status
}

// jsonError is the __type and message of a JSON error answer.
func (rec *recorder) jsonError() (typ, message string) {
	var e struct {
		Type    string `json:"__type"`
		Message string `json:"message"`
	}
	_ = json.Unmarshal(rec.body.Bytes(), &e)
	return e.Type, e.Message
}

// shortType is an error's __type without its namespace.
func shortType(typ string) string {
	if i := strings.LastIndexByte(typ, '#'); i >= 0 {
		return typ[i+1:]
	}
	return typ
}

// TestGetShardIteratorChecks: a StartingSequenceNumber with TRIM_HORIZON
// or LATEST, and an AT_TIMESTAMP after now, are refused before the stream
// is looked up (none exists here).
func TestGetShardIteratorChecks(t *testing.T) {
	h := awsapi.NewHandler(testenv.Start(t, testenv.Options{}), awsapi.Options{})
	for _, tt := range []struct{ body, message string }{
		{`{"StreamName":"missing","ShardId":"shardId-000000000000","ShardIteratorType":"LATEST","StartingSequenceNumber":"1"}`,
			"Must either specify (1) AT_SEQUENCE_NUMBER or AFTER_SEQUENCE_NUMBER and StartingSequenceNumber or (2) TRIM_HORIZON or LATEST and no StartingSequenceNumber. Request specified LATEST and also a StartingSequenceNumber."},
		{`{"StreamName":"missing","ShardId":"shardId-000000000000","ShardIteratorType":"TRIM_HORIZON","StartingSequenceNumber":"1"}`,
			"Request specified TRIM_HORIZON and also a StartingSequenceNumber."},
		{`{"StreamName":"missing","ShardId":"shardId-000000000000","ShardIteratorType":"AT_TIMESTAMP","Timestamp":4102444800}`,
			"The timestampInMillis parameter cannot be greater than the currentTimestampInMillis. timestampInMillis: 4102444800000, currentTimestampInMillis: "},
	} {
		code, message, status := call(h, "Kinesis_20131202.GetShardIterator", tt.body)
		if status != 400 || code != "InvalidArgumentException" || !strings.Contains(message, tt.message) {
			t.Errorf("%s: %d %s %q, want InvalidArgumentException %q", tt.body, status, code, message, tt.message)
		}
	}
}

// TestValidationOfBlobs: a blob over its length is written as AWS's Java
// writes it, not echoed.
func TestValidationOfBlobs(t *testing.T) {
	h := awsapi.NewHandler(testenv.Start(t, testenv.Options{}), awsapi.Options{})
	data := strings.Repeat("A", 13981016) // 10485762 bytes, over the model's 10 MiB
	code, message, _ := call(h, "Kinesis_20131202.PutRecord", `{"StreamName":"missing","PartitionKey":"k","Data":"`+data+`"}`)
	want := "1 validation error detected: Value 'java.nio.HeapByteBuffer[pos=0 lim=10485762 cap=10485762]' at 'data' failed to satisfy constraint: Member must have length less than or equal to 10485760"
	if code != "ValidationException" || message != want {
		t.Errorf("%s %q, want %q", code, message, want)
	}
}
