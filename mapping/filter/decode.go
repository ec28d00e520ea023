package filter

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// proj is the set of paths under "data" that some filter reads. MatchKinesis
// decodes only these, validating but skipping every other part of the
// record data, which is several times faster than json.Unmarshal into any.
// A proj with no keys stands for a leaf: its value is decoded in full, except
// that objects inside it become emptyObject (a leaf never looks into one).
type proj struct {
	keys []string
	kids []*proj
}

// add merges the paths of pattern object n into p.
func (p *proj) add(n *node) {
	for i := range n.fields {
		fd := &n.fields[i]
		kid := p.kid(fd.key)
		if fd.child != nil {
			kid.add(fd.child)
		}
	}
}

func (p *proj) kid(key string) *proj {
	for i, k := range p.keys {
		if k == key {
			return p.kids[i]
		}
	}
	kid := &proj{}
	p.keys = append(p.keys, key)
	p.kids = append(p.kids, kid)
	return kid
}

// emptyObject stands for an object none of whose members are read; matching
// never writes to it.
var emptyObject = map[string]any{}

// maxDepth is encoding/json's nesting limit; deeper documents are invalid.
const maxDepth = 10000

// decodeProjected validates data exactly as json.Valid does and, if valid,
// decodes it into the shape json.Unmarshal into any gives (map[string]any,
// []any, string, float64, bool, nil), keeping only the object members named
// by p. ok is false if data is not valid JSON.
func decodeProjected(data []byte, p *proj) (v any, ok bool) {
	d := projDecoder{data: data}
	v = d.value(p)
	d.ws()
	if d.bad || d.i != len(d.data) {
		return nil, false
	}
	return v, true
}

// projDecoder is a validating recursive-descent JSON decoder. A nil *proj
// means "validate and skip": nothing is allocated for skipped values.
type projDecoder struct {
	data  []byte
	i     int
	depth int
	bad   bool
}

func (d *projDecoder) fail() any {
	d.bad = true
	d.i = len(d.data)
	return nil
}

func (d *projDecoder) ws() {
	for d.i < len(d.data) {
		switch d.data[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *projDecoder) value(p *proj) any {
	d.ws()
	if d.i >= len(d.data) {
		return d.fail()
	}
	switch c := d.data[d.i]; c {
	case '{':
		return d.object(p)
	case '[':
		return d.array(p)
	case '"':
		start := d.i
		escaped := d.string()
		if p == nil || d.bad {
			return nil
		}
		raw := d.data[start+1 : d.i-1]
		if !escaped {
			return string(raw)
		}
		var s string
		// Same unescaping and U+FFFD replacement as json.Unmarshal.
		if json.Unmarshal(d.data[start:d.i], &s) != nil {
			return d.fail()
		}
		return s
	case 't':
		return d.literal("true", true)
	case 'f':
		return d.literal("false", false)
	case 'n':
		return d.literal("null", nil)
	default:
		if c != '-' && (c < '0' || c > '9') {
			return d.fail()
		}
		start := d.i
		d.number()
		if p == nil || d.bad {
			return nil
		}
		// Out-of-range numbers become ±Inf (json.Unmarshal would refuse
		// the whole document; they are valid JSON).
		f, _ := strconv.ParseFloat(string(d.data[start:d.i]), 64)
		return f
	}
}

func (d *projDecoder) literal(lit string, v any) any {
	if len(d.data)-d.i < len(lit) || string(d.data[d.i:d.i+len(lit)]) != lit {
		return d.fail()
	}
	d.i += len(lit)
	return v
}

func (d *projDecoder) object(p *proj) any {
	d.i++ // '{'
	if d.depth++; d.depth > maxDepth {
		return d.fail()
	}
	v := d.members(p)
	d.depth--
	return v
}

func (d *projDecoder) members(p *proj) any {
	var m map[string]any
	d.ws()
	if d.i < len(d.data) && d.data[d.i] == '}' {
		d.i++
		return d.objectResult(p, m)
	}
	for {
		d.ws()
		if d.i >= len(d.data) || d.data[d.i] != '"' {
			return d.fail()
		}
		start := d.i
		escaped := d.string()
		if d.bad {
			return nil
		}
		key := d.data[start:d.i]
		d.ws()
		if d.i >= len(d.data) || d.data[d.i] != ':' {
			return d.fail()
		}
		d.i++
		want := -1
		if p != nil {
			want = p.index(key, escaped)
		}
		if want >= 0 {
			v := d.value(p.kids[want])
			if d.bad {
				return nil
			}
			if m == nil {
				m = make(map[string]any, len(p.keys))
			}
			m[p.keys[want]] = v
		} else {
			d.value(nil)
		}
		d.ws()
		if d.i >= len(d.data) {
			return d.fail()
		}
		switch d.data[d.i] {
		case ',':
			d.i++
		case '}':
			d.i++
			return d.objectResult(p, m)
		default:
			return d.fail()
		}
	}
}

func (d *projDecoder) objectResult(p *proj, m map[string]any) any {
	if p == nil {
		return nil
	}
	if m == nil {
		return emptyObject
	}
	return m
}

// index returns the position in p.keys of the key whose quoted JSON text
// is q, or -1.
func (p *proj) index(q []byte, escaped bool) int {
	if !escaped {
		raw := q[1 : len(q)-1]
		for k, key := range p.keys {
			if string(raw) == key {
				return k
			}
		}
		return -1
	}
	var s string
	if json.Unmarshal(q, &s) != nil {
		return -1
	}
	for k, key := range p.keys {
		if s == key {
			return k
		}
	}
	return -1
}

func (d *projDecoder) array(p *proj) any {
	d.i++ // '['
	if d.depth++; d.depth > maxDepth {
		return d.fail()
	}
	v := d.elements(p)
	d.depth--
	return v
}

func (d *projDecoder) elements(p *proj) any {
	var arr []any
	if p != nil {
		arr = []any{}
	}
	d.ws()
	if d.i < len(d.data) && d.data[d.i] == ']' {
		d.i++
		return arrayResult(p, arr)
	}
	for {
		v := d.value(p)
		if d.bad {
			return nil
		}
		if p != nil {
			arr = append(arr, v)
		}
		d.ws()
		if d.i >= len(d.data) {
			return d.fail()
		}
		switch d.data[d.i] {
		case ',':
			d.i++
		case ']':
			d.i++
			return arrayResult(p, arr)
		default:
			return d.fail()
		}
	}
}

func arrayResult(p *proj, arr []any) any {
	if p == nil {
		return nil
	}
	return arr
}

// string consumes a string literal at d.i (on its opening quote) and
// reports whether its text needs json.Unmarshal to decode: it has escapes
// or bytes that are not valid UTF-8.
func (d *projDecoder) string() (escaped bool) {
	d.i++
	start := d.i
	ascii := true
	for d.i < len(d.data) {
		c := d.data[d.i]
		switch {
		case c == '"':
			d.i++
			return escaped || (!ascii && !utf8.Valid(d.data[start:d.i-1]))
		case c == '\\':
			escaped = true
			if d.i+1 >= len(d.data) {
				d.fail()
				return false
			}
			switch d.data[d.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				d.i += 2
			case 'u':
				if len(d.data)-d.i < 6 || !isHex(d.data[d.i+2]) || !isHex(d.data[d.i+3]) ||
					!isHex(d.data[d.i+4]) || !isHex(d.data[d.i+5]) {
					d.fail()
					return false
				}
				d.i += 6
			default:
				d.fail()
				return false
			}
		case c < 0x20:
			d.fail()
			return false
		default:
			if c >= utf8.RuneSelf {
				ascii = false
			}
			d.i++
		}
	}
	d.fail()
	return false
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// number consumes a JSON number at d.i: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (d *projDecoder) number() {
	if d.data[d.i] == '-' {
		d.i++
	}
	if d.i >= len(d.data) {
		d.fail()
		return
	}
	switch c := d.data[d.i]; {
	case c == '0':
		d.i++
	case '1' <= c && c <= '9':
		d.digits()
	default:
		d.fail()
		return
	}
	if d.i < len(d.data) && d.data[d.i] == '.' {
		d.i++
		if d.digits() == 0 {
			d.fail()
			return
		}
	}
	if d.i < len(d.data) && (d.data[d.i] == 'e' || d.data[d.i] == 'E') {
		d.i++
		if d.i < len(d.data) && (d.data[d.i] == '+' || d.data[d.i] == '-') {
			d.i++
		}
		if d.digits() == 0 {
			d.fail()
		}
	}
}

func (d *projDecoder) digits() int {
	n := 0
	for d.i < len(d.data) && '0' <= d.data[d.i] && d.data[d.i] <= '9' {
		d.i++
		n++
	}
	return n
}
