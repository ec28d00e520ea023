package queue_test

import (
	"testing"
	"time"

	"github.com/runnel-dev/runnel/queue"
)

// TestAnAttemptIdRetriedAfterTheVisibilityTimeoutIsANewReceive: "During a
// visibility timeout, subsequent calls with the same
// ReceiveRequestAttemptId return the same messages and receipt handles"
// (API_ReceiveMessage); once the timeout ended the messages are visible
// again and a receive, whatever its attempt id, is a new one: a new
// handle, the receive count advanced, and past maxReceiveCount the
// message goes to the dead-letter queue. Before, the retry replayed the
// first receive for the whole 5 minutes: a consumer reusing its attempt
// id got a poison message with the same handle and receive count 1 again
// and again, never dead-lettered.
func TestAnAttemptIdRetriedAfterTheVisibilityTimeoutIsANewReceive(t *testing.T) {
	e := newEnv(t)
	dlq := e.create("dlq.fifo", fifoAttrs())
	q := e.create("q.fifo", fifoAttrs("RedrivePolicy", redrivePolicy(e, "dlq.fifo", 2)))
	e.sendG(q, "g", "poison")
	in := queue.ReceiveMessageInput{VisibilityTimeout: ptr(30), ReceiveRequestAttemptId: "A"}
	first := e.receive(q, in)
	if len(first) != 1 {
		t.Fatal("nothing received")
	}
	e.clock.Advance(10 * time.Second)
	if again := e.receive(q, in); len(again) != 1 || again[0].ReceiptHandle != first[0].ReceiptHandle {
		t.Fatalf("a retry within the visibility timeout = %+v, want the same handle", again)
	}
	e.clock.Advance(40 * time.Second) // the reset timeout ended
	second := e.receive(q, in)
	if len(second) != 1 || second[0].ReceiptHandle == first[0].ReceiptHandle || second[0].Attributes["ApproximateReceiveCount"] != "2" {
		t.Fatalf("a retry after the visibility timeout = %+v, want a new receive (new handle, receive count 2)", second)
	}
	e.clock.Advance(40 * time.Second)
	if m := e.receive(q, in); len(m) != 0 {
		t.Fatalf("a third receive past maxReceiveCount 2 = %+v, want the message dead-lettered", m)
	}
	if got := e.bodies(dlq, queue.ReceiveMessageInput{}); !equal(got, []string{"poison"}) {
		t.Fatalf("dead-letter queue holds %v, want [poison]", got)
	}
}
