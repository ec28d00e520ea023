package table

import (
	"encoding/json"
	"slices"
	"strconv"

	"github.com/runnel-dev/runnel/wire/ddbjson"
	"github.com/runnel-dev/runnel/wire/jsonstr"
)

// The answers that carry items (GetItem, Query, Scan, BatchGetItem) are
// written by their AppendJSON methods, which the endpoint prefers to
// json.Marshal: the same bytes, with the items written by wire/ddbjson.

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
		dst = ddbjson.AppendItems(appendField(dst, &first, "Items"), o.Items)
	}
	dst = strconv.AppendInt(appendField(dst, &first, "Count"), int64(o.Count), 10)
	dst = strconv.AppendInt(appendField(dst, &first, "ScannedCount"), int64(o.ScannedCount), 10)
	if len(o.LastEvaluatedKey) > 0 {
		dst = ddbjson.AppendItem(appendField(dst, &first, "LastEvaluatedKey"), o.LastEvaluatedKey)
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
		dst = ddbjson.AppendItem(appendField(dst, &first, "Item"), o.Item)
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
			dst = append(jsonstr.Append(dst, name), ':')
			dst = ddbjson.AppendItems(dst, o.Responses[name])
		}
		dst = append(dst, '}')
	}
	dst, err := appendMarshal(append(dst, `,"UnprocessedKeys":`...), o.UnprocessedKeys)
	if err == nil && len(o.ConsumedCapacity) > 0 {
		dst, err = appendMarshal(append(dst, `,"ConsumedCapacity":`...), o.ConsumedCapacity)
	}
	return append(dst, '}'), err
}
