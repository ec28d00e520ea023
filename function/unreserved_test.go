package function_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	ltypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/runnel-dev/runnel/awsapi"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/sdkhttp"
	"github.com/runnel-dev/runnel/internal/testenv"
)

// The functions without a reservation share the account's unreserved
// concurrency, 1,000 less every reservation ("Unreserved account
// concurrency", docs.aws.amazon.com/lambda/latest/dg/configuration-concurrency.html);
// a throttle from that pool is a TooManyRequestsException with Reason
// ConcurrentInvocationLimitExceeded, one from a function's reservation
// ReservedFunctionConcurrentInvocationLimitExceeded (API_Invoke,
// ThrottleReason). runnel counts the pool per node. Here 900 are
// reserved: 100 invocations of two unreserved functions together leave
// none for a third. Before, each unreserved function had 1,000 of its
// own (nothing was throttled), and every throttle said
// ReservedFunctionConcurrentInvocationLimitExceeded.
func TestUnreservedFunctionsShareTheAccountsUnreservedConcurrency(t *testing.T) {
	ctx := context.Background()
	reg := function.NewRegistry()
	started := make(chan struct{}, 200)
	finish := make(chan struct{})
	if err := reg.Register("hold", func(_ context.Context, _ struct{}) (string, error) {
		started <- struct{}{}
		<-finish
		return "done", nil
	}); err != nil {
		t.Fatal(err)
	}
	rn := testenv.Start(t, testenv.Options{Registry: reg})
	put := func(name string, reserved *int) *function.Function {
		t.Helper()
		f, err := rn.Functions.PutFunction(ctx, function.Config{FunctionName: name, Handler: "hold", ReservedConcurrentExecutions: reserved})
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	put("big", intp(function.DefaultAccountConcurrency-function.MinUnreservedConcurrency)) // 900
	put("none", intp(0))
	u1, u2 := put("u1", nil), put("u2", nil)

	h := awsapi.NewLambdaHandler(rn, awsapi.LambdaOptions{WorkDir: t.TempDir()})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	t.Cleanup(h.Close)
	lc := lambda.NewFromConfig(aws.Config{HTTPClient: sdkhttp.Client(), Region: "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("a", "b", ""), BaseEndpoint: aws.String(srv.URL)},
		func(o *lambda.Options) { o.RetryMaxAttempts = 1 })
	reason := func(name string) ltypes.ThrottleReason {
		t.Helper()
		_, err := lc.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String(name), Payload: []byte(`{}`)})
		var tm *ltypes.TooManyRequestsException
		if !errors.As(err, &tm) {
			t.Fatalf("Invoke %s: %v, want TooManyRequestsException", name, err)
		}
		return tm.Reason
	}

	// 60 running of u1 and 40 of u2: the 100 unreserved are in use.
	var wg sync.WaitGroup
	for i := range function.MinUnreservedConcurrency {
		f := u1
		if i >= 60 {
			f = u2
		}
		wg.Go(func() {
			if _, err := f.Invoke(ctx, []byte(`{}`)); err != nil {
				t.Errorf("invocation %d: %v", i, err)
				started <- struct{}{}
			}
		})
		<-started
	}
	if r := reason("u2"); r != ltypes.ThrottleReasonConcurrentInvocationLimitExceeded {
		t.Errorf("u2 with the 100 unreserved in use: Reason %q, want ConcurrentInvocationLimitExceeded", r)
	}
	if _, err := u1.Invoke(ctx, []byte(`{}`)); err == nil || function.ThrottleReason(err.Error()) != function.ReasonUnreserved {
		t.Errorf("u1 with the 100 unreserved in use: %v, want a throttle of the unreserved concurrency", err)
	}
	if r := reason("none"); r != ltypes.ThrottleReasonReservedFunctionConcurrentInvocationLimitExceeded {
		t.Errorf("a function reserved 0: Reason %q, want ReservedFunctionConcurrentInvocationLimitExceeded", r)
	}
	close(finish)
	wg.Wait()
	// The reservation removed, its 900 go back to the pool: 101 run.
	put("big", nil)
	finish = make(chan struct{})
	for range function.MinUnreservedConcurrency + 1 {
		wg.Go(func() {
			if _, err := u2.Invoke(ctx, []byte(`{}`)); err != nil {
				t.Errorf("with no reservation left: %v", err)
				started <- struct{}{}
			}
		})
		<-started
	}
	close(finish)
	wg.Wait()
}
