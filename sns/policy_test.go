package sns

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/awserr"
)

func attrs(kv ...string) map[string]Attribute {
	m := map[string]Attribute{}
	for i := 0; i < len(kv); i += 3 {
		m[kv[i]] = Attribute{DataType: kv[i+1], StringValue: kv[i+2]}
	}
	return m
}

// TestFilterPolicyOperators: every operator of SNS filter policies, in
// the MessageAttributes scope (the default) and the MessageBody scope,
// matching and not matching.
func TestFilterPolicyOperators(t *testing.T) {
	cases := []struct {
		name, policy, scope string
		rec                 record
		want                bool
	}{
		{"exact string", `{"color":["red","blue"]}`, "", record{Attributes: attrs("color", "String", "blue")}, true},
		{"exact string, other value", `{"color":["red"]}`, "", record{Attributes: attrs("color", "String", "green")}, false},
		{"exact is case-sensitive", `{"color":["red"]}`, "", record{Attributes: attrs("color", "String", "Red")}, false},
		{"exact number", `{"n":[5]}`, "", record{Attributes: attrs("n", "Number", "5.0")}, true},
		{"a String is not a number", `{"n":[5]}`, "", record{Attributes: attrs("n", "String", "5")}, false},
		{"String.Array per element", `{"tags":["b"]}`, "", record{Attributes: attrs("tags", "String.Array", `["a","b"]`)}, true},
		{"String.Array no element", `{"tags":["c"]}`, "", record{Attributes: attrs("tags", "String.Array", `["a","b"]`)}, false},
		{"Binary ignored", `{"b":[{"exists":true}]}`, "", record{Attributes: map[string]Attribute{"b": {DataType: "Binary", BinaryValue: []byte{1}}}}, false},
		{"prefix", `{"id":[{"prefix":"ord-"}]}`, "", record{Attributes: attrs("id", "String", "ord-1")}, true},
		{"prefix no", `{"id":[{"prefix":"ord-"}]}`, "", record{Attributes: attrs("id", "String", "inv-1")}, false},
		{"suffix", `{"f":[{"suffix":".png"}]}`, "", record{Attributes: attrs("f", "String", "a.png")}, true},
		{"suffix no", `{"f":[{"suffix":".png"}]}`, "", record{Attributes: attrs("f", "String", "a.jpg")}, false},
		{"equals-ignore-case", `{"c":[{"equals-ignore-case":"RED"}]}`, "", record{Attributes: attrs("c", "String", "rEd")}, true},
		{"equals-ignore-case no", `{"c":[{"equals-ignore-case":"RED"}]}`, "", record{Attributes: attrs("c", "String", "blue")}, false},
		{"anything-but value", `{"c":[{"anything-but":"red"}]}`, "", record{Attributes: attrs("c", "String", "blue")}, true},
		{"anything-but value no", `{"c":[{"anything-but":"red"}]}`, "", record{Attributes: attrs("c", "String", "red")}, false},
		{"anything-but list", `{"c":[{"anything-but":["red","blue"]}]}`, "", record{Attributes: attrs("c", "String", "blue")}, false},
		{"anything-but prefix", `{"c":[{"anything-but":{"prefix":"re"}}]}`, "", record{Attributes: attrs("c", "String", "blue")}, true},
		{"anything-but prefix no", `{"c":[{"anything-but":{"prefix":"re"}}]}`, "", record{Attributes: attrs("c", "String", "red")}, false},
		{"anything-but absent", `{"c":[{"anything-but":"red"}]}`, "", record{Attributes: attrs("x", "String", "y")}, false},
		{"numeric range", `{"p":[{"numeric":[">",0,"<=",150]}]}`, "", record{Attributes: attrs("p", "Number", "150")}, true},
		{"numeric range out", `{"p":[{"numeric":[">",0,"<=",150]}]}`, "", record{Attributes: attrs("p", "Number", "150.5")}, false},
		{"numeric equals", `{"p":[{"numeric":["=",3]}]}`, "", record{Attributes: attrs("p", "Number", "3")}, true},
		{"exists true", `{"k":[{"exists":true}]}`, "", record{Attributes: attrs("k", "String", "v")}, true},
		{"exists true absent", `{"k":[{"exists":true}]}`, "", record{Attributes: attrs("j", "String", "v")}, false},
		{"exists false", `{"k":[{"exists":false}]}`, "", record{Attributes: attrs("j", "String", "v")}, true},
		{"exists false present", `{"k":[{"exists":false}]}`, "", record{Attributes: attrs("k", "String", "v")}, false},
		{"exists false needs an attribute", `{"k":[{"exists":false}]}`, "", record{}, false},
		{"AND across keys", `{"a":["1"],"b":["2"]}`, "", record{Attributes: attrs("a", "String", "1", "b", "String", "3")}, false},
		{"$or first", `{"$or":[{"a":["1"]},{"b":["2"]}]}`, "", record{Attributes: attrs("a", "String", "1")}, true},
		{"$or second", `{"$or":[{"a":["1"]},{"b":["2"]}]}`, "", record{Attributes: attrs("b", "String", "2")}, true},
		{"$or neither", `{"$or":[{"a":["1"]},{"b":["2"]}]}`, "", record{Attributes: attrs("c", "String", "2")}, false},
		{"$or with a common key", `{"t":["x"],"$or":[{"a":["1"]},{"b":["2"]}]}`, "", record{Attributes: attrs("t", "String", "y", "a", "String", "1")}, false},
		{"body nested", `{"order":{"total":[{"numeric":[">",10]}]}}`, ScopeMessageBody, record{Message: `{"order":{"total":11}}`}, true},
		{"body nested no", `{"order":{"total":[{"numeric":[">",10]}]}}`, ScopeMessageBody, record{Message: `{"order":{"total":9}}`}, false},
		{"body not JSON", `{"a":["1"]}`, ScopeMessageBody, record{Message: `a=1`}, false},
		{"body ignores attributes", `{"a":["1"]}`, ScopeMessageBody, record{Message: `{}`, Attributes: attrs("a", "String", "1")}, false},
		{"body $or nested", `{"o":{"$or":[{"a":["1"]},{"b":["2"]}]}}`, ScopeMessageBody, record{Message: `{"o":{"b":"2"}}`}, true},
	}
	for _, c := range cases {
		p, err := compileFilterPolicy(c.policy, c.scope)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if got := p.match(&c.rec); got != c.want {
			t.Errorf("%s: match %v, want %v", c.name, got, c.want)
		}
	}
}

// TestFilterPolicyRefusals: SNS's limits and refusals, in AWS's words.
func TestFilterPolicyRefusals(t *testing.T) {
	cases := []struct{ policy, scope, msg string }{
		{`{"a":["1"],"b":["1"],"c":["1"],"d":["1"],"e":["1"],"f":["1"]}`, "", "can not have more than 5 keys"},
		{`{"a":[1,2,3,4,5,6,7,8,9,10],"b":[1,2,3,4,5,6,7,8,9,10],"c":[1,2]}`, "", "too complex"},
		{`{"a":[]}`, "", "Empty arrays are not allowed"},
		{`{"a":[{"wildcard":"x*"}]}`, "", "Unrecognized match type wildcard"},
		{`{"a":[{"anything-but":{"suffix":"x"}}]}`, "", "Unsupported anything-but pattern: suffix"},
		{`{"a":{"b":["1"]}}`, "", "does not support nested"},
		{`{"a":"1"}`, "", "must hold an array"},
		{`[1]`, "", "must be a JSON object"},
		{`{"$or":[{"a":["1"]}]}`, "", "$or must be an array of at least 2"},
		{`{"a":["1"]}`, "Body", "FilterPolicyScope"},
		{`{"a":[{"numeric":[">"]}]}`, "", "FilterPolicy"},
	}
	for _, c := range cases {
		_, err := compileFilterPolicy(c.policy, c.scope)
		if !errors.Is(err, awserr.ErrSNSInvalidParameter) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: %v, want InvalidParameter %q", c.policy, err, c.msg)
		}
	}
	// 3 x 4 x 2 x 3 = 72 with nesting: accepted; body keys in nested objects count.
	if _, err := compileFilterPolicy(`{"a":{"b":[1,2,3],"c":[1,2,3,4]},"d":[1,2]}`, ScopeMessageBody); err != nil {
		t.Errorf("nested body policy: %v", err)
	}
}

// TestManagedRetrySchedule: sqs and lambda endpoints get 3 immediate
// retries, 2 after 1 s, 10 backing off from 1 s to 20 s, then 20 s until
// 100,015 retries are spent.
func TestManagedRetrySchedule(t *testing.T) {
	want := []time.Duration{0, 0, 0, time.Second, time.Second, time.Second}
	for i, w := range want {
		if d, ok := managedDelay(i + 1); !ok || d != w {
			t.Fatalf("retry %d: %v %v, want %v", i+1, d, ok, w)
		}
	}
	if d, _ := managedDelay(15); d != 20*time.Second {
		t.Fatalf("last backoff retry: %v", d)
	}
	for n := 7; n < 15; n++ {
		a, _ := managedDelay(n)
		b, _ := managedDelay(n + 1)
		if b < a || a <= time.Second && n > 7 {
			t.Fatalf("backoff not increasing at %d: %v then %v", n, a, b)
		}
	}
	if d, ok := managedDelay(100015); !ok || d != 20*time.Second {
		t.Fatalf("retry 100015: %v %v", d, ok)
	}
	if _, ok := managedDelay(100016); ok {
		t.Fatal("retry 100016 allowed")
	}
}

// TestHTTPDeliveryPolicy: the phases of a healthyRetryPolicy and AWS's
// defaults (3 retries, 20 s apart), and its ranges.
func TestHTTPDeliveryPolicy(t *testing.T) {
	def := (*httpRetryPolicy)(nil).effective()
	for n := 1; n <= 3; n++ {
		if d, ok := def.delay(n); !ok || d != 20*time.Second {
			t.Fatalf("default retry %d: %v %v", n, d, ok)
		}
	}
	if _, ok := def.delay(4); ok {
		t.Fatal("a 4th default retry")
	}
	var p subDeliveryPolicy
	if err := decodePolicy(`{"healthyRetryPolicy":{"numRetries":6,"numNoDelayRetries":1,"numMinDelayRetries":1,"numMaxDelayRetries":1,"minDelayTarget":2,"maxDelayTarget":10,"backoffFunction":"linear"}}`, &p); err != nil {
		t.Fatal(err)
	}
	e := p.HealthyRetryPolicy.effective()
	var got []time.Duration
	for n := 1; n <= 6; n++ {
		d, _ := e.delay(n)
		got = append(got, d)
	}
	want := []time.Duration{0, 2 * time.Second, 5 * time.Second, 7 * time.Second, 10 * time.Second, 10 * time.Second}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("delays %v, want %v", got, want)
		}
	}
	for _, bad := range []string{
		`{"healthyRetryPolicy":{"numRetries":101}}`,
		`{"healthyRetryPolicy":{"minDelayTarget":0}}`,
		`{"healthyRetryPolicy":{"minDelayTarget":30,"maxDelayTarget":20}}`,
		`{"healthyRetryPolicy":{"backoffFunction":"cubic"}}`,
		`{"healthyRetryPolicy":{"numRetries":100,"minDelayTarget":3600,"maxDelayTarget":3600}}`,
		`{"healthyRetryPolicy":{"numRetries":2,"numNoDelayRetries":3}}`,
		`{"unknown":1}`,
	} {
		var p subDeliveryPolicy
		if err := decodePolicy(bad, &p); !errors.Is(err, awserr.ErrSNSInvalidParameter) {
			t.Errorf("%s: %v", bad, err)
		}
	}
}
