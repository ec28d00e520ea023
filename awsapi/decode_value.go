package awsapi

// One decoding of a DynamoDB request's body: the validation (validate.go)
// reads the body into a generic JSON value, and the operation's input is
// built from that value (fromValue) instead of a second json.Unmarshal
// of the body. The result is what json.Unmarshal makes of the body:
// fromValue takes only the values whose conversion it knows to be the
// same (exact member names, the types below, AttributeValue as
// aws-lambda-go's UnmarshalJSON reads it); for anything else it reports
// false and the body is decoded by json.Unmarshal as before, so every
// error keeps its code and wording. No JSON value makes it panic: every
// type assertion is checked.

import (
	"encoding"
	"encoding/base64"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/aws/aws-lambda-go/events"
)

// valueDecoder is an input member that builds itself from the generic
// JSON value (rawValue); false: not from this value (decode the body).
type valueDecoder interface{ fromJSONValue(v any) bool }

var (
	attributeValueType = reflect.TypeFor[events.DynamoDBAttributeValue]()
	valueDecoderType   = reflect.TypeFor[valueDecoder]()
	unmarshalerType    = reflect.TypeFor[json.Unmarshaler]()
	textType           = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// readsItself reports whether json.Unmarshal lets a value of t read its
// own JSON (json.Unmarshaler, encoding.TextUnmarshaler).
func readsItself(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return t.Implements(unmarshalerType) || p.Implements(unmarshalerType) || t.Implements(textType) || p.Implements(textType)
}

// fromValue sets *dst (dst a pointer) from v, a value json.Decoder read
// with UseNumber; false when some part of v is not one fromValue
// converts as json.Unmarshal would (dst is then partly set: zero it
// before decoding the body into it).
func fromValue(v any, dst any) bool {
	rv := reflect.ValueOf(dst)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return false
	}
	return setValue(v, rv.Elem())
}

// setValue sets rv (settable) from v, which is not nil.
func setValue(v any, rv reflect.Value) bool {
	t := rv.Type()
	switch {
	case t == attributeValueType:
		av, ok := attributeValue(v)
		if ok {
			rv.Set(reflect.ValueOf(av))
		}
		return ok
	case reflect.PointerTo(t).Implements(valueDecoderType):
		return rv.Addr().Interface().(valueDecoder).fromJSONValue(v)
	case readsItself(t):
		return false // its own reading of the bytes
	}
	switch t.Kind() {
	case reflect.Pointer:
		p := reflect.New(t.Elem())
		if !setValue(v, p.Elem()) {
			return false
		}
		rv.Set(p)
		return true
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			return false
		}
		fields := structFields(t)
		if fields == nil {
			return false
		}
		for name, mv := range obj {
			i, ok := fields[name]
			if !ok {
				if foldsToField(name, fields) {
					return false // json.Unmarshal's case-insensitive match
				}
				continue
			}
			f := rv.FieldByIndex(i)
			if mv == nil {
				if readsItself(f.Type()) {
					return false // json.Unmarshal gives it the null
				}
				f.SetZero()
				continue
			}
			if !setValue(mv, f) {
				return false
			}
		}
		return true
	case reflect.Map:
		obj, ok := v.(map[string]any)
		if !ok || t.Key().Kind() != reflect.String || t.Key() != reflect.TypeFor[string]() {
			return false
		}
		if rv.IsNil() {
			rv.Set(reflect.MakeMapWithSize(t, len(obj)))
		}
		for k, mv := range obj {
			if mv == nil {
				return false
			}
			e := reflect.New(t.Elem()).Elem()
			if !setValue(mv, e) {
				return false
			}
			rv.SetMapIndex(reflect.ValueOf(k), e)
		}
		return true
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return false // base64, json.Unmarshal's to read
		}
		arr, ok := v.([]any)
		if !ok {
			return false
		}
		s := reflect.MakeSlice(t, len(arr), len(arr))
		for i, e := range arr {
			if e == nil || !setValue(e, s.Index(i)) {
				return false
			}
		}
		rv.Set(s)
		return true
	case reflect.String:
		s, ok := v.(string)
		if ok && t == reflect.TypeFor[string]() {
			rv.SetString(s)
			return true
		}
	case reflect.Bool:
		b, ok := v.(bool)
		if ok && t == reflect.TypeFor[bool]() {
			rv.SetBool(b)
			return true
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := v.(json.Number)
		if !ok {
			return false
		}
		i, err := strconv.ParseInt(string(n), 10, 64)
		if err != nil || rv.OverflowInt(i) {
			return false
		}
		rv.SetInt(i)
		return true
	}
	return false
}

// fieldCache holds structFields' answers by type.
var fieldCache sync.Map // reflect.Type -> map[string][]int

// structFields maps the JSON names of t's fields to their index paths,
// the fields of embedded structs promoted as json.Unmarshal promotes them
// (a field at a shallower depth wins over a deeper one of the same
// name); nil when t has a field whose JSON reading fromValue does not
// copy (an embedded pointer or tagged embedded struct, two fields of one
// name at the same depth, a tag option other than omitempty).
func structFields(t reflect.Type) map[string][]int {
	if m, ok := fieldCache.Load(t); ok {
		return m.(map[string][]int)
	}
	m := promotedFields(t)
	fieldCache.Store(t, m)
	return m
}

// promotedFields is structFields, not cached: t's own fields, then those
// of its embedded structs, a depth at a time.
func promotedFields(t reflect.Type) map[string][]int {
	if t.Kind() != reflect.Struct {
		return nil
	}
	m := map[string][]int{}
	for level := [][]int{nil}; len(level) > 0; { // the index paths of the structs at this depth
		found := map[string][]int{}
		var next [][]int
		for _, path := range level {
			st := t
			if path != nil {
				st = t.FieldByIndex(path).Type
			}
			own, embeds := ownFields(st, path)
			if own == nil {
				return nil
			}
			for name, p := range own {
				if _, dup := found[name]; dup {
					return nil
				}
				found[name] = p
			}
			next = append(next, embeds...)
		}
		for name, p := range found {
			if _, shallower := m[name]; !shallower {
				m[name] = p
			}
		}
		level = next
	}
	return m
}

// ownFields maps the JSON names of t's own fields (not those of its
// embedded structs) to their index paths under prefix, and returns the
// index paths of its embedded structs; nil as structFields says.
func ownFields(t reflect.Type, prefix []int) (map[string][]int, [][]int) {
	if t.Kind() != reflect.Struct {
		return nil, nil
	}
	at := func(i int) []int { return append(append([]int(nil), prefix...), i) }
	m := map[string][]int{}
	var embeds [][]int
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			if f.Type.Kind() != reflect.Struct || f.Tag.Get("json") != "" {
				return nil, nil
			}
			embeds = append(embeds, at(i))
			continue
		}
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" && opts == "" {
			continue
		}
		if opts != "" && opts != "omitempty" {
			return nil, nil
		}
		if name == "" {
			name = f.Name
		}
		if _, dup := m[name]; dup {
			return nil, nil // json.Unmarshal reads neither
		}
		m[name] = at(i)
	}
	return m, embeds
}

// foldsToField reports whether name matches a field only as
// json.Unmarshal matches names, without regard to case.
func foldsToField(name string, fields map[string][]int) bool {
	for f := range fields {
		if strings.EqualFold(f, name) {
			return true
		}
	}
	return false
}

// attributeValue is v as aws-lambda-go's DynamoDBAttributeValue
// UnmarshalJSON reads it; false for anything it would refuse (then the
// body is decoded again and the error is its own).
func attributeValue(v any) (events.DynamoDBAttributeValue, bool) {
	m, ok := v.(map[string]any)
	if !ok || len(m) != 1 {
		return events.DynamoDBAttributeValue{}, false
	}
	for typ, val := range m {
		switch typ {
		case "NULL":
			return events.NewNullAttribute(), true
		case "S":
			s, ok := val.(string)
			return events.NewStringAttribute(s), ok
		case "N":
			s, ok := val.(string)
			return events.NewNumberAttribute(s), ok
		case "BOOL":
			b, ok := val.(bool)
			return events.NewBooleanAttribute(b), ok
		case "B":
			b, ok := decodeBase64(val)
			return events.NewBinaryAttribute(b), ok
		case "SS", "NS":
			ss, ok := stringList(val)
			if typ == "SS" {
				return events.NewStringSetAttribute(ss), ok
			}
			return events.NewNumberSetAttribute(ss), ok
		case "BS":
			arr, ok := val.([]any)
			if !ok {
				break
			}
			bs := make([][]byte, len(arr))
			for i, e := range arr {
				if bs[i], ok = decodeBase64(e); !ok {
					return events.DynamoDBAttributeValue{}, false
				}
			}
			return events.NewBinarySetAttribute(bs), true
		case "L":
			arr, ok := val.([]any)
			if !ok {
				break
			}
			l := make([]events.DynamoDBAttributeValue, len(arr))
			for i, e := range arr {
				if l[i], ok = attributeValue(e); !ok {
					return events.DynamoDBAttributeValue{}, false
				}
			}
			return events.NewListAttribute(l), true
		case "M":
			obj, ok := val.(map[string]any)
			if !ok {
				break
			}
			mm := make(map[string]events.DynamoDBAttributeValue, len(obj))
			for k, e := range obj {
				av, ok := attributeValue(e)
				if !ok {
					return events.DynamoDBAttributeValue{}, false
				}
				mm[k] = av
			}
			return events.NewMapAttribute(mm), true
		}
	}
	return events.DynamoDBAttributeValue{}, false
}

func decodeBase64(v any) ([]byte, bool) {
	s, ok := v.(string)
	if !ok {
		return nil, false
	}
	b, err := base64.StdEncoding.DecodeString(s)
	return b, err == nil
}

func stringList(v any) ([]string, bool) {
	arr, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([]string, len(arr))
	for i, e := range arr {
		if out[i], ok = e.(string); !ok {
			return nil, false
		}
	}
	return out, true
}
