package awsapi_test

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/runnel-dev/runnel/awsapi"
	"github.com/runnel-dev/runnel/internal/testenv"
)

// TestKinesisWording sends Kinesis requests of the wrong type or out of
// the model's constraints and expects Kinesis's words and order, as
// kinesalite's tests (written against AWS) record them: its JSON reader's
// messages, a string's pattern before its length, the members in the
// order Kinesis reports them. No stream exists: all come before the
// stream is looked up.
func TestKinesisWording(t *testing.T) {
	h := awsapi.NewHandler(testenv.Start(t, testenv.Options{}), awsapi.Options{})
	name := strings.Repeat("a", 129)
	for _, tt := range []struct {
		op, body      string
		code, message string
	}{
		{"DeleteStream", `{"StreamName":true}`, "SerializationException", "class java.lang.Boolean can not be converted to an String"},
		{"DeleteStream", `{"StreamName":23}`, "SerializationException", "class com.amazon.coral.value.json.numbers.TruncatingBigNumber can not be converted to an String"},
		{"DeleteStream", `{"StreamName":[]}`, "SerializationException", "Start of list found where not expected"},
		{"DeleteStream", `{"StreamName":{}}`, "SerializationException", "Start of structure or map found where not expected."},
		{"CreateStream", `{"ShardCount":"23"}`, "SerializationException", "class java.lang.String can not be converted to an Integer"},
		{"CreateStream", `{"ShardCount":true}`, "SerializationException", "class java.lang.Boolean can not be converted to an Integer"},
		{"PutRecord", `{"Data":23}`, "SerializationException", "class com.amazon.coral.value.json.numbers.TruncatingBigNumber can not be converted to a Blob"},
		{"PutRecord", `{"Data":"23456"}`, "SerializationException", "'23456' can not be converted to a Blob: Base64 encoded length is expected a multiple of 4 bytes but found: 5"},
		{"PutRecord", `{"Data":"=+/="}`, "SerializationException", "'=+/=' can not be converted to a Blob: Invalid Base64 character: '='"},
		{"PutRecord", `{"Data":"+/+="}`, "SerializationException", "'+/+=' can not be converted to a Blob: Invalid last non-pad Base64 character dectected"},
		{"PutRecords", `{"Records":"23"}`, "SerializationException", "Expected list or null"},
		{"PutRecords", `{"Records":[23]}`, "SerializationException", "Expected null"},
		{"PutRecords", `{"Records":[[]]}`, "SerializationException", "Start of list found where not expected"},
		{"AddTagsToStream", `{"Tags":true}`, "SerializationException", "Expected map or null"},
		{"AddTagsToStream", `{"Tags":[]}`, "SerializationException", "Start of list found where not expected"},
		{"CreateStream", `{"StreamName":"","ShardCount":0}`, "ValidationException", "3 validation errors detected: " +
			"Value '0' at 'shardCount' failed to satisfy constraint: Member must have value greater than or equal to 1; " +
			"Value '' at 'streamName' failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9_.-]+; " +
			"Value '' at 'streamName' failed to satisfy constraint: Member must have length greater than or equal to 1"},
		// A number past an Integer is truncated to one (Java's intValue), not refused.
		{"CreateStream", `{"StreamName":"` + name + `","ShardCount":100000000000}`, "ValidationException", "1 validation error detected: " +
			"Value '" + name + "' at 'streamName' failed to satisfy constraint: Member must have length less than or equal to 128"},
		// A list's element out of range fails the list, with the element's constraints.
		{"RemoveTagsFromStream", `{"StreamName":"s","TagKeys":["a","` + name + `","b"]}`, "ValidationException", "1 validation error detected: " +
			"Value '[a, " + name + ", b]' at 'tagKeys' failed to satisfy constraint: Member must satisfy constraint: " +
			"[Member must have length less than or equal to 128, Member must have length greater than or equal to 1]"},
		{"GetRecords", `{"ShardIterator":"","Limit":0}`, "ValidationException", "2 validation errors detected: " +
			"Value '0' at 'limit' failed to satisfy constraint: Member must have value greater than or equal to 1; " +
			"Value '' at 'shardIterator' failed to satisfy constraint: Member must have length greater than or equal to 1"},
		{"SplitShard", `{"StreamName":"` + name + `","ShardToSplit":"` + name + `","NewStartingHashKey":"0"}`, "ValidationException", "2 validation errors detected: " +
			"Value '" + name + "' at 'streamName' failed to satisfy constraint: Member must have length less than or equal to 128; " +
			"Value '" + name + "' at 'shardToSplit' failed to satisfy constraint: Member must have length less than or equal to 128"},
	} {
		code, message, status := call(h, "Kinesis_20131202."+tt.op, tt.body)
		if status != 400 || code != tt.code || message != tt.message {
			t.Errorf("%s %s: %d %s %q\nwant 400 %s %q", tt.op, tt.body, status, code, message, tt.code, tt.message)
		}
	}
}

// TestKinesisSerializationBody: Kinesis's SerializationException carries
// its text under "Message", not "message".
func TestKinesisSerializationBody(t *testing.T) {
	h := awsapi.NewHandler(testenv.Start(t, testenv.Options{}), awsapi.Options{})
	rec := &recorder{header: map[string][]string{}}
	h.ServeHTTP(rec, httpRequest("POST", "/", `{"StreamName":true}`, map[string]string{"X-Amz-Target": "Kinesis_20131202.DeleteStream"}))
	want := `{"Message":"class java.lang.Boolean can not be converted to an String","__type":"SerializationException"}`
	if got := strings.TrimSpace(rec.body.String()); got != want {
		t.Errorf("body %s, want %s", got, want)
	}
}

// TestKinesisStreamWording checks Kinesis's words on a stream that
// exists (3 shards), as kinesalite's tests record them from AWS: shard
// IDs read leniently ("shard-0", "x-2") and an unreadable one refused
// before the stream is looked up, ranges and hash keys refused in
// Kinesis's words, and an empty body for an operation without a result.
func TestKinesisStreamWording(t *testing.T) {
	h := awsapi.NewHandler(testenv.Start(t, testenv.Options{}), awsapi.Options{})
	if code, msg, status := call(h, "Kinesis_20131202.CreateStream", `{"StreamName":"w","ShardCount":3}`); status != 200 {
		t.Fatalf("CreateStream: %d %s %s", status, code, msg)
	}
	acct := "000000000000"
	for _, tt := range []struct {
		op, body      string
		code, message string
	}{
		{"GetShardIterator", `{"StreamName":"missing","ShardId":"x-00002147483647","ShardIteratorType":"LATEST"}`,
			"ResourceNotFoundException", "Shard shardId-002147483647 in stream missing under account " + acct + " does not exist"},
		{"GetShardIterator", `{"StreamName":"missing","ShardId":"2147483648","ShardIteratorType":"LATEST"}`,
			"ResourceNotFoundException", "Could not find shard 2147483648 in stream missing under account " + acct + "."},
		{"GetShardIterator", `{"StreamName":"w","ShardId":"shardId-5","ShardIteratorType":"LATEST"}`,
			"ResourceNotFoundException", "Shard shardId-000000000005 in stream w under account " + acct + " does not exist"},
		{"GetShardIterator", `{"StreamName":"w","ShardId":"shardId-0","ShardIteratorType":"AT_SEQUENCE_NUMBER"}`,
			"InvalidArgumentException", "Must either specify (1) AT_SEQUENCE_NUMBER or AFTER_SEQUENCE_NUMBER and StartingSequenceNumber or " +
				"(2) TRIM_HORIZON or LATEST and no StartingSequenceNumber. Request specified AT_SEQUENCE_NUMBER and no StartingSequenceNumber."},
		{"SplitShard", `{"StreamName":"missing","ShardToSplit":"ABKLFD8","NewStartingHashKey":"0"}`,
			"ResourceNotFoundException", "Could not find shard ABKLFD8 in stream missing under account " + acct + "."},
		{"SplitShard", `{"StreamName":"w","ShardToSplit":"shard-2","NewStartingHashKey":"999999999999999999999999999999999999999"}`,
			"InvalidArgumentException", "NewStartingHashKey 999999999999999999999999999999999999999 used in SplitShard() on shard shardId-000000000002 in stream w under account " + acct +
				" is not both greater than one plus the shard's StartingHashKey 226854911280625642308916404954512140970 and less than the shard's EndingHashKey 340282366920938463463374607431768211455."},
		{"MergeShards", `{"StreamName":"w","ShardToMerge":"x-5","AdjacentShardToMerge":"x-0"}`,
			"ResourceNotFoundException", "Could not find shard shardId-000000000005 in stream w under account " + acct + "."},
		{"MergeShards", `{"StreamName":"w","ShardToMerge":"x-1","AdjacentShardToMerge":"x-0"}`,
			"InvalidArgumentException", "Shards shardId-000000000001 and shardId-000000000000 in stream w under account " + acct + " are not an adjacent pair of shards eligible for merging"},
		{"PutRecord", `{"StreamName":"w","PartitionKey":"a","Data":"","ExplicitHashKey":"340282366920938463463374607431768211456"}`,
			"InvalidArgumentException", "Invalid ExplicitHashKey. ExplicitHashKey must be in the range: [0, 2^128-1]. Specified value was 340282366920938463463374607431768211456"},
		{"GetRecords", `{"ShardIterator":"__kinesalite_test_1"}`, "InvalidArgumentException", "Invalid ShardIterator."},
		{"DecreaseStreamRetentionPeriod", `{"StreamName":"w","RetentionPeriodHours":23}`,
			"InvalidArgumentException", "Minimum allowed retention period is 24 hours. Requested retention period (23 hours) is too short."},
		{"IncreaseStreamRetentionPeriod", `{"StreamName":"w","RetentionPeriodHours":8761}`,
			"InvalidArgumentException", "Maximum allowed retention period is 8760 hours. Requested retention period (8761 hours) is too long."},
		{"RemoveTagsFromStream", `{"StreamName":"missing","TagKeys":[";"]}`, "ResourceNotFoundException", "Stream missing under account " + acct + " not found."},
		{"RemoveTagsFromStream", `{"StreamName":"w","TagKeys":["abc\tdef"]}`,
			"InvalidArgumentException", "Some tags contain invalid characters. Valid characters: Unicode letters, digits, white space, _ . / = + - % @ :."},
		{"RemoveTagsFromStream", `{"StreamName":"w","TagKeys":["abc%def"]}`,
			"InvalidArgumentException", "Failed to remove tags from stream w under account " + acct + " because some tags contained illegal characters. " +
				"The allowed characters are Unicode letters, white-spaces, '_',',','/','=','+','-','@',':'."},
	} {
		code, message, status := call(h, "Kinesis_20131202."+tt.op, tt.body)
		if status != 400 || code != tt.code || message != tt.message {
			t.Errorf("%s %s: %d %s %q\nwant 400 %s %q", tt.op, tt.body, status, code, message, tt.code, tt.message)
		}
	}
	for _, target := range []string{"RemoveTagsFromStream", "AddTagsToStream"} {
		rec := &recorder{header: map[string][]string{}}
		h.ServeHTTP(rec, httpRequest("POST", "/", `{"StreamName":"w","TagKeys":["ü0 _.","/=+-@:"],"Tags":{"a":"b"}}`, map[string]string{"X-Amz-Target": "Kinesis_20131202." + target}))
		if (rec.status != 0 && rec.status != 200) || rec.body.Len() != 0 {
			t.Errorf("%s: %d %q, want 200 and an empty body", target, rec.status, rec.body.String())
		}
	}
	// A shard ID read leniently names the shard.
	rec := &recorder{header: map[string][]string{}}
	h.ServeHTTP(rec, httpRequest("POST", "/", `{"StreamName":"w","ShardId":"anything-1","ShardIteratorType":"LATEST"}`,
		map[string]string{"X-Amz-Target": "Kinesis_20131202.GetShardIterator"}))
	var it struct{ ShardIterator string }
	if err := json.Unmarshal(rec.body.Bytes(), &it); err != nil || it.ShardIterator == "" {
		t.Fatalf("GetShardIterator anything-1: %d %s", rec.status, rec.body.String())
	}
	// The iterator of a deleted stream names its shard.
	call(h, "Kinesis_20131202.DeleteStream", `{"StreamName":"w"}`)
	code, message, _ := call(h, "Kinesis_20131202.GetRecords", `{"ShardIterator":"`+it.ShardIterator+`"}`)
	if want := "Shard shardId-000000000001 in stream w under account " + acct + " does not exist"; code != "ResourceNotFoundException" || message != want {
		t.Errorf("GetRecords after DeleteStream: %s %q, want ResourceNotFoundException %q", code, message, want)
	}
}

// TestKinesisBodies: a Kinesis request without a body or with one that
// is not JSON is a SerializationException without a message, a JSON 1.1
// request without a target a bare UnknownOperationException, each with
// Kinesis's headers (x-amz-id-2 of 72 bytes) and no trailing newline.
func TestKinesisBodies(t *testing.T) {
	h := awsapi.NewHandler(testenv.Start(t, testenv.Options{}), awsapi.Options{})
	for _, tt := range []struct{ target, body, want string }{
		{"Kinesis_20131202.ListStreams", "", `{"__type":"SerializationException"}`},
		{"Kinesis_20131202.ListStreams", "hello", `{"__type":"SerializationException"}`},
		{"", "{}", `{"__type":"UnknownOperationException"}`},
	} {
		rec := &recorder{header: map[string][]string{}}
		hd := map[string]string{"Content-Type": "application/x-amz-json-1.1"}
		if tt.target != "" {
			hd["X-Amz-Target"] = tt.target
		}
		h.ServeHTTP(rec, httpRequest("POST", "/", tt.body, hd))
		id2, _ := base64.StdEncoding.DecodeString(rec.header.Get("x-amz-id-2"))
		if rec.status != 400 || rec.body.String() != tt.want || len(id2) != 72 {
			t.Errorf("%q %q: %d %q (x-amz-id-2 %q), want 400 %s", tt.target, tt.body, rec.status, rec.body.String(), rec.header.Get("x-amz-id-2"), tt.want)
		}
	}
}

// unsigned is the header of a request with no signature (httpRequest
// signs the others).
var unsigned = map[string]string{"Authorization": ""}

// TestKinesisAuthWording: a Kinesis request whose signature is missing or
// malformed is refused in Kinesis's words (as kinesalite's tests record
// them from AWS), after a body that is not JSON: with Options.Auth, and
// by default too (any credentials, but signed); with AllowUnsigned it is
// served.
func TestKinesisAuthWording(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	open := awsapi.NewHandler(rn, awsapi.Options{AllowUnsigned: true})
	rec := &recorder{header: map[string][]string{}}
	open.ServeHTTP(rec, httpRequest("POST", "/", "{}", map[string]string{"X-Amz-Target": "Kinesis_20131202.ListStreams",
		"Content-Type": "application/x-amz-json-1.1", "Authorization": ""}))
	if rec.status != 0 && rec.status != 200 {
		t.Errorf("AllowUnsigned: an unsigned ListStreams answered %d %s", rec.status, rec.body.String())
	}
	for _, opts := range []awsapi.Options{{Auth: map[string]string{"AKID": "secret"}}, {}} {
		h := awsapi.NewHandler(rn, opts)
		authWording(t, h, opts.Auth != nil)
	}
}

func authWording(t *testing.T, h *awsapi.Handler, withAuth bool) {
	t.Helper()
	for _, tt := range []struct {
		path, body    string
		header        map[string]string
		code, message string
	}{
		{"/", "", nil, "SerializationException", ""},
		{"/", "hello", nil, "SerializationException", ""},
		{"/", "{}", unsigned, "MissingAuthenticationTokenException", "Missing Authentication Token"},
		{"/?X-Amz-Credential=a&X-Amz-Signature=b&X-Amz-SignedHeaders=c&X-Amz-Date=d", "{}", unsigned, "MissingAuthenticationTokenException", "Missing Authentication Token"},
		{"/", "{}", map[string]string{"Authorization": "X"}, "IncompleteSignatureException",
			"Authorization header requires 'Credential' parameter. Authorization header requires 'Signature' parameter. " +
				"Authorization header requires 'SignedHeaders' parameter. Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header. Authorization=X"},
		{"/", "{}", map[string]string{"Authorization": "AWS4- Signature=b, Credential=a", "Date": "a"}, "IncompleteSignatureException",
			"Authorization header requires 'SignedHeaders' parameter. Authorization=AWS4- Signature=b, Credential=a"},
		{"/?X-Amz-Algorithm", "{}", map[string]string{"Authorization": "X"}, "InvalidSignatureException",
			"Found both 'X-Amz-Algorithm' as a query-string param and 'Authorization' as HTTP header."},
		{"/?X-Amz-Algorithm=a&X-Amz-Credential=b&X-Amz-Signature=c&X-Amz-Date=d", "{}", unsigned, "IncompleteSignatureException",
			"AWS query-string parameters must include 'X-Amz-SignedHeaders'. Re-examine the query-string parameters."},
	} {
		hd := map[string]string{"X-Amz-Target": "Kinesis_20131202.ListStreams", "Content-Type": "application/x-amz-json-1.1"}
		for k, v := range tt.header {
			hd[k] = v
		}
		rec := &recorder{header: map[string][]string{}}
		h.ServeHTTP(rec, httpRequest("POST", tt.path, tt.body, hd))
		typ, message := rec.jsonError()
		if rec.status != 400 || typ != tt.code || message != tt.message {
			t.Errorf("with Auth %v: %s %q %v: %d %s %q\nwant 400 %s %q", withAuth, tt.path, tt.body, tt.header, rec.status, typ, message, tt.code, tt.message)
		}
	}
}

// TestKinesisLegacyJSON: a Kinesis request of content type
// application/json (Kinesis's legacy JSON 1.0) is answered as Kinesis
// answers it: 200 with an UnknownOperationException, or a
// SerializationException for a body that is not JSON, in that protocol's
// envelope.
func TestKinesisLegacyJSON(t *testing.T) {
	h := awsapi.NewHandler(testenv.Start(t, testenv.Options{}), awsapi.Options{})
	for _, tt := range []struct{ target, body, want string }{
		{"Kinesis_20131202.ListStreams", "{}", `{"Output":{"__type":"com.amazon.coral.service#UnknownOperationException","message":null},"Version":"1.0"}`},
		{"", "", `{"Output":{"__type":"com.amazon.coral.service#UnknownOperationException","message":null},"Version":"1.0"}`},
		{"Kinesis_20131202.ListStreams", "hello", `{"Output":{"__type":"com.amazon.coral.service#SerializationException","Message":null},"Version":"1.0"}`},
	} {
		rec := &recorder{header: map[string][]string{}}
		hd := map[string]string{"Content-Type": "application/json"}
		if tt.target != "" {
			hd["X-Amz-Target"] = tt.target
		}
		h.ServeHTTP(rec, httpRequest("POST", "/", tt.body, hd))
		if (rec.status != 0 && rec.status != 200) || rec.body.String() != tt.want || rec.header.Get("Content-Type") != "application/json" {
			t.Errorf("%q %q: %d %s %q, want 200 %s", tt.target, tt.body, rec.status, rec.header.Get("Content-Type"), rec.body.String(), tt.want)
		}
	}
}

// TestDynamoDBAuthWording: DynamoDB refuses a request without a signature
// in its own words, takes a header not starting with "AWS4-" for none,
// lists the parts a malformed one lacks, and answers an operation it does
// not have before looking at the signature (as dynalite's connection
// tests record them from AWS).
func TestDynamoDBAuthWording(t *testing.T) {
	h := awsapi.NewHandler(testenv.Start(t, testenv.Options{}), awsapi.Options{})
	for _, tt := range []struct {
		target, auth  string
		code, message string
	}{
		{"DynamoDB_20120810.ListTables", "", "MissingAuthenticationTokenException", "Request is missing Authentication Token"},
		{"DynamoDB_20120810.ListTables", "AWS4", "MissingAuthenticationTokenException", "Request is missing Authentication Token"},
		{"DynamoDB_20120810.ListTables", "AWS4-", "IncompleteSignatureException",
			"Authorization header requires 'Credential' parameter. Authorization header requires 'Signature' parameter. " +
				"Authorization header requires 'SignedHeaders' parameter. Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header. Authorization=AWS4-"},
		{"DynamoDB_20120810.ListTable", "", "UnknownOperationException", ""},
	} {
		rec := &recorder{header: map[string][]string{}}
		h.ServeHTTP(rec, httpRequest("POST", "/", "{}", map[string]string{"X-Amz-Target": tt.target,
			"Content-Type": "application/x-amz-json-1.0", "Authorization": tt.auth}))
		typ, message := rec.jsonError()
		if rec.status != 400 || shortType(typ) != tt.code || (tt.message != "" && message != tt.message) {
			t.Errorf("%s with Authorization %q: %d %s %q\nwant 400 %s %q", tt.target, tt.auth, rec.status, typ, message, tt.code, tt.message)
		}
	}
}

// TestDynamoDBFrontEnd: DynamoDB answers in JSON 1.0 only a request sent
// so (else application/json); takes an Authorization header and an
// X-Amz-Algorithm query together for an invalid signature whatever the
// header holds; and refuses a JSON 1.0 request without a target as its
// own (a body that is not JSON first), as dynalite's connection tests
// record them from AWS.
func TestDynamoDBFrontEnd(t *testing.T) {
	h := awsapi.NewHandler(testenv.Start(t, testenv.Options{}), awsapi.Options{})
	for _, tt := range []struct {
		path, body           string
		header               map[string]string
		code, message, ctype string
	}{
		{"/", "{}", map[string]string{"X-Amz-Target": "DynamoDB_20120810.ListTables", "Authorization": ""},
			"MissingAuthenticationTokenException", "Request is missing Authentication Token", "application/json"},
		{"/", "{}", map[string]string{"X-Amz-Target": "DynamoDB_20120810.ListTables", "Content-Type": "application/x-amz-json-1.0", "Authorization": ""},
			"MissingAuthenticationTokenException", "Request is missing Authentication Token", "application/x-amz-json-1.0"},
		{"/?X-Amz-Algorithm", "{}", map[string]string{"X-Amz-Target": "DynamoDB_20120810.ListTables", "Authorization": "X"},
			"InvalidSignatureException", "Found both 'X-Amz-Algorithm' as a query-string param and 'Authorization' as HTTP header.", "application/json"},
		{"/", "hi", map[string]string{"Content-Type": "application/x-amz-json-1.0", "Authorization": ""}, "SerializationException", "", "application/x-amz-json-1.0"},
		{"/", "{}", map[string]string{"Content-Type": "application/x-amz-json-1.0", "Authorization": ""}, "UnknownOperationException", "", "application/x-amz-json-1.0"},
	} {
		rec := &recorder{header: map[string][]string{}}
		h.ServeHTTP(rec, httpRequest("POST", tt.path, tt.body, tt.header))
		typ, message := rec.jsonError()
		if rec.status != 400 || typ != "com.amazon.coral.service#"+tt.code || message != tt.message || rec.header.Get("Content-Type") != tt.ctype {
			t.Errorf("%s %q %v: %d %s %q %s\nwant 400 %s %q %s", tt.path, tt.body, tt.header, rec.status, typ, message,
				rec.header.Get("Content-Type"), tt.code, tt.message, tt.ctype)
		}
	}
}
