package expr

import (
	"github.com/aws/aws-lambda-go/events"
)

// KeyCondition is a parsed KeyConditionExpression: an equality on the
// partition (hash) key and at most one condition on the sort (range) key.
//
//	pk = :v [AND sk op :v | AND sk BETWEEN :a AND :b | AND begins_with(sk, :p)]
//
// op is one of = < <= > >=; the two conditions may come in either order and
// in parentheses. https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Query.KeyConditionExpressions.html
type KeyCondition struct {
	HashName  string
	HashValue events.DynamoDBAttributeValue

	// RangeName is the sort key's name, "" when the expression has no sort
	// key condition.
	RangeName string
	// RangeOp is "=", "<", "<=", ">", ">=", "BETWEEN" or "begins_with".
	RangeOp string
	// RangeValues holds the operand: two values (low, high) for BETWEEN,
	// one otherwise.
	RangeValues []events.DynamoDBAttributeValue
}

// CheckKeyCondition makes ParseKeyCondition's checks that need no key
// schema, in the two steps DynamoDB takes before it looks the table up:
// the expression parsed (err), then, once the request's other expressions
// are parsed too, its shape (shape()).
func CheckKeyCondition(s string, c *Context) (shape func() error, err error) {
	if err := c.checkMaps(); err != nil {
		return nil, err
	}
	_, root, err := parseWhole(s, "KeyConditionExpression", c)
	if err != nil {
		return nil, err
	}
	return func() error {
		_, err := keyConds(root)
		return err
	}, nil
}

// ParseKeyCondition parses a Query's KeyConditionExpression for a table or
// index whose key is hashKey and, if not "", rangeKey: [ParseKeyTerms],
// then [KeyConditionFor]. It marks the placeholders it uses in c. The
// caller checks the values' types against the key schema ("One or more
// parameter values were invalid: Condition parameter type does not match
// schema type").
func ParseKeyCondition(s string, c *Context, hashKey, rangeKey string) (*KeyCondition, error) {
	terms, err := ParseKeyTerms(s, c)
	if err != nil {
		return nil, err
	}
	return KeyConditionFor(terms, hashKey, rangeKey)
}

// KeyTerm is one condition of a Query's key conditions: an attribute,
// its operator in KeyConditions' words (EQ, LT, LE, GT, GE, BETWEEN or
// BEGINS_WITH from an expression; any ComparisonOperator from a legacy
// KeyConditions), and its values.
type KeyTerm struct {
	Name   string
	Op     string
	Values []events.DynamoDBAttributeValue
}

// keyOps are an expression's key operators in KeyConditions' words, and
// the other way round.
var (
	keyOps     = map[string]string{"=": "EQ", "<": "LT", "<=": "LE", ">": "GT", ">=": "GE", "BETWEEN": "BETWEEN", "begins_with": "BEGINS_WITH"}
	keyOpsBack = map[string]string{"EQ": "=", "LT": "<", "LE": "<=", "GT": ">", "GE": ">=", "BETWEEN": "BETWEEN", "BEGINS_WITH": "begins_with"}
)

// ParseKeyTerms parses a Query's KeyConditionExpression into its terms,
// checked as far as no key schema is needed, and marks the placeholders it
// uses in c.
//
// Errors (*ValidationError), besides the syntax and placeholder errors of
// [ParseCondition] prefixed "Invalid KeyConditionExpression: ":
//   - "Invalid operator used in KeyConditionExpression: OR" (also NOT, IN,
//     <>, and functions other than begins_with);
//   - "KeyConditionExpressions must only contain one condition per key";
//   - "Conditions can be of length 1 or 2 only" (three or more);
//   - "KeyConditionExpressions cannot have conditions on nested attributes";
//   - "KeyConditionExpressions cannot contain nested operations" (size());
//   - "Invalid condition in KeyConditionExpression: No key attribute
//     specified" / "Multiple attribute names used in one condition" /
//     "BETWEEN operator must have the key attribute as its first operand".
func ParseKeyTerms(s string, c *Context) ([]KeyTerm, error) {
	if err := c.checkMaps(); err != nil {
		return nil, err
	}
	key := cacheKey{kind: kindKeyCondition, text: s}
	if e, vals := cacheLookup(key, c); e != nil {
		return bindTerms(e.tree.([]keyCond), vals), nil
	}
	p, root, err := parseWhole(s, "KeyConditionExpression", c)
	if err != nil {
		return nil, err
	}
	conds, err := keyConds(root)
	if err != nil {
		return nil, err
	}
	cacheStore(key, p, conds)
	return bindTerms(conds, p.vals), nil
}

// bindTerms returns the terms of conds with the request's values.
func bindTerms(conds []keyCond, vals valList) []KeyTerm {
	out := make([]KeyTerm, len(conds))
	for i, kc := range conds {
		out[i] = KeyTerm{Name: kc.name, Op: keyOps[kc.op]}
		for _, r := range kc.vals {
			out[i].Values = append(out[i].Values, r.at(vals))
		}
	}
	return out
}

// KeyConditionFor is the KeyCondition of terms for a table or index whose
// key is hashKey and, if not "", rangeKey. Errors (*ValidationError):
//   - "Query condition missed key schema element: pk" (no partition key
//     condition, or, with a sort key, a condition on another attribute);
//   - "Query key condition not supported" (a partition key condition other
//     than EQ, a sort key condition other than EQ, LT, LE, GT, GE, BETWEEN
//     or BEGINS_WITH, or a condition on a non-key attribute of a hash-only
//     key).
func KeyConditionFor(terms []KeyTerm, hashKey, rangeKey string) (*KeyCondition, error) {
	k := &KeyCondition{HashName: hashKey}
	found := false
	for _, t := range terms {
		switch {
		case t.Name == hashKey:
			if t.Op != "EQ" || len(t.Values) != 1 {
				return nil, validation("Query key condition not supported")
			}
			k.HashValue, found = t.Values[0], true
		case rangeKey != "" && t.Name == rangeKey:
			op, ok := keyOpsBack[t.Op]
			if !ok {
				return nil, validation("Query key condition not supported")
			}
			k.RangeName, k.RangeOp, k.RangeValues = t.Name, op, t.Values
		case rangeKey != "":
			return nil, validation("Query condition missed key schema element: %s", rangeKey)
		default:
			return nil, validation("Query key condition not supported")
		}
	}
	if !found {
		return nil, validation("Query condition missed key schema element: %s", hashKey)
	}
	return k, nil
}

// keyCond is one condition of a KeyConditionExpression: an attribute, its
// operator, its values.
type keyCond struct {
	name string
	op   string
	vals []valRef
}

// keyConds are a parsed KeyConditionExpression's conditions, checked as
// far as no key schema is needed, leaf by leaf from the left as DynamoDB
// checks them: only AND, =, <, <=, >, >=, BETWEEN and begins_with, on one
// top-level attribute each, one condition per attribute, at most two.
func keyConds(root cond) ([]keyCond, error) {
	var conds []keyCond
	seen := map[string]bool{}
	var walk func(c cond) error
	walk = func(c cond) error {
		if a, ok := c.(andCond); ok {
			if err := walk(a.l); err != nil {
				return err
			}
			return walk(a.r)
		}
		kc, err := keyLeaf(c)
		if err != nil {
			return err
		}
		if seen[kc.name] {
			return validation("KeyConditionExpressions must only contain one condition per key")
		}
		seen[kc.name] = true
		conds = append(conds, kc)
		return nil
	}
	if err := walk(root); err != nil {
		return nil, err
	}
	if len(conds) > 2 {
		return nil, validation("Conditions can be of length 1 or 2 only")
	}
	return conds, nil
}

// keyLeaf is one condition of a KeyConditionExpression, its operands
// checked from the left: the operator, BETWEEN's and begins_with's first
// operand a path, then each operand (one attribute, not nested, no size()).
func keyLeaf(c cond) (keyCond, error) {
	var kc keyCond
	var args []*operand
	switch c := c.(type) {
	case orCond:
		return kc, badKeyOperator("OR")
	case notCond:
		return kc, badKeyOperator("NOT")
	case inCond:
		return kc, badKeyOperator("IN")
	case cmpCond:
		if c.op == "<>" {
			return kc, badKeyOperator("<>")
		}
		kc.op, args = c.op, []*operand{c.l, c.r}
	case betweenCond:
		if c.v.path == nil {
			return kc, validation("Invalid condition in KeyConditionExpression: BETWEEN operator must have the key attribute as its first operand")
		}
		kc.op, args = "BETWEEN", []*operand{c.v, c.lo, c.hi}
	case funcCond:
		if c.name != "begins_with" {
			return kc, badKeyOperator(c.name)
		}
		if c.args[0].path == nil {
			return kc, validation("Invalid condition in KeyConditionExpression: begins_with operator must have the key attribute as its first operand")
		}
		kc.op, args = "begins_with", c.args
	}
	flip := false
	for i, o := range args {
		switch {
		case o.size != nil:
			return kc, validation("KeyConditionExpressions cannot contain nested operations")
		case o.path == nil:
			kc.vals = append(kc.vals, o.val)
		case kc.name != "":
			return kc, validation("Invalid condition in KeyConditionExpression: Multiple attribute names used in one condition")
		case len(o.path) > 1:
			return kc, validation("KeyConditionExpressions cannot have conditions on nested attributes")
		default:
			kc.name, flip = o.path[0].name, i > 0
		}
	}
	if kc.name == "" {
		return kc, validation("Invalid condition in KeyConditionExpression: No key attribute specified")
	}
	if flip { // ":v < sk" is "sk > :v"
		kc.op = map[string]string{"=": "=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}[kc.op]
	}
	return kc, nil
}

func badKeyOperator(op string) error {
	return validation("Invalid operator used in KeyConditionExpression: %s", op)
}

// MatchRange reports whether a sort key value satisfies the range
// condition: always true when there is none, false when v is nil or of
// another type than the condition's values.
func (k *KeyCondition) MatchRange(v *events.DynamoDBAttributeValue) bool {
	if k.RangeName == "" {
		return true
	}
	if v == nil {
		return false
	}
	switch k.RangeOp {
	case "BETWEEN":
		a, ok1 := Compare(*v, k.RangeValues[0])
		b, ok2 := Compare(*v, k.RangeValues[1])
		return ok1 && ok2 && a >= 0 && b <= 0
	case "begins_with":
		return beginsWith(*v, k.RangeValues[0])
	}
	n, ok := Compare(*v, k.RangeValues[0])
	return ok && holds(k.RangeOp, n)
}
