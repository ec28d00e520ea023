package filter

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/runnel-dev/runnel/awserr"
)

func mustCompile(t testing.TB, patterns ...string) *Matcher {
	t.Helper()
	c := &Criteria{}
	for _, p := range patterns {
		c.Filters = append(c.Filters, Pattern{Pattern: p})
	}
	m, err := Compile(c)
	if err != nil {
		t.Fatalf("Compile(%q): %v", patterns, err)
	}
	return m
}

func TestMatchKinesis(t *testing.T) {
	const weather = `{"city":"Paris","temp":31.5,"wind":0,"state":"Raining","tags":["hot","humid"],` +
		`"alerts":[{"level":"red","kind":"heat"},{"level":"amber","kind":"storm"}],"sensor":{"id":"s-17","ok":true,"note":null},"empty":""}`
	tests := []struct {
		name     string
		patterns []string
		pk, data string
		want     bool
	}{
		{"no filters lets everything through", nil, "pk", "not json", true},
		{"non-JSON data does not match a data pattern", []string{`{"data":{"city":["Paris"]}}`}, "pk", "not json", false},
		{"non-JSON data does not match even exists:false on data", []string{`{"data":{"x":[{"exists":false}]}}`}, "pk", "not json", false},
		{"non-JSON data still matches a metadata-only pattern", []string{`{"partitionKey":["pk"]}`}, "pk", "not json", true},
		{"non-JSON data: metadata filter OR data filter", []string{`{"data":{"city":["Paris"]}}`, `{"partitionKey":["pk"]}`}, "pk", "\x00\x01", true},
		{"exact string", []string{`{"data":{"city":["Paris"]}}`}, "pk", weather, true},
		{"exact string is case sensitive", []string{`{"data":{"city":["paris"]}}`}, "pk", weather, false},
		{"exact string does not match a number", []string{`{"data":{"wind":["0"]}}`}, "pk", weather, false},
		{"leaf alternatives are OR-ed", []string{`{"data":{"city":["Lyon","Paris"]}}`}, "pk", weather, true},
		{"fields are AND-ed", []string{`{"data":{"city":["Paris"],"state":["Sunny"]}}`}, "pk", weather, false},
		{"filters are OR-ed", []string{`{"data":{"city":["Lyon"]}}`, `{"data":{"state":["Raining"]}}`}, "pk", weather, true},
		{"filters are OR-ed, none matches", []string{`{"data":{"city":["Lyon"]}}`, `{"partitionKey":["other"]}`}, "pk", weather, false},
		{"number compared numerically", []string{`{"data":{"temp":[31.50]}}`}, "pk", weather, true},
		{"integer matches float", []string{`{"data":{"wind":[0.0]}}`}, "pk", `{"wind":0}`, true},
		{"5 matches 5.0", []string{`{"data":{"n":[5]}}`}, "pk", `{"n":5.0}`, true},
		{"number does not match a string", []string{`{"data":{"n":[5]}}`}, "pk", `{"n":"5"}`, false},
		{"true matches true", []string{`{"data":{"sensor":{"ok":[true]}}}`}, "pk", weather, true},
		{"false does not match true", []string{`{"data":{"sensor":{"ok":[false]}}}`}, "pk", weather, false},
		{"null matches null", []string{`{"data":{"sensor":{"note":[null]}}}`}, "pk", weather, true},
		{"null does not match a missing key", []string{`{"data":{"sensor":{"gone":[null]}}}`}, "pk", weather, false},
		{"empty string matches empty string", []string{`{"data":{"empty":[""]}}`}, "pk", weather, true},
		{"empty string does not match null", []string{`{"data":{"sensor":{"note":[""]}}}`}, "pk", weather, false},
		{"prefix", []string{`{"data":{"city":[{"prefix":"Par"}]}}`}, "pk", weather, true},
		{"prefix mismatch", []string{`{"data":{"city":[{"prefix":"par"}]}}`}, "pk", weather, false},
		{"prefix equals-ignore-case", []string{`{"data":{"city":[{"prefix":{"equals-ignore-case":"pAR"}}]}}`}, "pk", weather, true},
		{"prefix does not match a number", []string{`{"data":{"wind":[{"prefix":"0"}]}}`}, "pk", weather, false},
		{"suffix", []string{`{"data":{"city":[{"suffix":"ris"}]}}`}, "pk", weather, true},
		{"suffix mismatch", []string{`{"data":{"city":[{"suffix":"Par"}]}}`}, "pk", weather, false},
		{"suffix equals-ignore-case", []string{`{"data":{"city":[{"suffix":{"equals-ignore-case":"RIS"}}]}}`}, "pk", weather, true},
		{"equals-ignore-case", []string{`{"data":{"city":[{"equals-ignore-case":"PARIS"}]}}`}, "pk", weather, true},
		{"equals-ignore-case mismatch", []string{`{"data":{"city":[{"equals-ignore-case":"PARI"}]}}`}, "pk", weather, false},
		{"anything-but string", []string{`{"data":{"state":[{"anything-but":"Sunny"}]}}`}, "pk", weather, true},
		{"anything-but string excluded", []string{`{"data":{"state":[{"anything-but":"Raining"}]}}`}, "pk", weather, false},
		{"anything-but list", []string{`{"data":{"state":[{"anything-but":["Sunny","Cloudy"]}]}}`}, "pk", weather, true},
		{"anything-but list excluded", []string{`{"data":{"state":[{"anything-but":["Sunny","Raining"]}]}}`}, "pk", weather, false},
		{"anything-but numbers", []string{`{"data":{"wind":[{"anything-but":[0,1]}]}}`}, "pk", weather, false},
		{"anything-but numbers, other number", []string{`{"data":{"temp":[{"anything-but":[0,1]}]}}`}, "pk", weather, true},
		{"anything-but does not match a missing key", []string{`{"data":{"gone":[{"anything-but":"x"}]}}`}, "pk", weather, false},
		{"anything-but prefix", []string{`{"data":{"state":[{"anything-but":{"prefix":"Sun"}}]}}`}, "pk", weather, true},
		{"anything-but prefix excluded", []string{`{"data":{"state":[{"anything-but":{"prefix":"Rain"}}]}}`}, "pk", weather, false},
		{"anything-but suffix excluded", []string{`{"data":{"state":[{"anything-but":{"suffix":"ing"}}]}}`}, "pk", weather, false},
		{"anything-but equals-ignore-case excluded", []string{`{"data":{"state":[{"anything-but":{"equals-ignore-case":["sunny","RAINING"]}}]}}`}, "pk", weather, false},
		{"anything-but wildcard excluded", []string{`{"data":{"state":[{"anything-but":{"wildcard":"R*g"}}]}}`}, "pk", weather, false},
		{"numeric range", []string{`{"data":{"temp":[{"numeric":[">",30,"<=",35]}]}}`}, "pk", weather, true},
		{"numeric range outside", []string{`{"data":{"temp":[{"numeric":[">",0,"<=",5]}]}}`}, "pk", weather, false},
		{"numeric range inclusive upper bound", []string{`{"data":{"n":[{"numeric":[">",0,"<=",5]}]}}`}, "pk", `{"n":5}`, true},
		{"numeric range exclusive lower bound", []string{`{"data":{"n":[{"numeric":[">",0,"<=",5]}]}}`}, "pk", `{"n":0}`, false},
		{"numeric >= inclusive", []string{`{"data":{"n":[{"numeric":[">=",0]}]}}`}, "pk", `{"n":0}`, true},
		{"numeric < exclusive", []string{`{"data":{"n":[{"numeric":["<",0]}]}}`}, "pk", `{"n":0}`, false},
		{"numeric equals", []string{`{"data":{"n":[{"numeric":["=",100]}]}}`}, "pk", `{"n":1e2}`, true},
		// Lambda's matcher (Event Ruler) compares numerically only values
		// within ±5.0e9 (TestANumericRangeOnlyMatchesNumbersInTheServicesDomain).
		{"number out of float64 range is no number for numeric", []string{`{"data":{"n":[{"numeric":[">",1e300]}]}}`}, "pk", `{"n":1e999}`, false},
		{"number out of float64 range is no number for numeric, negative", []string{`{"data":{"n":[{"numeric":["<",-1e300]}]}}`}, "pk", `{"n":-1e999}`, false},
		{"data with surrounding whitespace", []string{`{"data":{"n":[1]}}`}, "pk", " \n{\"n\":1}\t ", true},
		{"data with trailing value is not JSON", []string{`{"data":{"n":[1]}}`}, "pk", `{"n":1} {}`, false},
		{"data with trailing garbage is not JSON", []string{`{"data":{"n":[1]}}`}, "pk", `{"n":1} x`, false},
		{"empty data is not JSON", []string{`{"data":{"n":[{"exists":false}]}}`}, "pk", ``, false},
		{"escaped key in data", []string{`{"data":{"ab":["é"]}}`}, "pk", `{"a\u0062":"\u00e9"}`, true},
		{"numeric does not match a numeric string", []string{`{"data":{"n":[{"numeric":[">",0]}]}}`}, "pk", `{"n":"5"}`, false},
		{"exists true", []string{`{"data":{"city":[{"exists":true}]}}`}, "pk", weather, true},
		{"exists true on a missing key", []string{`{"data":{"gone":[{"exists":true}]}}`}, "pk", weather, false},
		{"exists true on a null value", []string{`{"data":{"sensor":{"note":[{"exists":true}]}}}`}, "pk", weather, true},
		{"exists true only sees leaves", []string{`{"data":{"sensor":[{"exists":true}]}}`}, "pk", weather, false},
		{"exists false matches a missing key", []string{`{"data":{"gone":[{"exists":false}]}}`}, "pk", weather, true},
		{"exists false matches a missing parent", []string{`{"data":{"a":{"b":[{"exists":false}]}}}`}, "pk", weather, true},
		{"exists false does not match a present key", []string{`{"data":{"city":[{"exists":false}]}}`}, "pk", weather, false},
		{"exists false matches an empty array", []string{`{"data":{"list":[{"exists":false}]}}`}, "pk", `{"list":[]}`, true},
		{"wildcard", []string{`{"data":{"city":[{"wildcard":"P*s"}]}}`}, "pk", weather, true},
		{"wildcard several stars", []string{`{"data":{"sensor":{"id":[{"wildcard":"*-*7"}]}}}`}, "pk", weather, true},
		{"wildcard mismatch", []string{`{"data":{"city":[{"wildcard":"P*x"}]}}`}, "pk", weather, false},
		{"wildcard without star is exact", []string{`{"data":{"city":[{"wildcard":"Paris"}]}}`}, "pk", weather, true},
		{"wildcard escaped star is literal", []string{`{"data":{"s":[{"wildcard":"a\\*b"}]}}`}, "pk", `{"s":"a*b"}`, true},
		{"wildcard escaped star is not a wildcard", []string{`{"data":{"s":[{"wildcard":"a\\*b"}]}}`}, "pk", `{"s":"axb"}`, false},
		{"wildcard segments do not overlap", []string{`{"data":{"s":[{"wildcard":"ab*ba"}]}}`}, "pk", `{"s":"aba"}`, false},
		{"array value matches if any element matches", []string{`{"data":{"tags":["humid"]}}`}, "pk", weather, true},
		{"array value matches no element", []string{`{"data":{"tags":["dry"]}}`}, "pk", weather, false},
		{"array value with prefix", []string{`{"data":{"tags":[{"prefix":"hu"}]}}`}, "pk", weather, true},
		{"array of objects matches if one element matches", []string{`{"data":{"alerts":{"level":["red"]}}}`}, "pk", weather, true},
		{"array of objects: fields must match in the same element", []string{`{"data":{"alerts":{"level":["red"],"kind":["storm"]}}}`}, "pk", weather, false},
		{"array of objects: same element", []string{`{"data":{"alerts":{"level":["amber"],"kind":["storm"]}}}`}, "pk", weather, true},
		{"nested object pattern against a scalar does not match", []string{`{"data":{"city":{"name":["Paris"]}}}`}, "pk", weather, false},
		{"object value does not match a leaf", []string{`{"data":{"sensor":["s-17"]}}`}, "pk", weather, false},
		{"data as a leaf matches a JSON string", []string{`{"data":["hello"]}`}, "pk", `"hello"`, true},
		{"partitionKey exact", []string{`{"partitionKey":["device-1"]}`}, "device-1", weather, true},
		{"partitionKey prefix", []string{`{"partitionKey":[{"prefix":"device-"}]}`}, "device-1", weather, true},
		{"partitionKey anything-but", []string{`{"partitionKey":[{"anything-but":["device-1"]}]}`}, "device-1", weather, false},
		{"partitionKey and data together", []string{`{"partitionKey":["device-1"],"data":{"city":["Paris"]}}`}, "device-1", weather, true},
		{"partitionKey and data, data mismatch", []string{`{"partitionKey":["device-1"],"data":{"city":["Lyon"]}}`}, "device-1", weather, false},
		{"sequenceNumber", []string{`{"sequenceNumber":[{"prefix":"4959"}]}`}, "pk", weather, true},
		{"unknown top-level key is absent", []string{`{"encryptionType":["KMS"]}`}, "pk", weather, false},
		{"unknown top-level key exists false", []string{`{"encryptionType":[{"exists":false}]}`}, "pk", weather, true},
		{"exists false on partitionKey", []string{`{"partitionKey":[{"exists":false}]}`}, "pk", weather, false},
		{"nested pattern on partitionKey", []string{`{"partitionKey":{"x":["y"]}}`}, "pk", weather, false},
		{"unicode equals-ignore-case", []string{`{"data":{"s":[{"equals-ignore-case":"ÉTÉ"}]}}`}, "pk", `{"s":"été"}`, true},
		{"unicode prefix equals-ignore-case", []string{`{"data":{"s":[{"prefix":{"equals-ignore-case":"ÉT"}}]}}`}, "pk", `{"s":"été"}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := mustCompile(t, tt.patterns...)
			got := m.MatchKinesis(tt.pk, "49590338271490256608559692538361571095921575989136588898", []byte(tt.data))
			if got != tt.want {
				t.Errorf("MatchKinesis(%q, %s) = %v, want %v (patterns %s)", tt.pk, tt.data, got, tt.want, tt.patterns)
			}
			// The generic path must agree with the fast path.
			ev := map[string]any{
				"partitionKey":   tt.pk,
				"sequenceNumber": "49590338271490256608559692538361571095921575989136588898",
				"data":           json.RawMessage(tt.data),
			}
			if got := m.Match(ev); got != tt.want {
				t.Errorf("Match(%v) = %v, want %v (patterns %s)", ev, got, tt.want, tt.patterns)
			}
		})
	}
}

func TestMatchGenericSQS(t *testing.T) {
	event := map[string]any{
		"messageId":     "059f36b4-87a3-44ab-83d2-661975830a7d",
		"body":          map[string]any{"RequestCode": "BBBB", "Amount": 12},
		"attributes":    map[string]any{"ApproximateReceiveCount": "1", "SenderId": "AIDAIENQZJOLO23YVJ4VO"},
		"eventSource":   "aws:sqs",
		"awsRegion":     "us-east-2",
		"messageAttrib": nil,
	}
	tests := []struct {
		name    string
		pattern string
		want    bool
	}{
		{"body field", `{"body":{"RequestCode":["BBBB"]}}`, true},
		{"go int compared numerically", `{"body":{"Amount":[12.0]}}`, true},
		{"numeric range on go int", `{"body":{"Amount":[{"numeric":[">=",10,"<",20]}]}}`, true},
		{"metadata", `{"attributes":{"SenderId":[{"prefix":"AIDA"}]},"eventSource":["aws:sqs"]}`, true},
		{"metadata mismatch", `{"awsRegion":["eu-west-1"]}`, false},
		{"exists false matches a missing key", `{"messageAttributes":[{"exists":false}]}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := mustCompile(t, tt.pattern)
			if got := m.Match(event); got != tt.want {
				t.Errorf("Match = %v, want %v", got, tt.want)
			}
		})
	}
	t.Run("raw body that is not JSON does not match a body pattern", func(t *testing.T) {
		m := mustCompile(t, `{"body":{"x":[{"exists":false}]}}`)
		if m.Match(map[string]any{"body": json.RawMessage("plain text")}) {
			t.Error("matched")
		}
		if !m.Match(map[string]any{"body": json.RawMessage(`{"y":1}`)}) {
			t.Error("did not match")
		}
	})
}

func TestEmpty(t *testing.T) {
	for _, c := range []*Criteria{nil, {}, {Filters: []Pattern{}}} {
		m, err := Compile(c)
		if err != nil {
			t.Fatal(err)
		}
		if !m.Empty() || !m.Match(nil) || !m.MatchKinesis("", "", []byte("not json")) {
			t.Errorf("Compile(%v) should match everything", c)
		}
	}
	var nilM *Matcher
	if !nilM.Empty() || !nilM.Match(nil) || !nilM.MatchKinesis("", "", nil) {
		t.Error("nil Matcher should match everything")
	}
	if mustCompile(t, `{"partitionKey":["a"]}`).Empty() {
		t.Error("Empty() true with one filter")
	}
}

func TestCriteriaJSONShape(t *testing.T) {
	var c Criteria
	src := `{"Filters":[{"Pattern":"{\"data\":{\"temp\":[{\"numeric\":[\">\",30]}]}}"}]}`
	if err := json.Unmarshal([]byte(src), &c); err != nil {
		t.Fatal(err)
	}
	m, err := Compile(&c)
	if err != nil {
		t.Fatal(err)
	}
	if !m.MatchKinesis("pk", "1", []byte(`{"temp":31}`)) || m.MatchKinesis("pk", "1", []byte(`{"temp":30}`)) {
		t.Error("round-tripped criteria do not filter as expected")
	}
}

func TestCompileErrors(t *testing.T) {
	six := make([]string, 6)
	for i := range six {
		six[i] = `{"partitionKey":["a"]}`
	}
	tests := []struct {
		name     string
		patterns []string
		sentinel error
		msg      string // substring of the error text
	}{
		{"more than 5 filters", six, ErrTooManyFilters, "InvalidParameterValueException: FilterCriteria.Filters: number of filters must be in the range 0..5, got 6"},
		{"invalid JSON", []string{`{"data":`}, ErrInvalidJSON, "InvalidParameterValueException: FilterCriteria.Filters[0].Pattern: invalid JSON: "},
		{"empty pattern string", []string{``}, ErrInvalidJSON, "FilterCriteria.Filters[0].Pattern: invalid JSON"},
		{"trailing data", []string{`{"a":["b"]} {}`}, ErrInvalidJSON, "invalid JSON"},
		{"error names the filter index", []string{`{"a":["b"]}`, `{"a":`}, ErrInvalidJSON, "FilterCriteria.Filters[1].Pattern"},
		{"pattern too long", []string{`{"a":["` + strings.Repeat("x", MaxPatternLength) + `"]}`}, ErrPatternTooLong, "out of the range 0..4096"},
		{"pattern must be an object", []string{`["a"]`}, ErrInvalidPattern, "pattern must be a JSON object, got an array"},
		{"pattern must not be empty", []string{`{}`}, ErrInvalidPattern, "pattern must have at least one field"},
		{"nested object must not be empty", []string{`{"data":{}}`}, ErrInvalidPattern, `value of "data" must not be an empty object`},
		{"leaf must be an array", []string{`{"data":{"temp":5}}`}, ErrNotArray, `FilterCriteria.Filters[0].Pattern: value of "data.temp" must be an array, got a number`},
		{"leaf string must be an array", []string{`{"partitionKey":"a"}`}, ErrNotArray, `value of "partitionKey" must be an array`},
		{"leaf array must not be empty", []string{`{"data":{"temp":[]}}`}, ErrInvalidPattern, `value of "data.temp" must be a non-empty array`},
		{"nested arrays refused", []string{`{"data":{"temp":[[1]]}}`}, ErrInvalidPattern, `nested arrays are not allowed in the value of "data.temp"`},
		{"unknown operator", []string{`{"data":{"x":[{"regex":"a.*"}]}}`}, ErrUnknownOperator, `FilterCriteria.Filters[0].Pattern: unknown operator "regex" at "data.x"`},
		{"operator object with two keys", []string{`{"data":{"x":[{"prefix":"a","suffix":"b"}]}}`}, ErrInvalidPattern, `must have exactly one key, got 2`},
		{"prefix must be a string", []string{`{"data":{"x":[{"prefix":5}]}}`}, ErrInvalidOperand, `"prefix" at "data.x" must be a string`},
		{"suffix must be a string", []string{`{"data":{"x":[{"suffix":["a"]}]}}`}, ErrInvalidOperand, `"suffix" at "data.x"`},
		{"equals-ignore-case must be a string", []string{`{"data":{"x":[{"equals-ignore-case":true}]}}`}, ErrInvalidOperand, `"equals-ignore-case" at "data.x" must be a string`},
		{"exists must be a boolean", []string{`{"data":{"x":[{"exists":"yes"}]}}`}, ErrInvalidOperand, `"exists" at "data.x" must be true or false`},
		{"numeric needs a number", []string{`{"data":{"x":[{"numeric":[">","5"]}]}}`}, ErrInvalidOperand, `element 1 must be a number`},
		{"numeric needs pairs", []string{`{"data":{"x":[{"numeric":[">"]}]}}`}, ErrInvalidOperand, `"numeric" at "data.x" must be [op, number]`},
		{"numeric unknown operator", []string{`{"data":{"x":[{"numeric":["~",5]}]}}`}, ErrInvalidOperand, `Unrecognized numeric range operator: ~`},
		{"numeric has no !=", []string{`{"data":{"x":[{"numeric":["!=",5]}]}}`}, ErrInvalidOperand, `"numeric" at "data.x" element 0: Unrecognized numeric range operator: !=`},
		{"numeric range order", []string{`{"data":{"x":[{"numeric":["<",5,">",0]}]}}`}, ErrInvalidOperand, `lower bound (> or >=) followed by an upper bound`},
		{"numeric range bounds", []string{`{"data":{"x":[{"numeric":[">",5,"<",0]}]}}`}, ErrInvalidOperand, `Bottom must be less than top`},
		{"numeric empty range", []string{`{"data":{"x":[{"numeric":[">=",5,"<",5]}]}}`}, ErrInvalidOperand, `"numeric" at "data.x" Bottom must be less than top`},
		{"numeric equals cannot be a range", []string{`{"data":{"x":[{"numeric":["=",5,"<",9]}]}}`}, ErrInvalidOperand, `operator "=" cannot be combined`},
		{"number out of range", []string{`{"data":{"x":[1e999]}}`}, ErrInvalidOperand, `number 1e999 at "data.x" is out of range`},
		{"anything-but empty list", []string{`{"data":{"x":[{"anything-but":[]}]}}`}, ErrInvalidOperand, `"anything-but" at "data.x" must be`},
		{"anything-but with a boolean", []string{`{"data":{"x":[{"anything-but":[true]}]}}`}, ErrInvalidOperand, `"anything-but" at "data.x"`},
		{"anything-but unknown inner operator", []string{`{"data":{"x":[{"anything-but":{"numeric":[">",1]}}]}}`}, ErrUnknownOperator, `unknown operator "numeric" in "anything-but" at "data.x"`},
		{"anything-but prefix must be a string", []string{`{"data":{"x":[{"anything-but":{"prefix":1}}]}}`}, ErrInvalidOperand, `"prefix" must be a string`},
		{"wildcard consecutive stars", []string{`{"data":{"x":[{"wildcard":"a**b"}]}}`}, ErrInvalidOperand, `consecutive '*'`},
		{"wildcard bad escape", []string{`{"data":{"x":[{"wildcard":"a\\b"}]}}`}, ErrInvalidOperand, `must be followed by`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &Criteria{}
			for _, p := range tt.patterns {
				c.Filters = append(c.Filters, Pattern{Pattern: p})
			}
			m, err := Compile(c)
			if err == nil {
				t.Fatalf("Compile succeeded, want error %q", tt.msg)
			}
			if m != nil {
				t.Errorf("Compile returned a non-nil Matcher with an error")
			}
			if !errors.Is(err, ErrInvalidParameterValue) {
				t.Errorf("errors.Is(err, ErrInvalidParameterValue) = false for %v", err)
			}
			if !errors.Is(err, tt.sentinel) {
				t.Errorf("errors.Is(err, %v) = false for %v", tt.sentinel, err)
			}
			if tt.sentinel != ErrTooManyFilters && !errors.Is(err, ErrInvalidPattern) {
				t.Errorf("errors.Is(err, ErrInvalidPattern) = false for %v", err)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %q does not contain %q", err, tt.msg)
			}
			if !strings.HasPrefix(err.Error(), "InvalidParameterValueException: FilterCriteria.Filters") {
				t.Errorf("error %q does not start with the AWS exception and field", err)
			}
		})
	}
}

// TestCompileErrorIsAnAWSError: Compile's errors carry runnel's
// awserr.Error for InvalidParameterValueException (matched by code, never
// by text), whose message is the field and the rule.
func TestCompileErrorIsAnAWSError(t *testing.T) {
	_, err := Compile(&Criteria{Filters: []Pattern{{Pattern: `{`}}})
	if !errors.Is(err, awserr.ErrInvalidParameterValue) {
		t.Errorf("errors.Is(%v, awserr.ErrInvalidParameterValue) = false", err)
	}
	var ae *awserr.Error
	if !errors.As(err, &ae) || ae.Code != "InvalidParameterValueException" || !strings.HasPrefix(ae.Message, "FilterCriteria.Filters[0].Pattern: ") {
		t.Errorf("errors.As(%v, *awserr.Error) = %+v", err, ae)
	}
	if errors.Is(err, awserr.ErrResourceNotFound) || errors.Is(err, errors.New("InvalidParameterValueException")) {
		t.Error("matched an unrelated sentinel")
	}
}

func TestMaxFiltersAccepted(t *testing.T) {
	ps := make([]string, MaxFilters)
	for i := range ps {
		ps[i] = fmt.Sprintf(`{"partitionKey":["k%d"]}`, i)
	}
	m := mustCompile(t, ps...)
	if !m.MatchKinesis("k4", "", nil) || m.MatchKinesis("k5", "", nil) {
		t.Error("5 OR-ed filters misbehave")
	}
}

func TestMatchKinesisDoesNotParseDataWithoutDataFilter(t *testing.T) {
	m := mustCompile(t, `{"partitionKey":["a"]}`)
	data := []byte(`{"big":"json"}`)
	allocs := testing.AllocsPerRun(100, func() {
		m.MatchKinesis("a", "1", data)
		m.MatchKinesis("b", "1", data)
	})
	if allocs != 0 {
		t.Errorf("MatchKinesis allocated %v times per run without a data filter", allocs)
	}
}

var benchData = []byte(`{"deviceId":"sensor-0042","site":"paris-3","temp":31.7,"humidity":0.61,` +
	`"status":"ACTIVE","tags":["outdoor","roof"],"reading":{"unit":"C","seq":918273,"ok":true}}`)

func BenchmarkMatchKinesis(b *testing.B) {
	cases := []struct {
		name     string
		patterns []string
	}{
		{"NoFilters", nil},
		{"PartitionKeyOnly", []string{`{"partitionKey":[{"prefix":"sensor-"}]}`}},
		{"DataNumericRange", []string{`{"data":{"temp":[{"numeric":[">",30,"<=",40]}]}}`}},
		{"FiveFilters", []string{
			`{"data":{"status":["INACTIVE"]}}`,
			`{"data":{"site":[{"prefix":"lyon"}]}}`,
			`{"data":{"tags":["indoor"]}}`,
			`{"data":{"reading":{"unit":["F"]}}}`,
			`{"partitionKey":[{"anything-but":["x"]}],"data":{"temp":[{"numeric":[">",30]}],"reading":{"ok":[true]}}}`,
		}},
	}
	for _, bc := range cases {
		b.Run(bc.name, func(b *testing.B) {
			m := mustCompile(b, bc.patterns...)
			b.ReportAllocs()
			b.SetBytes(int64(len(benchData)))
			for b.Loop() {
				if !m.MatchKinesis("sensor-0042", "49590338271490256608559692538361571095921575989136588898", benchData) {
					b.Fatal("no match")
				}
			}
		})
	}
}

// FuzzMatchKinesisAgreesWithMatch checks that MatchKinesis and Match give
// the same verdict on the same record, whether Match gets data raw (decoded
// the same way) or already json.Unmarshal-ed into any (float64 numbers
// rather than json.Number), and that data is accepted exactly when it is
// valid JSON.
func FuzzMatchKinesisAgreesWithMatch(f *testing.F) {
	for _, s := range []string{
		string(benchData), `{"a":1}`, `[{"a":[1,{"b":"x"}]}]`, `"s"`, `1e999`, `{"a":"\u00e9\ud800"}`,
		`{"a\u0062":{"c":null}}`, "{\"a\":\"\xff\"}", `{"a":01}`, `{"a":-0.5e+3}`, `{"a":[]} x`, ` {"a" : [ true , false ] } `,
		`{"temp":31,"tags":["roof"],"reading":{"unit":"C","ok":true},"status":"ACTIVE"}`, `{"temp":1e999}`, `{} {}`, `1 2`, ``,
	} {
		f.Add([]byte(s))
	}
	m := mustCompile(f,
		`{"data":{"a":[1,"x",{"prefix":"\u00e9"}],"ab":{"c":[null,{"exists":true}]}}}`,
		`{"data":{"a":{"b":[{"anything-but":"y"}]},"status":[{"exists":false}]}}`,
		`{"data":{"temp":[{"numeric":[">",30]}],"reading":{"ok":[true]},"tags":[{"wildcard":"r*f"}]}}`,
		`{"data":[{"exists":true}]}`,
		`{"data":{"a":[{"exists":false}]},"partitionKey":["pk"]}`,
	)
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, ok := decodeJSON(data); ok != json.Valid(data) {
			t.Fatalf("decodeJSON ok=%v, json.Valid=%v for %q", ok, !ok, data)
		}
		got := m.MatchKinesis("pk", "1", data)
		raw := m.Match(map[string]any{"partitionKey": "pk", "sequenceNumber": "1", "data": json.RawMessage(data)})
		if got != raw {
			t.Fatalf("MatchKinesis=%v, Match(raw data)=%v for %q", got, raw, data)
		}
		var full any
		if json.Unmarshal(data, &full) != nil {
			return // e.g. 1e999: valid JSON that json.Unmarshal into any refuses
		}
		want := m.Match(map[string]any{"partitionKey": "pk", "sequenceNumber": "1", "data": full})
		if got != want {
			t.Fatalf("MatchKinesis=%v, Match(decoded data)=%v for %q", got, want, data)
		}
	})
}
