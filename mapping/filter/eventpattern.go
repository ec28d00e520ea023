package filter

// EventBridge event patterns: the same language as FilterCriteria plus
// $or and cidr, one pattern at a time, with EventBridge's errors.
// https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-create-pattern-operators.html

import (
	"fmt"
	"net/netip"

	"github.com/runnel-dev/runnel/awserr"
)

// MaxEventPatternLength is the longest EventPattern EventBridge's API
// model accepts, in characters (the adjustable quota is 2,048; runnel
// enforces the model's 4,096).
const MaxEventPatternLength = 4096

// MaxOrCombinations bounds the product of the numbers of alternatives of
// a pattern's $or groups, as EventBridge does (1,000).
const MaxOrCombinations = 1000

// CompileEventPattern compiles one EventBridge event pattern: a JSON
// object whose keys address fields of the event (version, id,
// detail-type, source, account, time, region, resources, detail...).
// Besides the operators of the package doc it takes
//
//	"$or":[{...},{...}]        at least two alternative sub-patterns, one must match
//	{"cidr":"10.0.0.0/24"}     an IPv4 or IPv6 address string inside the prefix
//
// It refuses, as EventBridge's Event Ruler does and Lambda's
// FilterCriteria here does not: a numeric or anything-but number outside
// -5.0e9..+5.0e9 (MaxEventPatternNumber) or with more than 6 digits after
// the decimal point (MaxEventPatternDecimals), an empty prefix or suffix inside
// anything-but ("Null prefix/suffix not allowed"), and an anything-but
// list mixing strings and numbers.
//
// Errors wrap awserr.ErrInvalidEventPattern ("Event pattern is not valid.
// Reason: ...", HTTP 400) and the rule's sentinel (ErrInvalidPattern and
// a more specific one). Match the result against the event decoded as a
// JSON object.
func CompileEventPattern(src string) (*Matcher, error) {
	c := compiler{eb: true}
	if len(src) > MaxEventPatternLength {
		return nil, c.errorf(ErrPatternTooLong, "length %d is out of the range 1..%d", len(src), MaxEventPatternLength)
	}
	f, err := c.compile(src)
	if err != nil {
		return nil, err
	}
	if n := combinations(f.root); n > MaxOrCombinations {
		return nil, c.errorf(ErrInvalidPattern, "The combination of $or alternatives (%d) exceeds the limit of %d", n, MaxOrCombinations)
	}
	return &Matcher{filters: []*compiled{f}}, nil
}

// eventPatternError is EventBridge's error for a pattern breaking rule
// kind.
func eventPatternError(kind error, format string, args ...any) error {
	return &compileError{err: awserr.New(awserr.ErrInvalidEventPattern, "Event pattern is not valid. Reason: %s", fmt.Sprintf(format, args...)),
		kinds: []error{ErrInvalidPattern, kind}}
}

// or compiles the value of a $or key: an array of at least two objects.
func (c compiler) or(v any, path string) ([]*node, error) {
	arr, ok := v.([]any)
	if !ok || len(arr) < 2 {
		return nil, c.errorf(ErrInvalidPattern, "$or at %q must be an array of at least 2 objects", path)
	}
	alts := make([]*node, 0, len(arr))
	for _, e := range arr {
		obj, ok := e.(map[string]any)
		if !ok {
			return nil, c.errorf(ErrInvalidPattern, "$or at %q must hold objects, got %s", path, jsonKind(e))
		}
		n, err := c.object(obj, path)
		if err != nil {
			return nil, err
		}
		alts = append(alts, n)
	}
	return alts, nil
}

// cidr compiles {"cidr":"10.0.0.0/24"}.
func (c compiler) cidr(v any, path string) (alt, error) {
	s, ok := v.(string)
	if !ok {
		return alt{}, c.errorf(ErrInvalidOperand, "\"cidr\" at %q must be a string", path)
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return alt{}, c.errorf(ErrInvalidOperand, "\"cidr\" at %q: %q is not an IPv4 or IPv6 prefix", path, s)
	}
	return alt{op: opCIDR, cidr: p.Masked()}, nil
}

func anyAbsentOK(alts []*node) bool {
	for _, n := range alts {
		if n.absentOK {
			return true
		}
	}
	return false
}

// matchOrs reports whether every $or group of n has an alternative that
// matches obj in scope sc.
func (n *node) matchOrs(obj map[string]any, sc scope) bool {
	for _, alts := range n.ors {
		ok := false
		for _, a := range alts {
			if a.match(obj, sc) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// combinations is the product of the $or arities under n.
func combinations(n *node) int {
	total := 1
	for _, alts := range n.ors {
		sum := 0
		for _, a := range alts {
			sum += combinations(a)
		}
		total *= sum
	}
	for _, f := range n.fields {
		if f.child != nil {
			total *= combinations(f.child)
		}
	}
	return min(total, MaxOrCombinations+1)
}
