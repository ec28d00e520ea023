package awsapi

// Validation of the query protocol's requests (SQS's form, IAM, STS)
// against the same input shapes as the JSON ones (validate.go): the form
// is read into the value a JSON body of the same request would be, by the
// query protocol's naming, then checked as that body is.
//
//   - a list is Name.member.N (IAM, STS) or, flattened, Name.N (SQS,
//     whose flattened lists and maps take a singular name: Attribute,
//     Tag, TagKey, AttributeName, ActionName...; a list of entries takes
//     the entry shape's name, SendMessageBatchRequestEntry.N);
//   - a map is Name.entry.N.key and .value (IAM) or, flattened,
//     Name.N.Name and .Value (SQS; tags: Tag.N.Key and .Value);
//   - a number or boolean that does not read as one is left out: the
//     input's readForm reports it in the service's words
//     (InvalidParameterValue "... must be an integer").
//
// Each service reports a failure with its own code (validationCode): SQS
// a required parameter absent as MissingParameter ("The request must
// contain the parameter QueueUrl.") and an unknown attribute name as
// InvalidAttributeName ("Unknown Attribute Foo."); IAM and STS a
// constraint as ValidationError, in AWS's wording ("1 validation error
// detected: Value 'a b' at 'roleName' failed to satisfy constraint:
// Member must satisfy regular expression pattern: [\w+=,.@-]+").

import (
	"encoding/json"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/runnel-dev/runnel/awserr"
)

// validationCode is the code of a constraint failure by service, where it
// is not ValidationException: CloudWatch Logs' InvalidParameterException,
// IAM's and STS's ValidationError, SQS's InvalidParameterValue (SQS's
// model has no lengths or ranges; its required members and enums are
// reported as validation.missing and validation.unknown).
var validationCode = map[Service]*awserr.Error{
	CloudWatchLogs: awserr.ErrInvalidParameter,
	IAM:            awserr.ErrValidationError,
	STS:            awserr.ErrValidationError,
	SQS:            awserr.ErrSQSInvalidParameterValue,
}

// sqsQueryNames are the query protocol's names of SQS's flattened lists
// and maps that are not the member's name less its final "s".
var sqsQueryNames = map[string]string{
	"tags":    "Tag",
	"Tags":    "Tag",
	"Actions": "ActionName",
}

// validateForm checks a query-protocol form against op's input shape; nil
// when it holds, or when op's service has no model.
func validateForm(op *Operation, form url.Values) error {
	s := inputShape(op)
	if s == nil {
		return nil
	}
	v, _ := formValue(op.Service, s, form, "")
	if v == nil {
		v = map[string]any{}
	}
	vd := &validation{svc: op.Service, m: modelOf(op.Service), query: true}
	vd.value(s, v)
	return vd.err()
}

// formValue reads the value of shape s at key of the form; ok is false
// when the form has none.
func formValue(svc Service, s *shape, form url.Values, key string) (v any, ok bool) {
	switch s.Type {
	case "structure":
		obj := map[string]any{}
		for _, m := range s.Members {
			name := m.name
			if m.LocationName != "" {
				name = m.LocationName
			} else if svc == SQS {
				name = sqsQueryName(m)
			}
			if mv, ok := formValue(svc, m.shape, form, join(key, name)); ok {
				obj[m.wireName()] = mv
			}
		}
		return obj, len(obj) > 0
	case "list":
		if !s.Flattened {
			key += ".member"
		}
		var arr []any
		for _, n := range formIndexes(form, key) {
			e, _ := formValue(svc, s.Member.shape, form, key+"."+strconv.Itoa(n))
			arr = append(arr, e)
		}
		return arr, arr != nil
	case "map":
		k, val := ".entry.", []string{"key", "value"}
		if s.Flattened {
			k, val = ".", []string{"Name", "Value"}
			if strings.HasSuffix(key, "Tag") {
				val[0] = "Key"
			}
		}
		obj := map[string]any{}
		for _, n := range formIndexes(form, key+strings.TrimSuffix(k, ".")) {
			p := key + k + strconv.Itoa(n) + "."
			if mv, ok := formValue(svc, s.Value.shape, form, p+val[1]); ok {
				obj[form.Get(p+val[0])] = mv
			}
		}
		return obj, len(obj) > 0
	}
	vs, ok := form[key]
	if !ok || len(vs) == 0 {
		return nil, false
	}
	str := vs[0]
	switch s.Type {
	case "integer", "long", "double", "float":
		if _, err := strconv.ParseFloat(str, 64); err != nil {
			return nil, false
		}
		return json.Number(str), true
	case "boolean":
		b, err := strconv.ParseBool(str)
		return b, err == nil
	}
	return str, true
}

// formIndexes returns the N of the keys prefix.N[.…], in order.
func formIndexes(form url.Values, prefix string) []int {
	var ns []int
	for k := range form {
		rest, ok := strings.CutPrefix(k, prefix+".")
		if !ok {
			continue
		}
		num, _, _ := strings.Cut(rest, ".")
		if n, err := strconv.Atoi(num); err == nil && n > 0 && !slices.Contains(ns, n) {
			ns = append(ns, n)
		}
	}
	slices.Sort(ns)
	return ns
}

// sqsQueryName is the query protocol's name of an SQS member: a
// flattened list of structures takes its entry shape's name, another
// flattened list or map the singular of the member's name.
func sqsQueryName(m *memberRef) string {
	s := m.shape
	switch {
	case !s.Flattened:
		return m.name
	case sqsQueryNames[m.name] != "":
		return sqsQueryNames[m.name]
	case s.Type == "list" && s.Member.shape.Type == "structure":
		return s.Member.Shape
	}
	return strings.TrimSuffix(m.name, "s")
}

// sqsAttributeName reports whether v is an attribute name of any of SQS's
// enums: ReceiveMessage's deprecated AttributeNames take message system
// attribute names under the queue attributes' enum.
func sqsAttributeName(m *model, v string) bool {
	for _, n := range []string{"QueueAttributeName", "MessageSystemAttributeName"} {
		if s := m.Shapes[n]; s != nil && slices.Contains(s.Enum, v) {
			return true
		}
	}
	return false
}

// sqsParameter names a member's path as SQS's messages name parameters:
// "entries.1.member.id" is "Entries.1.Id".
func sqsParameter(path string) string {
	var parts []string
	for _, p := range strings.Split(path, ".") {
		if p != "member" {
			parts = append(parts, strings.ToUpper(p[:1])+p[1:])
		}
	}
	return strings.Join(parts, ".")
}

func join(key, name string) string {
	if key == "" {
		return name
	}
	return key + "." + name
}
