package filter

import (
	"errors"
	"strings"
	"testing"

	"github.com/runnel-dev/runnel/awserr"
)

// TestAnEventPatternOutsideEventRulersLimitsIsRefused: EventBridge's
// matcher (Event Ruler, https://github.com/aws/event-ruler README and
// JsonRuleCompiler) refuses a numeric operand outside -5.0e9..+5.0e9
// ("Value must be between -5.0E9 and 5.0E9, inclusive"; also for the
// numbers of anything-but), an empty prefix or suffix inside anything-but
// ("Null prefix/suffix not allowed"; SPEC-fanout-tables §2.2), and an
// anything-but list mixing strings and numbers ("either all values are
// number or string, mixed type is not supported"). Before, runnel compiled
// all three: a rule AWS refuses with InvalidEventPatternException was
// accepted and matched. Each refusal names the field. Lambda's
// FilterCriteria and SNS filter policies, which share this package, keep
// accepting them (their own rules: SNS checks its ±1e9 range itself), and
// EventBridge still takes a plain {"prefix":""} and a plain [1e10].
func TestAnEventPatternOutsideEventRulersLimitsIsRefused(t *testing.T) {
	for _, c := range []struct{ pattern, want string }{
		{`{"detail":{"a":[{"numeric":[">",1e10]}]}}`, "Value must be between -5.0E9 and 5.0E9"},
		{`{"detail":{"a":[{"numeric":[">=",0,"<",5000000001]}]}}`, "Value must be between -5.0E9 and 5.0E9"},
		{`{"detail":{"a":[{"numeric":["=",-6e9]}]}}`, "Value must be between -5.0E9 and 5.0E9"},
		{`{"detail":{"a":[{"anything-but":[1,6e9]}]}}`, "Value must be between -5.0E9 and 5.0E9"},
		{`{"detail":{"a":[{"anything-but":{"prefix":""}}]}}`, "Null prefix/suffix not allowed"},
		{`{"detail":{"a":[{"anything-but":{"suffix":["x",""]}}]}}`, "Null prefix/suffix not allowed"},
		{`{"detail":{"a":[{"anything-but":["x",5]}]}}`, "mixed type is not supported"},
	} {
		_, err := CompileEventPattern(c.pattern)
		var ae *awserr.Error
		if !errors.As(err, &ae) || ae.Code != "InvalidEventPatternException" || !errors.Is(err, ErrInvalidOperand) {
			t.Errorf("CompileEventPattern(%s) = %v, want InvalidEventPatternException", c.pattern, err)
			continue
		}
		if !strings.Contains(ae.Message, c.want) || !strings.Contains(ae.Message, `"detail.a"`) {
			t.Errorf("CompileEventPattern(%s): message %q, want one naming \"detail.a\" and saying %q", c.pattern, ae.Message, c.want)
		}
		if _, err := Compile(&Criteria{Filters: []Pattern{{Pattern: c.pattern}}}); err != nil {
			t.Errorf("FilterCriteria %s: %v, want it accepted as before", c.pattern, err)
		}
		if _, err := CompileFilterPolicy(c.pattern); err != nil {
			t.Errorf("SNS filter policy %s: %v, want it accepted here as before", c.pattern, err)
		}
	}
	for _, p := range []string{
		`{"detail":{"a":[{"numeric":[">=",-5e9,"<=",5e9]}]}}`,
		`{"detail":{"a":[{"prefix":""}]}}`,
		`{"detail":{"a":[1e10]}}`,
		`{"detail":{"a":[{"anything-but":[1,2]}]}}`,
		`{"detail":{"a":[{"anything-but":["x","y"]}]}}`,
	} {
		if _, err := CompileEventPattern(p); err != nil {
			t.Errorf("CompileEventPattern(%s) = %v, want it accepted", p, err)
		}
	}
}
