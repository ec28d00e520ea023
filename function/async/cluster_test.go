package async_test

import (
	"context"
	"errors"
	"strings"
	"testing"

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
