package sns

// Subscription filter policies
// (https://docs.aws.amazon.com/sns/latest/dg/sns-message-filtering.html):
// SNS's rules on top of the matcher of Lambda's FilterCriteria
// (mapping/filter, the same pattern language), which this file reuses as
// it is: the SNS limits and refusals, $or (expanded here into patterns
// OR-ed), and the MessageAttributes scope's translation of attributes to
// the JSON object the patterns match.

import (
	"encoding/json"
	"errors"
	"strings"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/mapping/filter"
)

// Filter policy limits (SNS quotas).
const (
	// MaxFilterPolicyKeys is the most keys (attribute names, or body
	// paths) one policy may hold.
	MaxFilterPolicyKeys = 5
	// MaxFilterPolicyCombinations bounds the product of the policy's value
	// arrays (for MessageBody multiplied by the nesting depth).
	MaxFilterPolicyCombinations = 150
	// MaxFilterPolicySize is a policy's largest size in bytes.
	MaxFilterPolicySize = 256 * 1024
	// MaxFilterPoliciesPerTopic: FilterPolicyLimitExceeded beyond it.
	MaxFilterPoliciesPerTopic = 200
)

// Filter policy scopes (subscription attribute FilterPolicyScope).
const (
	ScopeMessageAttributes = "MessageAttributes"
	ScopeMessageBody       = "MessageBody"
)

// filterPolicy is a compiled FilterPolicy: a message passes when any of
// the patterns ($or branches) matches.
type filterPolicy struct {
	body     bool
	patterns []*filter.Matcher
}

// policyErr is AWS's error for a refused policy:
// "Invalid parameter: FilterPolicy: <reason>".
func policyErr(format string, args ...any) error {
	return invalid("FilterPolicy: "+format, args...)
}

// isEmptyFilterPolicy reports whether a FilterPolicy is {}, an empty
// JSON object: AWS's way to remove a subscription's filter policy ("you
// can remove the filter policy by overwriting it with an empty JSON
// body", message-filtering-policy-remove.html, with --attribute-value
// "{}"). runnel refused it (a pattern needs a field) and so could not
// remove a policy as AWS documents; it is now no policy, as "" is.
func isEmptyFilterPolicy(src string) bool {
	t := strings.TrimSpace(src)
	if !strings.HasPrefix(t, "{") {
		return false
	}
	var m map[string]json.RawMessage
	return json.Unmarshal([]byte(t), &m) == nil && len(m) == 0
}

// compileFilterPolicy checks src against SNS's rules for scope and
// compiles it. An empty src, or {}, is no policy (nil).
func compileFilterPolicy(src, scope string) (*filterPolicy, error) {
	if src == "" || isEmptyFilterPolicy(src) {
		return nil, nil
	}
	if scope == "" {
		scope = ScopeMessageAttributes
	}
	if scope != ScopeMessageAttributes && scope != ScopeMessageBody {
		return nil, invalid("Attributes Reason: FilterPolicyScope: Invalid value [%s]. Please use either MessageBody or MessageAttributes", scope)
	}
	if len(src) > MaxFilterPolicySize {
		return nil, policyErr("Filter policy is too large (%d bytes, at most %d)", len(src), MaxFilterPolicySize)
	}
	dec := json.NewDecoder(strings.NewReader(src))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, policyErr("failed to parse JSON: %v", err)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, policyErr("Filter policy must be a JSON object")
	}
	body := scope == ScopeMessageBody
	branches, err := expandOr(obj)
	if err != nil {
		return nil, err
	}
	p := &filterPolicy{body: body}
	combos := 0
	for _, b := range branches {
		keys, n, err := checkPolicyObject(b, body, 1)
		if err != nil {
			return nil, err
		}
		if keys > MaxFilterPolicyKeys {
			return nil, policyErr("Filter policy can not have more than %d keys", MaxFilterPolicyKeys)
		}
		combos += n
		pat, _ := json.Marshal(b)
		m, err := filter.CompileSNSFilterPolicy(string(pat))
		if err != nil {
			var ae *awserr.Error
			if errors.As(err, &ae) {
				return nil, policyErr("%s", ae.Message)
			}
			return nil, policyErr("%v", err)
		}
		p.patterns = append(p.patterns, m)
	}
	if combos > MaxFilterPolicyCombinations {
		return nil, policyErr("Filter policy is too complex")
	}
	return p, nil
}

// expandOr turns a policy object with "$or" keys (each an array of at
// least two objects, possibly nested) into the plain objects it ORs.
func expandOr(obj map[string]any) ([]map[string]any, error) {
	out := []map[string]any{{}}
	for k, v := range obj {
		var alts []map[string]any
		switch {
		case k == "$or":
			arr, ok := v.([]any)
			if !ok || len(arr) < 2 {
				return nil, policyErr("$or must be an array of at least 2 objects")
			}
			for _, e := range arr {
				o, ok := e.(map[string]any)
				if !ok {
					return nil, policyErr("$or must be an array of at least 2 objects")
				}
				sub, err := expandOr(o)
				if err != nil {
					return nil, err
				}
				alts = append(alts, sub...)
			}
		default:
			if o, ok := v.(map[string]any); ok {
				sub, err := expandOr(o)
				if err != nil {
					return nil, err
				}
				for _, s := range sub {
					alts = append(alts, map[string]any{k: s})
				}
			} else {
				alts = []map[string]any{{k: v}}
			}
		}
		var next []map[string]any
		for _, base := range out {
			for _, a := range alts {
				next = append(next, mergePolicy(base, a))
			}
		}
		out = next
	}
	return out, nil
}

// mergePolicy returns a copy of a with b's keys added (nested objects
// merged).
func mergePolicy(a, b map[string]any) map[string]any {
	m := make(map[string]any, len(a)+len(b))
	for k, v := range a {
		m[k] = v
	}
	for k, v := range b {
		ao, aok := m[k].(map[string]any)
		bo, bok := v.(map[string]any)
		if aok && bok {
			m[k] = mergePolicy(ao, bo)
			continue
		}
		m[k] = v
	}
	return m
}

// checkPolicyObject applies SNS's rules to one plain policy object at
// nesting depth; it returns the keys it counts and its combinations.
func checkPolicyObject(obj map[string]any, body bool, depth int) (keys, combos int, err error) {
	combos = 1
	for k, v := range obj {
		switch x := v.(type) {
		case map[string]any:
			if !body {
				return 0, 0, policyErr("Filter policy scope MessageAttributes does not support nested filter policy (key %s)", k)
			}
			nk, nc, err := checkPolicyObject(x, body, depth+1)
			if err != nil {
				return 0, 0, err
			}
			keys += nk
			combos *= nc
		case []any:
			if len(x) == 0 {
				return 0, 0, policyErr("Empty arrays are not allowed")
			}
			for _, e := range x {
				if err := checkPolicyValue(e); err != nil {
					return 0, 0, err
				}
			}
			keys++
			combos *= len(x)
			if body {
				combos *= depth
			}
		default:
			return 0, 0, policyErr("Match value must be String, number, true, false, or null (key %s must hold an array)", k)
		}
	}
	return keys, combos, nil
}

// snsOperators are the operators SNS filter policies accept.
var snsOperators = map[string]bool{"prefix": true, "suffix": true, "equals-ignore-case": true,
	"anything-but": true, "numeric": true, "exists": true, "cidr": true}

// checkPolicyValue refuses what the shared matcher accepts and SNS does
// not (wildcard, anything-but with suffix or wildcard), and words SNS's
// numeric refusals as SNS does (checkPolicyNumeric).
func checkPolicyValue(v any) error {
	if n, ok := v.(json.Number); ok {
		return checkPolicyNumber(n)
	}
	o, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	for op, arg := range o {
		if !snsOperators[op] {
			return policyErr("Unrecognized match type %s", op)
		}
		if op == "numeric" {
			if err := checkPolicyNumeric(arg); err != nil {
				return err
			}
		}
		if inner, ok := arg.(map[string]any); ok && op == "anything-but" {
			for k := range inner {
				if k != "prefix" {
					return policyErr("Unsupported anything-but pattern: %s", k)
				}
			}
		}
	}
	return nil
}

// checkPolicyNumeric applies SNS's rules to the operand of "numeric":
// operators = < <= > >= only ("Unrecognized numeric range operator: !="),
// numbers within ±1e9, and a range's bottom below its top ("Bottom must
// be less than top"). Shapes the shared matcher refuses itself (a lone
// operator, a range in the wrong order) are left to it.
func checkPolicyNumeric(arg any) error {
	conds, ok := arg.([]any)
	if !ok {
		return nil
	}
	var nums []float64
	for i, c := range conds {
		if i%2 == 0 {
			if op, ok := c.(string); ok {
				switch op {
				case "=", "<", "<=", ">", ">=":
				default:
					return policyErr("Unrecognized numeric range operator: %s", op)
				}
			}
			continue
		}
		if n, ok := c.(json.Number); ok {
			if err := checkPolicyNumber(n); err != nil {
				return err
			}
			f, _ := n.Float64()
			nums = append(nums, f)
		}
	}
	if len(conds) == 4 && len(nums) == 2 && nums[0] >= nums[1] {
		return policyErr("Bottom must be less than top")
	}
	return nil
}

// maxPolicyNumber bounds the numbers of a filter policy: "Numeric
// matching ... from -1,000,000,000 to 1,000,000,000" (SNS's
// numeric-value-matching, subscription-filter-policy-constraints.html).
const maxPolicyNumber = 1e9

// checkPolicyNumber refuses a number of a policy outside its range.
func checkPolicyNumber(n json.Number) error {
	f, err := n.Float64()
	if err != nil || f < -maxPolicyNumber || f > maxPolicyNumber {
		return policyErr("Value %s is out of the range -1,000,000,000 to 1,000,000,000 of numeric matching", n)
	}
	return nil
}

// match reports whether a published message passes p (a nil p passes
// everything).
func (p *filterPolicy) match(r *record) bool {
	if p == nil {
		return true
	}
	var event map[string]any
	if p.body {
		dec := json.NewDecoder(strings.NewReader(r.Message))
		dec.UseNumber()
		if dec.Decode(&event) != nil || event == nil {
			return false
		}
	} else {
		if len(r.Attributes) == 0 {
			return false // exists:false needs at least one attribute
		}
		event = attributeEvent(r.Attributes)
	}
	for _, m := range p.patterns {
		if m.Match(event) {
			return true
		}
	}
	return false
}

// attributeEvent is the JSON object a MessageAttributes-scope policy
// matches: String values as strings, String.Array values as their JSON
// arrays (matched per element), Number values as numbers; Binary
// attributes are left out, as SNS ignores them.
func attributeEvent(attrs map[string]Attribute) map[string]any {
	ev := make(map[string]any, len(attrs))
	for k, a := range attrs {
		switch baseType(a.DataType) {
		case "String":
			if strings.HasPrefix(a.DataType, "String.Array") {
				dec := json.NewDecoder(strings.NewReader(a.StringValue))
				dec.UseNumber()
				var arr []any
				if dec.Decode(&arr) == nil {
					ev[k] = arr
					continue
				}
			}
			ev[k] = a.StringValue
		case "Number":
			ev[k] = json.Number(a.StringValue)
		}
	}
	return ev
}

// baseType is an attribute DataType without its custom label.
func baseType(dt string) string {
	b, _, _ := strings.Cut(dt, ".")
	return b
}
