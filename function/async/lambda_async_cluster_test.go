package async_test

import (
	"context"
	"testing"

	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/function/async"
	"github.com/runnel-dev/runnel/internal/testenv"
)

// docs/cluster.md: "Any node answers any call", and the async workers run
// on every node. An Event invocation of an alias accepted by node A runs
// on node B when B takes it, and B can be invoked on the alias itself.
// Before, node B read the versions and aliases once, at its start: it
// answered h:prod with ResourceNotFound, and the event A accepted was
// backed off by B's poller as a 404 until it aged out (EventAgeExceeded)
// without running.
func TestAnEventForAnAliasMadeOnAnotherNodeRunsHere(t *testing.T) {
	ctx := context.Background()
	a := testenv.Start(t, testenv.Options{ListenAddr: "127.0.0.1:0"})
	b := testenv.Start(t, testenv.Options{NATSURL: a.Engine.ClientURL()})
	h := newFunction(t, a, function.Config{FunctionName: "h"}, nil)
	testenv.Eventually(t, wait, "node B sees h", func() bool { _, err := b.Functions.GetFunction("h"); return err == nil })
	if _, err := a.Functions.PublishVersion(ctx, "h", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Functions.CreateAlias(ctx, "h", function.Alias{Name: "prod", FunctionVersion: "1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Async.Invoke(ctx, "h:prod", async.Event, []byte(`{"n":1}`)); err != nil {
		t.Fatalf("node B: Invoke(h:prod, Event): %v", err)
	}
	testenv.Eventually(t, wait, "the event B accepted runs", func() bool { return h.count() == 1 })
	a.Async.Close() // only B's workers run now
	if _, err := a.Async.Invoke(ctx, "h:prod", async.Event, []byte(`{"n":2}`)); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 4*async.DiscoveryInterval, "node B runs the event A accepted", func() bool { return h.count() == 2 })
	if st := b.Async.Stats("h"); st.Requeued != 0 {
		t.Fatalf("node B sent the event back %d times (a 404 for h:prod)", st.Requeued)
	}
}
