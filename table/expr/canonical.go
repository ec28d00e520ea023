package expr

import (
	"iter"
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
	return changeAll(it, maps.All(it), maps.Clone, func(m Item, k string, v events.DynamoDBAttributeValue) { m[k] = v }, canonicalValue)
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
func changeEach[T any](s []T, f func(T) (T, bool)) ([]T, bool) {
	return changeAll(s, slices.All(s), slices.Clone, func(s []T, i int, e T) { s[i] = e }, f)
}

// changeAll is changeEach for a slice or a map c whose elements all
// ranges over: it returns c itself when f changes none (ok false), else
// clone(c) with each change set by set.
func changeAll[C any, K comparable, V any](c C, all iter.Seq2[K, V], clone func(C) C, set func(C, K, V), f func(V) (V, bool)) (out C, ok bool) {
	out = c
	for k, v := range all {
		if n, changed := f(v); changed {
			if !ok {
				out, ok = clone(c), true
			}
			set(out, k, n)
		}
	}
	return out, ok
}
