package awsapi

// The Kinesis wire: timestamps, and the GetRecords and PutRecords
// response bodies, written by hand (they are the hot path).

import (
	"encoding/json"
	"math"
	"strconv"
	"time"

	"github.com/runnel-dev/runnel/stream"
)

// epoch is a timestamp on the wire of the JSON protocols: epoch seconds
// with a fraction, read to the nearest millisecond (the precision of every
// timestamp these APIs take). The trap: read as a float64 to the
// nanosecond, 1795773600.028 is .028000116, after the record stamped .028,
// so GetShardIterator AT_TIMESTAMP with a record's own
// ApproximateArrivalTimestamp started after it.
type epoch time.Time

func (t epoch) MarshalJSON() ([]byte, error) {
	return appendSeconds(nil, time.Time(t).UnixMilli()), nil
}

// appendSeconds appends ms as epoch seconds with a fraction, exactly as
// encoding/json writes the float64 ms/1000: strconv's shortest 'f' form
// in the range where encoding/json uses it (every date from 1970 on),
// else encoding/json itself.
func appendSeconds(b []byte, ms int64) []byte {
	f := float64(ms) / 1000
	if a := math.Abs(f); a == 0 || (a >= 1e-6 && a < 1e21) {
		return strconv.AppendFloat(b, f, 'f', -1, 64)
	}
	j, _ := json.Marshal(f)
	return append(b, j...)
}

// appendJSONString appends s as a JSON string, byte for byte as
// encoding/json.Marshal writes it (HTML-safe escaping): strings of plain
// printable ASCII, like sequence numbers, shard ids and most partition
// keys, are copied as they are; any other is written by encoding/json.
func appendJSONString[S string | []byte](b []byte, s S) []byte {
	for i := 0; i < len(s); i++ {
		if !jsonPlain[s[i]] {
			j, _ := json.Marshal(string(s))
			return append(b, j...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// jsonPlain[c] reports whether encoding/json writes the byte c of a
// string as it is: printable ASCII but for " \ < > &.
var jsonPlain = func() (t [256]bool) {
	for c := 0x20; c <= 0x7e; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// appendGetRecordsHead appends the start of GetRecords' response body, up
// to the Records: MillisBehindLatest, NextShardIterator (left out when
// there is none) and ChildShards (only at the end of a closed shard).
func appendGetRecordsHead(b []byte, o *stream.GetRecordsOutput) []byte {
	b = append(b, `{"MillisBehindLatest":`...)
	b = strconv.AppendInt(b, o.MillisBehindLatest, 10)
	if o.NextShardIterator != "" {
		b = append(b, `,"NextShardIterator":`...)
		b = appendJSONString(b, o.NextShardIterator)
	}
	if len(o.ChildShards) > 0 {
		// The end of a closed shard (rare): encoding/json writes it.
		c, _ := json.Marshal(o.ChildShards)
		b = append(b, `,"ChildShards":`...)
		b = append(b, c...)
	}
	return b
}

// getRecordsHeadRoom is the room GetRecords' response leaves before its
// records for appendGetRecordsHead's bytes (a longer head is copied in
// front of them instead).
const getRecordsHeadRoom = 512

// recordEncoder appends the records of a GetRecords page one at a time, as
// appendRecords does, with the array's commas: the same bytes from a
// stream.PageRecord, with no allocation. The arrival time, the same for
// the records of one PutRecords call, is formatted once for them, with
// the constant text around it.
type recordEncoder struct {
	n    int
	atMs int64
	// mid is the text between a record's SequenceNumber and its Data:
	// `","ApproximateArrivalTimestamp":<atMs>,"Data":"`.
	mid []byte
}

func (e *recordEncoder) append(b []byte, r *stream.PageRecord) []byte {
	if e.n == 0 || r.ArrivalMs != e.atMs {
		if e.mid == nil {
			e.mid = make([]byte, 0, 80) // room for any timestamp
		}
		e.atMs = r.ArrivalMs
		e.mid = append(e.mid[:0], `","ApproximateArrivalTimestamp":`...)
		e.mid = append(appendSeconds(e.mid, r.ArrivalMs), `,"Data":"`...)
	}
	open := `,{"SequenceNumber":"`
	if e.n == 0 {
		open = open[1:]
	}
	e.n++
	// Sequence numbers are decimal digits: nothing to escape.
	b = append(b, open...)
	b = r.AppendSequenceNumber(b)
	b = append(b, e.mid...)
	b = appendBase64(b, r.Data)
	b = append(b, `","PartitionKey":`...)
	b = appendJSONString(b, r.PartitionKey)
	return append(b, `,"EncryptionType":"NONE"}`...)
}

// appendRecords appends records as a JSON array of API_Record (GetRecords'
// Records, SubscribeToShardEvent's).
func appendRecords(b []byte, records []stream.Record) []byte {
	b = append(b, '[')
	for i := range records {
		r := &records[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"SequenceNumber":`...)
		b = appendJSONString(b, r.SequenceNumber)
		b = append(b, `,"ApproximateArrivalTimestamp":`...)
		b = appendSeconds(b, r.ApproximateArrivalTimestamp.UnixMilli())
		b = append(b, `,"Data":"`...)
		b = appendBase64(b, r.Data)
		b = append(b, `","PartitionKey":`...)
		b = appendJSONString(b, r.PartitionKey)
		b = append(b, `,"EncryptionType":"NONE"}`...)
	}
	return append(b, ']')
}

// appendPutRecords appends PutRecords' response body, the bytes
// json.Marshal wrote for it (a map, so the keys in order; each entry's
// fields in the order of stream.PutRecordsResultEntry, the empty ones
// left out).
func appendPutRecords(b []byte, o *stream.PutRecordsOutput) []byte {
	b = append(b, `{"EncryptionType":"NONE","FailedRecordCount":`...)
	b = strconv.AppendInt(b, int64(o.FailedRecordCount), 10)
	b = append(b, `,"Records":[`...)
	for i := range o.Records {
		r := &o.Records[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '{')
		sep := false
		for _, f := range [...]struct{ name, v string }{
			{`"SequenceNumber":`, r.SequenceNumber}, {`"ShardId":`, r.ShardId},
			{`"ErrorCode":`, r.ErrorCode}, {`"ErrorMessage":`, r.ErrorMessage},
		} {
			if f.v == "" {
				continue
			}
			if sep {
				b = append(b, ',')
			}
			b = append(b, f.name...)
			b = appendJSONString(b, f.v)
			sep = true
		}
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

func (t *epoch) UnmarshalJSON(b []byte) error {
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		var s string
		if err2 := json.Unmarshal(b, &s); err2 != nil {
			return err
		}
		tt, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return err
		}
		*t = epoch(tt)
		return nil
	}
	*t = epoch(epochSeconds(f))
	return nil
}
