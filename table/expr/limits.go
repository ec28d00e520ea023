package expr

import (
	"strconv"

	"github.com/aws/aws-lambda-go/events"
)

// DynamoDB's limits on nesting and on expressions
// (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Constraints.html):
//
//   - an item's attributes nest at most 32 levels deep, the attribute's own
//     value being level 1: a value inside 31 maps or lists (its leaf at level
//     32) is accepted, one inside 32 refused ("Nesting Levels have exceeded
//     supported limits: ...");
//   - an expression (ConditionExpression, FilterExpression,
//     KeyConditionExpression, ProjectionExpression, UpdateExpression) is at
//     most 4096 bytes as sent ("Invalid X: Expression size has exceeded the
//     maximum allowed size; expression size: N");
//   - it holds at most 300 operators ("Invalid X: The expression contains
//     too many operators; operator count: 301"): comparators, BETWEEN, IN,
//     AND, OR, NOT, and the + and - of an update; not the = of a SET
//     action, parentheses or function calls;
//   - an ExpressionAttributeNames or ExpressionAttributeValues key
//     (placeholder, '#' or ':' included) is at most 255 bytes;
//   - the names and values of a request (keys and values, a value counted
//     as in an item) are at most 2 MB together.
const (
	// MaxNesting is the deepest level an attribute value may reach.
	MaxNesting = 32

	maxExpressionBytes   = 4096
	maxOperators         = 300
	maxPlaceholderBytes  = 255
	maxSubstitutionBytes = 2 << 20

	// MsgNesting is DynamoDB's refusal of a value nested too deep.
	MsgNesting = "Nesting Levels have exceeded supported limits: Attributes in the item have nested levels beyond supported limit"
	// MsgNestingReason is the shorter sentence of a transaction's
	// cancellation reason (an update that would make the item too deep).
	MsgNestingReason = "Nesting Levels have exceeded supported limits"
)

// Depth is the nesting level v reaches, v itself at level 1 (a scalar or
// an empty map or list: 1; a map holding a scalar: 2), counted no further
// than stop: a deeper value answers stop+1.
func Depth(v *events.DynamoDBAttributeValue, stop int) int {
	return depth(v, 1, stop)
}

func depth(v *events.DynamoDBAttributeValue, level, stop int) int {
	if level > stop {
		return level
	}
	deepest := level
	switch v.DataType() {
	case events.DataTypeMap:
		for _, c := range v.Map() {
			if d := depth(&c, level+1, stop); d > deepest {
				if deepest = d; d > stop {
					return d
				}
			}
		}
	case events.DataTypeList:
		l := v.List()
		for i := range l {
			if d := depth(&l[i], level+1, stop); d > deepest {
				if deepest = d; d > stop {
					return d
				}
			}
		}
	}
	return deepest
}

// ItemDepth is the deepest level an attribute of it reaches (0 for an
// empty item), counted no further than stop.
func ItemDepth(it Item, stop int) int {
	deepest := 0
	for _, v := range it {
		if d := Depth(&v, stop); d > deepest {
			if deepest = d; d > stop {
				break
			}
		}
	}
	return deepest
}

// checkSize refuses an expression over 4096 bytes, and one with more than
// 300 operators (toks are its tokens; update: an UpdateExpression, whose
// '=' assigns).
func checkSize(s, label string, toks []token, update bool) error {
	if len(s) > maxExpressionBytes {
		return failIn(label, "Expression size has exceeded the maximum allowed size; expression size: %d", len(s))
	}
	n := 0
	for _, t := range toks {
		switch t.kind {
		case tPunct:
			switch t.text {
			case "+", "-":
				n++
			case "=":
				if !update {
					n++
				}
			case "<>", "<", "<=", ">", ">=":
				n++
			}
		case tIdent:
			switch asciiUpper(t.text) {
			case "AND", "OR", "NOT", "IN":
				n++
				// BETWEEN is one operator with its AND, counted there.
			}
		}
		if n > maxOperators {
			// DynamoDB stops counting at the first operator too many.
			return failIn(label, "The expression contains too many operators; operator count: %d", n)
		}
	}
	return nil
}

// asciiUpper upper-cases the short words the operator count looks for
// (others come back unchanged when longer than 7 bytes).
func asciiUpper(s string) string {
	if len(s) > 7 {
		return s
	}
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

// checkMaps checks the request's ExpressionAttributeNames and
// ExpressionAttributeValues once: every key at most 255 bytes, all of
// them (keys and values) at most 2 MB. Errors (*ValidationError):
//   - "ExpressionAttributeNames contains invalid key: The expression
//     attribute map contains a key that is too long; size of key: N"
//     (ExpressionAttributeValues alike);
//   - "Combined size of ExpressionAttributeNames and
//     ExpressionAttributeValues exceeds max size" (over 2097152 bytes).
func (c *Context) checkMaps() error {
	if c == nil || c.mapsChecked {
		return nil
	}
	c.mapsChecked = true
	total := 0
	for k, v := range c.Names {
		if err := PlaceholderKey("ExpressionAttributeNames", k); err != nil {
			return err
		}
		total += len(k) + len(v)
	}
	for k, v := range c.Values {
		if err := PlaceholderKey("ExpressionAttributeValues", k); err != nil {
			return err
		}
		total += len(k) + valueSize(v)
	}
	if total > maxSubstitutionBytes {
		return validation("Combined size of ExpressionAttributeNames and ExpressionAttributeValues exceeds max size")
	}
	return nil
}

// PlaceholderKey refuses a key of field (ExpressionAttributeNames or
// ExpressionAttributeValues) over 255 bytes, its '#' or ':' included:
// "<field> contains invalid key: The expression attribute map contains a
// key that is too long; size of key: N".
func PlaceholderKey(field, k string) error {
	if len(k) <= maxPlaceholderBytes {
		return nil
	}
	return validation("%s contains invalid key: The expression attribute map contains a key that is too long; size of key: %s", field, strconv.Itoa(len(k)))
}
