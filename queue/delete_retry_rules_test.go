package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/queue"
)

// queueStream is the JetStream stream holding queue name's messages.
func queueStream(t *testing.T, rn *runnel.Runnel, name string) jetstream.Stream {
	t.Helper()
	ctx := context.Background()
	l := rn.Engine.JS.ListStreams(ctx)
	for si := range l.Info() {
		if si.Config.Description == "runnel queue "+name {
			s, err := rn.Engine.JS.Stream(ctx, si.Config.Name)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
	}
	t.Fatalf("no stream for queue %s", name)
	return nil
}

// storesNothing makes every write of the stream fail (a message size limit
// of 1 byte) until the returned func restores it.
func storesNothing(t *testing.T, rn *runnel.Runnel, s jetstream.Stream) (restore func()) {
	t.Helper()
	set := func(max int32) {
		cfg := s.CachedInfo().Config
		cfg.MaxMsgSize = max
		if _, err := rn.Engine.JS.UpdateStream(context.Background(), cfg); err != nil {
			t.Fatal(err)
		}
	}
	set(1)
	return func() { set(-1) }
}

// TestADeleteRetriedAfterAFailedWriteIsStoredBeforeItSucceeds: a
// DeleteMessage whose write fails answers InternalError, and the SDKs
// retry it. The retry found the message gone from memory and answered
// success with nothing stored, so after a restart (or a hand-over of the
// queue) the message was back: on a FIFO queue after later messages of
// its group had been processed, against "messages of a group are
// processed one at a time, in strict order" (FIFO-key-terms). The retry
// now writes the removal again and answers once it is stored: a crash
// right after it keeps m0 deleted.
func TestADeleteRetriedAfterAFailedWriteIsStoredBeforeItSucceeds(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clock := clockwork.NewFakeClockAt(time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC))
	rn := testenv.Start(t, testenv.Options{Dir: dir, Clock: clock})
	vis, w := 3600, 0
	receive := func(url string) queue.Message {
		t.Helper()
		ms, err := rn.Queues.ReceiveMessage(ctx, url, queue.ReceiveMessageInput{MaxNumberOfMessages: 1, VisibilityTimeout: &vis, WaitTimeSeconds: &w})
		if err != nil || len(ms) != 1 {
			t.Fatalf("receive from %s: %v %v", url, ms, err)
		}
		return ms[0]
	}
	fq, err := rn.Queues.CreateQueue(ctx, "fq.fifo", map[string]string{"FifoQueue": "true"})
	if err != nil {
		t.Fatal(err)
	}
	send := func(body, group string) {
		t.Helper()
		if _, err := rn.Queues.SendMessage(ctx, fq, queue.SendMessageInput{MessageBody: body, MessageGroupId: group, MessageDeduplicationId: body}); err != nil {
			t.Fatal(err)
		}
	}
	// y holds group g2 in flight, so x, stored in one record with m0,
	// keeps that record alive after m0's removal.
	send("y", "g2")
	if y := receive(fq); y.Body != "y" {
		t.Fatalf("first message %q, want y", y.Body)
	}
	if out, err := rn.Queues.SendMessageBatch(ctx, fq, []queue.SendMessageBatchRequestEntry{
		{Id: "0", SendMessageInput: queue.SendMessageInput{MessageBody: "m0", MessageGroupId: "g1", MessageDeduplicationId: "m0"}},
		{Id: "1", SendMessageInput: queue.SendMessageInput{MessageBody: "x", MessageGroupId: "g2", MessageDeduplicationId: "x"}},
	}); err != nil || len(out.Failed) > 0 {
		t.Fatal(out, err)
	}
	send("m1", "g1")
	m0 := receive(fq)
	if m0.Body != "m0" {
		t.Fatalf("first message %q, want m0", m0.Body)
	}
	restore := storesNothing(t, rn, queueStream(t, rn, "fq.fifo"))
	if err := rn.Queues.DeleteMessage(ctx, fq, m0.ReceiptHandle); err == nil {
		t.Fatal("a DeleteMessage whose write failed answered success")
	}
	if err := rn.Queues.DeleteMessage(ctx, fq, m0.ReceiptHandle); err == nil {
		t.Fatal("a retry whose write failed too answered success")
	}
	restore()
	if err := rn.Queues.DeleteMessage(ctx, fq, m0.ReceiptHandle); err != nil { // the SDK's next retry
		t.Fatalf("the retry: %v", err)
	}
	rn.Crash()
	rn = testenv.Start(t, testenv.Options{Dir: dir, Clock: clock})
	clock.Advance(2 * time.Hour) // past every visibility timeout
	ms, err := rn.Queues.ReceiveMessage(ctx, fq, queue.ReceiveMessageInput{MaxNumberOfMessages: 10, WaitTimeSeconds: &w})
	if err != nil {
		t.Fatal(err)
	}
	var bodies []string
	for _, m := range ms {
		bodies = append(bodies, m.Body)
	}
	if len(bodies) != 3 || bodies[0] != "y" || bodies[1] != "x" || bodies[2] != "m1" {
		t.Fatalf("after a restart the queue gives %v; want [y x m1] (m0 was deleted)", bodies)
	}
}
