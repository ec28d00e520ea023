package queue_test

import (
	"fmt"
	"testing"
	"time"

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
