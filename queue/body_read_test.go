package queue_test

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/queue"
)

// TestABodyReadFromAReplicaBehindTheLeaderIsStillDelivered: a message
// body no longer in memory is read back from JetStream; on a replicated
// stream a direct get may be answered by a follower that has not applied
// the body yet. Its "not found" is checked with the stream's leader, so
// the message is received, and moved to its dead-letter queue, whole.
func TestABodyReadFromAReplicaBehindTheLeaderIsStillDelivered(t *testing.T) {
	e := newEnv(t)
	queue.SetCacheBudget(e.svc, 0) // every body is read back
	queue.SetStaleReads(e.svc, func() bool { return true })
	dlq := e.create("dlq", nil)
	src := e.create("src", map[string]string{"RedrivePolicy": redrivePolicy(e, "dlq", 1)})
	e.send(src, "order-7")
	if got := e.receive(src, queue.ReceiveMessageInput{VisibilityTimeout: ptr(10)}); len(got) != 1 || got[0].Body != "order-7" {
		t.Fatalf("received %+v, want the message order-7", got)
	}
	e.clock.Advance(10 * time.Second)
	if got := e.receive(src, queue.ReceiveMessageInput{}); len(got) != 0 {
		t.Fatalf("received %d messages past maxReceiveCount 1, want it moved", len(got))
	}
	if got := e.receive(dlq, queue.ReceiveMessageInput{}); len(got) != 1 || got[0].Body != "order-7" {
		t.Fatalf("dead-letter queue holds %+v, want order-7 with its body", got)
	}
}

// TestAMessageWhoseBodyCannotBeReadIsNotMovedWithoutIt: past
// maxReceiveCount a message is moved to its dead-letter queue with its
// body; when the body cannot be read at that moment, the message is not
// moved (it stays in its queue, unreadable for its visibility timeout,
// and is moved whole at a later receive), never moved with an empty body.
func TestAMessageWhoseBodyCannotBeReadIsNotMovedWithoutIt(t *testing.T) {
	e := newEnv(t)
	queue.SetCacheBudget(e.svc, 0)
	broken := readFault(e)
	dlq := e.create("dlq", nil)
	src := e.create("src", map[string]string{"RedrivePolicy": redrivePolicy(e, "dlq", 1)})
	e.send(src, "order-8")
	if got := e.receive(src, queue.ReceiveMessageInput{VisibilityTimeout: ptr(10)}); len(got) != 1 {
		t.Fatalf("received %d messages, want 1", len(got))
	}
	e.clock.Advance(10 * time.Second)
	broken.Store(true)
	e.receive(src, queue.ReceiveMessageInput{VisibilityTimeout: ptr(10)}) // the move fails to read the body
	broken.Store(false)
	if got := e.receive(dlq, queue.ReceiveMessageInput{}); len(got) != 0 {
		t.Fatalf("dead-letter queue holds %+v while the body was unreadable; want nothing moved", got)
	}
	e.clock.Advance(10 * time.Second)
	if got := e.receive(src, queue.ReceiveMessageInput{}); len(got) != 0 {
		t.Fatalf("received %d messages past maxReceiveCount, want it moved", len(got))
	}
	if got := e.receive(dlq, queue.ReceiveMessageInput{}); len(got) != 1 || got[0].Body != "order-8" {
		t.Fatalf("dead-letter queue holds %+v, want order-8 with its body", got)
	}
}

// TestAMoveTaskDoesNotMoveAMessageWithoutItsBody: a message move task
// that cannot read a message's body leaves the message where it is, with
// its body, and ends FAILED saying why; it never moves an empty body.
func TestAMoveTaskDoesNotMoveAMessageWithoutItsBody(t *testing.T) {
	e := newEnv(t)
	dlq := e.create("dlq", nil)
	src := e.create("src", map[string]string{"RedrivePolicy": redrivePolicy(e, "dlq", 1)})
	queue.SetCacheBudget(e.svc, 0)
	e.deadLetter(src, 1)
	broken := readFault(e)
	broken.Store(true)
	if _, err := e.svc.StartMessageMoveTask(e.ctx, e.svc.ARN("dlq"), "", 10); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, "the task ended", func() bool { return e.task(e.svc.ARN("dlq")).Status != queue.MoveTaskRunning })
	if task := e.task(e.svc.ARN("dlq")); task.Status != queue.MoveTaskFailed || !strings.Contains(task.FailureReason, "unreadable") {
		t.Fatalf("task = %+v, want FAILED naming the unreadable body", task)
	}
	broken.Store(false)
	if got := e.receive(src, queue.ReceiveMessageInput{}); len(got) != 0 {
		t.Fatalf("source received %+v; want nothing moved", got)
	}
	if got := e.receive(dlq, queue.ReceiveMessageInput{}); len(got) != 1 || got[0].Body != "m0" {
		t.Fatalf("dead-letter queue holds %+v, want m0 with its body", got)
	}
}

// readFault makes every read of a message body in e fail while the
// returned flag is set (it starts unset).
func readFault(e *env) *atomic.Bool {
	broken := new(atomic.Bool)
	queue.SetReadFault(e.svc, func() error {
		if broken.Load() {
			return errors.New("engine unreachable")
		}
		return nil
	})
	return broken
}

// TestAFIFOGroupWaitsBehindAMessageWhoseBodyCannotBeRead: a receive that
// cannot read a FIFO message's body leaves the group's later messages
// out too; they come back after the visibility timeout, behind it, in
// order. Before, the receive returned m2 without m1: a consumer
// processed m2, then m1.
func TestAFIFOGroupWaitsBehindAMessageWhoseBodyCannotBeRead(t *testing.T) {
	e := newEnv(t)
	queue.SetCacheBudget(e.svc, 0) // bodies are read back
	var reads atomic.Int32
	queue.SetReadFault(e.svc, func() error {
		if reads.Add(1) == 1 {
			return errors.New("transient")
		}
		return nil
	})
	url := e.create("src.fifo", fifoAttrs())
	e.sendG(url, "g", "m1")
	e.sendG(url, "g", "m2")
	var order []string
	take := func() {
		for _, m := range e.receive(url, queue.ReceiveMessageInput{MaxNumberOfMessages: 10, VisibilityTimeout: ptr(30)}) {
			order = append(order, m.Body)
			e.delete(url, m.ReceiptHandle)
		}
	}
	take()
	if len(order) != 0 {
		t.Fatalf("the first receive returned %v, want nothing (m1 unreadable, m2 behind it)", order)
	}
	e.clock.Advance(30 * time.Second)
	take()
	if !equal(order, []string{"m1", "m2"}) {
		t.Fatalf("delivered %v, want m1 then m2", order)
	}
}
