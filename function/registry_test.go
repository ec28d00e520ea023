package function_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/testenv"
)

// Two runnel instances in one process give the same handler name their
// own handlers: each looks handlers up in its own registry.
func TestEachInstanceRunsTheHandlersOfItsOwnRegistry(t *testing.T) {
	ctx := context.Background()
	invoke := func(reg *function.Registry) string {
		rn := testenv.Start(t, testenv.Options{Registry: reg})
		if _, err := rn.Functions.CreateFunction(ctx, function.Config{FunctionName: "f", Handler: "h"}); err != nil {
			t.Fatal(err)
		}
		f, _ := rn.Functions.GetFunction("f")
		res, err := f.Invoke(ctx, []byte(`{}`))
		if err != nil || res.Failed() {
			t.Fatalf("Invoke: %v %+v", err, res)
		}
		return string(res.Payload)
	}
	a, b := function.NewRegistry(), &function.Registry{} // the zero value works too
	if err := a.Register("h", func(context.Context, any) (string, error) { return "a", nil }); err != nil {
		t.Fatal(err)
	}
	if err := b.Register("h", func(context.Context, any) (string, error) { return "b", nil }); err != nil {
		t.Fatal(err)
	}
	if got := invoke(a); got != `"a"` {
		t.Errorf("instance of registry a ran %s", got)
	}
	if got := invoke(b); got != `"b"` {
		t.Errorf("instance of registry b ran %s", got)
	}
}

func TestARegistryHoldsOnlyWhatWasRegisteredInIt(t *testing.T) {
	reg := function.NewRegistry()
	if err := reg.Register("not-a-function", 42); err == nil {
		t.Fatal("Register(42) succeeded")
	}
	if err := reg.Register("k", func(context.Context, events.KinesisEvent) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if got := reg.Handlers(); !slices.Equal(got, []string{"k"}) {
		t.Fatalf("Handlers() = %v, want [k]", got)
	}
	if !slices.Contains(function.Handlers(), echoHandler) || slices.Contains(reg.Handlers(), echoHandler) {
		t.Fatal("the default registry and a new one share handlers")
	}
	rn := testenv.Start(t, testenv.Options{Registry: reg})
	if rn.Functions.Registry() != reg {
		t.Fatal("the service does not use the registry of its Config")
	}
	_, err := rn.Functions.CreateFunction(context.Background(), function.Config{FunctionName: "f", Handler: echoHandler})
	if !errors.Is(err, awserr.ErrInvalidParameterValue) {
		t.Fatalf("a handler of the default registry was found in another: %v", err)
	}
}

// A handler of a signature lambda.Start accepts (run through
// aws-lambda-go's reflection handler, which encodes every response into
// one buffer that its next call overwrites) answers each of many
// concurrent invocations with that invocation's own response.
func TestConcurrentInvocationsOfAReflectedHandlerKeepTheirResponses(t *testing.T) {
	ctx := context.Background()
	reg := function.NewRegistry()
	if err := reg.Register("echo", func(_ context.Context, in struct{ N int }) (struct{ N int }, error) { return in, nil }); err != nil {
		t.Fatal(err)
	}
	rn := testenv.Start(t, testenv.Options{Registry: reg})
	if _, err := rn.Functions.CreateFunction(ctx, function.Config{FunctionName: "echo", Handler: "echo"}); err != nil {
		t.Fatal(err)
	}
	f, _ := rn.Functions.GetFunction("echo")
	const callers, calls = 8, 300
	errs := make(chan string, callers)
	for c := range callers {
		go func() {
			for i := range calls {
				n := c*calls + i
				res, err := f.Invoke(ctx, []byte(fmt.Sprintf(`{"N":%d}`, n)))
				if err != nil || res.Failed() {
					errs <- fmt.Sprintf("Invoke %d: %v %+v", n, err, res)
					return
				}
				if want := fmt.Sprintf(`{"N":%d}`, n); strings.TrimSpace(string(res.Payload)) != want {
					errs <- fmt.Sprintf("invocation %d answered %s, want %s", n, res.Payload, want)
					return
				}
			}
			errs <- ""
		}()
	}
	for range callers {
		if e := <-errs; e != "" {
			t.Fatal(e)
		}
	}
}
