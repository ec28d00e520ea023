package eventbus_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/eventbus"
	"github.com/runnel-dev/runnel/internal/testenv"
)

// A replay whose sending of an archived event fails with a retryable
// error (an InternalFailure: the target or internal deliveries queue
// refusing the write, a store timeout during an election) sends it again
// after a backoff on the engine clock, and completes; a non-retryable
// error still ends it FAILED, and a CancelReplay stored while it waits to
// try again ends it CANCELLED. AWS: a replay sends every archived event of
// its range to the bus's rules
// (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-replay-archived-event.html);
// a transient internal failure is not the user's, and awserr.IsRetryable
// classes it retryable. Before, replayOne's first failed route ended the
// replay FAILED, and the user had to start another one, which sent again
// everything the first had sent.
func TestAReplayRetriesARetryableRouteFailure(t *testing.T) {
	rn, clock := start(t)
	ctx := context.Background()
	q := newQueue(t, rn, "q", nil)
	rule(t, rn, eventbus.Rule{Name: "all", EventPattern: `{"source":["shop.orders"]}`}, eventbus.Target{Id: "q", Arn: q})
	a, err := rn.Events.CreateArchive(ctx, eventbus.Archive{ArchiveName: "a", EventSourceArn: "default"})
	if err != nil {
		t.Fatal(err)
	}
	put(t, rn, orderEvent("one", 1), orderEvent("two", 2))
	drain(t, rn, clock, "q", 2, 0)
	var calls atomic.Int64
	failWith := func(code *awserr.Error, first int64) {
		calls.Store(0)
		eventbus.SetReplayRouteFault(func(string) error {
			if calls.Add(1) <= first {
				return awserr.New(code, "injected failure")
			}
			return nil
		})
	}
	t.Cleanup(func() { eventbus.SetReplayRouteFault(nil) })
	replay := func(name string) {
		t.Helper()
		if _, err := rn.Events.StartReplay(ctx, eventbus.Replay{ReplayName: name, EventSourceArn: a.ArchiveArn,
			EventStartTime: t0, EventEndTime: t0.Add(time.Hour), Destination: eventbus.ReplayDestination{Arn: a.EventSourceArn}}); err != nil {
			t.Fatal(err)
		}
	}
	// until waits for a replay's state, advancing the clock so that the
	// backoffs end.
	until := func(name, state string) *eventbus.Replay {
		t.Helper()
		var r *eventbus.Replay
		testenv.Eventually(t, wait, name+" "+state, func() bool {
			clock.Advance(time.Second)
			r, _ = rn.Events.DescribeReplay(ctx, name)
			return r != nil && r.State == state
		})
		return r
	}

	failWith(awserr.ErrInternalFailure, 3)
	replay("retried")
	until("retried", eventbus.ReplayCompleted)
	if n := calls.Load(); n != 5 {
		t.Errorf("%d sendings, want 5 (3 failed, then the 2 events)", n)
	}
	for _, m := range drain(t, rn, clock, "q", 2, 0) {
		if !strings.Contains(m.Body, `"replay-name":"retried"`) {
			t.Errorf("replayed event %s", m.Body)
		}
	}
	empty(t, rn, "q")

	failWith(awserr.ErrValidation, 1)
	replay("refused")
	if r := until("refused", eventbus.ReplayFailed); !strings.Contains(r.StateReason, "injected failure") {
		t.Errorf("StateReason %q", r.StateReason)
	}
	empty(t, rn, "q")

	failWith(awserr.ErrInternalFailure, 1<<40)
	replay("cancelled")
	testenv.Eventually(t, wait, "a first failed sending", func() bool { return calls.Load() > 0 })
	if _, err := rn.Events.CancelReplay(ctx, "cancelled"); err != nil {
		t.Fatal(err)
	}
	until("cancelled", eventbus.ReplayCancelled)
	empty(t, rn, "q")
}
