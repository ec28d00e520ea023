package filter

import (
	"bytes"
	"encoding/json"
	"io"
)

// decodeJSON decodes data, which must hold exactly one JSON value (surrounding
// whitespace allowed), with encoding/json into the shape matching expects:
// map[string]any, []any, string, json.Number, bool or nil. ok is false if
// data is not valid JSON.
//
// Numbers are kept as json.Number (UseNumber) rather than float64 so that
// every valid JSON document decodes: json.Unmarshal into any refuses the
// whole document for a number out of float64's range such as 1e999, which
// matching compares as ±Inf instead (see toFloat).
func decodeJSON(data []byte) (v any, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if dec.Decode(&v) != nil {
		return nil, false
	}
	if _, err := dec.Token(); err != io.EOF { // trailing data
		return nil, false
	}
	return v, true
}
