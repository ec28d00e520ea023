package queue_test

import (
	"testing"
	"time"

	"github.com/runnel-dev/runnel/queue"
)

// TestAFIFODeadLetterTakesItsMessageIdAsDeduplicationId: "When a message
// is moved from a FIFO queue to a FIFO DLQ, the original message's
// deduplication ID will be replaced with the original message's ID"
// (sqs-configure-dead-letter-queue-redrive); the MessageId itself is kept.
// Before, the dead-lettered copy kept the original deduplication id, by
// redrive (maxReceiveCount) and by MoveToDeadLetterQueue alike.
func TestAFIFODeadLetterTakesItsMessageIdAsDeduplicationId(t *testing.T) {
	e := newEnv(t)
	dlq := e.create("dlq.fifo", fifoAttrs())
	src := e.create("src.fifo", fifoAttrs("RedrivePolicy", redrivePolicy(e, "dlq.fifo", 1)))
	byRedrive := e.sendIn(src, queue.SendMessageInput{MessageBody: "redrive", MessageGroupId: "g", MessageDeduplicationId: "D1"})
	byCall := e.sendIn(src, queue.SendMessageInput{MessageBody: "call", MessageGroupId: "h", MessageDeduplicationId: "D2"})
	for _, m := range e.receive(src, queue.ReceiveMessageInput{MaxNumberOfMessages: 10, VisibilityTimeout: ptr(30)}) {
		if m.Body == "call" {
			if err := e.svc.MoveToDeadLetterQueue(e.ctx, src, m.ReceiptHandle); err != nil {
				t.Fatal(err)
			}
		}
	}
	e.clock.Advance(30 * time.Second)
	if m := e.receive(src, queue.ReceiveMessageInput{}); len(m) != 0 { // moves "redrive"
		t.Fatalf("not dead-lettered: %+v", m)
	}
	e.restart() // what was stored
	want := map[string]string{"redrive": byRedrive.MessageId, "call": byCall.MessageId}
	got := e.receive(dlq, queue.ReceiveMessageInput{MaxNumberOfMessages: 10})
	if len(got) != 2 {
		t.Fatalf("dead-letter queue holds %d messages, want 2", len(got))
	}
	for _, m := range got {
		if m.MessageId != want[m.Body] || m.Attributes["MessageDeduplicationId"] != want[m.Body] {
			t.Fatalf("dead-lettered %q: MessageId %s, MessageDeduplicationId %s; want both %s",
				m.Body, m.MessageId, m.Attributes["MessageDeduplicationId"], want[m.Body])
		}
	}
}

// TestARedrivenMessageIsANewMessage: "The redrive task resets the
// retention period. All redriven messages are considered new messages and
// are assigned a new messageID and enqueueTime"
// (sqs-configure-dead-letter-queue-redrive). Before, a message move task
// kept the MessageId (its enqueue time and receive count were already
// reset).
func TestARedrivenMessageIsANewMessage(t *testing.T) {
	for _, fifo := range []bool{false, true} {
		name, attrs := "standard", map[string]string(nil)
		if fifo {
			name, attrs = "fifo", fifoAttrs()
		}
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			suffix := ""
			if fifo {
				suffix = ".fifo"
			}
			e.create("dlq"+suffix, attrs)
			srcAttrs := map[string]string{"RedrivePolicy": redrivePolicy(e, "dlq"+suffix, 1)}
			for k, v := range attrs {
				srcAttrs[k] = v
			}
			src := e.create("src"+suffix, srcAttrs)
			out := e.sendIn(src, queue.SendMessageInput{MessageBody: "poison", MessageGroupId: "g", MessageDeduplicationId: dedupIf(fifo, "D")})
			e.receive(src, queue.ReceiveMessageInput{VisibilityTimeout: ptr(0)})
			if m := e.receive(src, queue.ReceiveMessageInput{}); len(m) != 0 {
				t.Fatalf("not dead-lettered: %+v", m)
			}
			e.clock.Advance(time.Hour)
			started := e.clock.Now()
			dlqArn := e.svc.ARN("dlq" + suffix)
			if _, err := e.svc.StartMessageMoveTask(e.ctx, dlqArn, "", 10); err != nil {
				t.Fatal(err)
			}
			e.waitMoved(dlqArn, 1, queue.MoveTaskCompleted)
			back := e.receive(src, queue.ReceiveMessageInput{})
			if len(back) != 1 {
				t.Fatalf("source holds %d messages, want 1", len(back))
			}
			a := back[0].Attributes
			if back[0].MessageId == out.MessageId || back[0].MessageId == "" || a["SentTimestamp"] != ms(started) || a["ApproximateReceiveCount"] != "1" {
				t.Fatalf("redriven message = %+v; want a new MessageId (sent as %s), SentTimestamp %s, receive count 1", back[0], out.MessageId, ms(started))
			}
		})
	}
}

func dedupIf(fifo bool, id string) string {
	if fifo {
		return id
	}
	return ""
}
