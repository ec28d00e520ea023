package queue_test

import (
	"testing"

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
