package expr

import (
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-lambda-go/events"
)

// Context holds one request's ExpressionAttributeNames ("#n" -> "name") and
// ExpressionAttributeValues (":v" -> value), and records which of them the
// request's expressions use: DynamoDB rejects a request with an unused
// name or value, counted across ALL its expressions (condition, update,
// filter, key condition, projection), so parse every expression of a
// request with the same Context and call CheckUnused last.
//
// Names and Values may be nil (the request sent none). A nil *Context is
// accepted by the Parse functions and means both are nil.
//
// A Context is not safe for concurrent parses; the parsed expressions are
// independent of it and safe to evaluate concurrently.
//
// https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Expressions.ExpressionAttributeNames.html
// https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Expressions.ExpressionAttributeValues.html
type Context struct {
	Names  map[string]string
	Values map[string]events.DynamoDBAttributeValue

	usedNames  usedSet
	usedValues usedSet
	// mapsChecked: checkMaps ran (the limits on Names and Values).
	mapsChecked bool
}

// usedSet is the placeholders a request's expressions used: a short list
// searched in order (a request names a few), a map past usedListMax (an
// expression of 4 KB may name a thousand).
type usedSet struct {
	list []string
	set  map[string]struct{}
}

const usedListMax = 16

func (u *usedSet) has(p string) bool {
	if u.set != nil {
		_, ok := u.set[p]
		return ok
	}
	for _, q := range u.list {
		if q == p {
			return true
		}
	}
	return false
}

func (u *usedSet) len() int {
	if u.set != nil {
		return len(u.set)
	}
	return len(u.list)
}

func (u *usedSet) add(p string, want int) {
	switch {
	case u.has(p):
	case u.set != nil:
		u.set[p] = struct{}{}
	case len(u.list) < usedListMax:
		if u.list == nil {
			u.list = make([]string, 0, min(want, usedListMax))
		}
		u.list = append(u.list, p)
	default:
		u.set = make(map[string]struct{}, 2*usedListMax)
		for _, q := range u.list {
			u.set[q] = struct{}{}
		}
		u.set[p] = struct{}{}
	}
}

// Validate checks the maps themselves, before any expression is parsed, as
// DynamoDB does first. Errors (*ValidationError):
//   - "ExpressionAttributeNames must not be empty" (present but {}), the
//     same for ExpressionAttributeValues;
//   - `ExpressionAttributeNames contains invalid key: Syntax error; key: "a"`
//     (a key not starting with '#'; ':' for values);
//   - "ExpressionAttributeValues contains invalid value: <number error> for
//     key :v" (a number or number-set element that [ParseNumber] refuses).
//
// Other value checks (empty sets, duplicates, empty values) belong to the
// caller's attribute-value validation.
func (c *Context) Validate() error {
	if c == nil {
		return nil
	}
	if c.Names != nil && len(c.Names) == 0 {
		return validation("ExpressionAttributeNames must not be empty")
	}
	if c.Values != nil && len(c.Values) == 0 {
		return validation("ExpressionAttributeValues must not be empty")
	}
	if c.valid() {
		return nil
	}
	// Something is wrong: report the first in key order, as DynamoDB.
	for _, k := range slices.Sorted(maps.Keys(c.Names)) {
		if !validPlaceholder(k, '#') {
			return validation("ExpressionAttributeNames contains invalid key: Syntax error; key: %q", k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(c.Values)) {
		if !validPlaceholder(k, ':') {
			return validation("ExpressionAttributeValues contains invalid key: Syntax error; key: %q", k)
		}
		if err := checkNumbers(c.Values[k]); err != nil {
			return validation("ExpressionAttributeValues contains invalid value: %s for key %s", err, k)
		}
	}
	return nil
}

// valid reports whether Validate's per-key checks all pass, without
// sorting the keys (the common case).
func (c *Context) valid() bool {
	for k := range c.Names {
		if !validPlaceholder(k, '#') {
			return false
		}
	}
	for k, v := range c.Values {
		if !validPlaceholder(k, ':') || checkNumbers(v) != nil {
			return false
		}
	}
	return true
}

// CheckUnused reports names and values that no parsed expression used,
// names first. Call it after parsing every expression of the request.
// Errors (*ValidationError), keys sorted:
//   - "Value provided in ExpressionAttributeNames unused in expressions: keys: {#a, #b}"
//   - "Value provided in ExpressionAttributeValues unused in expressions: keys: {:x}"
func (c *Context) CheckUnused() error {
	if c == nil {
		return nil
	}
	if c.allUsed() {
		return nil
	}
	var names, values []string
	for _, k := range slices.Sorted(maps.Keys(c.Names)) {
		if !c.usedNames.has(k) {
			names = append(names, k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(c.Values)) {
		if !c.usedValues.has(k) {
			values = append(values, k)
		}
	}
	if len(names) > 0 {
		return validation("Value provided in ExpressionAttributeNames unused in expressions: keys: {%s}", strings.Join(names, ", "))
	}
	if len(values) > 0 {
		return validation("Value provided in ExpressionAttributeValues unused in expressions: keys: {%s}", strings.Join(values, ", "))
	}
	return nil
}

// allUsed reports whether every placeholder was used (the common case,
// checked without building the sorted lists of the error). Only
// placeholders present in Names and Values are ever marked used (name,
// value, cacheEntry.bind), so the sets are full exactly when they are as
// large as the maps.
func (c *Context) allUsed() bool {
	return c.usedNames.len() == len(c.Names) && c.usedValues.len() == len(c.Values)
}

func (c *Context) name(placeholder string) (string, bool) {
	n, ok := c.Names[placeholder]
	if ok {
		c.markName(placeholder)
	}
	return n, ok
}

func (c *Context) markName(placeholder string) { c.usedNames.add(placeholder, len(c.Names)) }

func (c *Context) markValue(placeholder string) { c.usedValues.add(placeholder, len(c.Values)) }

func (c *Context) value(placeholder string) (events.DynamoDBAttributeValue, bool) {
	v, ok := c.Values[placeholder]
	if ok {
		c.markValue(placeholder)
	}
	return v, ok
}

func validPlaceholder(k string, prefix byte) bool {
	if len(k) < 2 || k[0] != prefix {
		return false
	}
	for i := 1; i < len(k); i++ {
		if !isIdentPart(k[i]) {
			return false
		}
	}
	return true
}

// checkNumbers validates every number inside v.
func checkNumbers(v events.DynamoDBAttributeValue) error {
	switch v.DataType() {
	case events.DataTypeNumber:
		_, err := ParseNumber(v.Number())
		return err
	case events.DataTypeNumberSet:
		for _, s := range v.NumberSet() {
			if _, err := ParseNumber(s); err != nil {
				return err
			}
		}
	case events.DataTypeList:
		for _, e := range v.List() {
			if err := checkNumbers(e); err != nil {
				return err
			}
		}
	case events.DataTypeMap:
		for _, e := range v.Map() {
			if err := checkNumbers(e); err != nil {
				return err
			}
		}
	}
	return nil
}
