// Package filter implements Lambda's FilterCriteria for event source
// mappings: the subset of EventBridge event patterns that Lambda supports,
// as described in
// https://docs.aws.amazon.com/lambda/latest/dg/invocation-eventfiltering.html.
//
// A Criteria holds up to MaxFilters patterns, OR-ed: a record passes when
// any pattern matches it, and every record passes when there are none.
// Compile validates the criteria once; the resulting Matcher is immutable
// and safe for concurrent use.
//
// A pattern is a JSON object whose keys address fields of the record; nested
// objects address nested fields, and a leaf is a JSON array of alternatives
// (OR-ed). An alternative is one of
//
//	"text"                                  exact string
//	5, 5.0                                  number, compared numerically
//	true, false, null                       exact boolean / null
//	{"prefix":"x"}                          string starts with x
//	{"prefix":{"equals-ignore-case":"x"}}   same, ignoring case
//	{"suffix":"x"}                          string ends with x (also with equals-ignore-case)
//	{"equals-ignore-case":"x"}              string equals x ignoring case
//	{"wildcard":"a*b"}                      '*' matches any run; \* and \\ escape
//	{"numeric":[">",0,"<=",5]}              number in range; one of = < <= > >=, or a
//	                                        lower (> >=) then an upper (< <=) bound with
//	                                        bottom < top (no "!=": use anything-but)
//	{"exists":true} / {"exists":false}      field present / absent
//	{"anything-but":"x"}                    any present value other than x; also a
//	{"anything-but":["x",5]}                list of strings/numbers, or one of
//	{"anything-but":{"prefix":"x"}}         prefix, suffix, equals-ignore-case, wildcard
//	                                        (EventBridge patterns: lists all strings or
//	                                        all numbers, no empty prefix/suffix, numbers
//	                                        within ±5.0e9; see CompileEventPattern)
//
// When the record's value is an array, a leaf matches if any element
// matches; an object pattern matches an array of objects if any one element
// matches the whole object pattern, except that exists:false on a path
// needs every element to lack it ({"items":{"b":[{"exists":false}]}} does
// not match {"items":[{"b":1},{"c":2}]}).
//
// Field names join with "." as in Event Ruler (Compile and
// CompileEventPattern, not SNS filter policies): the pattern key
// "state.status" is the path state → status, and the event key
// "state.status" is found by both {"state.status":[...]} and
// {"state":{"status":[...]}}. The trap: a pattern cannot tell the event
// {"a.b":1} from {"a":{"b":1}}. See paths.go.
//
// For Kinesis the top-level keys are data (the record data, which must be
// valid JSON for a pattern that references data to match), partitionKey,
// sequenceNumber, approximateArrivalTimestamp, kinesisSchemaVersion and
// encryptionType. For SQS they are body, messageId, receiptHandle,
// attributes, messageAttributes, md5OfBody, eventSource... Match takes the
// record as a generic JSON object; MatchKinesis takes a Kinesis record's
// fields directly and parses data only when a pattern references it.
package filter

import (
	"encoding/json"
	"fmt"
	"github.com/runnel-dev/runnel/awserr"
	"io"
	"math"
	"sort"
	"strings"
)

// MaxFilters is the most filters a FilterCriteria may hold (Lambda's
// default quota per event source mapping).
const MaxFilters = 5

// MaxPatternLength is the longest Pattern string Lambda accepts, in bytes.
const MaxPatternLength = 4096

// Criteria is the shape of Lambda's FilterCriteria parameter of
// CreateEventSourceMapping / UpdateEventSourceMapping:
//
//	{"Filters":[{"Pattern":"{\"data\":{\"temp\":[{\"numeric\":[\">\",30]}]}}"}]}
//
// Filters may hold 0..MaxFilters patterns, OR-ed. A nil *Criteria or an
// empty Filters list lets every record through.
type Criteria struct {
	Filters []Pattern `json:"Filters"`
}

// Pattern is one FilterCriteria filter: {"Pattern":"<JSON object as a
// string>"}. The string is at most MaxPatternLength bytes and must hold one
// JSON object (see the package doc for its syntax).
type Pattern struct {
	Pattern string `json:"Pattern"`
}

// Matcher is a compiled Criteria. The zero value and a nil *Matcher match
// everything. A Matcher is immutable and safe for concurrent use.
type Matcher struct {
	filters  []*compiled
	refsData bool // some filter has a top-level "data" key
}

// compiled is one filter's pattern.
type compiled struct {
	root     *node
	refsData bool
}

// Compile validates c and returns its Matcher. A nil c or one with no
// filters yields a Matcher that matches everything (Empty reports true).
// Errors wrap ErrInvalidParameterValue and a more specific sentinel from
// errors.go, and name the offending filter and field path, e.g.
//
//	InvalidParameterValueException: FilterCriteria.Filters[0].Pattern: unknown operator "regex" at "data.x"
func Compile(c *Criteria) (*Matcher, error) {
	m := &Matcher{}
	if c == nil || len(c.Filters) == 0 {
		return m, nil
	}
	if len(c.Filters) > MaxFilters {
		return nil, newCompileError("FilterCriteria.Filters",
			fmt.Sprintf("number of filters must be in the range 0..%d, got %d", MaxFilters, len(c.Filters)), ErrTooManyFilters)
	}
	for i, p := range c.Filters {
		f, err := compileFilter(i, p.Pattern)
		if err != nil {
			return nil, err
		}
		m.filters = append(m.filters, f)
		m.refsData = m.refsData || f.refsData
	}
	return m, nil
}

// CompileFilterPolicy compiles one branch of an SNS filter policy ($or
// already expanded by the caller, which checks SNS's own limits: 256 KB,
// keys, combinations): the operators of the package doc and cidr, with no
// length limit of Lambda's 4,096 bytes. Errors are as Compile's.
func CompileFilterPolicy(src string) (*Matcher, error) {
	f, err := compiler{policy: true}.compile(src)
	if err != nil {
		return nil, err
	}
	return &Matcher{filters: []*compiled{f}, refsData: f.refsData}, nil
}

// Empty reports whether m has no filters, i.e. lets every record through.
func (m *Matcher) Empty() bool { return m == nil || len(m.filters) == 0 }

// compiler carries the filter index for error messages.
type compiler struct {
	i  int
	eb bool // an EventBridge event pattern (CompileEventPattern): $or and cidr allowed
	// policy: one branch of an SNS filter policy (CompileFilterPolicy):
	// cidr allowed, no length limit of its own.
	policy bool
}

func (c compiler) errorf(kind error, format string, args ...any) error {
	if c.eb {
		return eventPatternError(kind, format, args...)
	}
	if c.policy { // the caller words it as its service does
		return &compileError{err: awserr.New(awserr.ErrInvalidParameterValue, format, args...), kinds: []error{ErrInvalidPattern, kind}}
	}
	return patternError(c.i, kind, format, args...)
}

func compileFilter(i int, src string) (*compiled, error) {
	return compiler{i: i}.compile(src)
}

func (c compiler) compile(src string) (*compiled, error) {
	if len(src) > MaxPatternLength && !c.eb && !c.policy {
		return nil, c.errorf(ErrPatternTooLong, "length %d is out of the range 0..%d", len(src), MaxPatternLength)
	}
	dec := json.NewDecoder(strings.NewReader(src))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		if err == io.EOF {
			return nil, c.errorf(ErrInvalidJSON, "invalid JSON: pattern is empty")
		}
		return nil, c.errorf(ErrInvalidJSON, "invalid JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, c.errorf(ErrInvalidJSON, "invalid JSON: unexpected data after the pattern object")
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, c.errorf(ErrInvalidPattern, "pattern must be a JSON object, got %s", jsonKind(v))
	}
	root, err := c.object(obj, "")
	if err != nil {
		return nil, err
	}
	refs := false
	for _, f := range root.fields {
		refs = refs || f.key == "data"
	}
	return &compiled{root: root, refsData: refs}, nil
}

func join(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "." + key
}

func (c compiler) object(obj map[string]any, path string) (*node, error) {
	if len(obj) == 0 {
		if path == "" {
			return nil, c.errorf(ErrInvalidPattern, "pattern must have at least one field")
		}
		return nil, c.errorf(ErrInvalidPattern, "value of %q must not be an empty object", path)
	}
	dots := !c.policy // Event Ruler's services: EventBridge, Lambda
	if dots {
		obj = splitDotted(obj)
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	n := &node{fields: make([]field, 0, len(keys)), absentOK: true, dots: dots}
	for _, k := range keys {
		p := join(path, k)
		if k == "$or" && c.eb {
			alts, err := c.or(obj[k], path)
			if err != nil {
				return nil, err
			}
			n.ors = append(n.ors, alts)
			n.absentOK = n.absentOK && anyAbsentOK(alts)
			continue
		}
		f := field{key: k}
		switch v := obj[k].(type) {
		case map[string]any:
			child, err := c.object(v, p)
			if err != nil {
				return nil, err
			}
			f.child = child
			n.absentOK = n.absentOK && child.absentOK
		case []any:
			l, err := c.leaf(v, p)
			if err != nil {
				return nil, err
			}
			f.leaf = l
			n.absentOK = n.absentOK && l.existsFalse
		default:
			return nil, c.errorf(ErrNotArray, "value of %q must be an array, got %s", p, jsonKind(v))
		}
		n.fields = append(n.fields, f)
	}
	return n, nil
}

func (c compiler) leaf(arr []any, path string) (*leaf, error) {
	if len(arr) == 0 {
		return nil, c.errorf(ErrInvalidPattern, "value of %q must be a non-empty array", path)
	}
	l := &leaf{}
	for _, e := range arr {
		switch v := e.(type) {
		case string:
			l.alts = append(l.alts, alt{op: opString, str: v})
		case json.Number:
			f, err := c.number(v, path)
			if err != nil {
				return nil, err
			}
			l.alts = append(l.alts, alt{op: opNumber, num: f})
		case bool:
			l.alts = append(l.alts, alt{op: opBool, b: v})
		case nil:
			l.alts = append(l.alts, alt{op: opNull})
		case []any:
			return nil, c.errorf(ErrInvalidPattern, "nested arrays are not allowed in the value of %q", path)
		case map[string]any:
			a, err := c.operator(v, path)
			if err != nil {
				return nil, err
			}
			if a.op == opExists {
				if a.b {
					l.existsTrue = true
				} else {
					l.existsFalse = true
				}
				continue
			}
			l.alts = append(l.alts, a)
		}
	}
	return l, nil
}

func (c compiler) number(n json.Number, path string) (float64, error) {
	f, err := n.Float64()
	if err != nil || math.IsInf(f, 0) {
		return 0, c.errorf(ErrInvalidOperand, "number %s at %q is out of range", n, path)
	}
	return f, nil
}

func (c compiler) operator(obj map[string]any, path string) (alt, error) {
	if len(obj) != 1 {
		return alt{}, c.errorf(ErrInvalidPattern, "operator object in %q must have exactly one key, got %d", path, len(obj))
	}
	var name string
	var v any
	for name, v = range obj {
	}
	switch name {
	case "prefix", "suffix":
		op, fold := opPrefix, opPrefixFold
		if name == "suffix" {
			op, fold = opSuffix, opSuffixFold
		}
		switch x := v.(type) {
		case string:
			return alt{op: op, str: x}, nil
		case map[string]any:
			if s, ok := x["equals-ignore-case"].(string); ok && len(x) == 1 {
				return alt{op: fold, str: s}, nil
			}
		}
		return alt{}, c.errorf(ErrInvalidOperand, "%q at %q must be a string or {\"equals-ignore-case\":string}", name, path)
	case "equals-ignore-case":
		if s, ok := v.(string); ok {
			return alt{op: opEqualsFold, str: s}, nil
		}
		return alt{}, c.errorf(ErrInvalidOperand, "%q at %q must be a string", name, path)
	case "wildcard":
		s, ok := v.(string)
		if !ok {
			return alt{}, c.errorf(ErrInvalidOperand, "%q at %q must be a string", name, path)
		}
		segs, err := parseWildcard(s)
		if err != nil {
			return alt{}, c.errorf(ErrInvalidOperand, "%q at %q: %v", name, path, err)
		}
		return alt{op: opWildcard, segs: segs}, nil
	case "exists":
		if b, ok := v.(bool); ok {
			return alt{op: opExists, b: b}, nil
		}
		return alt{}, c.errorf(ErrInvalidOperand, "%q at %q must be true or false", name, path)
	case "numeric":
		return c.numeric(v, path)
	case "anything-but":
		return c.anythingBut(v, path)
	case "cidr":
		if c.eb || c.policy {
			return c.cidr(v, path)
		}
	}
	return alt{}, c.errorf(ErrUnknownOperator, "unknown operator %q at %q", name, path)
}

// numeric compiles {"numeric":[op, n]} or {"numeric":[lower, n, upper, m]}.
// The operators are Event Ruler's (JsonRuleCompiler
// .processNumericMatchExpression): = < <= > >=; a range is a lower bound
// (> or >=) then an upper bound (< or <=) whose bottom is below its top.
// Anything else is refused with "Unrecognized numeric range operator: X"
// or "Bottom must be less than top", naming the field.
func (c compiler) numeric(v any, path string) (alt, error) {
	bad := func(why string) (alt, error) {
		return alt{}, c.errorf(ErrInvalidOperand, "\"numeric\" at %q %s", path, why)
	}
	arr, ok := v.([]any)
	if !ok || (len(arr) != 2 && len(arr) != 4) {
		return bad(`must be [op, number] or [">"|">=", number, "<"|"<=", number]`)
	}
	a := alt{op: opNumeric, lo: math.Inf(-1), hi: math.Inf(1), loIncl: true, hiIncl: true, numMax: c.numMax(), numScale: c.numScale()}
	for k := 0; k < len(arr); k += 2 {
		op, ok := arr[k].(string)
		if !ok {
			return bad(fmt.Sprintf("element %d must be an operator string (= < <= > >=)", k))
		}
		switch op {
		case "=", "<", "<=", ">", ">=":
		default:
			return bad(fmt.Sprintf("element %d: Unrecognized numeric range operator: %s (allowed: = < <= > >=)", k, op))
		}
		n, ok := arr[k+1].(json.Number)
		if !ok {
			return bad(fmt.Sprintf("element %d must be a number", k+1))
		}
		f, err := c.number(n, path)
		if err != nil {
			return alt{}, err
		}
		if err := c.ebNumber(n, f, "numeric", path); err != nil {
			return alt{}, err
		}
		lower := op == ">" || op == ">="
		upper := op == "<" || op == "<="
		switch {
		case op == "=":
			if len(arr) != 2 {
				return bad(fmt.Sprintf("operator %q cannot be combined with another", op))
			}
			a.lo, a.hi = f, f
		case k == 0 && lower:
			a.lo, a.loIncl = f, op == ">="
		case (k == 0 && len(arr) == 2 || k == 2) && upper:
			a.hi, a.hiIncl = f, op == "<="
		default:
			return bad(`range must be a lower bound (> or >=) followed by an upper bound (< or <=)`)
		}
	}
	if len(arr) == 4 && a.lo >= a.hi {
		return bad(fmt.Sprintf("Bottom must be less than top (lower bound %v, upper bound %v)", a.lo, a.hi))
	}
	return a, nil
}

func (c compiler) anythingBut(v any, path string) (alt, error) {
	bad := func(why string) (alt, error) {
		return alt{}, c.errorf(ErrInvalidOperand, "\"anything-but\" at %q %s", path, why)
	}
	const shape = "must be a string, a number, a non-empty array of strings and numbers, or an object with one of prefix, suffix, equals-ignore-case, wildcard"
	a := alt{op: opAnythingBut}
	var rangeErr error // an EventBridge number outside ±5.0e9
	scalar := func(e any) bool {
		switch x := e.(type) {
		case string:
			a.not = append(a.not, alt{op: opString, str: x})
		case json.Number:
			f, err := x.Float64()
			if err != nil || math.IsInf(f, 0) {
				return false
			}
			if err := c.ebNumber(x, f, "anything-but", path); err != nil && rangeErr == nil {
				rangeErr = err
			}
			a.not = append(a.not, alt{op: opNumber, num: f})
		default:
			return false
		}
		return true
	}
	switch x := v.(type) {
	case string, json.Number:
		if !scalar(x) {
			return bad(shape)
		}
	case []any:
		if len(x) == 0 {
			return bad(shape)
		}
		for _, e := range x {
			if !scalar(e) {
				return bad(shape)
			}
		}
		// EventBridge (Event Ruler): "either all values are number or
		// string, mixed type is not supported".
		if c.eb && mixedKinds(a.not) {
			return bad("holds both strings and numbers: inside anything but list, either all values are number or string, mixed type is not supported")
		}
	case map[string]any:
		if len(x) != 1 {
			return bad(shape)
		}
		for name, inner := range x {
			var op opKind
			switch name {
			case "prefix":
				op = opPrefix
			case "suffix":
				op = opSuffix
			case "equals-ignore-case":
				op = opEqualsFold
			case "wildcard":
				op = opWildcard
			default:
				return alt{}, c.errorf(ErrUnknownOperator, "unknown operator %q in \"anything-but\" at %q", name, path)
			}
			var strs []string
			switch y := inner.(type) {
			case string:
				strs = []string{y}
			case []any:
				for _, e := range y {
					s, ok := e.(string)
					if !ok {
						return bad(fmt.Sprintf("%q must be a string or a non-empty array of strings", name))
					}
					strs = append(strs, s)
				}
			}
			if len(strs) == 0 {
				return bad(fmt.Sprintf("%q must be a string or a non-empty array of strings", name))
			}
			for _, s := range strs {
				// EventBridge (Event Ruler): "Null prefix/suffix not
				// allowed" inside anything-but (a plain {"prefix":""}
				// is allowed).
				if s == "" && c.eb && (op == opPrefix || op == opSuffix) {
					return bad(fmt.Sprintf("%q must not be empty: Null prefix/suffix not allowed", name))
				}
			}
			for _, s := range strs {
				in := alt{op: op, str: s}
				if op == opWildcard {
					segs, err := parseWildcard(s)
					if err != nil {
						return bad(fmt.Sprintf("%q: %v", name, err))
					}
					in = alt{op: op, segs: segs}
				}
				a.not = append(a.not, in)
			}
		}
	default:
		return bad(shape)
	}
	if rangeErr != nil {
		return alt{}, rangeErr
	}
	return a, nil
}

// mixedKinds reports whether an anything-but list holds both strings and
// numbers.
func mixedKinds(not []alt) bool {
	var str, num bool
	for _, a := range not {
		str = str || a.op == opString
		num = num || a.op == opNumber
	}
	return str && num
}

// parseWildcard splits a wildcard pattern at its unescaped '*' into literal
// segments ("a*b" -> ["a","b"], "*a" -> ["","a"]). "\*" is a literal star
// and "\\" a literal backslash; consecutive '*' are refused, as in
// EventBridge.
func parseWildcard(s string) ([]string, error) {
	var segs []string
	var cur strings.Builder
	prevStar := false
	for i := 0; i < len(s); i++ {
		switch ch := s[i]; ch {
		case '*':
			if prevStar {
				return nil, fmt.Errorf("consecutive '*' characters are not allowed")
			}
			segs = append(segs, cur.String())
			cur.Reset()
			prevStar = true
			continue
		case '\\':
			if i+1 >= len(s) || (s[i+1] != '*' && s[i+1] != '\\') {
				return nil, fmt.Errorf(`'\' must be followed by '*' or '\'`)
			}
			i++
			cur.WriteByte(s[i])
		default:
			cur.WriteByte(ch)
		}
		prevStar = false
	}
	return append(segs, cur.String()), nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case json.Number, float64:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}
