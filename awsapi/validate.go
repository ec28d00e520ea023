package awsapi

// Validation of a JSON request against its operation's input shape in the
// service's model (model.go), before the operation runs and before any
// resource is looked up, as AWS's services do:
//
//   - a value of the wrong JSON type (a number where the model has a
//     string, a list where it has a structure) is a SerializationException,
//     worded as AWS's JSON reader words it ("NUMBER_VALUE cannot be
//     converted to String");
//   - then every constraint of the model (required members, lengths,
//     ranges, patterns, enums), in the model's member order, is one
//     failure of a ValidationException: "1 validation error detected:
//     Value 'x' at 'streamName' failed to satisfy constraint: Member must
//     have length less than or equal to 128", or "N validation errors
//     detected: …; …" for several;
//   - then the service's own rules on values (DynamoDB's AttributeValue,
//     validate_dynamodb.go).
//
// The value is the member's path in lower camel case, list elements as
// "<list>.<n>.member" (from 1), map values as "<map>.<key>.member".

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"iter"
	"maps"
	"math/big"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/runnel-dev/runnel/awserr"
)

// modelExtras are the values runnel takes beyond a model's constraints,
// by service and shape: Lambda's runtime of in-process functions
// ("runnel"), and a role given by its name alone (stored as the ARN of
// that role in the engine's account).
var modelExtras = map[Service]map[string]func(string) bool{
	Lambda: {
		"Runtime": func(v string) bool { return v == "runnel" },
		"RoleArn": roleName.MatchString,
	},
}

var roleName = regexp.MustCompile(`^[a-zA-Z_0-9+=,.@\-_/]{1,64}$`)

// validation is one request's validation under way.
type validation struct {
	svc   Service
	m     *model
	uri   map[string]string
	fails []string
	// serial is the first type mismatch: nothing else is reported then.
	serial error
	// rule is the first failure of a service's own rule, reported when
	// the model's constraints all hold; eavRule DynamoDB's first under
	// ExpressionAttributeValues, which it reports later
	// (dynamodb_order.go); skRule and kcRule DynamoDB's first under a
	// Query's or Scan's ExclusiveStartKey and a Query's KeyConditions,
	// which it reports after the others and AttributesToGet's duplicates,
	// in that order (wrapStartKey).
	rule, eavRule, skRule, kcRule error
	// missing and unknown are SQS's first required parameter absent and
	// first value outside an enum (every SQS enum is of attribute names):
	// SQS reports them as MissingParameter and InvalidAttributeName, not
	// as a ValidationException (sqsModelError).
	missing, unknown string
	// query: the request is a query-protocol form, where an empty list
	// is an absent one: a required list is the operation's to require
	// (SendMessageBatch's EmptyBatchRequest).
	query bool
	// at is the path of the value being checked, one step a level; its
	// string (path) is built only for a failure.
	at []pathStep
}

// pathStep is one level of a value's path: a structure's member (name,
// in lower camel case), a list's element (elem, from 1) or a map's value
// (name is the key, mapValue set).
type pathStep struct {
	name     string
	elem     int
	mapValue bool
}

// path is the path of the value being checked: members joined by ".",
// list elements as "<list>.<n>.member", map values as "<map>.<key>.member".
func (vd *validation) path() string {
	var b strings.Builder
	for i, st := range vd.at {
		if i > 0 {
			b.WriteByte('.')
		}
		switch {
		case st.elem > 0:
			b.WriteString(strconv.Itoa(st.elem))
			b.WriteString(".member")
		case st.mapValue:
			b.WriteString(st.name)
			b.WriteString(".member")
		default:
			b.WriteString(st.name)
		}
	}
	return b.String()
}

func (vd *validation) enter(st pathStep) { vd.at = append(vd.at, st) }
func (vd *validation) leave()            { vd.at = vd.at[:len(vd.at)-1] }

// outcome is what a validation has found so far (see value's maps).
type outcome struct {
	fails                                 int
	serial, rule, eavRule, skRule, kcRule error
	missing, unknown                      string
}

func (vd *validation) outcome() outcome {
	return outcome{len(vd.fails), vd.serial, vd.rule, vd.eavRule, vd.skRule, vd.kcRule, vd.missing, vd.unknown}
}

// foundSince reports whether the validation has found anything since o
// (each finding but fails is kept only when it is the first).
func (vd *validation) foundSince(o outcome) bool {
	return len(vd.fails) != o.fails || (vd.serial != nil) != (o.serial != nil) || (vd.rule != nil) != (o.rule != nil) || (vd.eavRule != nil) != (o.eavRule != nil) ||
		(vd.skRule != nil) != (o.skRule != nil) || (vd.kcRule != nil) != (o.kcRule != nil) || vd.missing != o.missing || vd.unknown != o.unknown
}

func (vd *validation) restore(o outcome) {
	vd.fails = vd.fails[:o.fails]
	vd.serial, vd.rule, vd.eavRule, vd.skRule, vd.kcRule, vd.missing, vd.unknown = o.serial, o.rule, o.eavRule, o.skRule, o.kcRule, o.missing, o.unknown
}

// validateJSON checks a JSON body against op's input shape; nil when it
// holds, or when op's service has no model. uri holds the values of the
// members Lambda takes in the path, by location name.
func validateJSON(op *Operation, body []byte, uri map[string]string) error {
	_, err := validateJSONValue(op, body, uri)
	return err
}

// validateJSONValue is validateJSON, and returns the body as it read it
// (json.Decoder with UseNumber; an empty body is {}), or nil when it
// did not read it (no model, a payload member, a body that does not
// parse).
func validateJSONValue(op *Operation, body []byte, uri map[string]string) (any, error) {
	s := inputShape(op)
	if s == nil || s.Payload != "" {
		return nil, nil
	}
	var v any = map[string]any{}
	if body = bytes.TrimSpace(body); len(body) > 0 {
		d := json.NewDecoder(bytes.NewReader(body))
		d.UseNumber()
		if err := d.Decode(&v); err != nil {
			if op.Service == Kinesis {
				return nil, serialization(op.Service, "") // Kinesis says nothing more
			}
			return nil, serialization(op.Service, "%v", err)
		}
		if d.More() {
			return nil, serialization(op.Service, "unexpected data after the request's JSON object")
		}
	}
	vd := &validation{svc: op.Service, m: modelOf(op.Service), uri: uri}
	vd.value(s, v)
	if op.Service == DynamoDB && vd.serial == nil {
		if err := dynamoFirst(op.Name, v); err != nil {
			return v, err
		}
	}
	if op.Service == DynamoDB && vd.serial == nil && len(vd.fails) == 0 {
		return v, dynamoRequestChecks(op.Name, v, valueRules{vd.rule, vd.skRule, vd.kcRule}, vd.eavRule)
	}
	return v, vd.err()
}

// serialization is the error of a body that does not read as the input
// shape: SerializationException, and Lambda's InvalidRequestContentException
// ("Could not parse request body into json: ...").
func serialization(svc Service, format string, args ...any) error {
	if svc == Lambda {
		return awserr.New(awserr.ErrInvalidRequestContent, "Could not parse request body into json: "+format, args...)
	}
	return awserr.New(awserr.ErrSerialization, format, args...)
}

// err is the validation's result.
func (vd *validation) err() error {
	code := validationCode[vd.svc]
	if code == nil {
		code = awserr.ErrValidation
	}
	if vd.svc == DynamoDB && len(vd.fails) > maxDynamoFails {
		vd.fails = vd.fails[:maxDynamoFails] // DynamoDB reports the first ten
	}
	switch {
	case vd.serial != nil:
		return vd.serial
	case vd.missing != "":
		return awserr.New(awserr.ErrMissingParameter, "The request must contain the parameter %s.", vd.missing)
	case vd.unknown != "":
		return awserr.New(awserr.ErrInvalidAttributeName, "Unknown Attribute %s.", vd.unknown)
	case len(vd.fails) == 1:
		return awserr.New(code, "1 validation error detected: %s", vd.fails[0])
	case len(vd.fails) > 1:
		return awserr.New(code, "%d validation errors detected: %s", len(vd.fails), strings.Join(vd.fails, "; "))
	}
	return vd.rule
}

// fail records a constraint the value v at the current path does not
// satisfy.
func (vd *validation) fail(v any, constraint string, args ...any) {
	vd.fails = append(vd.fails, fmt.Sprintf("Value %s at '%s' failed to satisfy constraint: Member must ", render(v), vd.path())+fmt.Sprintf(constraint, args...))
}

// mismatch records a value of the wrong JSON type for s.
func (vd *validation) mismatch(s *shape, v any) {
	if vd.serial != nil {
		return
	}
	var msg string
	switch v.(type) {
	case map[string]any:
		msg = "Start of structure or map found where not expected."
	case []any:
		msg = "Start of list found where not expected."
	default:
		msg = fmt.Sprintf("%s cannot be converted to %s", tokenName(v), javaType(s))
	}
	switch vd.svc {
	case Kinesis:
		msg = kinesisMismatch(s, v)
	case DynamoDB, DynamoDBStreams:
		field := len(vd.at) > 0 && vd.at[len(vd.at)-1].elem == 0 && !vd.at[len(vd.at)-1].mapValue
		msg = dynamoMismatch(s, v, field)
	}
	vd.serial = serialization(vd.svc, "%s", msg)
}

// value checks v (not null), at the current path, against s.
func (vd *validation) value(s *shape, v any) {
	if vd.serial != nil {
		return
	}
	switch s.Type {
	case "structure":
		obj, ok := v.(map[string]any)
		if !ok {
			vd.mismatch(s, v)
			return
		}
		for _, m := range s.Members {
			var mv any
			switch {
			case m.Location == "uri" && len(vd.at) == 0 && vd.uri[m.LocationName] != "":
				mv = vd.uri[m.LocationName]
			case m.Location != "":
				continue // the endpoint reads headers and query strings itself
			default:
				mv = obj[m.wireName()]
			}
			vd.enter(pathStep{name: m.lower})
			if mv == nil {
				switch {
				case !s.req[m.name], vd.query && m.shape.Type == "list":
				case vd.svc == SQS && vd.missing == "":
					vd.missing = sqsParameter(vd.path())
				case vd.svc != SQS:
					vd.fail(nil, "not be null")
				}
			} else {
				vd.value(m.shape, mv)
			}
			vd.leave()
		}
	case "list":
		arr, ok := v.([]any)
		if !ok {
			vd.mismatch(s, v)
			return
		}
		vd.length(s, v, len(arr))
		if vd.svc == Kinesis && s.Member.shape.Type == "string" {
			vd.kinesisStringList(s, arr)
			break
		}
		for i, e := range arr {
			if e != nil {
				vd.enter(pathStep{elem: i + 1})
				vd.value(s.Member.shape, e)
				vd.leave()
			}
		}
	case "map":
		obj, ok := v.(map[string]any)
		if !ok {
			vd.mismatch(s, v)
			return
		}
		vd.length(s, v, len(obj))
		// Failures are reported in the keys' order: the entries are
		// checked as the map gives them, and again in order (the first
		// pass's findings dropped) only when they found something.
		before := vd.outcome()
		vd.mapEntries(s, obj, maps.Keys(obj))
		if vd.foundSince(before) {
			vd.restore(before)
			vd.mapEntries(s, obj, slices.Values(sortedKeys(obj)))
		}
	default:
		vd.scalar(s, v)
	}
	if s.rule != nil && vd.serial == nil {
		switch key := eavKey(vd.at); {
		case vd.svc == DynamoDB && len(vd.at) > 0 && vd.at[0].name == "exclusiveStartKey":
			if vd.skRule == nil {
				vd.skRule = wrapStartKey(s.rule(v))
			}
		case vd.svc == DynamoDB && len(vd.at) > 0 && vd.at[0].name == "keyConditions":
			if vd.kcRule == nil {
				vd.kcRule = s.rule(v)
			}
		case vd.svc == DynamoDB && key != "":
			if vd.eavRule == nil {
				if err := s.rule(v); err != nil {
					vd.eavRule = wrapEAV(err, key)
				}
			}
		case vd.rule == nil:
			vd.rule = s.rule(v)
		}
	}
}

// mapEntries checks the keys and values of a map of shape s, in the
// order of keys.
func (vd *validation) mapEntries(s *shape, obj map[string]any, keys iter.Seq[string]) {
	for k := range keys {
		vd.scalar(s.Key.shape, k)
		if obj[k] != nil {
			vd.enter(pathStep{name: k, mapValue: true})
			vd.value(s.Value.shape, obj[k])
			vd.leave()
		}
	}
}

// scalar checks a string, number, boolean, blob or timestamp.
func (vd *validation) scalar(s *shape, v any) {
	switch s.Type {
	case "string":
		str, ok := v.(string)
		if !ok {
			vd.mismatch(s, v)
			return
		}
		if s.extra != nil && s.extra(str) {
			return
		}
		before := len(vd.fails)
		if vd.svc != Kinesis { // Kinesis reports the pattern first
			vd.length(s, v, javaLength(str))
		}
		if s.re != nil && !s.re.MatchString(str) {
			vd.fail(v, "satisfy regular expression pattern: %s", s.Pattern)
		}
		if vd.svc == Kinesis {
			vd.length(s, v, javaLength(str))
		}
		if len(s.Enum) > 0 && !slices.Contains(s.Enum, str) && vd.svc == SQS {
			if vd.unknown == "" && !sqsAttributeName(vd.m, str) {
				vd.unknown = str
			}
		} else if len(s.Enum) > 0 && !slices.Contains(s.Enum, str) {
			vd.fail(v, "satisfy enum value set: [%s]", strings.Join(s.Enum, ", "))
		}
		if vd.svc == DynamoDB && s.name == "TableArn" && len(vd.fails) == before {
			vd.tableNameRule(str)
		}
	case "blob":
		str, ok := v.(string)
		if !ok {
			vd.mismatch(s, v)
			return
		}
		// The length decoded; whether it decodes is the decoder's to say
		// (a SerializationException), without a second decoding here. A
		// blob is written in messages as AWS's Java writes it, not echoed.
		if vd.svc == Kinesis {
			if why := kinesisBase64(str); why != "" {
				vd.serial = serialization(vd.svc, "'%s' can not be converted to a Blob: %s", str, why)
				return
			}
		}
		if vd.svc == DynamoDB || vd.svc == DynamoDBStreams {
			if why := dynamoBase64(str); why != "" {
				vd.serial = serialization(vd.svc, "%s", why)
				return
			}
		}
		n := base64.RawStdEncoding.DecodedLen(len(strings.TrimRight(str, "=")))
		vd.length(s, javaBlob(n), n)
	case "boolean":
		if _, ok := v.(bool); !ok {
			vd.mismatch(s, v)
		}
	case "timestamp":
		switch t := v.(type) {
		case json.Number:
		case string:
			if _, err := strconv.ParseFloat(t, 64); err != nil && !isTimestamp(t) {
				vd.serial = serialization(vd.svc, "Unable to parse date value %q", t)
			}
		default:
			vd.mismatch(s, v)
		}
	case "integer", "long", "double", "float":
		n, ok := v.(json.Number)
		if !ok {
			vd.mismatch(s, v)
			return
		}
		vd.number(s, n)
	}
}

// number checks a number's type and range.
func (vd *validation) number(s *shape, n json.Number) {
	f, ok := new(big.Float).SetString(string(n))
	if !ok {
		vd.mismatch(s, n)
		return
	}
	if s.Type == "integer" || s.Type == "long" {
		i, acc := f.Int64()
		bits := 64
		if s.Type == "integer" {
			bits = 32
		}
		switch {
		case acc == big.Exact && i >= -1<<(bits-1) && i <= 1<<(bits-1)-1:
		case vd.svc == Kinesis:
			f = kinesisTruncate(f, s.Type)
		default:
			vd.serial = serialization(vd.svc, "NUMBER_VALUE %s cannot be converted to %s", n, javaType(s))
			return
		}
	}
	if s.Min != nil && f.Cmp(big.NewFloat(*s.Min)) < 0 {
		vd.fail(n, "have value greater than or equal to %s", bound(*s.Min))
	}
	if s.Max != nil && f.Cmp(big.NewFloat(*s.Max)) > 0 {
		vd.fail(n, "have value less than or equal to %s", bound(*s.Max))
	}
}

// length checks the length of a string, blob, list or map.
func (vd *validation) length(s *shape, v any, n int) {
	if s.Min != nil && float64(n) < *s.Min {
		vd.fail(v, "have length greater than or equal to %s", bound(*s.Min))
	}
	if s.Max != nil && float64(n) > *s.Max {
		vd.fail(v, "have length less than or equal to %s", bound(*s.Max))
	}
}

// render writes a value as AWS's messages do: null, or the value in
// single quotes (lists and maps as Java writes them).
func render(v any) string {
	if v == nil {
		return "null"
	}
	return "'" + javaString(v) + "'"
}

func javaString(v any) string {
	switch t := v.(type) {
	case nil:
		return "null"
	case []any:
		parts := make([]string, len(t))
		for i, e := range t {
			parts[i] = javaString(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case map[string]any:
		keys := sortedKeys(t)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = k + "=" + javaString(t[k])
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	return fmt.Sprint(v)
}

// javaBlob is how AWS's messages write a blob of n bytes.
type javaBlob int

func (n javaBlob) String() string {
	return fmt.Sprintf("java.nio.HeapByteBuffer[pos=0 lim=%d cap=%d]", int(n), int(n))
}

// tokenName is the JSON token's name in AWS's serialization messages.
func tokenName(v any) string {
	switch t := v.(type) {
	case string:
		return "STRING_VALUE"
	case json.Number:
		return "NUMBER_VALUE"
	case bool:
		if t {
			return "TRUE_VALUE"
		}
		return "FALSE_VALUE"
	}
	return "VALUE"
}

// javaType is the type a shape is read as, as AWS's messages name it.
func javaType(s *shape) string {
	switch s.Type {
	case "string":
		return "String"
	case "blob":
		return "Blob"
	case "boolean":
		return "Boolean"
	case "timestamp":
		return "Date"
	case "integer":
		return "Integer"
	case "long":
		return "Long"
	case "double", "float":
		return "Double"
	case "list":
		return "List"
	}
	return "Structure"
}

// bound writes a model's bound as an integer when it is one.
func bound(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// isTimestamp reports whether t is an ISO 8601 date (a timestamp may be
// written either way).
func isTimestamp(t string) bool {
	_, err := time.Parse(time.RFC3339Nano, t)
	return err == nil
}

// javaLength is the length of s as Java counts it (UTF-16 code units),
// which the models' string lengths are in.
func javaLength(s string) int {
	n := 0
	for _, r := range s {
		n++
		if r >= 0x10000 {
			n++
		}
	}
	return n
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
