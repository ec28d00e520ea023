package filter

import "testing"

// TestSNSExistsTrueNeedsANonNullNonEmptyValue: in an SNS filter policy
// (CompileSNSFilterPolicy) exists:true does not match a key whose value
// is null or "" (nor an array of only such values); in a Lambda
// FilterCriteria pattern and an EventBridge event pattern it still
// matches any leaf value, null and "" included. Before, SNS's matched
// null and "" too. SNS: "Use "exists": true to match incoming messages
// that include the specified property. The key must have a non-null and
// non-empty value" (attribute-key-matching.html).
func TestSNSExistsTrueNeedsANonNullNonEmptyValue(t *testing.T) {
	sns, err := CompileSNSFilterPolicy(`{"store":[{"exists":true}],"a":{"b":[{"exists":true}]}}`)
	if err != nil {
		t.Fatal(err)
	}
	lambda := mustCompile(t, `{"store":[{"exists":true}],"a":{"b":[{"exists":true}]}}`)
	eb, err := CompileEventPattern(`{"store":[{"exists":true}],"a":{"b":[{"exists":true}]}}`)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		store, b any
		snsWant  bool
	}{
		{"fans", "x", true},
		{0.0, "x", true},
		{false, "x", true},
		{[]any{nil, "", "fans"}, "x", true},
		{nil, "x", false},
		{"", "x", false},
		{[]any{nil, ""}, "x", false},
		{"fans", nil, false}, // a nested key
		{"fans", "", false},
	}
	for _, c := range cases {
		ev := map[string]any{"store": c.store, "a": map[string]any{"b": c.b}}
		if got := sns.Match(ev); got != c.snsWant {
			t.Errorf("SNS policy, store=%#v b=%#v: matched %v, want %v", c.store, c.b, got, c.snsWant)
		}
		if !lambda.Match(ev) || !eb.Match(ev) {
			t.Errorf("store=%#v b=%#v: Lambda matched %v, EventBridge %v; both match any leaf value", c.store, c.b, lambda.Match(ev), eb.Match(ev))
		}
	}
	// exists:false is unchanged: it matches only a missing key.
	nf, err := CompileSNSFilterPolicy(`{"store":[{"exists":false}]}`)
	if err != nil {
		t.Fatal(err)
	}
	if nf.Match(map[string]any{"store": nil}) || !nf.Match(map[string]any{}) {
		t.Errorf("SNS exists:false: null matched %v, missing %v", nf.Match(map[string]any{"store": nil}), nf.Match(map[string]any{}))
	}
}
