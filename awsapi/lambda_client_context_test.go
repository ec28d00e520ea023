package awsapi_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	ltypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/testenv"
)

// TestInvokeClientContextReachesTheFunction: Invoke's ClientContext
// (base64 JSON in X-Amz-Client-Context) reaches a synchronous
// invocation's function in its context object (API_Invoke: "Lambda passes
// the ClientContext object to your function for synchronous invocations
// only"), and an Event invocation's function sees none. One over 3,583
// bytes of base64, one that is not base64 and one that is not a JSON
// object are InvalidRequestContentException, and the function does not
// run.
func TestInvokeClientContextReachesTheFunction(t *testing.T) {
	ctx := context.Background()
	rn := testenv.Start(t, testenv.Options{})
	lc, _ := lambdaEndpoint(t, rn)
	var calls atomic.Int64
	seen := make(chan string, 4)
	function.Register("lambdatest-client-context", func(ctx context.Context, ev json.RawMessage) (any, error) {
		calls.Add(1)
		l, _ := lambdacontext.FromContext(ctx)
		seen <- l.ClientContext.Custom["caller"] + "|" + l.ClientContext.Client.AppTitle
		return map[string]string{"caller": l.ClientContext.Custom["caller"]}, nil
	})
	lambdaMust(lc.CreateFunction(ctx, &lambda.CreateFunctionInput{
		FunctionName: aws.String("cc"), Role: aws.String("arn:aws:iam::000000000000:role/r"),
		Runtime: "runnel", Handler: aws.String("lambdatest-client-context"), Code: &ltypes.FunctionCode{},
	}))
	cc := base64.StdEncoding.EncodeToString([]byte(`{"custom":{"caller":"mobile"},"client":{"app_title":"shop"},"env":{"locale":"en"}}`))
	out := lambdaMust(lc.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String("cc"), ClientContext: aws.String(cc)}))
	if got := <-seen; got != "mobile|shop" {
		t.Fatalf("the function saw custom.caller|client.app_title %q, want mobile|shop", got)
	}
	if string(out.Payload) != `{"caller":"mobile"}` {
		t.Fatalf("payload %s", out.Payload)
	}

	ev := lambdaMust(lc.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String("cc"), ClientContext: aws.String(cc), InvocationType: ltypes.InvocationTypeEvent}))
	if ev.StatusCode != 202 {
		t.Fatalf("Event invoke: status %d", ev.StatusCode)
	}
	if got := <-seen; got != "|" {
		t.Fatalf("an Event invocation's function saw a ClientContext: %q", got)
	}

	before := calls.Load()
	long := base64.StdEncoding.EncodeToString([]byte(`{"custom":{"x":"` + strings.Repeat("a", 2700) + `"}}`))
	if len(long) <= function.MaxClientContextSize {
		t.Fatalf("the long ClientContext has %d bytes", len(long))
	}
	for _, bad := range map[string]string{"over 3583 bytes": long, "not base64": "not*base64", "not a JSON object": base64.StdEncoding.EncodeToString([]byte(`[1,2]`))} {
		_, err := lc.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String("cc"), ClientContext: aws.String(bad)})
		wantLambdaErr[*ltypes.InvalidRequestContentException](t, err, "lient context")
	}
	// The longest accepted: 3,583 bytes of base64 (a multiple of 4 is
	// 3,580; padded JSON fills it).
	fit := `{"custom":{"x":"` + strings.Repeat("b", 2665) + `"}}`
	if n := len(base64.StdEncoding.EncodeToString([]byte(fit))); n > function.MaxClientContextSize || n < function.MaxClientContextSize-4 {
		t.Fatalf("the fitting ClientContext has %d bytes of base64", n)
	}
	lambdaMust(lc.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String("cc"), ClientContext: aws.String(base64.StdEncoding.EncodeToString([]byte(fit)))}))
	<-seen
	if n := calls.Load() - before; n != 1 {
		t.Fatalf("the function ran %d times for three refused invokes and one accepted", n)
	}
}

// TestPythonFunctionReadsClientContextAsAttributes: a Python function
// reads the ClientContext as the AWS Python runtime gives it, objects
// with attributes (context.client_context.custom,
// context.client_context.client.app_title), and context.identity is an
// object whose fields are None when the invoke had no Cognito identity.
// Before, client_context was the decoded dict (.custom failed) and
// identity None.
func TestPythonFunctionReadsClientContextAsAttributes(t *testing.T) {
	ctx := context.Background()
	_, cfg := pythonFunction(t)
	lc := lambda.NewFromConfig(cfg)
	code := zipFiles(t, map[string]string{"cc.py": "def handler(event, context):\n" +
		"    c = context.client_context\n" +
		"    if c is None:\n        return {'none': True}\n" +
		"    return {'caller': c.custom['caller'], 'title': c.client.app_title, 'env': c.env, 'identity': context.identity.cognito_identity_id}\n"})
	lambdaMust(lc.CreateFunction(ctx, &lambda.CreateFunctionInput{FunctionName: aws.String("pycc"), Runtime: ltypes.RuntimePython312,
		Handler: aws.String("cc.handler"), Role: aws.String("arn:aws:iam::000000000000:role/r"), Code: &ltypes.FunctionCode{ZipFile: code}}))
	cc := base64.StdEncoding.EncodeToString([]byte(`{"custom":{"caller":"mobile"},"client":{"app_title":"shop"},"env":{"locale":"en"}}`))
	out := lambdaMust(lc.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String("pycc"), ClientContext: aws.String(cc)}))
	if out.FunctionError != nil || string(out.Payload) != `{"caller": "mobile", "title": "shop", "env": {"locale": "en"}, "identity": null}` {
		t.Fatalf("with a ClientContext: %v %s", aws.ToString(out.FunctionError), out.Payload)
	}
	out = lambdaMust(lc.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String("pycc")}))
	if out.FunctionError != nil || string(out.Payload) != `{"none": true}` {
		t.Fatalf("without one: %v %s", aws.ToString(out.FunctionError), out.Payload)
	}
}
