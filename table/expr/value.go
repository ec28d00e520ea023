package expr

import (
	"bytes"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/cockroachdb/apd/v3"
)

// Item is one DynamoDB item: attribute name to value, as in the
// events.DynamoDBEventRecord images and the DynamoDB JSON wire format.
type Item = map[string]events.DynamoDBAttributeValue

// Compare orders two scalar values of the same type, as DynamoDB's <, <=, >,
// >=, BETWEEN and sort keys do: strings by their UTF-8 bytes, numbers
// numerically (exactly, with apd), binaries by their bytes. ok is false when
// the values are not comparable: different types, or a type other than S, N
// and B (a mismatched comparison is false in a condition, not an error).
//
// https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Expressions.OperatorsAndFunctions.html#Expressions.OperatorsAndFunctions.Comparators
func Compare(a, b events.DynamoDBAttributeValue) (int, bool) {
	if a.DataType() != b.DataType() {
		return 0, false
	}
	switch a.DataType() {
	case events.DataTypeString:
		switch {
		case a.String() < b.String():
			return -1, true
		case a.String() > b.String():
			return 1, true
		}
		return 0, true
	case events.DataTypeNumber:
		return cmpNumbers(a.Number(), b.Number())
	case events.DataTypeBinary:
		return bytes.Compare(a.Binary(), b.Binary()), true
	}
	return 0, false
}

// Equal reports whether two values are equal as DynamoDB's = operator sees
// them: same type and same value; numbers numerically ("1" = "1.0"); sets as
// sets (order does not matter, number sets numerically); lists element by
// element in order; maps key by key. Values of different types are not
// equal.
func Equal(a, b events.DynamoDBAttributeValue) bool {
	if a.DataType() != b.DataType() {
		return false
	}
	switch a.DataType() {
	case events.DataTypeString:
		return a.String() == b.String()
	case events.DataTypeNumber:
		c, ok := cmpNumbers(a.Number(), b.Number())
		return ok && c == 0
	case events.DataTypeBinary:
		return bytes.Equal(a.Binary(), b.Binary())
	case events.DataTypeBoolean:
		return a.Boolean() == b.Boolean()
	case events.DataTypeNull:
		return true
	case events.DataTypeStringSet, events.DataTypeNumberSet, events.DataTypeBinarySet:
		x, y := setElems(a), setElems(b)
		if len(x) != len(y) {
			return false
		}
		for _, e := range x {
			if !containsElem(y, e) {
				return false
			}
		}
		return true
	case events.DataTypeList:
		return slices.EqualFunc(a.List(), b.List(), Equal)
	case events.DataTypeMap:
		return maps.EqualFunc(a.Map(), b.Map(), Equal)
	}
	return false
}

// beginsWith is begins_with(a, b): a string prefix of a string, or a
// binary prefix of a binary; false for any other types.
func beginsWith(a, b events.DynamoDBAttributeValue) bool {
	switch {
	case a.DataType() == events.DataTypeString && b.DataType() == events.DataTypeString:
		return strings.HasPrefix(a.String(), b.String())
	case a.DataType() == events.DataTypeBinary && b.DataType() == events.DataTypeBinary:
		return bytes.HasPrefix(a.Binary(), b.Binary())
	}
	return false
}

// setElems returns the elements of a set as scalar values (SS -> S, NS ->
// N, BS -> B), or nil for a non-set.
func setElems(v events.DynamoDBAttributeValue) []events.DynamoDBAttributeValue {
	var out []events.DynamoDBAttributeValue
	switch v.DataType() {
	case events.DataTypeStringSet:
		for _, s := range v.StringSet() {
			out = append(out, events.NewStringAttribute(s))
		}
	case events.DataTypeNumberSet:
		for _, s := range v.NumberSet() {
			out = append(out, events.NewNumberAttribute(s))
		}
	case events.DataTypeBinarySet:
		for _, b := range v.BinarySet() {
			out = append(out, events.NewBinaryAttribute(b))
		}
	}
	return out
}

// elemType is the scalar type of a set's elements.
func elemType(t events.DynamoDBDataType) events.DynamoDBDataType {
	switch t {
	case events.DataTypeStringSet:
		return events.DataTypeString
	case events.DataTypeNumberSet:
		return events.DataTypeNumber
	case events.DataTypeBinarySet:
		return events.DataTypeBinary
	}
	return -1
}

func isSet(t events.DynamoDBDataType) bool { return elemType(t) >= 0 }

// makeSet builds a set of type t from scalar elements.
func makeSet(t events.DynamoDBDataType, elems []events.DynamoDBAttributeValue) events.DynamoDBAttributeValue {
	switch t {
	case events.DataTypeStringSet:
		ss := make([]string, len(elems))
		for i, e := range elems {
			ss[i] = e.String()
		}
		return events.NewStringSetAttribute(ss)
	case events.DataTypeNumberSet:
		ns := make([]string, len(elems))
		for i, e := range elems {
			ns[i] = e.Number()
		}
		return events.NewNumberSetAttribute(ns)
	default:
		bs := make([][]byte, len(elems))
		for i, e := range elems {
			bs[i] = e.Binary()
		}
		return events.NewBinarySetAttribute(bs)
	}
}

func containsElem(elems []events.DynamoDBAttributeValue, e events.DynamoDBAttributeValue) bool {
	for _, x := range elems {
		if Equal(x, e) {
			return true
		}
	}
	return false
}

// typeNames are each data type's names in DynamoDB's messages: the short
// one (also the attribute value's key) and the long one of the ADD and
// DELETE operand messages.
var typeNames = map[events.DynamoDBDataType][2]string{
	events.DataTypeString:    {"S", "STRING"},
	events.DataTypeNumber:    {"N", "NUMBER"},
	events.DataTypeBinary:    {"B", "BINARY"},
	events.DataTypeBoolean:   {"BOOL", "BOOLEAN"},
	events.DataTypeNull:      {"NULL", "NULL"},
	events.DataTypeStringSet: {"SS", "STRING_SET"},
	events.DataTypeNumberSet: {"NS", "NUMBER_SET"},
	events.DataTypeBinarySet: {"BS", "BINARY_SET"},
	events.DataTypeList:      {"L", "LIST"},
	events.DataTypeMap:       {"M", "MAP"},
}

// TypeName is the short type name of a data type as DynamoDB writes it
// in its messages and in attribute values: S, N, B, BOOL, NULL, SS, NS,
// BS, L or M ("?" for none of these).
func TypeName(t events.DynamoDBDataType) string { return typeName(t, 0) }

// longTypeName is the type name DynamoDB uses in the ADD and DELETE
// operand messages (STRING, NUMBER_SET...; "?" for none of these).
func longTypeName(t events.DynamoDBDataType) string { return typeName(t, 1) }

func typeName(t events.DynamoDBDataType, form int) string {
	if n, ok := typeNames[t]; ok {
		return n[form]
	}
	return "?"
}

// ItemSize returns the size of an item in bytes by DynamoDB's rules
// (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html),
// the figure checked against the 400 KB item limit (409600 bytes) and used
// for capacity units:
//   - each attribute: UTF-8 length of its name plus the size of its value;
//   - S: UTF-8 length; B: byte length;
//   - N: 1 byte per two significant digits, rounded up, plus 1 byte
//     (leading and trailing zeros are not significant);
//   - BOOL, NULL: 1 byte;
//   - SS, NS, BS: the sum of the element sizes;
//   - L, M: 3 bytes plus, per element, 1 byte plus the element (and, in a
//     map, the key's UTF-8 length).
//
// The rules are the documented approximation; a real table may differ by a
// few bytes on numbers.
func ItemSize(item Item) int {
	n := 0
	for k, v := range item {
		n += len(k) + valueSize(v)
	}
	return n
}

func valueSize(v events.DynamoDBAttributeValue) int {
	switch v.DataType() {
	case events.DataTypeString:
		return len(v.String())
	case events.DataTypeBinary:
		return len(v.Binary())
	case events.DataTypeNumber:
		return numberSize(v.Number())
	case events.DataTypeBoolean, events.DataTypeNull:
		return 1
	case events.DataTypeStringSet:
		return sizeOf(v.StringSet(), func(s string) int { return len(s) })
	case events.DataTypeNumberSet:
		return sizeOf(v.NumberSet(), numberSize)
	case events.DataTypeBinarySet:
		return sizeOf(v.BinarySet(), func(b []byte) int { return len(b) })
	case events.DataTypeList:
		n := 3
		for _, e := range v.List() {
			n += 1 + valueSize(e)
		}
		return n
	case events.DataTypeMap:
		n := 3
		for k, e := range v.Map() {
			n += 1 + len(k) + valueSize(e)
		}
		return n
	}
	return 0
}

func numberSize(s string) int {
	if PlainInteger(s) {
		// The digits without the sign and trailing zeros: what Reduce
		// leaves of the coefficient ("0" is the zero).
		if s == "0" {
			return 2
		}
		digits := strings.TrimRight(strings.TrimPrefix(s, "-"), "0")
		return (len(digits)+1)/2 + 1
	}
	if _, sig, ok := plainDecimal(s); ok {
		if sig == 0 {
			return 2
		}
		return (sig+1)/2 + 1
	}
	d, err := ParseNumber(s)
	if err != nil {
		return len(s)
	}
	if d.IsZero() {
		return 2
	}
	var r apd.Decimal
	r.Reduce(d)
	return (int(r.NumDigits())+1)/2 + 1
}

// sizeOf is the sum of size over the elements of a set.
func sizeOf[E any](set []E, size func(E) int) int {
	n := 0
	for _, e := range set {
		n += size(e)
	}
	return n
}
