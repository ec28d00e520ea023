// Package ddbjson writes DynamoDB's JSON wire forms (items, stream records,
// the DynamoDB event Lambda receives) straight into a byte slice: the bytes
// json.Marshal writes for aws-lambda-go's types, without its cost.
//
// aws-lambda-go's DynamoDBAttributeValue.MarshalJSON builds every attribute
// value in a buffer of its own, and encoding/json then scans each one again:
// about 1.8 µs an item of four attributes, 4.9 µs a stream record with both
// images (session 22, docs/benchmarks/tables.md). The answers that carry
// items (table's AppendJSON methods), DynamoDB Streams' GetRecords, the
// events a DynamoDB stream mapping hands a function that reads JSON, and
// FilterCriteria's view of a record are written here instead.
//
// The bytes are json.Marshal's, and the tests hold them to it over random
// values (ddbjson_test.go): keys in sorted order; <, >, &, U+2028 and U+2029
// escaped as \u003c and so on; invalid UTF-8 as \ufffd; a nil list, map, set
// or binary as null. Trap: a zero DynamoDBAttributeValue (no type) panics,
// as it does in json.Marshal and in aws-lambda-go's accessors; an item
// never holds one.
//
// The package imports the standard library and aws-lambda-go's events
// only, so any package may use it.
package ddbjson

import (
	"encoding/base64"
	"encoding/json"
	"math"
	"slices"
	"strconv"

	"github.com/aws/aws-lambda-go/events"

	"github.com/runnel-dev/runnel/wire/jsonstr"
)

// AppendItem appends it in DynamoDB's JSON form ({"name":{"S":"x"}},
// B and BS in base64), exactly the bytes json.Marshal writes for it; nil
// is null.
func AppendItem(dst []byte, it map[string]events.DynamoDBAttributeValue) []byte {
	if it == nil {
		return append(dst, "null"...)
	}
	var buf [16]string
	keys := buf[:0]
	for k := range it {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	dst = append(dst, '{')
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonstr.Append(dst, k)
		dst = append(dst, ':')
		v := it[k]
		dst = appendValue(dst, &v)
	}
	return append(dst, '}')
}

// AppendItems appends items as a JSON array (nil: null).
func AppendItems(dst []byte, items []map[string]events.DynamoDBAttributeValue) []byte {
	if items == nil {
		return append(dst, "null"...)
	}
	dst = append(dst, '[')
	for i, it := range items {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = AppendItem(dst, it)
	}
	return append(dst, ']')
}

func appendValue(dst []byte, v *events.DynamoDBAttributeValue) []byte {
	switch v.DataType() {
	case events.DataTypeString:
		return append(jsonstr.Append(append(dst, `{"S":`...), v.String()), '}')
	case events.DataTypeNumber:
		return append(jsonstr.Append(append(dst, `{"N":`...), v.Number()), '}')
	case events.DataTypeBinary:
		return append(appendBase64(append(dst, `{"B":`...), v.Binary()), '}')
	case events.DataTypeBoolean:
		if v.Boolean() {
			return append(dst, `{"BOOL":true}`...)
		}
		return append(dst, `{"BOOL":false}`...)
	case events.DataTypeNull:
		return append(dst, `{"NULL":true}`...)
	case events.DataTypeMap:
		return append(AppendItem(append(dst, `{"M":`...), v.Map()), '}')
	case events.DataTypeList:
		l := v.List()
		dst = append(dst, `{"L":`...)
		if l == nil {
			return append(dst, "null}"...)
		}
		dst = append(dst, '[')
		for i := range l {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendValue(dst, &l[i])
		}
		return append(dst, "]}"...)
	case events.DataTypeStringSet:
		return append(appendStrings(append(dst, `{"SS":`...), v.StringSet()), '}')
	case events.DataTypeNumberSet:
		return append(appendStrings(append(dst, `{"NS":`...), v.NumberSet()), '}')
	case events.DataTypeBinarySet:
		bs := v.BinarySet()
		dst = append(dst, `{"BS":`...)
		if bs == nil {
			return append(dst, "null}"...)
		}
		dst = append(dst, '[')
		for i, b := range bs {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendBase64(dst, b)
		}
		return append(dst, "]}"...)
	}
	return append(dst, "{}"...)
}

func appendStrings(dst []byte, ss []string) []byte {
	if ss == nil {
		return append(dst, "null"...)
	}
	dst = append(dst, '[')
	for i, s := range ss {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonstr.Append(dst, s)
	}
	return append(dst, ']')
}

func appendBase64(dst []byte, b []byte) []byte {
	if b == nil {
		return append(dst, "null"...)
	}
	dst = append(dst, '"')
	dst = base64.StdEncoding.AppendEncode(dst, b)
	return append(dst, '"')
}

// AppendStreamRecord appends r as json.Marshal writes it: the
// "dynamodb" member of a stream record.
func AppendStreamRecord(dst []byte, r *events.DynamoDBStreamRecord) []byte {
	dst = appendSeconds(append(dst, `{"ApproximateCreationDateTime":`...), r.ApproximateCreationDateTime)
	if len(r.Keys) > 0 {
		dst = AppendItem(append(dst, `,"Keys":`...), r.Keys)
	}
	if len(r.NewImage) > 0 {
		dst = AppendItem(append(dst, `,"NewImage":`...), r.NewImage)
	}
	if len(r.OldImage) > 0 {
		dst = AppendItem(append(dst, `,"OldImage":`...), r.OldImage)
	}
	dst = jsonstr.Append(append(dst, `,"SequenceNumber":`...), r.SequenceNumber)
	dst = strconv.AppendInt(append(dst, `,"SizeBytes":`...), r.SizeBytes, 10)
	dst = jsonstr.Append(append(dst, `,"StreamViewType":`...), r.StreamViewType)
	return append(dst, '}')
}

// AppendEventRecord appends r as json.Marshal writes it: a record of the
// event a DynamoDB stream mapping invokes a function with.
func AppendEventRecord(dst []byte, r *events.DynamoDBEventRecord) []byte {
	dst = jsonstr.Append(append(dst, `{"awsRegion":`...), r.AWSRegion)
	dst = AppendStreamRecord(append(dst, `,"dynamodb":`...), &r.Change)
	dst = jsonstr.Append(append(dst, `,"eventID":`...), r.EventID)
	dst = jsonstr.Append(append(dst, `,"eventName":`...), r.EventName)
	dst = jsonstr.Append(append(dst, `,"eventSource":`...), r.EventSource)
	dst = jsonstr.Append(append(dst, `,"eventVersion":`...), r.EventVersion)
	dst = jsonstr.Append(append(dst, `,"eventSourceARN":`...), r.EventSourceArn)
	if u := r.UserIdentity; u != nil {
		dst = jsonstr.Append(append(dst, `,"userIdentity":{"type":`...), u.Type)
		dst = jsonstr.Append(append(dst, `,"principalId":`...), u.PrincipalID)
		dst = append(dst, '}')
	}
	return append(dst, '}')
}

// AppendEvent appends ev as json.Marshal writes it ({"Records":[...]}).
func AppendEvent(dst []byte, ev *events.DynamoDBEvent) []byte {
	dst = append(dst, `{"Records":`...)
	if ev.Records == nil {
		return append(dst, "null}"...)
	}
	dst = append(dst, '[')
	for i := range ev.Records {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = AppendEventRecord(dst, &ev.Records[i])
	}
	return append(dst, "]}"...)
}

// appendSeconds appends t as aws-lambda-go's SecondsEpochTime marshals
// it: json.Marshal of its Unix time in seconds, a float64.
func appendSeconds(dst []byte, t events.SecondsEpochTime) []byte {
	f := float64(t.UnixNano()) / 1e9
	if a := math.Abs(f); a == 0 || (a >= 1e-6 && a < 1e21) {
		return strconv.AppendFloat(dst, f, 'f', -1, 64) // encoding/json's form in this range
	}
	b, _ := json.Marshal(f)
	return append(dst, b...)
}
