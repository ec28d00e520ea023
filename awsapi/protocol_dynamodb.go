package awsapi

// DynamoDB's and DynamoDB Streams' JSON 1.0: like the other JSON
// protocols, but legacy parameters are translated into expressions,
// errors have DynamoDB's namespaces (errors.go), and every response
// carries X-Amz-Crc32, which the SDKs check.

import (
	"bytes"
	"encoding/json"
	"hash/crc32"
	"mime"
	"net/http"
	"reflect"
	"slices"
	"strconv"

	"github.com/runnel-dev/runnel/awserr"
)

// dynamoDecode reads body into v, with the legacy parameters translated
// into expressions (dynamodb_legacy.go).
func dynamoDecode(body []byte, v any) error {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return nil
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		return awserr.New(awserr.ErrSerialization, "%v", err)
	}
	if slices.ContainsFunc(legacyParams, func(p string) bool { return raw[p] != nil }) {
		if err := translateLegacy(raw); err != nil {
			return err
		}
		body, _ = json.Marshal(raw)
	}
	return decodeJSON(body, v)
}

// dynamoDecodeParsed reads the request into in (a pointer to a zero
// value) from the body as the validation read it, when it can (no legacy
// parameter, fromValue); else from the body (dynamoDecode), with the
// same result and errors.
func (rq *request) dynamoDecodeParsed(in any) error {
	if obj, ok := rq.parsed.(map[string]any); ok && !hasLegacy(obj) {
		if fromValue(obj, in) {
			return nil
		}
		reflect.ValueOf(in).Elem().SetZero()
	}
	return dynamoDecode(rq.body, in)
}

// hasLegacy reports whether a request (or a BatchGetItem table's part)
// has a legacy parameter, null included (dynamoDecode translates it).
func hasLegacy(obj map[string]any) bool {
	return slices.ContainsFunc(legacyParams, func(p string) bool {
		_, ok := obj[p]
		return ok
	})
}

// dynamoReply writes a JSON 1.0 result (nil: {}).
func (rq *request) dynamoReply(v any) {
	if b, ok := rq.encode(v); ok {
		rq.dynamoWrite(200, b)
	}
}

func (rq *request) dynamoWrite(status int, b []byte) {
	h := rq.w.Header()
	h.Set("Content-Type", dynamoContentType(rq.r))
	h.Set("x-amzn-RequestId", rq.reqID)
	h.Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(b)), 10))
	h.Set("Content-Length", strconv.Itoa(len(b)))
	rq.w.WriteHeader(status)
	rq.w.Write(b)
}

// dynamoContentType is the Content-Type DynamoDB answers r with: its own
// JSON 1.0 when r was sent so (as the SDKs send), else application/json
// (a request without one, or of application/json), as dynalite's
// connection tests record it from AWS.
func dynamoContentType(r *http.Request) string {
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct == "application/x-amz-json-1.0" {
		return ct
	}
	return "application/json"
}
