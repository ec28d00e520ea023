package filter

// The numeric domains of the services sharing this matcher.
//
// EventBridge event patterns and Lambda's FilterCriteria run on Event
// Ruler, whose ComparableNumber.generate turns a number into its
// comparable form only for values in -5.0e9..+5.0e9 with at most 6 digits
// after the decimal point ("It is limited to values between -5.0e9 and
// +5.0e9 inclusive, with 15 digits of precision, or six digits to the
// right of the decimal point", eb-event-patterns-content-based-filtering);
// for any other number it throws, the throw is swallowed
// (ByteMachine.transitionOn) and the value is matched as a string only, so
// a numeric range (or numeric "=") never matches it. An epoch-milliseconds
// timestamp such as 1700000000000 is thus never > 0 for EventBridge.
//
// SNS filter policies: "For numeric matching, the value can range from
// -10^9 to 10^9 (-1 billion to 1 billion), with five digits of accuracy
// after the decimal point" (subscription-filter-policy-constraints.html);
// a message value outside ±1e9 does not match a numeric condition. SNS
// documents its five decimals as accuracy, not as a refusal, so values
// with more decimals are compared as they are.

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
)

// MaxEventPatternNumber bounds the numbers of an EventBridge pattern's
// numeric and anything-but operators, and the event values a numeric
// condition of EventBridge or Lambda matches: -5.0e9..+5.0e9 inclusive
// (Event Ruler: numeric matching is "limited to value between -5.0e9 and
// +5.0e9"; a plain number alternative such as [1e10] is not limited).
const MaxEventPatternNumber = 5.0e9

// MaxEventPatternDecimals is the most digits after the decimal point of a
// number Event Ruler compares numerically (EventBridge and Lambda): an
// EventBridge pattern operand with more is refused, an event value with
// more never matches a numeric condition.
const MaxEventPatternDecimals = 6

// MaxFilterPolicyNumber bounds the message values an SNS filter policy's
// numeric condition matches: -1e9..+1e9 inclusive (the policy's own
// numbers are checked by package sns).
const MaxFilterPolicyNumber = 1e9

// numMax is the largest magnitude of a number the compiler's service
// compares numerically.
func (c compiler) numMax() float64 {
	if c.policy {
		return MaxFilterPolicyNumber
	}
	return MaxEventPatternNumber
}

// numScale is the most digits after the decimal point of a number the
// compiler's service compares numerically; -1 means any.
func (c compiler) numScale() int {
	if c.policy {
		return -1
	}
	return MaxEventPatternDecimals
}

// ebNumber refuses, in an EventBridge pattern, an operand n (= f) of op
// outside ±MaxEventPatternNumber or with more than MaxEventPatternDecimals
// digits after the decimal point, as Event Ruler does.
func (c compiler) ebNumber(n json.Number, f float64, op, path string) error {
	if !c.eb {
		return nil
	}
	if f < -MaxEventPatternNumber || f > MaxEventPatternNumber {
		return c.errorf(ErrInvalidOperand, "%q at %q: %v is out of range: Value must be between -5.0E9 and 5.0E9, inclusive", op, path, f)
	}
	if decimalScale(string(n)) > MaxEventPatternDecimals {
		return c.errorf(ErrInvalidOperand, "%q at %q: %s has more than %d digits after the decimal point: Only values upto 6 decimals are supported", op, path, n, MaxEventPatternDecimals)
	}
	return nil
}

// inNumericDomain reports whether the event number v (= f) is one a's
// service compares numerically: |f| <= a.numMax and, when a.numScale >= 0,
// at most a.numScale digits after the decimal point.
func (a *alt) inNumericDomain(v any, f float64) bool {
	if math.IsNaN(f) || f < -a.numMax || f > a.numMax {
		return false
	}
	if a.numScale < 0 {
		return true
	}
	var text string
	switch x := v.(type) {
	case json.Number:
		text = string(x)
	case float64:
		text = strconv.FormatFloat(x, 'g', -1, 64)
	case float32:
		text = strconv.FormatFloat(float64(x), 'g', -1, 32)
	default: // integers
		return true
	}
	return decimalScale(text) <= a.numScale
}

// decimalScale is the number of digits after the decimal point of the
// JSON number s once trailing zeros are stripped (Java's
// BigDecimal.stripTrailingZeros().scale()): "1.50" 1, "1e-7" 7, "1.5e3" 0,
// "100" 0. It is negative for integers with trailing zeros ("100" -2) and
// very large for an exponent out of int's range.
func decimalScale(s string) int {
	mant, exp := s, 0
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mant = s[:i]
		e, err := strconv.Atoi(s[i+1:])
		if err != nil {
			if strings.HasPrefix(s[i+1:], "-") {
				return math.MaxInt32
			}
			return math.MinInt32
		}
		exp = e
	}
	mant = strings.TrimLeft(mant, "+-")
	intPart, frac, _ := strings.Cut(mant, ".")
	frac = strings.TrimRight(frac, "0")
	if frac == "" {
		trimmed := strings.TrimRight(intPart, "0")
		if trimmed == "" { // zero
			return 0
		}
		return -(len(intPart) - len(trimmed)) - exp
	}
	return len(frac) - exp
}
