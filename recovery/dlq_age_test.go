package recovery_test

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/queue"
	"github.com/runnel-dev/runnel/recovery"
)

// TestListingADeadLetterQueuesAgeReceivesNothing: the age `runnel dlq
// list` shows is read from the queue's index, not by a receive. On a
// dead-letter queue with a RedrivePolicy of its own (maxReceiveCount 1),
// listing it three times leaves its message where it is with no receive
// counted; a receive per listing (as before) moved it on to the next
// dead-letter queue at the second.
func TestListingADeadLetterQueuesAgeReceivesNothing(t *testing.T) {
	ctx := context.Background()
	clock := clockwork.NewFakeClockAt(t0)
	rn := testenv.Start(t, testenv.Options{Clock: clock})
	final, err := rn.Queues.CreateQueue(ctx, "final-dlq", nil)
	if err != nil {
		t.Fatal(err)
	}
	dlq, err := rn.Queues.CreateQueue(ctx, "orders-dlq", map[string]string{
		queue.AttrRedrivePolicy: `{"deadLetterTargetArn":"` + rn.Queues.ARN("final-dlq") + `","maxReceiveCount":1}`})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rn.Queues.SendMessage(ctx, dlq, queue.SendMessageInput{MessageBody: "poison"}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(7 * time.Second)
	for i := range 3 {
		list, err := recovery.ListQueues(ctx, rn.Queues, recovery.ListOptions{DLQOnly: true, Age: true, Now: clock.Now()})
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range list {
			if q.Name == "orders-dlq" && (q.OldestAgeSeconds != 7 || q.OldestSent == nil || !q.OldestSent.Equal(t0)) {
				t.Fatalf("listing %d: orders-dlq oldest %v, age %v s; want %v, 7 s", i, q.OldestSent, q.OldestAgeSeconds, t0)
			}
		}
	}
	if v, f := depth(t, rn, final); v+f != 0 {
		t.Fatalf("the listings moved the message on to final-dlq (%d there)", v+f)
	}
	got, err := rn.Queues.ReceiveMessage(ctx, dlq, queue.ReceiveMessageInput{AttributeNames: []string{queue.MsgAttrApproximateReceiveCount}})
	if err != nil || len(got) != 1 {
		t.Fatalf("receive: %v %v", got, err)
	}
	if n := got[0].Attributes[queue.MsgAttrApproximateReceiveCount]; n != "1" {
		t.Fatalf("ApproximateReceiveCount %s at the first receive, want 1: the listings counted receives", n)
	}
}
