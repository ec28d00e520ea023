package queue_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/queue"
)

// TestAStoreAcknowledgedAfterTheLeaseEndedIsRefused: a write counts only
// when its acknowledgement comes while this process may still act as the
// queues' holder (its lease valid). Otherwise another process may hold the
// queues already and have read the stream before the write landed, so
// its index would not know the message: a send answers a retryable error
// (the client sends again, into the new holder's index), and a move to
// the dead-letter queue fails with the message still in its source queue.
// The cluster fault test lost poison messages this way: moved by a holder
// whose lease had stopped being valid, the copy landed after the next
// holder had read the dead-letter queue.
func TestAStoreAcknowledgedAfterTheLeaseEndedIsRefused(t *testing.T) {
	e := newEnv(t)
	dlq := e.create("dlq", nil)
	src := e.create("src", map[string]string{"RedrivePolicy": redrivePolicy(e, "dlq", 5)})
	e.send(src, "kept")
	m := e.receive(src, queue.ReceiveMessageInput{VisibilityTimeout: ptr(30)})
	if len(m) != 1 {
		t.Fatal("nothing received")
	}

	queue.SetHolding(e.svc, func() bool { return false })
	_, err := e.svc.SendMessage(e.ctx, src, queue.SendMessageInput{MessageBody: "late"})
	if err == nil || !awserr.IsRetryable(err) {
		t.Fatalf("send acknowledged after the lease ended: err = %v, want a retryable error", err)
	}
	err = e.svc.MoveToDeadLetterQueue(e.ctx, src, m[0].ReceiptHandle)
	if err == nil || !awserr.IsRetryable(err) {
		t.Fatalf("move acknowledged after the lease ended: err = %v, want a retryable error", err)
	}
	queue.SetHolding(e.svc, nil)

	// The message is still in its source queue, in flight until its
	// visibility timeout ends; the move can be made again.
	if c := e.counts(src); c[1] != "1" {
		t.Fatalf("source queue counts (visible, in flight, delayed) = %v, want the message still in flight", c)
	}
	if err := e.svc.MoveToDeadLetterQueue(e.ctx, src, m[0].ReceiptHandle); err != nil {
		t.Fatalf("move again, the lease valid: %v", err)
	}
	if got := e.bodies(dlq, queue.ReceiveMessageInput{}); len(got) == 0 || got[0] != "kept" {
		t.Fatalf("dead-letter queue holds %v, want kept", got)
	}
}

// TestACallDuringDeleteQueueDoesNotOutliveIt: a call that comes while
// DeleteQueue runs answers QueueDoesNotExist, and so does every call after
// it. (It used to load a fresh index from the metadata and stream not yet
// removed, which then outlived them: the next send went to the deleted
// stream and failed with InternalError "no response from stream", seen
// in a -race run of function/async's TestDeletedInternalQueueIsCreatedAgain.)
func TestACallDuringDeleteQueueDoesNotOutliveIt(t *testing.T) {
	e := newEnv(t)
	url := e.create("doomed", nil)
	e.send(url, "before")
	var during error
	queue.SetDeleteHook(e.svc, func() {
		_, during = e.svc.GetQueueAttributes(e.ctx, url, []string{"All"})
	})
	if err := e.svc.DeleteQueue(e.ctx, url); err != nil {
		t.Fatal(err)
	}
	queue.SetDeleteHook(e.svc, nil)
	if !errors.Is(during, awserr.ErrQueueDoesNotExist) {
		t.Errorf("GetQueueAttributes during DeleteQueue: %v, want QueueDoesNotExist", during)
	}
	if _, err := e.svc.SendMessage(e.ctx, url, queue.SendMessageInput{MessageBody: "after"}); !errors.Is(err, awserr.ErrQueueDoesNotExist) {
		t.Errorf("SendMessage after DeleteQueue: %v, want QueueDoesNotExist", err)
	}
}

// TestARecordNumberTakenInTheStreamIsNeverReused: an index whose next
// record number is behind its stream (loaded while a new stream leader
// was still applying the last writes) must not write a body over a stored
// one: the send is refused (retryable), the index is loaded again, and
// every message sent is there, after a restart too. Writing over it lost
// on-failure messages acknowledged just before the node serving the
// queues was killed (the cluster fault test).
func TestARecordNumberTakenInTheStreamIsNeverReused(t *testing.T) {
	e := newEnv(t)
	url := e.create("q", nil)
	e.send(url, "a")
	e.send(url, "b")
	queue.RewindRecordNumber(t, e.svc, url, 1) // the next record would be b's
	_, err := e.svc.SendMessage(e.ctx, url, queue.SendMessageInput{MessageBody: "c"})
	if err == nil || !awserr.IsRetryable(err) {
		t.Fatalf("a send onto a taken record number: %v, want a retryable error", err)
	}
	e.send(url, "c") // the retry, into the index loaded again
	want := []string{"a", "b", "c"}
	if got := e.bodies(url, queue.ReceiveMessageInput{VisibilityTimeout: ptr(0)}); !sameBodies(got, want) {
		t.Fatalf("bodies = %v, want %v", got, want)
	}
	e.restart()
	if got := e.bodies(url, queue.ReceiveMessageInput{}); !sameBodies(got, want) {
		t.Fatalf("after a restart: bodies = %v, want %v", got, want)
	}
}

// TestAReceiveWaitingOnADroppedIndexTakesNothingFromIt: a long poll
// parked on a queue's index when the index is dropped (loaded again after
// a taken record number, or handed over with the lease) answers a
// retryable error and never delivers from the old index. It used to wake
// and go on receiving there: a message whose visibility timeout ended was
// then received by it and by a receive on the new index at once, each
// believing it held the message for 60 s.
func TestAReceiveWaitingOnADroppedIndexTakesNothingFromIt(t *testing.T) {
	e := newEnv(t)
	url := e.create("q", nil)
	e.send(url, "a")
	if m := e.receive(url, queue.ReceiveMessageInput{VisibilityTimeout: ptr(10)}); len(m) != 1 {
		t.Fatalf("received %d messages, want a", len(m))
	}
	type result struct {
		msgs []queue.Message
		err  error
	}
	parked := make(chan result, 1)
	go func() {
		m, err := e.svc.ReceiveMessage(e.ctx, url, queue.ReceiveMessageInput{WaitTimeSeconds: ptr(20), VisibilityTimeout: ptr(60)})
		parked <- result{m, err}
	}()
	testenv.Eventually(t, 10*time.Second, "the receive parked", func() bool { return queue.Waiters(t, e.svc, url) == 1 })
	queue.RewindRecordNumber(t, e.svc, url, 1) // the next record would be a's
	if _, err := e.svc.SendMessage(e.ctx, url, queue.SendMessageInput{MessageBody: "b"}); err == nil || !awserr.IsRetryable(err) {
		t.Fatalf("a send onto a taken record number: %v, want a retryable error", err)
	}
	e.clock.Advance(10 * time.Second) // a is visible again
	r := <-parked
	if len(r.msgs) != 0 {
		t.Fatalf("the receive parked on the dropped index delivered %d messages (%q)", len(r.msgs), r.msgs[0].Body)
	}
	if r.err == nil || !awserr.IsRetryable(r.err) {
		t.Fatalf("the receive parked on the dropped index: err = %v, want a retryable error", r.err)
	}
	if got := e.bodies(url, queue.ReceiveMessageInput{VisibilityTimeout: ptr(60)}); !sameBodies(got, []string{"a"}) {
		t.Fatalf("a receive on the index loaded again: %v, want a", got)
	}
}

func sameBodies(got, want []string) bool {
	g := slices.Clone(got)
	slices.Sort(g)
	return slices.Equal(g, want)
}
