package recovery_test

import (
	"context"
	"fmt"
	"path/filepath"
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

// TestArchiveLimitArchivesThatMany: Archive with a Limit archives that
// many messages and leaves the others in the queue.
func TestArchiveLimitArchivesThatMany(t *testing.T) {
	e := newDLQEnv(t)
	e.deadLetter(t, "a", "b", "c")
	res, err := recovery.Archive(context.Background(), e.rn.Queues, e.rn.Streams, "work-dlq",
		recovery.ArchiveOptions{Out: filepath.Join(t.TempDir(), "out.jsonl"), Limit: 2, Delete: true})
	if err != nil || res.Archived != 2 {
		t.Fatalf("Archive = %+v, %v; want 2 archived", res, err)
	}
	if v, f := depth(t, e.rn, e.dlq); v+f != 1 {
		t.Fatalf("after archiving 2 of 3 with Delete: %d visible, %d in flight; want 1 left", v, f)
	}
}

// TestQueueGivenByURL: the DLQ tools take a queue's URL as well as its
// name or ARN.
func TestQueueGivenByURL(t *testing.T) {
	e := newDLQEnv(t)
	e.deadLetter(t, "a", "b")
	res, err := recovery.Purge(context.Background(), e.rn.Queues, e.dlq)
	if err != nil || res.Queue != "work-dlq" || res.Messages != 2 {
		t.Fatalf("Purge by URL %s = %+v, %v", e.dlq, res, err)
	}
}
