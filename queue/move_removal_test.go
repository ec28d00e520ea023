package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/queue"
)

// TestAMoveRetriedAfterItsRemovalFailedToStoreIsStoredBeforeItSucceeds:
// MoveToDeadLetterQueue stores the copy in the dead-letter queue, then the
// removal from the source; its doc says a call that failed may be retried
// with the same handle. When the copy was stored but the removal's write
// failed, the message was gone from memory: the retry answered
// ReceiptHandleIsInvalid, the FIFO group went on with its next message,
// and after a restart the message came back in its source after that
// one, while also in the DLQ (FIFO: "messages of a group are processed
// one at a time, in strict order"). Now the retry writes the removal
// again and answers once it is stored; after a restart the message is in
// the DLQ only. (The rule of
// TestADeleteRetriedAfterAFailedWriteIsStoredBeforeItSucceeds, for moves.)
func TestAMoveRetriedAfterItsRemovalFailedToStoreIsStoredBeforeItSucceeds(t *testing.T) {
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
	if _, err := rn.Queues.CreateQueue(ctx, "dlq.fifo", map[string]string{"FifoQueue": "true"}); err != nil {
		t.Fatal(err)
	}
	fq, err := rn.Queues.CreateQueue(ctx, "fq.fifo", map[string]string{"FifoQueue": "true",
		"RedrivePolicy": `{"deadLetterTargetArn":"` + rn.Queues.ARN("dlq.fifo") + `","maxReceiveCount":"10"}`})
	if err != nil {
		t.Fatal(err)
	}
	send := func(body, group string) {
		t.Helper()
		if _, err := rn.Queues.SendMessage(ctx, fq, queue.SendMessageInput{MessageBody: body, MessageGroupId: group, MessageDeduplicationId: body}); err != nil {
			t.Fatal(err)
		}
	}
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
	if err := rn.Queues.MoveToDeadLetterQueue(ctx, fq, m0.ReceiptHandle); err == nil {
		t.Fatal("MoveToDeadLetterQueue answered success while the source's writes failed")
	}
	restore()
	if err := rn.Queues.MoveToDeadLetterQueue(ctx, fq, m0.ReceiptHandle); err != nil {
		t.Fatalf("MoveToDeadLetterQueue retried with its handle, the fault over: %v", err)
	}
	// The consumer goes on: the group's next message.
	m1 := receive(fq)
	if m1.Body != "m1" {
		t.Fatalf("next of group g1: %q, want m1", m1.Body)
	}
	if err := rn.Queues.DeleteMessage(ctx, fq, m1.ReceiptHandle); err != nil {
		t.Fatal(err)
	}
	// Any later write of the queue (a send) does not store the removal either.
	send("z", "g3")
	rn.Crash()
	rn = testenv.Start(t, testenv.Options{Dir: dir, Clock: clock})
	clock.Advance(2 * time.Hour)
	ms, err := rn.Queues.ReceiveMessage(ctx, fq, queue.ReceiveMessageInput{MaxNumberOfMessages: 10, WaitTimeSeconds: &w})
	if err != nil {
		t.Fatal(err)
	}
	var bodies []string
	for _, m := range ms {
		bodies = append(bodies, m.Body)
	}
	d, _ := rn.Queues.ReceiveMessage(ctx, "dlq.fifo", queue.ReceiveMessageInput{MaxNumberOfMessages: 10, WaitTimeSeconds: &w})
	var dl []string
	for _, m := range d {
		dl = append(dl, m.Body)
	}
	for _, b := range bodies {
		if b == "m0" {
			t.Errorf("after the restart the source gives %v: m0 came back after m1 of its group was processed, and the DLQ holds %v", bodies, dl)
		}
	}
	if len(dl) != 1 || dl[0] != "m0" {
		t.Errorf("after the restart the dead-letter queue holds %v; want [m0]", dl)
	}
}
