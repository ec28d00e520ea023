package function

import (
	"context"
	"encoding/base64"
	"encoding/json"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/runnel-dev/runnel/awserr"
)

// MaxClientContextSize is the largest ClientContext an Invoke takes: 3,583
// bytes of base64 text (API_Invoke, X-Amz-Client-Context: "Up to 3,583
// bytes of base64-encoded data about the invoking client").
const MaxClientContextSize = 3583

// ParseClientContext reads Invoke's ClientContext (the X-Amz-Client-Context
// header): base64 (standard, padded) of a JSON object, at most
// MaxClientContextSize bytes of base64. It returns the decoded JSON.
// Errors: InvalidRequestContentException (400) for a longer one, one that
// is not base64, or one whose text is not a JSON object (runnel's words;
// Lambda's own for these are not documented).
func ParseClientContext(b64 string) ([]byte, error) {
	if len(b64) > MaxClientContextSize {
		return nil, awserr.New(awserr.ErrInvalidRequestContent, "Client context must be at most %d bytes of base64-encoded JSON; it has %d.", MaxClientContextSize, len(b64))
	}
	raw, err := base64.StdEncoding.DecodeString(b64)
	var obj map[string]json.RawMessage
	if err != nil || json.Unmarshal(raw, &obj) != nil {
		return nil, awserr.New(awserr.ErrInvalidRequestContent, "Client context must be a valid Base64-encoded JSON object.")
	}
	return raw, nil
}

type clientContextKey struct{}

// WithClientContext returns ctx carrying an invocation's ClientContext,
// the JSON ParseClientContext returned: Invoke passes it to the function
// (Lambda does so for synchronous invocations only; the caller decides).
// An in-process handler finds it in lambdacontext.FromContext(ctx)
// .ClientContext (as aws-lambda-go decodes it: Custom and Env keep their
// string values); a process function's runtime gets the JSON as sent, in
// the Lambda-Runtime-Client-Context header.
func WithClientContext(ctx context.Context, raw []byte) context.Context {
	if len(raw) == 0 {
		return ctx
	}
	return context.WithValue(ctx, clientContextKey{}, raw)
}

// ClientContextOf returns the ClientContext JSON ctx carries (nil: none).
func ClientContextOf(ctx context.Context) []byte {
	raw, _ := ctx.Value(clientContextKey{}).([]byte)
	return raw
}

// lambdaClientContext decodes raw as aws-lambda-go decodes the runtime's
// header (a value of another type than it expects is left out).
func lambdaClientContext(raw []byte) lambdacontext.ClientContext {
	var cc lambdacontext.ClientContext
	if json.Unmarshal(raw, &cc) == nil {
		return cc
	}
	// One field of an unexpected type fails the whole decode: decode
	// field by field.
	var parts struct {
		Client json.RawMessage `json:"client"`
		Env    json.RawMessage `json:"env"`
		Custom json.RawMessage `json:"custom"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return cc
	}
	json.Unmarshal(parts.Client, &cc.Client)
	json.Unmarshal(parts.Env, &cc.Env)
	json.Unmarshal(parts.Custom, &cc.Custom)
	return cc
}

type requestIDKey struct{}

// WithRequestID returns ctx carrying the request id Invoke gives the
// invocation (its Result.RequestID, the function's context
// aws_request_id, its START/END/REPORT lines). Asynchronous invocation
// passes the event's id: every retry of an event runs with the id Invoke
// returned for it and its destination record names, as on Lambda
// ("Duplicate invocations ... that have the same request ID indicate that
// the Lambda service retried the function", knowledge-center
// lambda-function-duplicate-invocations). Without it, a new UUID.
func WithRequestID(ctx context.Context, id string) context.Context {
	if id == "" {
		return ctx
	}
	return context.WithValue(ctx, requestIDKey{}, id)
}
