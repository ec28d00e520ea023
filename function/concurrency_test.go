package function_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/testenv"
)

// Reserved concurrency "is the maximum number of concurrent instances
// allocated to your function"; an invocation beyond it is throttled with
// TooManyRequestsException, 429
// (docs.aws.amazon.com/lambda/latest/dg/configuration-concurrency.html).
// In a cluster (nodes sharing one JetStream) the count is the function's,
// not a node's: with ReservedConcurrentExecutions 1, an invocation through
// node B while one runs through node A is throttled; with 2, one running
// on each node leaves none for a third on either. Before, the limit was an
// in-memory semaphore per process: each node ran its own 1 (2 running at
// once, nothing throttled).
func TestAReservationCapsTheFunctionAcrossTheCluster(t *testing.T) {
	ctx := context.Background()
	reg := function.NewRegistry()
	started := make(chan struct{}, 8)
	finish := make(chan struct{}, 8)
	if err := reg.Register("hold", func(_ context.Context, _ struct{}) (string, error) {
		started <- struct{}{}
		<-finish
		return "done", nil
	}); err != nil {
		t.Fatal(err)
	}
	a := testenv.Start(t, testenv.Options{ListenAddr: "127.0.0.1:0", Registry: reg})
	b := testenv.Start(t, testenv.Options{NATSURL: a.Engine.ClientURL(), Registry: reg})
	reserve := func(n int) {
		t.Helper()
		if _, err := a.Functions.PutFunction(ctx, function.Config{FunctionName: "held", Handler: "hold", ReservedConcurrentExecutions: &n}); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, 10*time.Second, "node B sees the reservation", func() bool {
			c, ok := listed(b.Functions, "held")
			return ok && c.ReservedConcurrentExecutions != nil && *c.ReservedConcurrentExecutions == n
		})
	}
	fn := func(node interface {
		GetFunction(string) (*function.Function, error)
	}) *function.Function {
		t.Helper()
		f, err := node.GetFunction("held")
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	// run starts an invocation and waits until its handler runs; its
	// result arrives on the returned channel once finish lets it end.
	run := func(f *function.Function) <-chan error {
		t.Helper()
		res := make(chan error, 1)
		go func() {
			r, err := f.Invoke(ctx, []byte(`{}`))
			if err == nil && r.Failed() {
				err = r.Error
			}
			res <- err
		}()
		select {
		case <-started:
		case err := <-res:
			t.Fatalf("the invocation did not run: %v", err)
		}
		return res
	}
	throttled := func(what string, f *function.Function) {
		t.Helper()
		if _, err := f.Invoke(ctx, []byte(`{}`)); !errors.Is(err, awserr.ErrTooManyRequests) {
			t.Fatalf("%s: err = %v, want TooManyRequestsException", what, err)
		}
	}
	done := func(res ...<-chan error) {
		t.Helper()
		for range res {
			finish <- struct{}{}
		}
		for _, r := range res {
			if err := <-r; err != nil {
				t.Fatal(err)
			}
		}
	}

	reserve(1)
	onA := run(fn(a.Functions))
	throttled("reservation 1, running on A: an invocation through B", fn(b.Functions))
	done(onA)
	// The slot is free again once the invocation has ended: B runs.
	done(run(fn(b.Functions)))

	reserve(2)
	onA, onB := run(fn(a.Functions)), run(fn(b.Functions))
	throttled("reservation 2, one running on each node: a third through A", fn(a.Functions))
	throttled("reservation 2, one running on each node: a third through B", fn(b.Functions))
	done(onA, onB)
	// (The reservation's change replaced the function: counters anew.)
	if st := fn(b.Functions).Stats(); st.Throttles != 1 || st.Invocations != 1 {
		t.Fatalf("node B's stats: %+v, want 1 invocation, 1 throttle", st)
	}
}
