package awsapi

// The JSON protocols of Kinesis (JSON 1.1) and SQS (JSON 1.0): a JSON
// body in, a JSON body out.

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"

	"github.com/runnel-dev/runnel/awserr"
)

// decodeJSON reads body into v (an empty body is {}); a body that does
// not decode is a SerializationException.
func decodeJSON(body []byte, v any) error {
	return decodeJSONOr(body, v, awserr.ErrSerialization, "")
}

// decodeJSONOr is decodeJSON with the error code and message prefix of a
// body that does not decode.
func decodeJSONOr(body []byte, v any, sentinel *awserr.Error, prefix string) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	if err := json.Unmarshal(body, v); err != nil {
		return awserr.New(sentinel, "%s%v", prefix, err)
	}
	return nil
}

// encode marshals a JSON result (nil: {}); when it cannot, it answers
// with the error and reports false.
func (rq *request) encode(v any) ([]byte, bool) {
	if v == nil {
		v = struct{}{}
	}
	var b []byte
	var err error
	if a, ok := v.(jsonAppender); ok && !isNilPointer(v) {
		b, err = a.AppendJSON(make([]byte, 0, 512))
	} else {
		b, err = json.Marshal(v)
	}
	if err != nil {
		rq.fail(err)
		return nil, false
	}
	return b, true
}

// jsonAppender is a result that writes its own JSON, the bytes
// json.Marshal would write, faster: the answers that carry items
// (table/itemjson.go) and DynamoDB Streams' GetRecords
// (streamsGetRecordsOutput), with wire/ddbjson.
type jsonAppender interface {
	AppendJSON(dst []byte) ([]byte, error)
}

func isNilPointer(v any) bool {
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}

// replyJSON writes v as a JSON result (nil: {}; for Kinesis over JSON,
// an empty body, as Kinesis answers an operation without a result).
func (rq *request) replyJSON(v any) {
	if v == nil && rq.proto == protoKinesis {
		rq.writeJSON(nil)
		return
	}
	if b, ok := rq.encode(v); ok {
		rq.writeJSON(b)
	}
}

func (rq *request) writeJSON(b []byte) {
	if rq.proto == protoKinesisCBOR {
		rq.writeCBOR(b)
		return
	}
	ct := "application/x-amz-json-1.1"
	if rq.proto == protoSQSJSON || rq.proto == protoSNSJSON {
		ct = "application/x-amz-json-1.0"
	}
	rq.w.Header().Set("Content-Type", ct)
	rq.w.Header().Set("x-amzn-RequestId", rq.reqID)
	if rq.proto == protoKinesis {
		rq.w.Header().Set("x-amz-id-2", kinesisID2())
	}
	rq.w.Write(b)
}

// jsonBuf is a response body already encoded (by the Kinesis data-plane
// calls, see kinesis_wire.go), in a buffer that goes back to a pool once
// written. The body is b[start:].
type jsonBuf struct {
	b     []byte
	start int
}

// jsonBufs holds buffers written, for reuse: a list of at most 8 of at
// most maxKeptJSONBuf bytes (32 MiB in all) rather than a sync.Pool, which
// every other garbage collection empties; a GetRecords page's buffer
// (megabytes) grown again from nothing costs more than keeping it.
var jsonBufs = make(chan *jsonBuf, 8)

const maxKeptJSONBuf = 4 << 20

// newJSONBuf returns an empty buffer with at least size bytes of room.
func newJSONBuf(size int) *jsonBuf {
	select {
	case jb := <-jsonBufs:
		if cap(jb.b) >= size {
			return jb
		}
	default:
	}
	return &jsonBuf{b: make([]byte, 0, size)}
}

func (jb *jsonBuf) free() {
	if cap(jb.b) > maxKeptJSONBuf {
		return
	}
	jb.b, jb.start = jb.b[:0], 0
	select {
	case jsonBufs <- jb:
	default: // the list is full: left to the collector
	}
}

// prepend puts head in front of the body b[room:], in the room left
// before it when head fits there, else by copying the body after it.
func (jb *jsonBuf) prepend(room int, head []byte) {
	if len(head) <= room {
		jb.start = room - len(head)
		copy(jb.b[jb.start:], head)
		return
	}
	jb.b = append(head, jb.b[room:]...)
	jb.start = 0
}

func (jb *jsonBuf) writeReply(rq *request) {
	defer jb.free() // Write copies it or has sent it on return
	body := jb.b[jb.start:]
	rq.w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	rq.writeJSON(body)
}
