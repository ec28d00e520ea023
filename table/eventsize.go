package table

import (
	"encoding/binary"
	"math"
	"strconv"
	"time"

	"github.com/runnel-dev/runnel/stream"
	"github.com/runnel-dev/runnel/wire/ddbjson"
	"github.com/runnel-dev/runnel/wire/jsonstr"
)

// EventRecordSize is the size in bytes of the JSON of the record a
// DynamoDB stream mapping hands a function for rec
// (ddbjson.AppendEventRecord of EventRecord(rec, change, region,
// streamARN)), counted from rec's stored change without decoding it: a
// mapping cuts its batches at Lambda's 6 MB with it. The count is exact;
// an item's JSON may be several times its stored size (a number attribute
// "a":{"N":"1"} takes 14 bytes where the change stores 6), so an estimate
// from the stored size lets items of many small attributes make events
// over 6 MB.
func EventRecordSize(rec *stream.Record, region, streamARN string) int {
	if len(rec.Data) == 0 || rec.Data[0] != changeBinaryV1 {
		c, err := DecodeChange(rec.Data) // a change of the first, JSON form
		if err != nil {
			c = &Change{}
		}
		r := EventRecordShared(rec, c, region, streamARN)
		return len(ddbjson.AppendEventRecord(nil, &r))
	}
	z := sizer{b: rec.Data[1:]}
	eventName, _, view, _ := z.str(), z.str(), z.str(), z.str()
	z.uvarint() // TxnIndex
	ms, n := binary.Varint(z.b)
	if n <= 0 {
		return z.failed(rec, region, streamARN)
	}
	z.b = z.b[n:]
	ttl := z.byte() == 1
	if view == "" {
		view = ViewNewAndOldImages
	}
	var buf [32]byte
	secs := appendEpochSeconds(buf[:0], time.UnixMilli(ms).Truncate(time.Second))
	size := len(`{"awsRegion":`) + jsonstr.Len(region) +
		len(`,"dynamodb":{"ApproximateCreationDateTime":`) + len(secs)
	for i, name := range [3]string{`,"Keys":`, `,"NewImage":`, `,"OldImage":`} {
		shown := i == 0 ||
			i == 1 && (view == ViewNewImage || view == ViewNewAndOldImages) ||
			i == 2 && (view == ViewOldImage || view == ViewNewAndOldImages)
		if n := z.item(0); n > 2 && shown { // "{}" or absent: left out
			size += len(name) + n
		}
	}
	if z.bad || len(z.b) != 0 {
		return z.failed(rec, region, streamARN)
	}
	size += len(`,"SequenceNumber":`) + jsonstr.Len(rec.SequenceNumber) +
		len(`,"SizeBytes":`) + len(strconv.AppendInt(buf[:0], int64(len(rec.Data)), 10)) +
		len(`,"StreamViewType":`) + jsonstr.Len(view) + len(`}`) +
		len(`,"eventID":`) + 34 +
		len(`,"eventName":`) + jsonstr.Len(eventName) +
		len(`,"eventSource":"aws:dynamodb","eventVersion":"1.1"`) +
		len(`,"eventSourceARN":`) + jsonstr.Len(streamARN) + len(`}`)
	if ttl {
		size += len(`,"userIdentity":{"type":"Service","principalId":"dynamodb.amazonaws.com"}`)
	}
	return size
}

// appendEpochSeconds is ddbjson's form of a SecondsEpochTime.
func appendEpochSeconds(dst []byte, t time.Time) []byte {
	f := float64(t.UnixNano()) / 1e9
	if a := math.Abs(f); a == 0 || (a >= 1e-6 && a < 1e21) {
		return strconv.AppendFloat(dst, f, 'f', -1, 64)
	}
	return strconv.AppendFloat(dst, f, 'e', -1, 64) // not a time a change has
}

// sizer walks a change's binary form (codec.go), counting the JSON of its
// items as ddbjson writes them.
type sizer struct {
	b   []byte
	bad bool
}

func (z *sizer) failed(rec *stream.Record, region, streamARN string) int {
	c, err := DecodeChange(rec.Data)
	if err != nil {
		c = &Change{}
	}
	r := EventRecordShared(rec, c, region, streamARN)
	return len(ddbjson.AppendEventRecord(nil, &r))
}

func (z *sizer) uvarint() uint64 {
	v, n := binary.Uvarint(z.b)
	if n <= 0 {
		z.bad, z.b = true, nil
		return 0
	}
	z.b = z.b[n:]
	return v
}

func (z *sizer) bytes() []byte {
	n := z.uvarint()
	if uint64(len(z.b)) < n {
		z.bad, z.b = true, nil
		return nil
	}
	s := z.b[:n]
	z.b = z.b[n:]
	return s
}

func (z *sizer) str() string { return string(z.bytes()) }

func (z *sizer) byte() byte {
	if len(z.b) == 0 {
		z.bad = true
		return 0
	}
	c := z.b[0]
	z.b = z.b[1:]
	return c
}

// item counts an item's JSON; an absent item counts 0, an empty one 2.
func (z *sizer) item(depth int) int {
	n := z.uvarint()
	if n == 0 || z.bad {
		return 0
	}
	n--
	size := 2
	for i := range n {
		if z.bad || depth > maxDepth {
			z.bad = true
			return 0
		}
		if i > 0 {
			size++
		}
		size += jsonstr.Len(z.bytes()) + 1 + z.value(depth+1)
	}
	return size
}

func b64(n int) int { return 2 + (n+2)/3*4 }

func (z *sizer) value(depth int) int {
	if depth > maxDepth {
		z.bad = true
		return 0
	}
	switch t := z.byte(); t {
	case tS, tN:
		return len(`{"S":}`) + jsonstr.Len(z.bytes())
	case tB:
		return len(`{"B":}`) + b64(len(z.bytes()))
	case tBOOL:
		if z.byte() == 1 {
			return len(`{"BOOL":true}`)
		}
		return len(`{"BOOL":false}`)
	case tNULL:
		return len(`{"NULL":true}`)
	case tM:
		if n := z.item(depth); n > 0 {
			return len(`{"M":}`) + n
		}
		return len(`{"M":{}}`)
	case tL:
		n := z.uvarint()
		size := len(`{"L":[]}`)
		for i := range n {
			if z.bad {
				return 0
			}
			if i > 0 {
				size++
			}
			size += z.value(depth + 1)
		}
		return size
	case tSS, tNS:
		n := z.uvarint()
		size := len(`{"SS":[]}`)
		for i := range n {
			if z.bad {
				return 0
			}
			if i > 0 {
				size++
			}
			size += jsonstr.Len(z.bytes())
		}
		return size
	case tBS:
		n := z.uvarint()
		size := len(`{"BS":[]}`)
		for i := range n {
			if z.bad {
				return 0
			}
			if i > 0 {
				size++
			}
			size += b64(len(z.bytes()))
		}
		return size
	default:
		z.bad = true
		return 0
	}
}
