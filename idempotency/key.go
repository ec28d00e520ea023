package idempotency

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/jmespath-community/go-jmespath"
)

// Powertools' JMESPath functions, for envelopes whose interesting part is
// a string: powertools_json(body) parses a JSON string (an SQS body, an
// API Gateway body), powertools_base64(data) decodes base64 to a string
// (Kinesis data), powertools_base64_gzip(data) decodes and gunzips
// (CloudWatch Logs).
var powertoolsFunctions = []jmespath.FunctionEntry{
	{Name: "powertools_json", Arguments: []jmespath.ArgSpec{{Types: []jmespath.JpType{jmespath.JpString}}}, Handler: func(args []any) (any, error) {
		return decodeJSON([]byte(args[0].(string)))
	}},
	{Name: "powertools_base64", Arguments: []jmespath.ArgSpec{{Types: []jmespath.JpType{jmespath.JpString}}}, Handler: func(args []any) (any, error) {
		b, err := base64.StdEncoding.DecodeString(args[0].(string))
		return string(b), err
	}},
	{Name: "powertools_base64_gzip", Arguments: []jmespath.ArgSpec{{Types: []jmespath.JpType{jmespath.JpString}}}, Handler: func(args []any) (any, error) {
		b, err := base64.StdEncoding.DecodeString(args[0].(string))
		if err != nil {
			return nil, err
		}
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, err
		}
		out, err := io.ReadAll(zr)
		return string(out), err
	}},
}

var jmespathCache sync.Map // expression -> jmespath.JMESPath

// compileJMESPath compiles an expression with Powertools' functions,
// once per expression per process (Do is called per record).
func compileJMESPath(expr string) (jmespath.JMESPath, error) {
	if jp, ok := jmespathCache.Load(expr); ok {
		return jp.(jmespath.JMESPath), nil
	}
	jp, err := jmespath.Compile(expr, powertoolsFunctions...)
	if err != nil {
		return nil, err
	}
	jmespathCache.Store(expr, jp)
	return jp, nil
}

// toJSONValue turns a payload into the generic JSON value JMESPath
// searches: a json.RawMessage or []byte is parsed, anything else is
// marshalled first.
func toJSONValue(payload any) (any, error) {
	var b []byte
	switch p := payload.(type) {
	case json.RawMessage:
		b = p
	case []byte:
		b = p
	default:
		var err error
		if b, err = json.Marshal(payload); err != nil {
			return nil, fmt.Errorf("idempotency: payload of type %T is not JSON: %w", payload, err)
		}
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, nil
	}
	return decodeJSON(b)
}

// decodeJSON parses JSON into maps, slices, strings, bools, nil and
// numbers: float64 for numbers with a fraction or exponent and for
// integers of at most 2^53 (where float64 is exact), json.Number for
// larger integers, so two big identifiers never hash alike.
func decodeJSON(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return numbers(v), nil
}

func numbers(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			t[k] = numbers(x)
		}
	case []any:
		for i, x := range t {
			t[i] = numbers(x)
		}
	case json.Number:
		s := string(t)
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return t
		}
		if strings.ContainsAny(s, ".eE") || math.Abs(f) <= 1<<53 {
			return f
		}
		return t
	}
	return v
}

// missingKey is Powertools' is_missing_idempotency_key: nil, "", an
// empty object, or a list whose elements are all nil. Numbers and
// booleans are never missing.
func missingKey(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case string:
		return t == ""
	case map[string]any:
		return len(t) == 0
	case []any:
		for _, x := range t {
			if x != nil {
				return false
			}
		}
		return true
	case bool, float64, json.Number:
		return false
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer, reflect.Interface:
		return rv.IsNil()
	case reflect.String, reflect.Map, reflect.Slice:
		return rv.Len() == 0
	}
	return false
}

// Hash returns the MD5 hex of v's canonical JSON: v as encoding/json
// writes it after a round trip through the generic form (object keys
// sorted, no spaces, numbers as decodeJSON keeps them). This is the
// hash part of the key and the validation hash.
//
// Not byte-compatible with Powertools for Python (json.dumps writes
// ", " and ": "), so Go and Python functions never share records; they
// would not anyway, since the key names the handler.
func Hash(v any) (string, error) {
	g, err := toJSONValue(v)
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(g)
	if err != nil {
		return "", err
	}
	sum := md5.Sum(b)
	return hex.EncodeToString(sum[:]), nil
}

// funcName is the Go name of a function value without its import path
// ("main.handle"), Powertools' module.qualname.
func funcName(fn any) string {
	v := reflect.ValueOf(fn)
	if v.Kind() != reflect.Func || v.IsNil() {
		return ""
	}
	f := runtime.FuncForPC(v.Pointer())
	if f == nil {
		return ""
	}
	name := f.Name()
	if i := strings.LastIndex(name, "/"); i >= 0 {
		name = name[i+1:]
	}
	return name
}

// functionName is Config.FunctionName's default chain.
func functionName(ctx context.Context, configured string) string {
	if configured != "" {
		return configured
	}
	if env := os.Getenv(FunctionNameEnv); env != "" {
		return env
	}
	if lc, ok := lambdacontext.FromContext(ctx); ok && lc.InvokedFunctionArn != "" {
		// arn:aws:lambda:<region>:<account>:function:<name>[:<qualifier>]
		parts := strings.Split(lc.InvokedFunctionArn, ":")
		if len(parts) >= 7 && parts[5] == "function" {
			return parts[6]
		}
	}
	return "test-func"
}
