package table

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aws/aws-lambda-go/events"
)

// The change-log record format. A change was first stored as JSON (the
// Change struct's tags, starting with '{'); it is now a compact binary
// form (starting with changeBinaryV1) that costs a fraction of JSON to
// write and to read, since every table write encodes one and every stream
// record a mapping delivers may decode one. Both are read.
//
//	byte         changeBinaryV1
//	string       EventName, Label, View, Txn   (uvarint length + bytes)
//	uvarint      TxnIndex
//	varint       TimeMs
//	byte         TTL (0 or 1)
//	item         Keys, NewImage, OldImage      (uvarint 0 = absent, else count+1;
//	                                            then per attribute: name, value)
//	value        type byte, then by type: S/N string; B bytes; BOOL byte; NULL
//	             nothing; M item; L uvarint count + values; SS/NS uvarint
//	             count + strings; BS uvarint count + bytes
const changeBinaryV1 = 0xB1

// encodeChange appends c's binary form to dst.
func encodeChange(dst []byte, c *Change) []byte {
	dst, _ = encodeChangeImage(dst, c)
	return dst
}

// encodeChangeImage is encodeChange, which also returns the new image's
// encoding (appendItem's) within it: the index store keeps that.
func encodeChangeImage(dst []byte, c *Change) (out, img []byte) {
	dst = append(dst, changeBinaryV1)
	dst = appendString(dst, c.EventName)
	dst = appendString(dst, c.Label)
	dst = appendString(dst, c.View)
	dst = appendString(dst, c.Txn)
	dst = binary.AppendUvarint(dst, uint64(c.TxnIndex))
	dst = binary.AppendVarint(dst, c.TimeMs)
	if c.TTL {
		dst = append(dst, 1)
	} else {
		dst = append(dst, 0)
	}
	dst = appendItem(dst, c.Keys)
	a := len(dst)
	dst = appendItem(dst, c.NewImage)
	b := len(dst)
	dst = appendItem(dst, c.OldImage)
	return dst, dst[a:b:b]
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

func appendItem(dst []byte, it Item) []byte {
	if it == nil {
		return append(dst, 0)
	}
	dst = binary.AppendUvarint(dst, uint64(len(it))+1)
	for name, v := range it {
		dst = appendString(dst, name)
		dst = appendValue(dst, &v)
	}
	return dst
}

// Value type bytes of the binary form.
const (
	tS byte = iota + 1
	tN
	tB
	tBOOL
	tNULL
	tM
	tL
	tSS
	tNS
	tBS
)

func appendValue(dst []byte, v *events.DynamoDBAttributeValue) []byte {
	switch v.DataType() {
	case events.DataTypeString:
		return appendString(append(dst, tS), v.String())
	case events.DataTypeNumber:
		return appendString(append(dst, tN), v.Number())
	case events.DataTypeBinary:
		return appendString(append(dst, tB), string(v.Binary()))
	case events.DataTypeBoolean:
		if v.Boolean() {
			return append(dst, tBOOL, 1)
		}
		return append(dst, tBOOL, 0)
	case events.DataTypeNull:
		return append(dst, tNULL)
	case events.DataTypeMap:
		m := v.Map()
		if m == nil {
			m = Item{}
		}
		return appendItem(append(dst, tM), m)
	case events.DataTypeList:
		l := v.List()
		dst = binary.AppendUvarint(append(dst, tL), uint64(len(l)))
		for i := range l {
			dst = appendValue(dst, &l[i])
		}
		return dst
	case events.DataTypeStringSet, events.DataTypeNumberSet:
		var t byte
		var ss []string
		if v.DataType() == events.DataTypeNumberSet {
			t, ss = tNS, v.NumberSet()
		} else {
			t, ss = tSS, v.StringSet()
		}
		dst = binary.AppendUvarint(append(dst, t), uint64(len(ss)))
		for _, s := range ss {
			dst = appendString(dst, s)
		}
		return dst
	case events.DataTypeBinarySet:
		bs := v.BinarySet()
		dst = binary.AppendUvarint(append(dst, tBS), uint64(len(bs)))
		for _, b := range bs {
			dst = appendString(dst, string(b))
		}
		return dst
	}
	// The zero attribute value (no type) is stored as NULL; an item never
	// holds one (the expression layer builds typed values).
	return append(dst, tNULL)
}

var errBadChange = errors.New("table: change record is truncated or malformed")

// DecodeChange parses a change-log record's data, in either form.
func DecodeChange(data []byte) (*Change, error) {
	if len(data) > 0 && data[0] == changeBinaryV1 {
		d := changeDecoder{b: data[1:]}
		c := d.change()
		if d.err != nil {
			return nil, d.err
		}
		return c, nil
	}
	var c Change
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, err
	}
	return &c, nil
}

type changeDecoder struct {
	b   []byte
	err error
}

func (d *changeDecoder) fail() {
	if d.err == nil {
		d.err = errBadChange
	}
	d.b = nil
}

// count reads an element count; a count larger than the bytes left (every
// element takes at least one) is malformed input, refused before any
// allocation.
func (d *changeDecoder) count() (uint64, bool) {
	n := d.uvarint()
	if d.err != nil || n > uint64(len(d.b)) {
		d.fail()
		return 0, false
	}
	return n, true
}

func (d *changeDecoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *changeDecoder) bytes() []byte {
	n := d.uvarint()
	if uint64(len(d.b)) < n {
		d.fail()
		return nil
	}
	s := d.b[:n:n]
	d.b = d.b[n:]
	return s
}

func (d *changeDecoder) string() string { return string(d.bytes()) }

func (d *changeDecoder) byte() byte {
	if len(d.b) == 0 {
		d.fail()
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *changeDecoder) change() *Change {
	c := &Change{EventName: d.string(), Label: d.string(), View: d.string(), Txn: d.string()}
	c.TxnIndex = int(d.uvarint())
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail()
		return nil
	}
	d.b = d.b[n:]
	c.TimeMs = v
	c.TTL = d.byte() == 1
	c.Keys, c.NewImage, c.OldImage = d.item(0), d.item(0), d.item(0)
	if d.err == nil && len(d.b) != 0 {
		d.fail()
	}
	return c
}

// maxDepth bounds the nesting the decoder follows, a record's attribute
// value being level 1, so that a malformed record cannot recurse without
// end. Writes refuse more than 32 levels (expr.MaxNesting, items.go); the
// bound is far above that, above any nesting a request could store before
// that limit was enforced (the JSON API's decoder refuses more than 10000
// nested JSON levels, two to an attribute level), so such items stay
// readable: by GetItem, a stream reader, and the index rebuild at open.
const maxDepth = 10000

func (d *changeDecoder) item(depth int) Item {
	n := d.uvarint()
	if n == 0 || d.err != nil {
		return nil
	}
	n--
	if n > uint64(len(d.b)) { // every attribute takes at least 2 bytes
		d.fail()
		return nil
	}
	it := make(Item, n)
	for range n {
		name := d.string()
		it[name] = d.value(depth + 1)
		if d.err != nil {
			return nil
		}
	}
	return it
}

func (d *changeDecoder) value(depth int) events.DynamoDBAttributeValue {
	if depth > maxDepth {
		d.fail()
		return events.DynamoDBAttributeValue{}
	}
	switch t := d.byte(); t {
	case tS:
		return events.NewStringAttribute(d.string())
	case tN:
		return events.NewNumberAttribute(d.string())
	case tB:
		return events.NewBinaryAttribute(bytes.Clone(d.bytes()))
	case tBOOL:
		return events.NewBooleanAttribute(d.byte() == 1)
	case tNULL:
		return events.NewNullAttribute()
	case tM:
		m := d.item(depth)
		if m == nil {
			m = Item{}
		}
		return events.NewMapAttribute(m)
	case tL:
		n, ok := d.count()
		if !ok {
			return events.DynamoDBAttributeValue{}
		}
		l := make([]events.DynamoDBAttributeValue, n)
		for i := range l {
			l[i] = d.value(depth + 1)
		}
		return events.NewListAttribute(l)
	case tSS, tNS:
		n, ok := d.count()
		if !ok {
			return events.DynamoDBAttributeValue{}
		}
		ss := make([]string, n)
		for i := range ss {
			ss[i] = d.string()
		}
		if t == tNS {
			return events.NewNumberSetAttribute(ss)
		}
		return events.NewStringSetAttribute(ss)
	case tBS:
		n, ok := d.count()
		if !ok {
			return events.DynamoDBAttributeValue{}
		}
		bs := make([][]byte, n)
		for i := range bs {
			bs[i] = bytes.Clone(d.bytes())
		}
		return events.NewBinarySetAttribute(bs)
	default:
		if d.err == nil {
			d.err = fmt.Errorf("%w: unknown value type %d", errBadChange, t)
		}
		d.b = nil
		return events.DynamoDBAttributeValue{}
	}
}
