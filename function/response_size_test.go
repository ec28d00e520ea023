package function_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/function/async"
	"github.com/runnel-dev/runnel/internal/testenv"
)

// A synchronous invocation's response may be at most 6 MB: Lambda answers
// one over it with a 200, X-Amz-Function-Error Unhandled and
// {"errorType":"Function.ResponseSizeTooLarge","errorMessage":"Response
// payload size exceeded maximum allowed payload size (6291556 bytes)."}
// (docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html,
// "Invocation payload (request and response) 6 MB each for synchronous";
// the limit and words of the runtime interface, as
// function/process/runtimeapi.go has them). Process functions refused it
// already; an in-process (Runtime "runnel") function's response over the
// limit used to be returned as it was.
func TestAnInProcessResponseOverSixMBIsResponseSizeTooLarge(t *testing.T) {
	ctx := context.Background()
	reg := function.NewRegistry()
	// The handler answers a JSON string of N bytes in all (quotes included).
	if err := reg.Register("sized", func(_ context.Context, in struct{ N int }) (string, error) {
		return strings.Repeat("x", in.N-2), nil
	}); err != nil {
		t.Fatal(err)
	}
	rn := testenv.Start(t, testenv.Options{Registry: reg})
	if _, err := rn.Functions.CreateFunction(ctx, function.Config{FunctionName: "big", Handler: "sized"}); err != nil {
		t.Fatal(err)
	}
	if function.MaxResponseSize != 6291556 {
		t.Fatalf("MaxResponseSize = %d, want 6291556", function.MaxResponseSize)
	}
	invoke := func(n int) *async.InvokeOutput {
		t.Helper()
		out, err := rn.Async.Invoke(ctx, "big", async.RequestResponse, fmt.Appendf(nil, `{"N":%d}`, n))
		if err != nil {
			t.Fatalf("Invoke(N=%d): %v", n, err)
		}
		return out
	}
	if out := invoke(function.MaxResponseSize); out.StatusCode != 200 || out.FunctionError != "" || len(out.Payload) != function.MaxResponseSize {
		t.Fatalf("a response of exactly %d bytes: status %d, FunctionError %q, %d bytes; want 200, none, the response",
			function.MaxResponseSize, out.StatusCode, out.FunctionError, len(out.Payload))
	}
	out := invoke(function.MaxResponseSize + 1)
	if out.StatusCode != 200 || out.FunctionError != function.FunctionErrorUnhandled {
		t.Fatalf("a response one byte over: status %d, FunctionError %q; want 200, Unhandled", out.StatusCode, out.FunctionError)
	}
	var e map[string]any
	if err := json.Unmarshal(out.Payload, &e); err != nil || len(out.Payload) > 1000 {
		t.Fatalf("a response one byte over: payload of %d bytes, not the error object (%v)", len(out.Payload), err)
	}
	want := map[string]any{"errorType": "Function.ResponseSizeTooLarge",
		"errorMessage": "Response payload size exceeded maximum allowed payload size (6291556 bytes)."}
	if fmt.Sprint(e) != fmt.Sprint(want) {
		t.Fatalf("error object %v, want %v", e, want)
	}
	f, _ := rn.Functions.GetFunction("big")
	if st := f.Stats(); st.Invocations != 2 || st.Errors != 1 {
		t.Fatalf("stats %+v, want 2 invocations, 1 error", st)
	}
}
