package eventbus_test

import (
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel/eventbus"
	"github.com/runnel-dev/runnel/internal/testenv"
)

// A rule put through one process matches events put through another that
// shares its JetStream (two nodes of a cluster): each watches the buses.
// Before the watch, the second process knew only the buses it had loaded
// when it opened, and its PutEvents matched nothing.
func TestARulePutThroughOneProcessMatchesEventsPutThroughAnother(t *testing.T) {
	clock := clockwork.NewFakeClockAt(t0)
	a := testenv.Start(t, testenv.Options{Clock: clock, ListenAddr: "127.0.0.1:0"})
	b := testenv.Start(t, testenv.Options{Clock: clock, NATSURL: a.Engine.ClientURL()})
	q := newQueue(t, a, "orders", nil)
	rule(t, a, eventbus.Rule{Name: "big", EventPattern: `{"source":["shop.orders"]}`}, eventbus.Target{Id: "q", Arn: q})
	// PutRule and PutTargets are two writes, seen by the second process in
	// turn: wait for the target, not only the rule (an event put between
	// the two matches a rule with no target, as on AWS, where rule changes
	// are eventually consistent).
	testenv.Eventually(t, wait, "the rule and its target known to the second process", func() bool {
		targets, err := b.Events.ListTargetsByRule("default", "big")
		return err == nil && len(targets) == 1
	})
	if out := put(t, b, orderEvent("x", 1)); out.FailedEntryCount != 0 {
		t.Fatalf("failed entries: %+v", out.Entries)
	}
	// A first attempt that fails (a forwarded send timing out on a loaded
	// machine) is retried after its backoff on the fake clock: advance it.
	drain(t, a, clock, "orders", 1, 10*time.Second)
	// Deleted through the first, the rule stops matching in the second.
	if err := a.Events.DeleteRule(t.Context(), "default", "big", true); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, wait, "the rule forgotten by the second process", func() bool {
		_, err := b.Events.DescribeRule("default", "big")
		return err != nil
	})
	put(t, b, orderEvent("y", 1)) // PutEvents sends SQS deliveries before it answers
	empty(t, a, "orders")
}
