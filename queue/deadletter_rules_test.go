package queue_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/queue"
)

// TestMoveToDeadLetterQueueReadsAnEvictedBody: a message whose payload is
// not kept in memory (the cache budget is spent) is moved with its body
// and message attributes, read back from JetStream.
func TestMoveToDeadLetterQueueReadsAnEvictedBody(t *testing.T) {
	e := newEnv(t)
	queue.SetCacheBudget(e.svc, 0)
	dlq := e.create("dlq", nil)
	src := e.create("src", map[string]string{"RedrivePolicy": redrivePolicy(e, "dlq", 5)})
	attrs := map[string]queue.MessageAttributeValue{"key": {DataType: "String", StringValue: str("value")}}
	out := e.sendIn(src, queue.SendMessageInput{MessageBody: "given up", MessageAttributes: attrs})
	if c := queue.Cached(e.svc); c != 0 {
		t.Fatalf("cached = %d bytes, want 0 (the budget is 0)", c)
	}
	m := e.receive(src, queue.ReceiveMessageInput{})
	if len(m) != 1 {
		t.Fatal("nothing received")
	}
	if err := e.svc.MoveToDeadLetterQueue(e.ctx, src, m[0].ReceiptHandle); err != nil {
		t.Fatal(err)
	}
	got := e.receive(dlq, queue.ReceiveMessageInput{MessageAttributeNames: []string{"All"}})
	if len(got) != 1 || got[0].MessageId != out.MessageId || got[0].Body != "given up" ||
		got[0].MessageAttributes["key"].StringValue == nil || *got[0].MessageAttributes["key"].StringValue != "value" {
		t.Fatalf("dead-lettered message = %+v", got)
	}
}

// TestReceiveReturnsAtMostMaxNumberOfMessagesWhenTheDeadLetterQueueIsGone:
// messages past maxReceiveCount whose dead-letter queue is gone are
// delivered as usual, and a receive still returns at most
// MaxNumberOfMessages messages, with or without them.
func TestReceiveReturnsAtMostMaxNumberOfMessagesWhenTheDeadLetterQueueIsGone(t *testing.T) {
	for _, c := range []struct {
		name          string
		fresh, passed int // messages never received (sent first), then messages received once
	}{
		{"eleven messages past maxReceiveCount", 0, 11},
		{"five fresh messages, then ten past maxReceiveCount", 5, 10},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			dlq := e.create("dlq", nil)
			src := e.create("src", map[string]string{"RedrivePolicy": redrivePolicy(e, "dlq", 1)})
			for i := range c.fresh {
				e.sendIn(src, queue.SendMessageInput{MessageBody: fmt.Sprintf("fresh %d", i), DelaySeconds: ptr(60)})
			}
			for i := range c.passed {
				e.send(src, fmt.Sprintf("passed %d", i))
			}
			for n := 0; n < c.passed; {
				n += len(e.receive(src, queue.ReceiveMessageInput{MaxNumberOfMessages: 10, VisibilityTimeout: ptr(30)}))
			}
			if err := e.svc.DeleteQueue(e.ctx, dlq); err != nil {
				t.Fatal(err)
			}
			e.clock.Advance(time.Minute) // all visible again, the fresh ones for the first time
			total := 0
			for {
				got := e.receive(src, queue.ReceiveMessageInput{MaxNumberOfMessages: 10, VisibilityTimeout: ptr(300)})
				if len(got) > 10 {
					t.Fatalf("a receive of MaxNumberOfMessages 10 returned %d messages", len(got))
				}
				if len(got) == 0 {
					break
				}
				total += len(got)
			}
			if total != c.fresh+c.passed {
				t.Fatalf("received %d messages, want all %d", total, c.fresh+c.passed)
			}
		})
	}
}
