package expr

import (
	"maps"
	"slices"

	"github.com/aws/aws-lambda-go/events"
)

// CanonicalItem returns it with every number, at any depth, in the form
// DynamoDB stores and returns ([CanonicalNumber]: "01.50" -> "1.5"). It
// returns it itself when nothing changes, else a copy that shares what
// did not change. A number that does not parse is left as it is (the
// request's validation refuses it).
func CanonicalItem(it Item) Item {
	out, _ := canonicalMap(it)
	return out
}

// canonicalMap is CanonicalItem; ok reports a change.
func canonicalMap(it Item) (Item, bool) {
	var out Item
	for k, v := range it {
		if c, ok := canonicalValue(v); ok {
			if out == nil {
				out = maps.Clone(it)
			}
			out[k] = c
		}
	}
	if out == nil {
		return it, false
	}
	return out, true
}

// canonicalValue is CanonicalItem for one value; ok reports a change.
func canonicalValue(v events.DynamoDBAttributeValue) (events.DynamoDBAttributeValue, bool) {
	switch v.DataType() {
	case events.DataTypeNumber:
		if c, err := CanonicalNumber(v.Number()); err == nil && c != v.Number() {
			return events.NewNumberAttribute(c), true
		}
	case events.DataTypeNumberSet:
		if out, ok := changeEach(v.NumberSet(), func(n string) (string, bool) {
			c, err := CanonicalNumber(n)
			return c, err == nil && c != n
		}); ok {
			return events.NewNumberSetAttribute(out), true
		}
	case events.DataTypeList:
		if out, ok := changeEach(v.List(), canonicalValue); ok {
			return events.NewListAttribute(out), true
		}
	case events.DataTypeMap:
		if m, ok := canonicalMap(v.Map()); ok {
			return events.NewMapAttribute(m), true
		}
	}
	return v, false
}

// changeEach applies f to every element of s; it returns s itself when f
// changes none (ok false), else a copy with the changes.
func changeEach[T any](s []T, f func(T) (T, bool)) (out []T, ok bool) {
	for i, e := range s {
		if c, changed := f(e); changed {
			if out == nil {
				out = slices.Clone(s)
			}
			out[i] = c
		}
	}
	if out == nil {
		return s, false
	}
	return out, true
}
