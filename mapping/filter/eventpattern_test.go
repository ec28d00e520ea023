package filter

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/runnel-dev/runnel/awserr"
)

// The examples of AWS's "Content filtering in Amazon EventBridge event
// patterns" page (eb-create-pattern-operators), each with an event that
// matches and one that does not.
func TestEventPatternContentFiltering(t *testing.T) {
	cases := []struct {
		name, pattern, match, miss string
	}{
		{"prefix", `{"time":[{"prefix":"2017-10-02"}]}`, `{"time":"2017-10-02T18:43:48Z"}`, `{"time":"2017-10-03T18:43:48Z"}`},
		{"prefix ignoring case", `{"source":[{"prefix":{"equals-ignore-case":"EventBridge"}}]}`, `{"source":"eventbridge.test"}`, `{"source":"aws.eventbridge"}`},
		{"suffix", `{"FileName":[{"suffix":".png"}]}`, `{"FileName":"image.png"}`, `{"FileName":"image.PNG"}`},
		{"suffix ignoring case", `{"FileName":[{"suffix":{"equals-ignore-case":".png"}}]}`, `{"FileName":"image.PNG"}`, `{"FileName":"image.jpg"}`},
		{"anything-but", `{"detail":{"state":[{"anything-but":"initializing"}]}}`, `{"detail":{"state":"running"}}`, `{"detail":{"state":"initializing"}}`},
		{"anything-but list", `{"detail":{"state":[{"anything-but":["stopped","overloaded"]}]}}`, `{"detail":{"state":"running"}}`, `{"detail":{"state":"overloaded"}}`},
		{"anything-but numbers", `{"detail":{"x-limit":[{"anything-but":[100,200,300]}]}}`, `{"detail":{"x-limit":150}}`, `{"detail":{"x-limit":200}}`},
		{"anything-but prefix", `{"detail":{"state":[{"anything-but":{"prefix":"init"}}]}}`, `{"detail":{"state":"running"}}`, `{"detail":{"state":"initializing"}}`},
		{"anything-but prefix list", `{"detail":{"region":[{"anything-but":{"prefix":["us-","eu-"]}}]}}`, `{"detail":{"region":"ap-south-1"}}`, `{"detail":{"region":"eu-west-1"}}`},
		{"anything-but suffix", `{"detail":{"FileName":[{"anything-but":{"suffix":".txt"}}]}}`, `{"detail":{"FileName":"a.png"}}`, `{"detail":{"FileName":"a.txt"}}`},
		{"anything-but suffix list", `{"detail":{"FileName":[{"anything-but":{"suffix":[".txt",".md"]}}]}}`, `{"detail":{"FileName":"a.png"}}`, `{"detail":{"FileName":"a.md"}}`},
		{"anything-but ignoring case", `{"detail":{"state":[{"anything-but":{"equals-ignore-case":["Stopped","OverLoaded"]}}]}}`, `{"detail":{"state":"running"}}`, `{"detail":{"state":"STOPPED"}}`},
		{"anything-but wildcard", `{"detail":{"FilePath":[{"anything-but":{"wildcard":"*/dir/*"}}]}}`, `{"detail":{"FilePath":"/other/a"}}`, `{"detail":{"FilePath":"/dir/a"}}`},
		{"anything-but on null matches", `{"detail":{"state":[{"anything-but":"x"}]}}`, `{"detail":{"state":null}}`, `{"detail":{}}`},
		{"numeric", `{"detail":{"c-count":[{"numeric":[">",0,"<=",5]}],"d-count":[{"numeric":["<",10]}],"x-limit":[{"numeric":["=",3.018e2]}]}}`,
			`{"detail":{"c-count":5,"d-count":7,"x-limit":301.8}}`, `{"detail":{"c-count":6,"d-count":7,"x-limit":301.8}}`},
		{"numeric never a string", `{"detail":{"n":[{"numeric":[">",0]}]}}`, `{"detail":{"n":3}}`, `{"detail":{"n":"3"}}`},
		{"cidr IPv4", `{"detail":{"sourceIPAddress":[{"cidr":"10.0.0.0/24"}]}}`, `{"detail":{"sourceIPAddress":"10.0.0.255"}}`, `{"detail":{"sourceIPAddress":"10.0.1.1"}}`},
		{"cidr IPv6", `{"detail":{"sourceIPAddress":[{"cidr":"2001:db8::/64"}]}}`, `{"detail":{"sourceIPAddress":"2001:db8::1"}}`, `{"detail":{"sourceIPAddress":"2001:db9::1"}}`},
		{"exists", `{"detail":{"state":[{"exists":true}]}}`, `{"detail":{"state":"x"}}`, `{"detail":{}}`},
		{"does not exist", `{"detail":{"state":[{"exists":false}]}}`, `{"detail":{}}`, `{"detail":{"state":"x"}}`},
		{"does not exist at any level", `{"detail":{"a":{"b":[{"exists":false}]}}}`, `{"source":"x"}`, `{"detail":{"a":{"b":1}}}`},
		{"empty and null values", `{"detail":{"eventVersion":[""],"responseElements":[null]}}`, `{"detail":{"eventVersion":"","responseElements":null}}`, `{"detail":{"eventVersion":"null","responseElements":null}}`},
		{"equals-ignore-case", `{"detail-type":[{"equals-ignore-case":"ec2 instance state-change notification"}]}`, `{"detail-type":"EC2 Instance State-change Notification"}`, `{"detail-type":"EC2 Instance"}`},
		{"wildcard", `{"EventBusArn":[{"wildcard":"arn:aws:events:us-east-1:*:event-bus/*"}]}`, `{"EventBusArn":"arn:aws:events:us-east-1:123456789012:event-bus/b"}`, `{"EventBusArn":"arn:aws:events:us-west-2:123456789012:event-bus/b"}`},
		{"$or inside detail", `{"detail":{"$or":[{"c-count":[{"numeric":[">",0,"<=",5]}]},{"d-count":[{"numeric":["<",10]}]},{"x-limit":[{"numeric":["=",3.018e2]}]}]}}`,
			`{"detail":{"c-count":9,"d-count":20,"x-limit":301.8}}`, `{"detail":{"c-count":9,"d-count":20,"x-limit":1}}`},
		{"$or at the top with a field", `{"source":["aws.cloudwatch"],"$or":[{"metricName":["CPUUtilization","ReadLatency"]},{"namespace":["AWS/EC2","AWS/ES"]}]}`,
			`{"source":"aws.cloudwatch","namespace":"AWS/ES"}`, `{"source":"aws.cloudwatch","namespace":"AWS/S3","metricName":"Other"}`},
		{"arrays intersect", `{"resources":["arn:a","arn:b"]}`, `{"resources":["arn:z","arn:b"]}`, `{"resources":["arn:z"]}`},
		{"exact number matches 300.0", `{"detail":{"n":[300]}}`, `{"detail":{"n":300.0}}`, `{"detail":{"n":"300"}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := CompileEventPattern(c.pattern)
			if err != nil {
				t.Fatalf("CompileEventPattern: %v", err)
			}
			for _, ev := range []struct {
				src  string
				want bool
			}{{c.match, true}, {c.miss, false}} {
				var e map[string]any
				if err := json.Unmarshal([]byte(ev.src), &e); err != nil {
					t.Fatal(err)
				}
				if got := m.Match(e); got != ev.want {
					t.Errorf("Match(%s) = %v, want %v", ev.src, got, ev.want)
				}
			}
		})
	}
}

func TestEventPatternErrors(t *testing.T) {
	for _, p := range []string{
		`{"a":[]}`,                         // empty arrays
		`{"a":[{"regex":"x"}]}`,            // unknown operator
		`{"a":[{"wildcard":"a**b"}]}`,      // consecutive wildcards
		`{"$or":[{"a":["x"]}]}`,            // one alternative
		`{"a":[{"cidr":"10.0.0.300/24"}]}`, // not a prefix
		`{"a":"x"}`,                        // not an array
		`[1]`,
	} {
		_, err := CompileEventPattern(p)
		var ae *awserr.Error
		if !errors.As(err, &ae) || ae.Code != "InvalidEventPatternException" || !errors.Is(err, ErrInvalidPattern) {
			t.Errorf("CompileEventPattern(%s) = %v, want InvalidEventPatternException", p, err)
			continue
		}
		if want := "Event pattern is not valid. Reason: "; len(ae.Message) < len(want) || ae.Message[:len(want)] != want {
			t.Errorf("message %q does not start with %q", ae.Message, want)
		}
	}
}

// $or and cidr are EventBridge's: Lambda's FilterCriteria refuses them as
// before.
func TestFilterCriteriaRefusesOrAndCIDR(t *testing.T) {
	for _, p := range []string{`{"$or":[{"a":["x"]},{"b":["y"]}]}`, `{"a":[{"cidr":"10.0.0.0/8"}]}`} {
		if _, err := Compile(&Criteria{Filters: []Pattern{{Pattern: p}}}); !errors.Is(err, ErrInvalidParameterValue) {
			t.Errorf("Compile(%s) = %v, want InvalidParameterValueException", p, err)
		}
	}
}

func TestEventPatternOrCombinationsLimit(t *testing.T) {
	alts := `[{"a":["1"]},{"a":["2"]},{"a":["3"]},{"a":["4"]},{"a":["5"]},{"a":["6"]},{"a":["7"]},{"a":["8"]},{"a":["9"]},{"a":["10"]},{"a":["11"]}]`
	p := `{"x":{"$or":` + alts + `},"y":{"$or":` + alts + `},"z":{"$or":` + alts + `}}` // 11^3 = 1331
	if _, err := CompileEventPattern(p); !errors.Is(err, awserr.ErrInvalidEventPattern) {
		t.Fatalf("CompileEventPattern(1331 combinations) = %v, want InvalidEventPatternException", err)
	}
}
