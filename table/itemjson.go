package table

import (
	"encoding/base64"
	"encoding/json"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
)

// The answers that carry items (GetItem, Query, Scan, BatchGetItem) are
// written by AppendJSON methods, not by json.Marshal: aws-lambda-go's
// DynamoDBAttributeValue.MarshalJSON builds every attribute value in a
// buffer of its own and encoding/json then scans each one again, which
// cost a 1 MB Scan page about 1.8 µs an item, more than the Scan read it.
// The bytes are the same as json.Marshal's (TestAppendItemJSONIsJSONMarshal):
// keys in sorted order, HTML characters, U+2028 and U+2029 escaped as
// \u003c and so on, invalid UTF-8 as \ufffd, a nil list, map, set or
// binary as null.

// AppendItemJSON appends it in DynamoDB's JSON form ({"name":{"S":"x"}},
// B and BS in base64), exactly the bytes json.Marshal writes for it; nil
// is null. Trap: a zero DynamoDBAttributeValue (no type) panics, as it
// does in json.Marshal and in aws-lambda-go's accessors; an item never
// holds one.
func AppendItemJSON(dst []byte, it Item) []byte {
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
		dst = appendJSONString(dst, k)
		dst = append(dst, ':')
		v := it[k]
		dst = appendValueJSON(dst, &v)
	}
	return append(dst, '}')
}

// appendItemsJSON appends items as a JSON array (nil: null).
func appendItemsJSON(dst []byte, items []Item) []byte {
	if items == nil {
		return append(dst, "null"...)
	}
	dst = append(dst, '[')
	for i, it := range items {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = AppendItemJSON(dst, it)
	}
	return append(dst, ']')
}

func appendValueJSON(dst []byte, v *events.DynamoDBAttributeValue) []byte {
	switch v.DataType() {
	case events.DataTypeString:
		return append(appendJSONString(append(dst, `{"S":`...), v.String()), '}')
	case events.DataTypeNumber:
		return append(appendJSONString(append(dst, `{"N":`...), v.Number()), '}')
	case events.DataTypeBinary:
		return append(appendBase64JSON(append(dst, `{"B":`...), v.Binary()), '}')
	case events.DataTypeBoolean:
		if v.Boolean() {
			return append(dst, `{"BOOL":true}`...)
		}
		return append(dst, `{"BOOL":false}`...)
	case events.DataTypeNull:
		return append(dst, `{"NULL":true}`...)
	case events.DataTypeMap:
		return append(AppendItemJSON(append(dst, `{"M":`...), v.Map()), '}')
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
			dst = appendValueJSON(dst, &l[i])
		}
		return append(dst, "]}"...)
	case events.DataTypeStringSet:
		return append(appendStringsJSON(append(dst, `{"SS":`...), v.StringSet()), '}')
	case events.DataTypeNumberSet:
		return append(appendStringsJSON(append(dst, `{"NS":`...), v.NumberSet()), '}')
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
			dst = appendBase64JSON(dst, b)
		}
		return append(dst, "]}"...)
	}
	return append(dst, "{}"...)
}

func appendStringsJSON(dst []byte, ss []string) []byte {
	if ss == nil {
		return append(dst, "null"...)
	}
	dst = append(dst, '[')
	for i, s := range ss {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, s)
	}
	return append(dst, ']')
}

func appendBase64JSON(dst []byte, b []byte) []byte {
	if b == nil {
		return append(dst, "null"...)
	}
	dst = append(dst, '"')
	dst = base64.StdEncoding.AppendEncode(dst, b)
	return append(dst, '"')
}

// appendJSONString appends s as encoding/json writes a string with its
// default HTML escaping.
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// appendField appends ,"name": (no comma first when first) and reports
// that the next field is not the first.
func appendField(dst []byte, first *bool, name string) []byte {
	if !*first {
		dst = append(dst, ',')
	}
	*first = false
	dst = append(dst, '"')
	dst = append(dst, name...)
	return append(dst, '"', ':')
}

// appendMarshal appends json.Marshal's form of v (the small members of
// an answer: ConsumedCapacity, UnprocessedKeys).
func appendMarshal(dst []byte, v any) ([]byte, error) {
	b, err := json.Marshal(v)
	return append(dst, b...), err
}

// AppendJSON appends the answer as json.Marshal writes it (MarshalJSON:
// Items omitted when nil, with Select COUNT).
func (o QueryOutput) AppendJSON(dst []byte) ([]byte, error) {
	dst = append(dst, '{')
	first := true
	if o.Items != nil {
		dst = appendItemsJSON(appendField(dst, &first, "Items"), o.Items)
	}
	dst = strconv.AppendInt(appendField(dst, &first, "Count"), int64(o.Count), 10)
	dst = strconv.AppendInt(appendField(dst, &first, "ScannedCount"), int64(o.ScannedCount), 10)
	if len(o.LastEvaluatedKey) > 0 {
		dst = AppendItemJSON(appendField(dst, &first, "LastEvaluatedKey"), o.LastEvaluatedKey)
	}
	var err error
	if o.ConsumedCapacity != nil {
		dst, err = appendMarshal(appendField(dst, &first, "ConsumedCapacity"), o.ConsumedCapacity)
	}
	return append(dst, '}'), err
}

// AppendJSON appends the answer as json.Marshal writes it.
func (o GetItemOutput) AppendJSON(dst []byte) ([]byte, error) {
	dst = append(dst, '{')
	first := true
	if len(o.Item) > 0 {
		dst = AppendItemJSON(appendField(dst, &first, "Item"), o.Item)
	}
	var err error
	if o.ConsumedCapacity != nil {
		dst, err = appendMarshal(appendField(dst, &first, "ConsumedCapacity"), o.ConsumedCapacity)
	}
	return append(dst, '}'), err
}

// AppendJSON appends the answer as json.Marshal writes it.
func (o BatchGetItemOutput) AppendJSON(dst []byte) ([]byte, error) {
	dst = append(dst, `{"Responses":`...)
	if o.Responses == nil {
		dst = append(dst, "null"...)
	} else {
		names := make([]string, 0, len(o.Responses))
		for name := range o.Responses {
			names = append(names, name)
		}
		slices.Sort(names)
		dst = append(dst, '{')
		for i, name := range names {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(appendJSONString(dst, name), ':')
			dst = appendItemsJSON(dst, o.Responses[name])
		}
		dst = append(dst, '}')
	}
	dst, err := appendMarshal(append(dst, `,"UnprocessedKeys":`...), o.UnprocessedKeys)
	if err == nil && len(o.ConsumedCapacity) > 0 {
		dst, err = appendMarshal(append(dst, `,"ConsumedCapacity":`...), o.ConsumedCapacity)
	}
	return append(dst, '}'), err
}
