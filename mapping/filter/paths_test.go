package filter

import "testing"

// TestExistsFalseInAnArrayOfObjectsNeedsEveryElementToLackTheField: Event
// Ruler (EventBridge, Lambda's FilterCriteria) flattens the event, so
// detail.items.b exists as soon as one element of detail.items has a b,
// and {"exists":false} on it does not match (ByteMachine / NameState
// .getNameTransitions: absence is checked on the flattened field names).
// Before, an object pattern was matched element by element and
// {"detail":{"items":{"b":[{"exists":false}]}}} matched
// {"detail":{"items":[{"b":1},{"c":2}]}} through the element {"c":2}.
// exists:false on a path is now true only when no element of any array
// along the path has a leaf value there; SNS filter policies share the
// rule.
func TestExistsFalseInAnArrayOfObjectsNeedsEveryElementToLackTheField(t *testing.T) {
	for _, c := range []struct {
		pattern, event string
		want           bool
	}{
		{`{"detail":{"items":{"b":[{"exists":false}]}}}`, `{"detail":{"items":[{"b":1},{"c":2}]}}`, false},
		{`{"detail":{"items":{"b":[{"exists":false}]}}}`, `{"detail":{"items":[{"c":1},{"c":2}]}}`, true},
		{`{"detail":{"items":{"b":[{"exists":false}]}}}`, `{"detail":{"items":[]}}`, true},
		{`{"detail":{"items":{"b":[{"exists":false}]}}}`, `{"detail":{"items":[{"c":1},{"b":null}]}}`, false},
		{`{"detail":{"items":{"sub":{"b":[{"exists":false}]}}}}`, `{"detail":{"items":[{"sub":{"b":1}},{"c":2}]}}`, false},
		{`{"detail":{"items":{"sub":{"b":[{"exists":false}]}}}}`, `{"detail":{"items":[{"sub":{"x":1}},{"c":2}]}}`, true},
		{`{"detail":{"items":{"sub":{"b":[{"exists":false}]}}}}`, `{"detail":{"items":[[{"sub":{"b":1}}],{"c":2}]}}`, false},
		{`{"detail":{"items":{"a":["x"],"b":[{"exists":false}]}}}`, `{"detail":{"items":[{"a":"x"},{"b":1}]}}`, false},
		{`{"detail":{"items":{"a":["x"],"b":[{"exists":false}]}}}`, `{"detail":{"items":[{"a":"x"},{"c":1}]}}`, true},
		{`{"detail":{"items":{"b":[{"exists":true}]}}}`, `{"detail":{"items":[{"b":1},{"c":2}]}}`, true},
	} {
		ev, ok := decodeJSON([]byte(c.event))
		if !ok {
			t.Fatalf("bad event %s", c.event)
		}
		eb, err := CompileEventPattern(c.pattern)
		if err != nil {
			t.Fatal(err)
		}
		sns, err := CompileSNSFilterPolicy(c.pattern)
		if err != nil {
			t.Fatal(err)
		}
		lambda := mustCompile(t, c.pattern)
		for name, m := range map[string]*Matcher{"EventBridge": eb, "Lambda": lambda, "SNS": sns} {
			if got := m.Match(ev.(map[string]any)); got != c.want {
				t.Errorf("%s %s against %s: matched %v, want %v", name, c.pattern, c.event, got, c.want)
			}
		}
	}
}

// TestADottedKeyIsTheNestedPathItNames: "when EventBridge compiles event
// patterns for use, it uses dot (.) as the joining character"
// (eb-event-patterns.html, "Considerations when creating event
// patterns"), in the pattern and in the event alike, so
// {"detail":{"state.status":["running"]}} and
// {"detail":{"state":{"status":["running"]}}} each match both
// {"detail":{"state":{"status":"running"}}} and
// {"detail":{"state.status":"running"}}. Lambda's FilterCriteria (Event
// Ruler too) does the same; SNS filter policies are left as they were.
// Before, keys were looked up literally and the crossed pairs did not
// match.
func TestADottedKeyIsTheNestedPathItNames(t *testing.T) {
	patterns := []string{
		`{"detail":{"state.status":["running"]}}`,
		`{"detail":{"state":{"status":["running"]}}}`,
		`{"detail.state.status":["running"]}`,
		`{"detail":{"state.status":["running"],"state":{"code":[1]}}}`,
	}
	events := []string{
		`{"detail":{"state":{"status":"running","code":1}}}`,
		`{"detail":{"state.status":"running","state":{"code":1}}}`,
		`{"detail":{"state.status":"running","state.code":1}}`,
		`{"detail.state.status":"running","detail":{"state":{"code":1}}}`,
	}
	for _, p := range patterns {
		eb, err := CompileEventPattern(p)
		if err != nil {
			t.Fatalf("CompileEventPattern(%s): %v", p, err)
		}
		lambda := mustCompile(t, p)
		for _, e := range events {
			ev, _ := decodeJSON([]byte(e))
			if !eb.Match(ev.(map[string]any)) || !lambda.Match(ev.(map[string]any)) {
				t.Errorf("pattern %s against %s: EventBridge %v, Lambda %v, want both true", p, e, eb.Match(ev.(map[string]any)), lambda.Match(ev.(map[string]any)))
			}
		}
		ev, _ := decodeJSON([]byte(`{"detail":{"state":{"status":"stopped","code":1},"state.status":"stopped"}}`))
		if eb.Match(ev.(map[string]any)) {
			t.Errorf("pattern %s matched a stopped state", p)
		}
	}
	// exists:false sees the dotted spelling too.
	eb, err := CompileEventPattern(`{"detail":{"state":{"status":[{"exists":false}]}}}`)
	if err != nil {
		t.Fatal(err)
	}
	if ev, _ := decodeJSON([]byte(`{"detail":{"state.status":"running"}}`)); eb.Match(ev.(map[string]any)) {
		t.Errorf("exists:false matched an event with detail.\"state.status\"")
	}
	// Kinesis data: the top-level key "data.city" is data → city.
	m := mustCompile(t, `{"data.city":["Paris"]}`)
	if !m.MatchKinesis("pk", "1", []byte(`{"city":"Paris"}`)) || m.MatchKinesis("pk", "1", []byte(`{"city":"Lyon"}`)) {
		t.Errorf("FilterCriteria {\"data.city\":[\"Paris\"]} does not filter Kinesis data by city")
	}
	// SNS filter policies keep looking keys up literally.
	sns, err := CompileSNSFilterPolicy(`{"state.status":["running"]}`)
	if err != nil {
		t.Fatal(err)
	}
	if !sns.Match(map[string]any{"state.status": "running"}) {
		t.Errorf("SNS policy {\"state.status\"} does not match the attribute state.status")
	}
}
