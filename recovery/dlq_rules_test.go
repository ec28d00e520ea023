package recovery_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/runnel-dev/runnel/queue"
	"github.com/runnel-dev/runnel/recovery"
)

// TestInspectScansAtMostScanMessages: Inspect looks at Scan visible
// messages at most (ten per receive), and its breakdowns count those.
func TestInspectScansAtMostScanMessages(t *testing.T) {
	e := newDLQEnv(t)
	var bodies []string
	for i := range 15 {
		bodies = append(bodies, fmt.Sprintf("m%02d", i))
	}
	e.deadLetter(t, bodies...)
	in, err := recovery.Inspect(context.Background(), e.rn.Queues, "work-dlq", recovery.InspectOptions{Scan: 12, Limit: 1, Now: e.clock.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if in.Visible != 15 || in.Scanned != 12 || in.ByKind[recovery.KindUnknown] != 12 {
		t.Fatalf("visible %d, scanned %d, by kind %v; want 15 visible and 12 scanned", in.Visible, in.Scanned, in.ByKind)
	}
	if v, f := depth(t, e.rn, e.dlq); v != 15 || f != 0 {
		t.Fatalf("after inspect: visible %d in flight %d", v, f)
	}
}

// TestRedriveWithoutPollUsesItsDefault: RedriveOptions.Poll 0 means the
// default (100 ms), not a ticker of zero.
func TestRedriveWithoutPollUsesItsDefault(t *testing.T) {
	e := newDLQEnv(t)
	e.deadLetter(t, "a", "b")
	res, err := recovery.Redrive(context.Background(), e.rn.Queues, "work-dlq", recovery.RedriveOptions{})
	if err != nil || res.Status != queue.MoveTaskCompleted || res.ApproximateNumberOfMessagesMoved != 2 {
		t.Fatalf("Redrive = %+v, %v", res, err)
	}
}

// TestPurgeCountsVisibleInFlightAndDelayedMessages: Purge reports every
// message the queue held: visible, in flight and delayed.
func TestPurgeCountsVisibleInFlightAndDelayedMessages(t *testing.T) {
	e := newDLQEnv(t)
	ctx := context.Background()
	e.deadLetter(t, "visible", "in flight")
	if ms, err := e.rn.Queues.ReceiveMessage(ctx, e.dlq, queue.ReceiveMessageInput{MaxNumberOfMessages: 1}); err != nil || len(ms) != 1 {
		t.Fatalf("receive: %v %v", ms, err)
	}
	delay := 60
	for range 4 {
		if _, err := e.rn.Queues.SendMessage(ctx, e.dlq, queue.SendMessageInput{MessageBody: "delayed", DelaySeconds: &delay}); err != nil {
			t.Fatal(err)
		}
	}
	res, err := recovery.Purge(ctx, e.rn.Queues, "work-dlq")
	if err != nil || res.Messages != 6 {
		t.Fatalf("Purge = %+v, %v; want 6 messages (1 visible, 1 in flight, 4 delayed)", res, err)
	}
}
