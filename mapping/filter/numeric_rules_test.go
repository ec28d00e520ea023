package filter

import (
	"errors"
	"strings"
	"testing"

	"github.com/runnel-dev/runnel/awserr"
)

// TestANumericRangeOnlyMatchesNumbersInTheServicesDomain: EventBridge
// (eb-event-patterns-content-based-filtering: numeric matching "works with
// values that are JSON numbers. It is limited to values between -5.0e9
// and +5.0e9 inclusive, with 15 digits of precision, or six digits to the
// right of the decimal point") and Lambda's FilterCriteria both run on
// Event Ruler, whose ComparableNumber.generate throws for any other
// number; ByteMachine.transitionOn swallows the throw and the value is
// matched as a string only, so no numeric condition matches it. SNS
// limits numeric matching to -1e9..1e9 (subscription-filter-policy-
// constraints.html). Before, every event number was compared as a
// float64: {"numeric":[">",0]} matched an epoch-milliseconds timestamp
// 1700000000000, ["<",100] matched -6000000000 and [">",0] matched
// 0.0000001. An EventBridge pattern operand with more than 6 decimals
// ([">",1.0000001]) is now refused too, as the current Event Ruler does
// ("Only values upto 6 decimals are supported"), naming the field.
func TestANumericRangeOnlyMatchesNumbersInTheServicesDomain(t *testing.T) {
	type tc struct {
		pattern, value string
		ruler, sns     bool // EventBridge and Lambda (Event Ruler); SNS
	}
	for _, c := range []tc{
		{`[">",0]`, `1700000000000`, false, false},
		{`["<",100]`, `-6000000000`, false, false},
		{`[">",0]`, `0.0000001`, false, true},
		{`[">",0]`, `1e-7`, false, true},
		{`[">",0]`, `0.000001`, true, true},
		{`[">",0]`, `1.5000000`, true, true}, // trailing zeros do not count
		{`[">",0]`, `5000000000`, true, false},
		{`["<",0]`, `-5e9`, true, false},
		{`[">",0]`, `5000000001`, false, false},
		{`[">",0]`, `1000000000`, true, true},
		{`["=",3]`, `3`, true, true},
		{`[">=",0,"<",2e9]`, `1500000000`, true, false},
		{`[">",0]`, `1e999`, false, false},
	} {
		pat := `{"detail":{"n":[{"numeric":` + c.pattern + `}]}}`
		eb, err := CompileEventPattern(pat)
		if err != nil {
			t.Fatalf("CompileEventPattern(%s): %v", pat, err)
		}
		lambda := mustCompile(t, pat)
		sns, err := CompileSNSFilterPolicy(pat)
		if err != nil {
			t.Fatalf("CompileSNSFilterPolicy(%s): %v", pat, err)
		}
		ev, ok := decodeJSON([]byte(`{"detail":{"n":` + c.value + `}}`))
		if !ok {
			t.Fatalf("bad event value %s", c.value)
		}
		event := ev.(map[string]any)
		if got := eb.Match(event); got != c.ruler {
			t.Errorf("EventBridge %s against %s: matched %v, want %v", c.pattern, c.value, got, c.ruler)
		}
		if got := lambda.Match(event); got != c.ruler {
			t.Errorf("Lambda %s against %s: matched %v, want %v", c.pattern, c.value, got, c.ruler)
		}
		if got := sns.Match(event); got != c.sns {
			t.Errorf("SNS %s against %s: matched %v, want %v", c.pattern, c.value, got, c.sns)
		}
	}
	// The same through float64 values (a caller's own decoded event).
	m := mustCompile(t, `{"n":[{"numeric":[">",0]}]}`)
	for v, want := range map[float64]bool{1.7e12: false, 1e-7: false, 0.5: true, 5e9: true} {
		if got := m.Match(map[string]any{"n": v}); got != want {
			t.Errorf("Lambda [>,0] against float64 %v: matched %v, want %v", v, got, want)
		}
	}
	// EventBridge refuses a pattern operand with more than 6 decimals.
	for _, p := range []string{
		`{"detail":{"a":[{"numeric":[">",1.0000001]}]}}`,
		`{"detail":{"a":[{"numeric":[">=",0,"<",1e-7]}]}}`,
		`{"detail":{"a":[{"anything-but":[0.1234567]}]}}`,
	} {
		_, err := CompileEventPattern(p)
		var ae *awserr.Error
		if !errors.As(err, &ae) || ae.Code != "InvalidEventPatternException" || !errors.Is(err, ErrInvalidOperand) ||
			!strings.Contains(ae.Message, "Only values upto 6 decimals are supported") || !strings.Contains(ae.Message, `"detail.a"`) {
			t.Errorf("CompileEventPattern(%s) = %v, want InvalidEventPatternException naming detail.a and 6 decimals", p, err)
		}
	}
	for _, p := range []string{`{"detail":{"a":[{"numeric":[">",1.000001]}]}}`, `{"detail":{"a":[{"numeric":[">",1.50000000]}]}}`, `{"detail":{"a":[1.0000001]}}`} {
		if _, err := CompileEventPattern(p); err != nil {
			t.Errorf("CompileEventPattern(%s) = %v, want it accepted", p, err)
		}
	}
}

// TestANumericConditionHasOnlyEventRulersOperatorsAndAProperRange: Event
// Ruler's JsonRuleCompiler.processNumericMatchExpression knows = >= > <=
// < only ("Unrecognized numeric range operator: !=") and Range.between
// refuses a range whose bottom is not below its top ("Bottom must be less
// than top"); Lambda's operators table (invocation-eventfiltering.html)
// lists Numeric (equals) and Numeric (range), no "!=". Before, all three
// services (EventBridge, Lambda FilterCriteria, SNS filter policies)
// accepted ["!=",5] as "not 5" and [">=",5,"<",5], a range nothing can
// match. Each refusal names the field and the allowed operators.
func TestANumericConditionHasOnlyEventRulersOperatorsAndAProperRange(t *testing.T) {
	for _, c := range []struct{ operand, want string }{
		{`["!=",5]`, "Unrecognized numeric range operator: !="},
		{`["==",5]`, "Unrecognized numeric range operator: =="},
		{`[">=",5,"<",5]`, "Bottom must be less than top"},
		{`[">",6,"<=",5]`, "Bottom must be less than top"},
	} {
		pat := `{"detail":{"a":[{"numeric":` + c.operand + `}]}}`
		_, err := CompileEventPattern(pat)
		var ae *awserr.Error
		if !errors.As(err, &ae) || ae.Code != "InvalidEventPatternException" || !strings.Contains(ae.Message, c.want) || !strings.Contains(ae.Message, `"detail.a"`) {
			t.Errorf("EventBridge %s: %v, want InvalidEventPatternException naming detail.a: %s", c.operand, err, c.want)
		}
		_, err = Compile(&Criteria{Filters: []Pattern{{Pattern: pat}}})
		if !errors.As(err, &ae) || ae.Code != "InvalidParameterValueException" || !strings.Contains(ae.Message, c.want) || !strings.Contains(ae.Message, `"detail.a"`) {
			t.Errorf("Lambda %s: %v, want InvalidParameterValueException naming detail.a: %s", c.operand, err, c.want)
		}
		if _, err = CompileFilterPolicy(pat); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("SNS %s: %v, want refused: %s", c.operand, err, c.want)
		}
	}
	if _, err := CompileEventPattern(`{"a":[{"numeric":[">=",5,"<=",5.000001]}]}`); err != nil {
		t.Errorf("a range of one millionth: %v, want accepted", err)
	}
}
