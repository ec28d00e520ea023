package async_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/function/async"
	"github.com/runnel-dev/runnel/internal/testenv"
)

// Two runnel nodes on one NATS (docs/cluster.md: the async workers run on
// every node).

// Before, each node read the event invoke configurations once, at its
// start: a configuration put through node A was unknown to node B, which
// retried an event of f twice (MaximumRetryAttempts 0 was set) and kept
// it in the built-in store instead of the OnFailure queue.
func TestAConfigurationPutThroughOneNodeAppliesOnAnother(t *testing.T) {
	a := testenv.Start(t, testenv.Options{ListenAddr: "127.0.0.1:0"})
	b := testenv.Start(t, testenv.Options{NATSURL: a.Engine.ClientURL()})
	dest := createQueue(t, a, "failures", nil)
	newFunction(t, a, function.Config{FunctionName: "f"}, fail("boom"))
	testenv.Eventually(t, wait, "node B sees f", func() bool { _, err := b.Functions.GetFunction("f"); return err == nil })
	put(t, a, async.EventInvokeConfig{FunctionName: "f", MaximumRetryAttempts: ptr(0), DestinationConfig: onFailure(dest)})
	c, err := b.Async.GetFunctionEventInvokeConfig(context.Background(), "f")
	if err != nil || c.MaximumRetryAttempts == nil || *c.MaximumRetryAttempts != 0 {
		t.Fatalf("node B reads the configuration stored through node A: %+v, %v", c, err)
	}
	testenv.Eventually(t, wait, "node B's copy", func() bool {
		return len(b.Async.FailedEventsGoTo("f")) == 1 && b.Async.FailedEventsGoTo("f")[0] == dest
	})
	invoke(t, b, "f", async.Event, `{"order":1}`)
	testenv.Eventually(t, wait, "the failed event in the OnFailure queue", func() bool { return queueDepth(t, a, "failures") == 1 })
	if st := b.Async.Stats("f"); st.Retried != 0 {
		t.Fatalf("node B retried %d times with MaximumRetryAttempts 0", st.Retried)
	}
}

// Before, a node polled only the internal queues that existed at its
// start and those of the events it was invoked with: the events of a new
// function accepted by a node that then stopped waited for a restart
// (and could expire unattempted).
func TestEventsAcceptedByAStoppedNodeAreProcessedByAnother(t *testing.T) {
	x := testenv.Start(t, testenv.Options{ListenAddr: "127.0.0.1:0"})
	y := testenv.Start(t, testenv.Options{NATSURL: x.Engine.ClientURL()})
	g := newFunction(t, x, function.Config{FunctionName: "g"}, nil)
	testenv.Eventually(t, wait, "node Y sees g", func() bool { _, err := y.Functions.GetFunction("g"); return err == nil })
	x.Async.Close() // node X's workers stop, as at a crash
	invoke(t, x, "g", async.Event, `{"n":1}`)
	testenv.Eventually(t, 4*async.DiscoveryInterval, "node Y runs the event", func() bool { return g.count() == 1 })
	testenv.Eventually(t, wait, "the event deleted", func() bool { return queueDepth(t, y, async.QueueName("g")) == 0 })
}

// UpdateFunctionEventInvokeConfig of a function without a configuration
// is ResourceNotFoundException ("The function ... doesn't have an
// EventInvokeConfig"), as Lambda answers; before, it created one, and a
// tool that updates to detect drift got a silent create.
func TestUpdatingAMissingEventInvokeConfigIsNotFound(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	newFunction(t, rn, function.Config{FunctionName: "f"}, nil)
	_, err := rn.Async.UpdateFunctionEventInvokeConfig(context.Background(), async.EventInvokeConfig{FunctionName: "f", MaximumRetryAttempts: ptr(1)})
	if !errors.Is(err, awserr.ErrResourceNotFound) || !strings.Contains(err.Error(), "doesn't have an EventInvokeConfig") {
		t.Fatalf("Update of a missing configuration: %v", err)
	}
	if _, err := rn.Async.GetFunctionEventInvokeConfig(context.Background(), "f"); !errors.Is(err, awserr.ErrResourceNotFound) {
		t.Fatalf("the refused Update stored a configuration: %v", err)
	}
}

// A version or an alias may be a destination: "Destination: The Amazon
// Resource Name (ARN) of the destination resource" (API_OnSuccess), a
// qualified function ARN included. Before, runnel refused it ("is not a
// valid function ARN"), and would have invoked $LATEST.
func TestAnAliasIsADestination(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	ctx := context.Background()
	newFunction(t, rn, function.Config{FunctionName: "src"}, nil)
	var mu sync.Mutex
	var invoked []string
	function.Register("alias-destination-test", func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
		lc, _ := lambdacontext.FromContext(ctx)
		mu.Lock()
		invoked = append(invoked, lc.InvokedFunctionArn)
		mu.Unlock()
		return json.RawMessage(`{}`), nil
	})
	if _, err := rn.Functions.CreateFunction(ctx, function.Config{FunctionName: "dest", Handler: "alias-destination-test"}); err != nil {
		t.Fatal(err)
	}
	if _, err := rn.Functions.PublishVersion(ctx, "dest", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := rn.Functions.CreateAlias(ctx, "dest", function.Alias{Name: "live", FunctionVersion: "1"}); err != nil {
		t.Fatal(err)
	}
	live := rn.Functions.ARN("dest") + ":live"
	put(t, rn, async.EventInvokeConfig{FunctionName: "src", DestinationConfig: &async.DestinationConfig{OnSuccess: &async.OnSuccess{Destination: live}}})
	invoke(t, rn, "src", async.Event, `{"n":1}`)
	testenv.Eventually(t, wait, "the alias invoked with the record", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(invoked) == 1
	})
	if invoked[0] != live {
		t.Fatalf("the destination was invoked as %s, want %s", invoked[0], live)
	}
	if _, err := rn.Async.PutFunctionEventInvokeConfig(ctx, async.EventInvokeConfig{FunctionName: "src",
		DestinationConfig: &async.DestinationConfig{OnSuccess: &async.OnSuccess{Destination: rn.Functions.ARN("dest") + ":nope"}}}); !errors.Is(err, awserr.ErrInvalidParameterValue) {
		t.Fatalf("a missing alias as destination: %v", err)
	}
}
