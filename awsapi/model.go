package awsapi

// AWS's service models (botocore's service-2.json, in models/ with their
// licence and source): the input shapes requests are validated against
// (validate.go). A model is read from the embedded file the first time a
// request of its service needs it.

import (
	"bytes"
	"compress/gzip"
	"embed"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"sync"
)

//go:embed models/*.json.gz
var modelFiles embed.FS

// modelFile is the model of each service whose requests are validated.
var modelFile = map[Service]string{
	Kinesis:         "models/kinesis-2013-12-02.json.gz",
	DynamoDB:        "models/dynamodb-2012-08-10.json.gz",
	DynamoDBStreams: "models/dynamodbstreams-2012-08-10.json.gz",
	Lambda:          "models/lambda-2015-03-31.json.gz",
	SQS:             "models/sqs-2012-11-05.json.gz",
	CloudWatchLogs:  "models/logs-2014-03-28.json.gz",
	IAM:             "models/iam-2010-05-08.json.gz",
	STS:             "models/sts-2011-06-15.json.gz",
}

// model is a service's model: its operations' input shapes, by name.
type model struct {
	Operations map[string]struct {
		Input *struct{ Shape string }
	}
	Shapes map[string]*shape
}

// shape is a model's shape, as service-2.json writes it.
type shape struct {
	Type     string
	Members  members
	Required []string
	Member   *memberRef // list
	Key      *memberRef // map
	Value    *memberRef // map
	Min, Max *float64
	Pattern  string
	Enum     []string
	// Flattened: a list or map the query protocol writes without its
	// "member." or "entry." level (SQS's).
	Flattened bool
	// Payload names the member that is the whole body (Lambda's Invoke):
	// the body is then not a JSON object of members.
	Payload string

	name string
	re   *regexp.Regexp // Pattern, anchored; nil when RE2 cannot take it
	req  map[string]bool
	// rule and extra are the service's serviceRules and modelExtras of
	// the shape (nil: none), set when the model is read.
	rule  func(v any) error
	extra func(string) bool
}

// memberRef is a structure's member, or a list's or map's element.
type memberRef struct {
	Shape        string
	Location     string // Lambda: uri, querystring, header (not in the body)
	LocationName string

	name  string // the member's name in the model
	lower string // name in lower camel case, as validation paths write it
	shape *shape
}

// members are a structure's members in the model's order, which is the
// order AWS reports their validation errors in.
type members []*memberRef

func (ms *members) UnmarshalJSON(b []byte) error {
	d := json.NewDecoder(bytes.NewReader(b))
	if _, err := d.Token(); err != nil {
		return err
	}
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return err
		}
		m := &memberRef{name: fmt.Sprint(t)}
		if err := d.Decode(m); err != nil {
			return err
		}
		*ms = append(*ms, m)
	}
	return nil
}

// wireName is the member's key in a JSON body.
func (m *memberRef) wireName() string {
	if m.LocationName != "" && m.Location == "" {
		return m.LocationName
	}
	return m.name
}

var models = struct {
	sync.Mutex
	m map[Service]*model
}{m: map[Service]*model{}}

// modelOf returns svc's model (nil for a service without one), reading it
// the first time.
func modelOf(svc Service) *model {
	models.Lock()
	defer models.Unlock()
	if m, ok := models.m[svc]; ok {
		return m
	}
	var m *model
	if file, ok := modelFile[svc]; ok {
		var err error
		if m, err = loadModel(file); err != nil {
			panic(fmt.Sprintf("awsapi: the embedded model %s: %v", file, err)) // a broken build
		}
		for name, s := range m.Shapes {
			s.rule, s.extra = serviceRules[svc][name], modelExtras[svc][name]
		}
		switch svc {
		case Kinesis:
			reorderMembers(m, kinesisMemberOrder)
		case DynamoDB:
			reorderMembers(m, dynamoMemberOrder)
		}
	}
	models.m[svc] = m
	return m
}

// loadModel reads and links a model file.
func loadModel(file string) (*model, error) {
	f, err := modelFiles.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(z)
	if err != nil {
		return nil, err
	}
	m := new(model)
	if err := json.Unmarshal(b, m); err != nil {
		return nil, err
	}
	link := func(r *memberRef) error {
		if r == nil {
			return nil
		}
		if r.shape = m.Shapes[r.Shape]; r.shape == nil {
			return fmt.Errorf("shape %q is not in the model", r.Shape)
		}
		return nil
	}
	for name, s := range m.Shapes {
		s.name = name
		if s.Pattern != "" {
			// Java's patterns match the whole value; RE2 takes most of
			// them (not look-arounds: those patterns are not checked).
			s.re, _ = regexp.Compile(`^(?:` + s.Pattern + `)$`)
		}
		s.req = map[string]bool{}
		for _, r := range s.Required {
			s.req[r] = true
		}
		for _, r := range s.Members {
			r.lower = lowerFirst(r.name)
		}
		for _, r := range append([]*memberRef{s.Member, s.Key, s.Value}, s.Members...) {
			if err := link(r); err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
		}
	}
	return m, nil
}

// inputShape returns the input shape of op in its service's model, or nil.
func inputShape(op *Operation) *shape {
	m := modelOf(op.Service)
	if m == nil {
		return nil
	}
	o, ok := m.Operations[op.Name]
	if !ok || o.Input == nil {
		return nil
	}
	return m.Shapes[o.Input.Shape]
}
