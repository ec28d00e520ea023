package awsapi

// DynamoDB's legacy (pre-expression) parameters, which the Java
// DynamoDBMapper and many older programs still send, translated into the
// expressions package table evaluates: AttributesToGet into a
// ProjectionExpression, Expected into a ConditionExpression,
// AttributeUpdates into an UpdateExpression, QueryFilter and ScanFilter
// into a FilterExpression (ConditionalOperator joins the conditions of
// Expected and of the filters). The names and values go into
// ExpressionAttributeNames and ExpressionAttributeValues under
// placeholders of their own (#lN, :lN). A request may not mix the two
// kinds, as in DynamoDB. A Query's KeyConditions go to the table as they
// are (table.QueryInput's KeyConditions), which checks them against the
// key schema in DynamoDB's words for them.

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/table/expr"
)

// legacyParams are the legacy parameters, and expressionParams the
// parameters a request with one of them may not have.
var (
	legacyParams     = []string{"AttributesToGet", "AttributeUpdates", "ConditionalOperator", "Expected", "KeyConditions", "QueryFilter", "ScanFilter"}
	expressionParams = []string{"ConditionExpression", "FilterExpression", "KeyConditionExpression", "ProjectionExpression", "UpdateExpression"}
)

// legacyCondition is an entry of Expected, KeyConditions, QueryFilter or
// ScanFilter.
type legacyCondition struct {
	Value              json.RawMessage
	Exists             *bool
	ComparisonOperator string
	AttributeValueList []json.RawMessage
}

// legacyExpr builds the expressions of one request.
type legacyExpr struct {
	names  map[string]string
	values map[string]json.RawMessage
	byName map[string]string
	// expected: the conditions being translated are Expected's, which
	// have a Value besides an AttributeValueList.
	expected bool
}

// translateLegacy rewrites raw's legacy parameters as expressions; raw
// without any is left as it is.
func translateLegacy(raw map[string]json.RawMessage) error {
	var legacy, expression []string
	for _, p := range legacyParams {
		if _, ok := raw[p]; ok {
			legacy = append(legacy, p)
		}
	}
	if len(legacy) == 0 {
		return nil
	}
	for _, p := range expressionParams {
		if _, ok := raw[p]; ok {
			expression = append(expression, p)
		}
	}
	mixed := legacy
	if raw["KeyConditionExpression"] == nil {
		// a Query's KeyConditions may go with its other expressions
		mixed = slices.DeleteFunc(slices.Clone(legacy), func(p string) bool { return p == "KeyConditions" })
	}
	if len(expression) > 0 && len(mixed) > 0 {
		return awserr.New(awserr.ErrValidation, "Can not use both expression and non-expression parameters in the same request: Non-expression parameters: {%s} Expression parameters: {%s}",
			strings.Join(mixed, ", "), strings.Join(expression, ", "))
	}
	for _, p := range []string{"ExpressionAttributeNames", "ExpressionAttributeValues"} {
		if _, ok := raw[p]; ok && len(expression) == 0 {
			return awserr.New(awserr.ErrValidation, "%s can only be specified when using expressions", p)
		}
	}
	b := &legacyExpr{names: map[string]string{}, values: map[string]json.RawMessage{}, byName: map[string]string{}}
	join := " AND "
	if op := raw["ConditionalOperator"]; op != nil {
		var s string
		_ = json.Unmarshal(op, &s) // the model's enum holds: AND or OR
		join = " " + s + " "
	}
	if raw["AttributeUpdates"] != nil {
		e, err := b.updates(raw["AttributeUpdates"])
		if err != nil {
			return err
		}
		if e != "" {
			raw["UpdateExpression"], _ = json.Marshal(e)
		}
	}
	for _, t := range []struct{ from, to, join string }{
		{"Expected", "ConditionExpression", join},
		{"QueryFilter", "FilterExpression", join},
		{"ScanFilter", "FilterExpression", join},
	} {
		if raw[t.from] == nil {
			continue
		}
		var conds map[string]legacyCondition
		if err := json.Unmarshal(raw[t.from], &conds); err != nil {
			return awserr.New(awserr.ErrSerialization, "%s: %v", t.from, err)
		}
		b.expected = t.from == "Expected"
		e, err := b.conditions(conds, t.join)
		if err != nil {
			return err
		}
		if e != "" {
			raw[t.to], _ = json.Marshal(e)
		}
	}
	if raw["AttributesToGet"] != nil {
		var attrs []string
		if err := json.Unmarshal(raw["AttributesToGet"], &attrs); err != nil {
			return awserr.New(awserr.ErrSerialization, "AttributesToGet: %v", err)
		}
		for i, a := range attrs {
			attrs[i] = b.name(a)
		}
		raw["ProjectionExpression"], _ = json.Marshal(strings.Join(attrs, ", "))
	}
	for _, p := range legacy {
		if p != "KeyConditions" {
			delete(raw, p)
		}
	}
	if len(b.names) > 0 {
		var own map[string]string
		_ = json.Unmarshal(raw["ExpressionAttributeNames"], &own) // the expressions' own, kept
		for k, v := range own {
			b.names[k] = v
		}
		raw["ExpressionAttributeNames"], _ = json.Marshal(b.names)
	}
	if len(b.values) > 0 {
		var own map[string]json.RawMessage
		_ = json.Unmarshal(raw["ExpressionAttributeValues"], &own)
		for k, v := range own {
			b.values[k] = v
		}
		raw["ExpressionAttributeValues"], _ = json.Marshal(b.values)
	}
	return nil
}

// name is the placeholder of an attribute name.
func (b *legacyExpr) name(attr string) string {
	if p, ok := b.byName[attr]; ok {
		return p
	}
	p := fmt.Sprintf("#l%d", len(b.names))
	b.names[p], b.byName[attr] = attr, p
	return p
}

// value is the placeholder of a new value.
func (b *legacyExpr) value(v json.RawMessage) string {
	p := fmt.Sprintf(":l%d", len(b.values))
	b.values[p] = v
	return p
}

// conditions joins one condition per attribute, in name order.
func (b *legacyExpr) conditions(conds map[string]legacyCondition, join string) (string, error) {
	attrs := make([]string, 0, len(conds))
	for a := range conds {
		attrs = append(attrs, a)
	}
	sort.Strings(attrs)
	parts := make([]string, 0, len(attrs))
	for _, a := range attrs {
		e, err := b.condition(a, conds[a])
		if err != nil {
			return "", err
		}
		parts = append(parts, e)
	}
	return strings.Join(parts, join), nil
}

// operands are how many values each comparison operator takes (-1: one
// or more).
var operands = map[string]int{"EQ": 1, "NE": 1, "LE": 1, "LT": 1, "GE": 1, "GT": 1, "NOT_NULL": 0, "NULL": 0,
	"CONTAINS": 1, "NOT_CONTAINS": 1, "BEGINS_WITH": 1, "IN": -1, "BETWEEN": 2}

// maxLegacyIn is the most values of one IN of a translated condition
// (an expression's limit).
const maxLegacyIn = 100

var comparisons = map[string]string{"EQ": "=", "NE": "<>", "LE": "<=", "LT": "<", "GE": ">=", "GT": ">"}

// condition is one attribute's condition as an expression.
func (b *legacyExpr) condition(attr string, c legacyCondition) (string, error) {
	invalid := func(format string, args ...any) error {
		return awserr.New(awserr.ErrValidation, "One or more parameter values were invalid: "+format, args...)
	}
	n := b.name(attr)
	if c.ComparisonOperator == "" { // Expected's own form: Value and Exists
		switch {
		case c.AttributeValueList != nil && c.Value != nil:
			return "", invalid("Value and AttributeValueList cannot be used together for Attribute: %s", attr)
		case c.AttributeValueList != nil:
			return "", invalid("AttributeValueList can only be used with a ComparisonOperator for Attribute: %s", attr)
		case c.Exists != nil && !*c.Exists && c.Value != nil:
			return "", invalid("Value cannot be used when Exists is false for Attribute: %s", attr)
		case c.Exists != nil && !*c.Exists:
			return "attribute_not_exists(" + n + ")", nil
		case c.Value == nil && c.Exists == nil:
			return "", invalid("Value must be provided when Exists is null for Attribute: %s", attr)
		case c.Value == nil:
			return "", invalid("Value must be provided when Exists is true for Attribute: %s", attr)
		}
		return n + " = " + b.value(c.Value), nil
	}
	want, known := operands[c.ComparisonOperator]
	switch {
	case c.Exists != nil:
		return "", invalid("Exists and ComparisonOperator cannot be used together for Attribute: %s", attr)
	case c.Value != nil && c.AttributeValueList != nil:
		return "", invalid("Value and AttributeValueList cannot be used together for Attribute: %s", attr)
	case b.expected && c.Value == nil && c.AttributeValueList == nil && want != 0:
		return "", invalid("Value or AttributeValueList must be used with ComparisonOperator: %s for Attribute: %s", c.ComparisonOperator, attr)
	}
	args := c.AttributeValueList
	if c.Value != nil {
		args = []json.RawMessage{c.Value}
	}
	if !known || (want >= 0 && len(args) != want) || (want < 0 && len(args) == 0) {
		return "", invalid("Invalid number of argument(s) for the %s ComparisonOperator", c.ComparisonOperator)
	}
	if len(args) > 1 {
		first := legacyType(args[0])
		for _, a := range args[1:] {
			if legacyType(a) != first {
				return "", invalid("AttributeValues inside AttributeValueList must be of same type")
			}
		}
	}
	if c.ComparisonOperator == "BETWEEN" {
		var lo, hi events.DynamoDBAttributeValue
		if json.Unmarshal(args[0], &lo) == nil && json.Unmarshal(args[1], &hi) == nil {
			if cmp, ok := expr.Compare(lo, hi); ok && cmp > 0 {
				return "", awserr.New(awserr.ErrValidation, "The BETWEEN condition was provided a range where the lower bound is greater than the upper bound")
			}
		}
	}
	vs := make([]string, len(args))
	for i, a := range args {
		vs[i] = b.value(a)
	}
	switch op := c.ComparisonOperator; op {
	case "NULL":
		return "attribute_not_exists(" + n + ")", nil
	case "NOT_NULL":
		return "attribute_exists(" + n + ")", nil
	case "CONTAINS":
		return "contains(" + n + ", " + vs[0] + ")", nil
	case "NOT_CONTAINS":
		return "NOT contains(" + n + ", " + vs[0] + ")", nil
	case "BEGINS_WITH":
		return "begins_with(" + n + ", " + vs[0] + ")", nil
	case "IN":
		// An expression's IN takes at most 100 values, a legacy one any
		// number (AWS takes 27 500, dynalite's scan test): groups of 100.
		var groups []string
		for len(vs) > 0 {
			k := min(len(vs), maxLegacyIn)
			groups = append(groups, n+" IN ("+strings.Join(vs[:k], ", ")+")")
			vs = vs[k:]
		}
		if len(groups) == 1 {
			return groups[0], nil
		}
		return "(" + strings.Join(groups, " OR ") + ")", nil
	case "BETWEEN":
		return n + " BETWEEN " + vs[0] + " AND " + vs[1], nil
	default:
		return n + " " + comparisons[op] + " " + vs[0], nil
	}
}

// updates is AttributeUpdates as an UpdateExpression: PUT a value (SET),
// ADD a number or set, DELETE an attribute (REMOVE) or a set's elements.
func (b *legacyExpr) updates(raw json.RawMessage) (string, error) {
	var ups map[string]struct {
		Value  json.RawMessage
		Action string
	}
	if err := json.Unmarshal(raw, &ups); err != nil {
		return "", awserr.New(awserr.ErrSerialization, "AttributeUpdates: %v", err)
	}
	attrs := make([]string, 0, len(ups))
	for a := range ups {
		attrs = append(attrs, a)
	}
	sort.Strings(attrs)
	clauses := map[string][]string{}
	for _, a := range attrs {
		u := ups[a]
		n := b.name(a)
		switch {
		case u.Action == "DELETE" && u.Value == nil:
			clauses["REMOVE"] = append(clauses["REMOVE"], n)
		case u.Value == nil:
			return "", awserr.New(awserr.ErrValidation, "One or more parameter values were invalid: Only DELETE action is allowed when no attribute value is specified")
		case u.Action == "DELETE" && !slices.Contains([]string{"SS", "NS", "BS"}, legacyType(u.Value)):
			return "", awserr.New(awserr.ErrValidation, "One or more parameter values were invalid: DELETE action with value is not supported for the type %s", legacyType(u.Value))
		case u.Action == "ADD" && !slices.Contains([]string{"N", "SS", "NS", "BS", "L"}, legacyType(u.Value)):
			return "", awserr.New(awserr.ErrValidation, "One or more parameter values were invalid: ADD action is not supported for the type %s", legacyType(u.Value))
		case u.Action == "ADD" && legacyType(u.Value) == "L":
			// ADD appends to a list (an expression's ADD takes none).
			empty := b.value(json.RawMessage(`{"L":[]}`))
			clauses["SET"] = append(clauses["SET"], n+" = list_append(if_not_exists("+n+", "+empty+"), "+b.value(u.Value)+")")
		case u.Action == "ADD" || u.Action == "DELETE":
			clauses[u.Action] = append(clauses[u.Action], n+" "+b.value(u.Value))
		default: // PUT
			clauses["SET"] = append(clauses["SET"], n+" = "+b.value(u.Value))
		}
	}
	var out []string
	for _, c := range []string{"SET", "REMOVE", "ADD", "DELETE"} {
		if len(clauses[c]) > 0 {
			out = append(out, c+" "+strings.Join(clauses[c], ", "))
		}
	}
	return strings.Join(out, " "), nil
}

// legacyType is the type of an attribute value as given ("S", "N"...).
func legacyType(v json.RawMessage) string {
	var m map[string]json.RawMessage
	_ = json.Unmarshal(v, &m)
	for k := range m {
		return k
	}
	return ""
}
