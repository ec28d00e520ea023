package queue_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/queue"
)

func redrivePolicy(e *env, dlq string, max int) string {
	return fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":%d}`, e.svc.ARN(dlq), max)
}

// receiveFailing receives url's next message n times without deleting it,
// letting each visibility timeout pass (as a failing consumer would).
func (e *env) receiveFailing(url string, n int) []queue.Message {
	e.t.Helper()
	var out []queue.Message
	for i := 0; i < n; i++ {
		out = append(out, e.receive(url, queue.ReceiveMessageInput{VisibilityTimeout: ptr(10)})...)
		e.clock.Advance(10 * time.Second)
	}
	return out
}

func TestRedrive(t *testing.T) {
	t.Run("a message is moved to the dead-letter queue when its receive count would exceed maxReceiveCount", func(t *testing.T) {
		e := newEnv(t)
		dlq := e.create("dlq", map[string]string{"MessageRetentionPeriod": "1209600"})
		src := e.create("src", map[string]string{"RedrivePolicy": redrivePolicy(e, "dlq", 3)})
		sent := e.clock.Now()
		out := e.send(src, "poison")
		got := e.receiveFailing(src, 3)
		if len(got) != 3 || got[2].Attributes["ApproximateReceiveCount"] != "3" {
			t.Fatalf("the first 3 receives = %d messages", len(got))
		}
		if m := e.receive(src, queue.ReceiveMessageInput{}); len(m) != 0 {
			t.Fatalf("4th receive returned %+v; want it moved", m)
		}
		if c := e.counts(src); c != [3]string{"0", "0", "0"} {
			t.Fatalf("source counts = %v", c)
		}
		m := e.receive(dlq, queue.ReceiveMessageInput{})
		if len(m) != 1 {
			t.Fatal("nothing in the dead-letter queue")
		}
		a := m[0].Attributes
		if m[0].MessageId != out.MessageId || m[0].Body != "poison" || a["ApproximateReceiveCount"] != "1" ||
			a["SentTimestamp"] != ms(sent) || a["DeadLetterQueueSourceArn"] != e.svc.ARN("src") {
			t.Fatalf("dead-lettered message = %+v", m[0])
		}
	})
	t.Run("other messages keep flowing while one is dead-lettered", func(t *testing.T) {
		e := newEnv(t)
		dlq := e.create("dlq", nil)
		src := e.create("src", map[string]string{"RedrivePolicy": redrivePolicy(e, "dlq", 1)})
		e.send(src, "bad")
		e.receive(src, queue.ReceiveMessageInput{VisibilityTimeout: ptr(0)})
		e.send(src, "good")
		if got := e.bodies(src, queue.ReceiveMessageInput{}); !equal(got, []string{"good"}) {
			t.Fatalf("= %v, want good (bad moved)", got)
		}
		if got := e.bodies(dlq, queue.ReceiveMessageInput{}); !equal(got, []string{"bad"}) {
			t.Fatalf("dead-letter queue = %v", got)
		}
	})
	t.Run("the dead-letter queue's retention counts from the original send on standard queues", func(t *testing.T) {
		e := newEnv(t)
		dlq := e.create("dlq", map[string]string{"MessageRetentionPeriod": "60"})
		src := e.create("src", map[string]string{"RedrivePolicy": redrivePolicy(e, "dlq", 1)})
		e.send(src, "a")
		e.receiveFailing(src, 5) // received once at 0 s, moved at 10 s
		if c := e.counts(dlq); c != [3]string{"1", "0", "0"} {
			t.Fatalf("dead-letter counts at 50 s = %v", c)
		}
		e.clock.Advance(10 * time.Second) // 60 s after the send, 50 s after the move
		if c := e.counts(dlq); c != [3]string{"0", "0", "0"} {
			t.Fatalf("dead-letter counts 60 s after the send = %v; want expired", c)
		}
	})
	t.Run("FIFO: moved in order, the group goes on, SentTimestamp is reset", func(t *testing.T) {
		e := newEnv(t)
		dlq := e.create("dlq.fifo", fifoAttrs())
		src := e.create("src.fifo", fifoAttrs("RedrivePolicy", redrivePolicy(e, "dlq.fifo", 2)))
		e.sendG(src, "g", "m1")
		e.sendG(src, "g", "m2")
		got := e.receiveFailing(src, 2)
		if len(got) != 2 || got[0].Body != "m1" || got[1].Body != "m1" {
			t.Fatalf("= %+v", got)
		}
		moved := e.clock.Now()
		if m := e.receive(src, queue.ReceiveMessageInput{}); len(m) != 1 || m[0].Body != "m2" {
			t.Fatalf("after m1 moved = %+v, want m2", m)
		}
		m := e.receive(dlq, queue.ReceiveMessageInput{})
		if len(m) != 1 || m[0].Body != "m1" || m[0].Attributes["SentTimestamp"] != ms(moved) ||
			m[0].Attributes["MessageGroupId"] != "g" || m[0].Attributes["DeadLetterQueueSourceArn"] != e.svc.ARN("src.fifo") {
			t.Fatalf("dead-lettered = %+v", m)
		}
	})
	t.Run("a redrive survives a restart: receive counts are kept", func(t *testing.T) {
		e := newEnv(t)
		dlq := e.create("dlq", nil)
		src := e.create("src", map[string]string{"RedrivePolicy": redrivePolicy(e, "dlq", 2)})
		e.send(src, "a")
		e.receiveFailing(src, 2)
		e.restart()
		if m := e.receive(src, queue.ReceiveMessageInput{}); len(m) != 0 {
			t.Fatalf("received after restart: %+v", m)
		}
		if got := e.bodies(dlq, queue.ReceiveMessageInput{}); !equal(got, []string{"a"}) {
			t.Fatalf("dead-letter queue = %v", got)
		}
	})
	t.Run("if the dead-letter queue is gone, messages are delivered, not lost", func(t *testing.T) {
		e := newEnv(t)
		e.create("dlq", nil)
		src := e.create("src", map[string]string{"RedrivePolicy": redrivePolicy(e, "dlq", 1)})
		e.send(src, "a")
		e.receiveFailing(src, 1)
		if err := e.svc.DeleteQueue(e.ctx, "dlq"); err != nil {
			t.Fatal(err)
		}
		m := e.receive(src, queue.ReceiveMessageInput{})
		if len(m) != 1 || m[0].Attributes["ApproximateReceiveCount"] != "2" {
			t.Fatalf("= %+v", m)
		}
	})
}

func TestMoveToDeadLetterQueue(t *testing.T) {
	t.Run("moves an in-flight message as redrive does; a move task without DestinationArn brings it back", func(t *testing.T) {
		e := newEnv(t)
		dlq := e.create("dlq", nil)
		src := e.create("src", map[string]string{"RedrivePolicy": redrivePolicy(e, "dlq", 5)})
		sent := e.clock.Now()
		out := e.send(src, "given up")
		e.clock.Advance(3 * time.Second)
		m := e.receive(src, queue.ReceiveMessageInput{VisibilityTimeout: ptr(300)})
		if len(m) != 1 {
			t.Fatal("nothing received")
		}
		if err := e.svc.MoveToDeadLetterQueue(e.ctx, src, m[0].ReceiptHandle); err != nil {
			t.Fatal(err)
		}
		if c := e.counts(src); c != [3]string{"0", "0", "0"} {
			t.Fatalf("source counts = %v, want the message gone", c)
		}
		if err := e.svc.ChangeMessageVisibility(e.ctx, src, m[0].ReceiptHandle, 0); !errors.Is(err, awserr.ErrReceiptHandleIsInvalid) {
			t.Fatalf("ChangeMessageVisibility of the moved message = %v", err)
		}
		e.restart() // durable when the call returned
		got := e.receive(dlq, queue.ReceiveMessageInput{VisibilityTimeout: ptr(0)})
		if len(got) != 1 {
			t.Fatal("nothing in the dead-letter queue")
		}
		a := got[0].Attributes
		if got[0].MessageId != out.MessageId || got[0].Body != "given up" || a["ApproximateReceiveCount"] != "1" ||
			a["SentTimestamp"] != ms(sent) || a["DeadLetterQueueSourceArn"] != e.svc.ARN("src") {
			t.Fatalf("dead-lettered message = %+v", got[0])
		}
		if m := e.receive(src, queue.ReceiveMessageInput{}); len(m) != 0 {
			t.Fatalf("source after restart = %+v", m)
		}
		dlqArn := e.svc.ARN("dlq")
		if _, err := e.svc.StartMessageMoveTask(e.ctx, dlqArn, "", 0); err != nil {
			t.Fatal(err)
		}
		e.waitMoved(dlqArn, 1, queue.MoveTaskCompleted)
		back := e.receive(src, queue.ReceiveMessageInput{})
		if len(back) != 1 || back[0].MessageId == out.MessageId || back[0].Body != "given up" { // a new MessageId
			t.Fatalf("back in the source = %+v", back)
		}
	})
	t.Run("without a RedrivePolicy the message stays in flight", func(t *testing.T) {
		e := newEnv(t)
		url := e.create("q", nil)
		e.send(url, "a")
		m := e.receive(url, queue.ReceiveMessageInput{VisibilityTimeout: ptr(30)})
		wantErr(t, e.svc.MoveToDeadLetterQueue(e.ctx, url, m[0].ReceiptHandle), awserr.ErrUnsupportedOperation, "RedrivePolicy")
		if c := e.counts(url); c != [3]string{"0", "1", "0"} {
			t.Fatalf("counts = %v, want the message in flight", c)
		}
		e.clock.Advance(30 * time.Second)
		if got := e.bodies(url, queue.ReceiveMessageInput{}); !equal(got, []string{"a"}) {
			t.Fatalf("after the visibility timeout = %v", got)
		}
	})
	t.Run("a dead-letter queue that is gone is an error naming RedrivePolicy; the message stays", func(t *testing.T) {
		e := newEnv(t)
		e.create("dlq", nil)
		src := e.create("src", map[string]string{"RedrivePolicy": redrivePolicy(e, "dlq", 5)})
		e.send(src, "a")
		m := e.receive(src, queue.ReceiveMessageInput{VisibilityTimeout: ptr(30)})
		if err := e.svc.DeleteQueue(e.ctx, "dlq"); err != nil {
			t.Fatal(err)
		}
		wantErr(t, e.svc.MoveToDeadLetterQueue(e.ctx, src, m[0].ReceiptHandle), awserr.ErrUnsupportedOperation, "RedrivePolicy")
		e.delete(src, m[0].ReceiptHandle) // still in flight with its handle
		if c := e.counts(src); c != [3]string{"0", "0", "0"} {
			t.Fatalf("counts = %v", c)
		}
	})
	t.Run("the handle must be the latest receive's and the message in flight", func(t *testing.T) {
		e := newEnv(t)
		e.create("dlq", nil)
		src := e.create("src", map[string]string{"RedrivePolicy": redrivePolicy(e, "dlq", 5)})
		e.send(src, "a")
		old := e.receive(src, queue.ReceiveMessageInput{VisibilityTimeout: ptr(10)})[0].ReceiptHandle
		e.clock.Advance(10 * time.Second)
		wantErr(t, e.svc.MoveToDeadLetterQueue(e.ctx, src, old), awserr.ErrMessageNotInflight)
		e.receive(src, queue.ReceiveMessageInput{VisibilityTimeout: ptr(10)})
		wantErr(t, e.svc.MoveToDeadLetterQueue(e.ctx, src, old), awserr.ErrReceiptHandleIsInvalid)
		wantErr(t, e.svc.MoveToDeadLetterQueue(e.ctx, src, "garbage"), awserr.ErrReceiptHandleIsInvalid)
		if c := e.counts(src); c != [3]string{"0", "1", "0"} {
			t.Fatalf("counts = %v", c)
		}
	})
	t.Run("FIFO: the group goes on, SentTimestamp is reset", func(t *testing.T) {
		e := newEnv(t)
		dlq := e.create("dlq.fifo", fifoAttrs())
		src := e.create("src.fifo", fifoAttrs("RedrivePolicy", redrivePolicy(e, "dlq.fifo", 5)))
		out := e.sendG(src, "g", "m1")
		e.sendG(src, "g", "m2")
		m := e.receive(src, queue.ReceiveMessageInput{VisibilityTimeout: ptr(300)})
		if len(m) != 1 || m[0].Body != "m1" {
			t.Fatalf("= %+v", m)
		}
		e.clock.Advance(time.Second)
		moved := e.clock.Now()
		if err := e.svc.MoveToDeadLetterQueue(e.ctx, src, m[0].ReceiptHandle); err != nil {
			t.Fatal(err)
		}
		if got := e.bodies(src, queue.ReceiveMessageInput{}); !equal(got, []string{"m2"}) {
			t.Fatalf("after m1 moved = %v, want m2", got)
		}
		d := e.receive(dlq, queue.ReceiveMessageInput{})
		if len(d) != 1 || d[0].MessageId != out.MessageId || d[0].Attributes["SentTimestamp"] != ms(moved) ||
			d[0].Attributes["MessageGroupId"] != "g" || d[0].Attributes["DeadLetterQueueSourceArn"] != e.svc.ARN("src.fifo") {
			t.Fatalf("dead-lettered = %+v", d)
		}
	})
	t.Run("a receive waiting on the dead-letter queue gets the moved message", func(t *testing.T) {
		e := newEnv(t)
		dlq := e.create("dlq", nil)
		src := e.create("src", map[string]string{"RedrivePolicy": redrivePolicy(e, "dlq", 5)})
		e.send(src, "a")
		m := e.receive(src, queue.ReceiveMessageInput{})
		ch := e.poll(t, dlq, queue.ReceiveMessageInput{WaitTimeSeconds: ptr(20)})
		if err := e.svc.MoveToDeadLetterQueue(e.ctx, src, m[0].ReceiptHandle); err != nil {
			t.Fatal(err)
		}
		if r := polled(t, ch); r.err != nil || len(r.msgs) != 1 || r.msgs[0].Body != "a" {
			t.Fatalf("= %+v", r)
		}
	})
}
