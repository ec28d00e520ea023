package awsapi

// The CBOR protocol of Kinesis (Content-Type application/x-amz-cbor-1.1),
// which the AWS SDK for Java (v1 since 1.11.71, and v2), the Kinesis
// Client Library and the Kinesis Producer Library use by default: the
// operations and shapes of JSON 1.1, in CBOR (RFC 8949), blobs as byte
// strings and timestamps as tag 1 holding epoch *milliseconds* (not
// RFC 8949's seconds: "CBOR uses epoch millis for timestamps rather than
// epoch seconds with millisecond decimal precision like JSON protocols",
// aws-sdk-java-v2 AwsCborProtocolFactory; v1's SdkCborGenerator writes
// Date.getTime() under tag 1). runnel transcodes at the edge, so every
// Kinesis operation speaks it: a CBOR request becomes the JSON its
// operation decodes into its input (a byte string becomes base64, a tag-1
// time epoch seconds), and the JSON reply becomes CBOR, its blob members
// (Data) byte strings and its timestamp members tag 1 with integer epoch
// milliseconds. A tag-1 value below 10^11 in a request is taken as
// seconds (RFC 8949's unit; 10^11 ms is 1973, 10^11 s the year 5138).
// Errors are a CBOR map {"__type", "message"} with the JSON protocol's
// status.

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"mime"
	"net/http"
	"strconv"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/internal/slicex"
)

const cborContentType = "application/x-amz-cbor-1.1"

// isCBOR reports whether a request's body is CBOR.
func isCBOR(r *http.Request) bool {
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return ct == cborContentType
}

var (
	cborDec, _ = cbor.DecOptions{
		DefaultMapType:  nil,
		MaxNestedLevels: 64,
		TimeTag:         cbor.DecTagRequired,
	}.DecMode()
	cborEnc, _ = cbor.EncOptions{Time: cbor.TimeUnixDynamic, TimeTag: cbor.EncTagRequired}.EncMode()
)

// Members of the Kinesis output shapes that are blobs and timestamps.
var (
	cborBlobs      = map[string]bool{"Data": true}
	cborTimestamps = map[string]bool{"ApproximateArrivalTimestamp": true, "StreamCreationTimestamp": true, "ConsumerCreationTimestamp": true}
)

// cborBodyToJSON turns a CBOR request body into the JSON body it stands
// for (an empty body stays empty); a body that does not decode is a
// SerializationException. serve does this first, so that validation and
// decoding see the JSON protocol's body.
func cborBodyToJSON(body []byte) ([]byte, error) {
	if len(body) == 0 {
		return body, nil
	}
	var v any
	if err := cborDec.Unmarshal(body, &v); err != nil {
		return nil, awserr.New(awserr.ErrSerialization, "CBOR body: %v", err)
	}
	j, err := cborToJSON(v)
	if err != nil {
		return nil, awserr.New(awserr.ErrSerialization, "CBOR body: %v", err)
	}
	b, err := json.Marshal(j)
	if err != nil {
		return nil, awserr.New(awserr.ErrSerialization, "CBOR body: %v", err)
	}
	return b, nil
}

// cborToJSON turns a decoded CBOR value into the value the JSON protocol
// has in its place.
func cborToJSON(v any) (any, error) {
	switch x := v.(type) {
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			ks, ok := k.(string)
			if !ok {
				return nil, fmt.Errorf("map key %v is not a text string", k)
			}
			var err error
			if m[ks], err = cborToJSON(e); err != nil {
				return nil, err
			}
		}
		return m, nil
	case []any:
		return slicex.MapErr(x, cborToJSON)
	case []byte:
		return base64.StdEncoding.EncodeToString(x), nil
	case time.Time:
		// The library read the tag's number as seconds: get it back.
		n := x.Unix()
		if n < 1e11 {
			return json.Number(string(appendSeconds(nil, x.UnixMilli()))), nil
		}
		return json.Number(string(appendSeconds(nil, n))), nil
	case big.Int:
		return json.Number(x.String()), nil
	case float32:
		return float64(x), nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("number %v", x)
		}
		return x, nil
	case cbor.Tag:
		return nil, fmt.Errorf("unexpected CBOR tag %d", x.Number)
	}
	return v, nil // strings, integers, booleans, null
}

// writeCBOR writes a JSON result (b) as CBOR.
func (rq *request) writeCBOR(b []byte) {
	out, err := jsonToCBOR(b)
	if err != nil {
		rq.fail(err)
		return
	}
	h := rq.w.Header()
	h.Set("Content-Type", cborContentType)
	h.Set("Content-Length", strconv.Itoa(len(out)))
	h.Set("x-amzn-RequestId", rq.reqID)
	rq.w.Write(out)
}

// jsonToCBOR transcodes a Kinesis JSON reply.
func jsonToCBOR(b []byte) ([]byte, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	c, err := jsonToCBORValue("", v)
	if err != nil {
		return nil, err
	}
	return cborEnc.Marshal(c)
}

func jsonToCBORValue(member string, v any) (any, error) {
	var err error
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if x[k], err = jsonToCBORValue(k, e); err != nil {
				return nil, err
			}
		}
		return x, nil
	case []any:
		for i, e := range x {
			if x[i], err = jsonToCBORValue(member, e); err != nil {
				return nil, err
			}
		}
		return x, nil
	case string:
		if cborBlobs[member] {
			return base64.StdEncoding.DecodeString(x)
		}
		return x, nil
	case json.Number:
		if cborTimestamps[member] {
			f, err := x.Float64()
			if err != nil {
				return nil, err
			}
			return cbor.Tag{Number: 1, Content: int64(math.Round(f * 1000))}, nil
		}
		var n any
		if i, err := x.Int64(); err == nil {
			n = i
		} else if f, err := x.Float64(); err == nil {
			n = f
		} else {
			return nil, err
		}
		return n, nil
	}
	return v, nil
}

// failCBOR writes an error as CBOR.
func (rq *request) failCBOR(we wireError) {
	body, _ := cborEnc.Marshal(map[string]string{"__type": we.shape, "message": we.e.Message})
	h := rq.w.Header()
	h.Set("Content-Type", cborContentType)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("x-amzn-RequestId", rq.reqID)
	rq.w.WriteHeader(we.status)
	rq.w.Write(body)
}
