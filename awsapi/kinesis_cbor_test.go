package awsapi_test

import (
	"bytes"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/runnel-dev/runnel/awsapi"
)

// cborCall posts a CBOR body to a Kinesis operation, as the AWS SDK for
// Java does, and decodes the CBOR reply.
func cborCall(t *testing.T, e *endpoint, op string, body []byte) (int, map[any]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.srv.URL+"/", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-amz-cbor-1.1")
	req.Header.Set("X-Amz-Target", "Kinesis_20131202."+op)
	resp, err := e.srv.Client().Do(sign(req))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/x-amz-cbor-1.1" {
		t.Fatalf("%s: Content-Type %q, want application/x-amz-cbor-1.1", op, ct)
	}
	var out map[any]any
	if err := cbor.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s: reply is not CBOR: %v (% x)", op, err, raw)
	}
	return resp.StatusCode, out
}

func cborBody(t *testing.T, v any) []byte {
	t.Helper()
	b, err := cbor.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkMillis checks that a reply's timestamp is tag 1 with the epoch
// milliseconds of about now (the library, following RFC 8949, reads the
// tag's number as seconds).
func checkMillis(t *testing.T, member string, v any) {
	t.Helper()
	ts, ok := v.(time.Time)
	if ms := time.UnixMilli(ts.Unix()); !ok || time.Since(ms) > time.Minute || ts.Nanosecond() != 0 {
		t.Fatalf("%s = %#v, want tag 1 with integer epoch milliseconds of now", member, v)
	}
}

// The CBOR protocol: requests written byte by byte and with a CBOR
// library, replies with blobs as byte strings and timestamps as tag 1,
// errors as a CBOR {__type, message}.
func TestKinesisCBOR(t *testing.T) {
	e := start(t, awsapi.Options{})

	// Hand-made: {"StreamName": "cb", "ShardCount": 1}.
	create := []byte{0xa2,
		0x6a, 'S', 't', 'r', 'e', 'a', 'm', 'N', 'a', 'm', 'e', 0x62, 'c', 'b',
		0x6a, 'S', 'h', 'a', 'r', 'd', 'C', 'o', 'u', 'n', 't', 0x01}
	if st, out := cborCall(t, e, "CreateStream", create); st != 200 {
		t.Fatalf("CreateStream: %d %v", st, out)
	}
	// Hand-made: {"StreamName": "cb", "PartitionKey": "k", "Data": h'00FF4142'}.
	put := []byte{0xa3,
		0x6a, 'S', 't', 'r', 'e', 'a', 'm', 'N', 'a', 'm', 'e', 0x62, 'c', 'b',
		0x6c, 'P', 'a', 'r', 't', 'i', 't', 'i', 'o', 'n', 'K', 'e', 'y', 0x61, 'k',
		0x64, 'D', 'a', 't', 'a', 0x44, 0x00, 0xff, 0x41, 0x42}
	st, pr := cborCall(t, e, "PutRecord", put)
	if st != 200 || pr["ShardId"] != "shardId-000000000000" || pr["SequenceNumber"] == nil {
		t.Fatalf("PutRecord: %d %v", st, pr)
	}
	st, _ = cborCall(t, e, "PutRecords", cborBody(t, map[string]any{"StreamName": "cb",
		"Records": []any{map[string]any{"PartitionKey": "k", "Data": []byte("second")}}}))
	if st != 200 {
		t.Fatalf("PutRecords: %d", st)
	}

	st, ds := cborCall(t, e, "DescribeStreamSummary", cborBody(t, map[string]any{"StreamName": "cb"}))
	sum, _ := ds["StreamDescriptionSummary"].(map[any]any)
	if st != 200 || sum == nil {
		t.Fatalf("DescribeStreamSummary: %d %v", st, ds)
	}
	checkMillis(t, "StreamCreationTimestamp", sum["StreamCreationTimestamp"])

	// AT_TIMESTAMP with a tag-1 Timestamp an hour ago: every record.
	st, it := cborCall(t, e, "GetShardIterator", cborBody(t, map[string]any{"StreamName": "cb", "ShardId": "shardId-000000000000",
		"ShardIteratorType": "AT_TIMESTAMP", "Timestamp": cbor.Tag{Number: 1, Content: time.Now().Add(-time.Hour).UnixMilli()}}))
	if st != 200 {
		t.Fatalf("GetShardIterator: %d %v", st, it)
	}
	st, gr := cborCall(t, e, "GetRecords", cborBody(t, map[string]any{"ShardIterator": it["ShardIterator"]}))
	recs, _ := gr["Records"].([]any)
	if st != 200 || len(recs) != 2 {
		t.Fatalf("GetRecords: %d %v", st, gr)
	}
	first := recs[0].(map[any]any)
	if d, ok := first["Data"].([]byte); !ok || !bytes.Equal(d, []byte{0x00, 0xff, 'A', 'B'}) {
		t.Fatalf("Data = %#v, want the byte string 00ff4142", first["Data"])
	}
	checkMillis(t, "ApproximateArrivalTimestamp", first["ApproximateArrivalTimestamp"])
	if first["SequenceNumber"] != pr["SequenceNumber"] || first["PartitionKey"] != "k" {
		t.Fatalf("record = %v", first)
	}
	if d := recs[1].(map[any]any)["Data"]; !bytes.Equal(d.([]byte), []byte("second")) {
		t.Fatalf("second record's Data = %#v", d)
	}

	// A tag-1 number in seconds (RFC 8949's unit) is read as seconds: an
	// hour ahead is a timestamp in the future, which GetShardIterator
	// refuses (read as milliseconds it would be 1970, and accepted).
	if st, it = cborCall(t, e, "GetShardIterator", cborBody(t, map[string]any{"StreamName": "cb", "ShardId": "shardId-000000000000",
		"ShardIteratorType": "AT_TIMESTAMP", "Timestamp": cbor.Tag{Number: 1, Content: time.Now().Add(time.Hour).Unix()}})); st != 400 {
		t.Fatalf("AT_TIMESTAMP an hour ahead in seconds: %d %v, want it refused as in the future", st, it)
	}

	// Errors are CBOR, with the JSON protocol's status and shape.
	st, er := cborCall(t, e, "DescribeStream", cborBody(t, map[string]any{"StreamName": "missing"}))
	if st != 400 || er["__type"] != "ResourceNotFoundException" || er["message"] == "" {
		t.Fatalf("DescribeStream of a missing stream: %d %v", st, er)
	}
	st, er = cborCall(t, e, "ListStreams", []byte{0xff, 0x00})
	if st != 400 || er["__type"] != "SerializationException" {
		t.Fatalf("a body that is not CBOR: %d %v", st, er)
	}
}
