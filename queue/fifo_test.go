package queue_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/queue"
)

func fifoAttrs(extra ...string) map[string]string {
	a := map[string]string{"FifoQueue": "true"}
	for i := 0; i+1 < len(extra); i += 2 {
		a[extra[i]] = extra[i+1]
	}
	return a
}

// sendG sends body to group g with an explicit deduplication id.
func (e *env) sendG(url, g, body string) *queue.SendMessageOutput {
	e.t.Helper()
	return e.sendIn(url, queue.SendMessageInput{MessageBody: body, MessageGroupId: g, MessageDeduplicationId: body})
}

func TestFIFOGroups(t *testing.T) {
	tests := []struct {
		rule string
		run  func(t *testing.T, e *env, url string)
	}{
		{"messages of a group come in send order", func(t *testing.T, e *env, url string) {
			for i := 0; i < 5; i++ {
				e.sendG(url, "g", strconv.Itoa(i))
			}
			var got []string
			for i := 0; i < 5; i++ {
				m := e.receive(url, queue.ReceiveMessageInput{})
				got = append(got, m[0].Body)
				e.delete(url, m[0].ReceiptHandle)
			}
			if !equal(got, []string{"0", "1", "2", "3", "4"}) {
				t.Fatalf("= %v", got)
			}
		}},
		{"while a message of a group is in flight, the group delivers nothing more", func(t *testing.T, e *env, url string) {
			e.sendG(url, "A", "a1")
			e.sendG(url, "A", "a2")
			e.sendG(url, "B", "b1")
			a1 := e.receive(url, queue.ReceiveMessageInput{})
			if a1[0].Body != "a1" {
				t.Fatalf("first = %s", a1[0].Body)
			}
			if got := e.bodies(url, queue.ReceiveMessageInput{}); !equal(got, []string{"b1"}) {
				t.Fatalf("with a1 in flight = %v, want only b1", got)
			}
			if got := e.bodies(url, queue.ReceiveMessageInput{}); len(got) != 0 {
				t.Fatalf("with a1 and b1 in flight = %v, want nothing", got)
			}
			e.delete(url, a1[0].ReceiptHandle)
			if got := e.bodies(url, queue.ReceiveMessageInput{}); !equal(got, []string{"a2"}) {
				t.Fatalf("after deleting a1 = %v, want a2", got)
			}
		}},
		{"deleting a group's message in flight wakes a waiting receive for the group", func(t *testing.T, e *env, url string) {
			e.sendG(url, "A", "a1")
			e.sendG(url, "A", "a2")
			a1 := e.receive(url, queue.ReceiveMessageInput{})
			ch := e.poll(t, url, queue.ReceiveMessageInput{WaitTimeSeconds: ptr(20)})
			e.delete(url, a1[0].ReceiptHandle)
			if r := polled(t, ch); r.err != nil || len(r.msgs) != 1 || r.msgs[0].Body != "a2" {
				t.Fatalf("= %+v", r)
			}
		}},
		{"one receive may take several messages of a group, in order", func(t *testing.T, e *env, url string) {
			for _, b := range []string{"a1", "b1", "a2", "a3", "b2"} {
				e.sendG(url, b[:1], b)
			}
			if got := e.bodies(url, queue.ReceiveMessageInput{MaxNumberOfMessages: 4}); !equal(got, []string{"a1", "a2", "a3", "b1"}) {
				t.Fatalf("= %v", got)
			}
		}},
		{"after a visibility timeout the group starts again at its head", func(t *testing.T, e *env, url string) {
			e.sendG(url, "A", "a1")
			e.sendG(url, "A", "a2")
			e.receive(url, queue.ReceiveMessageInput{})
			e.clock.Advance(30 * time.Second)
			m := e.receive(url, queue.ReceiveMessageInput{MaxNumberOfMessages: 1})
			if m[0].Body != "a1" || m[0].Attributes["ApproximateReceiveCount"] != "2" {
				t.Fatalf("= %s (count %s), want a1 again", m[0].Body, m[0].Attributes["ApproximateReceiveCount"])
			}
		}},
		{"a later message in flight blocks the group even when the head is visible", func(t *testing.T, e *env, url string) {
			e.sendG(url, "A", "a1")
			e.sendG(url, "A", "a2")
			m := e.receive(url, queue.ReceiveMessageInput{MaxNumberOfMessages: 2})
			if err := e.svc.ChangeMessageVisibility(e.ctx, url, m[0].ReceiptHandle, 0); err != nil {
				t.Fatal(err)
			}
			if got := e.bodies(url, queue.ReceiveMessageInput{}); len(got) != 0 {
				t.Fatalf("= %v while a2 is in flight", got)
			}
			e.delete(url, m[1].ReceiptHandle)
			if got := e.bodies(url, queue.ReceiveMessageInput{}); !equal(got, []string{"a1"}) {
				t.Fatalf("= %v", got)
			}
		}},
		{"the queue's DelaySeconds delays the group", func(t *testing.T, e *env, url string) {
			if err := e.svc.SetQueueAttributes(e.ctx, url, map[string]string{"DelaySeconds": "10"}); err != nil {
				t.Fatal(err)
			}
			e.sendG(url, "A", "a1")
			if got := e.bodies(url, queue.ReceiveMessageInput{}); len(got) != 0 {
				t.Fatalf("= %v before the delay", got)
			}
			e.clock.Advance(10 * time.Second)
			if got := e.bodies(url, queue.ReceiveMessageInput{}); !equal(got, []string{"a1"}) {
				t.Fatalf("= %v", got)
			}
		}},
		{"FIFO attributes: SequenceNumber increases, group and deduplication ids", func(t *testing.T, e *env, url string) {
			o1 := e.sendG(url, "A", "a1")
			o2 := e.sendG(url, "B", "b1")
			if o1.SequenceNumber == "" || o2.SequenceNumber <= o1.SequenceNumber || len(o2.SequenceNumber) != len(o1.SequenceNumber) {
				t.Fatalf("sequence numbers %q %q", o1.SequenceNumber, o2.SequenceNumber)
			}
			m := e.receive(url, queue.ReceiveMessageInput{MaxNumberOfMessages: 2})
			a := m[1].Attributes
			if a["MessageGroupId"] != "B" || a["MessageDeduplicationId"] != "b1" || a["SequenceNumber"] != o2.SequenceNumber {
				t.Fatalf("attributes = %v", a)
			}
		}},
		{"a FIFO send's explicit DelaySeconds 0 is accepted and the queue's delay applies", func(t *testing.T, e *env, url string) {
			// Before, any DelaySeconds was refused on a FIFO queue, 0 too;
			// SQS accepts 0 (clients that always pass it work on AWS).
			if err := e.svc.SetQueueAttributes(e.ctx, url, map[string]string{"DelaySeconds": "10"}); err != nil {
				t.Fatal(err)
			}
			if _, err := e.svc.SendMessage(e.ctx, url, queue.SendMessageInput{MessageBody: "z", MessageGroupId: "g", MessageDeduplicationId: "z", DelaySeconds: ptr(0)}); err != nil {
				t.Fatalf("DelaySeconds 0 on a FIFO send: %v", err)
			}
			if got := e.bodies(url, queue.ReceiveMessageInput{}); len(got) != 0 {
				t.Fatalf("= %v before the queue's delay", got)
			}
			e.clock.Advance(10 * time.Second)
			if got := e.bodies(url, queue.ReceiveMessageInput{}); !equal(got, []string{"z"}) {
				t.Fatalf("= %v after the queue's delay", got)
			}
		}},
		{"FIFO queues refuse a message's DelaySeconds and need a MessageGroupId", func(t *testing.T, e *env, url string) {
			_, err := e.svc.SendMessage(e.ctx, url, queue.SendMessageInput{MessageBody: "x", MessageGroupId: "g", MessageDeduplicationId: "x", DelaySeconds: ptr(5)})
			wantErr(t, err, awserr.ErrSQSInvalidParameterValue, "DelaySeconds")
			_, err = e.svc.SendMessage(e.ctx, url, queue.SendMessageInput{MessageBody: "x", MessageDeduplicationId: "x"})
			wantErr(t, err, awserr.ErrMissingParameter, "MessageGroupId")
		}},
		{"on a FIFO queue an expired receipt handle does not delete", func(t *testing.T, e *env, url string) {
			e.sendG(url, "A", "a1")
			m := e.receive(url, queue.ReceiveMessageInput{})
			e.clock.Advance(30 * time.Second)
			wantErr(t, e.svc.DeleteMessage(e.ctx, url, m[0].ReceiptHandle), awserr.ErrReceiptHandleIsInvalid)
			again := e.receive(url, queue.ReceiveMessageInput{})
			wantErr(t, e.svc.DeleteMessage(e.ctx, url, m[0].ReceiptHandle), awserr.ErrReceiptHandleIsInvalid)
			e.delete(url, again[0].ReceiptHandle)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			e := newEnv(t)
			tt.run(t, e, e.create("q.fifo", fifoAttrs()))
		})
	}
}

func TestFIFODeduplication(t *testing.T) {
	tests := []struct {
		rule  string
		attrs map[string]string
		run   func(t *testing.T, e *env, url string)
	}{
		{"a repeated deduplication id within 5 minutes is accepted but not delivered again", fifoAttrs(), func(t *testing.T, e *env, url string) {
			first := e.sendIn(url, queue.SendMessageInput{MessageBody: "one", MessageGroupId: "g", MessageDeduplicationId: "d"})
			e.clock.Advance(4*time.Minute + 59*time.Second)
			dup := e.sendIn(url, queue.SendMessageInput{MessageBody: "two", MessageGroupId: "g", MessageDeduplicationId: "d"})
			if dup.MessageId != first.MessageId || dup.SequenceNumber != first.SequenceNumber {
				t.Fatalf("duplicate = %+v, want the first send's id %s", dup, first.MessageId)
			}
			if got := e.bodies(url, queue.ReceiveMessageInput{}); !equal(got, []string{"one"}) {
				t.Fatalf("= %v", got)
			}
		}},
		{"the id is accepted again 5 minutes after the first send", fifoAttrs(), func(t *testing.T, e *env, url string) {
			first := e.sendIn(url, queue.SendMessageInput{MessageBody: "one", MessageGroupId: "g", MessageDeduplicationId: "d"})
			e.clock.Advance(5*time.Minute + time.Second)
			again := e.sendIn(url, queue.SendMessageInput{MessageBody: "two", MessageGroupId: "g", MessageDeduplicationId: "d"})
			if again.MessageId == first.MessageId {
				t.Fatal("deduplicated after 5 minutes")
			}
			if got := e.bodies(url, queue.ReceiveMessageInput{}); !equal(got, []string{"one", "two"}) {
				t.Fatalf("= %v", got)
			}
		}},
		{"deduplication holds after the message was deleted", fifoAttrs(), func(t *testing.T, e *env, url string) {
			e.sendIn(url, queue.SendMessageInput{MessageBody: "one", MessageGroupId: "g", MessageDeduplicationId: "d"})
			m := e.receive(url, queue.ReceiveMessageInput{})
			e.delete(url, m[0].ReceiptHandle)
			e.clock.Advance(time.Minute)
			e.sendIn(url, queue.SendMessageInput{MessageBody: "one", MessageGroupId: "g", MessageDeduplicationId: "d"})
			if got := e.bodies(url, queue.ReceiveMessageInput{}); len(got) != 0 {
				t.Fatalf("= %v, want nothing", got)
			}
			e.clock.Advance(4*time.Minute + time.Second)
			e.sendIn(url, queue.SendMessageInput{MessageBody: "one", MessageGroupId: "g", MessageDeduplicationId: "d"})
			if got := e.bodies(url, queue.ReceiveMessageInput{}); !equal(got, []string{"one"}) {
				t.Fatalf("after 5 min + 1 s = %v", got)
			}
		}},
		{"deduplication holds across a restart, also after delete", fifoAttrs(), func(t *testing.T, e *env, url string) {
			first := e.sendIn(url, queue.SendMessageInput{MessageBody: "kept", MessageGroupId: "g", MessageDeduplicationId: "k"})
			e.sendIn(url, queue.SendMessageInput{MessageBody: "gone", MessageGroupId: "h", MessageDeduplicationId: "g"})
			m := e.receive(url, queue.ReceiveMessageInput{MaxNumberOfMessages: 10})
			e.delete(url, m[1].ReceiptHandle)
			e.restart()
			dup := e.sendIn(url, queue.SendMessageInput{MessageBody: "kept", MessageGroupId: "g", MessageDeduplicationId: "k"})
			e.sendIn(url, queue.SendMessageInput{MessageBody: "gone", MessageGroupId: "h", MessageDeduplicationId: "g"})
			if dup.MessageId != first.MessageId {
				t.Fatal("deduplication id forgotten across the restart")
			}
			e.clock.Advance(30 * time.Second)
			if got := e.bodies(url, queue.ReceiveMessageInput{}); !equal(got, []string{"kept"}) {
				t.Fatalf("= %v, want only the first kept", got)
			}
		}},
		{"ContentBasedDeduplication deduplicates by the body's SHA-256", fifoAttrs("ContentBasedDeduplication", "true"), func(t *testing.T, e *env, url string) {
			a := e.sendIn(url, queue.SendMessageInput{MessageBody: "same", MessageGroupId: "g"})
			b := e.sendIn(url, queue.SendMessageInput{MessageBody: "same", MessageGroupId: "g2"})
			e.sendIn(url, queue.SendMessageInput{MessageBody: "other", MessageGroupId: "g"})
			if a.MessageId != b.MessageId {
				t.Fatal("same body not deduplicated")
			}
			m := e.receive(url, queue.ReceiveMessageInput{MaxNumberOfMessages: 10})
			if len(m) != 2 || m[0].Body != "same" || m[1].Body != "other" {
				t.Fatalf("= %+v", m)
			}
			if m[0].Attributes["MessageDeduplicationId"] != "0967115f2813a3541eaef77de9d9d5773f1c0c04314b0bbfe4ff3b3b1c55b5d5" {
				t.Fatalf("content deduplication id = %s", m[0].Attributes["MessageDeduplicationId"])
			}
		}},
		{"an explicit id overrides the content hash", fifoAttrs("ContentBasedDeduplication", "true"), func(t *testing.T, e *env, url string) {
			e.sendIn(url, queue.SendMessageInput{MessageBody: "same", MessageGroupId: "g", MessageDeduplicationId: "1"})
			e.sendIn(url, queue.SendMessageInput{MessageBody: "same", MessageGroupId: "g", MessageDeduplicationId: "2"})
			if got := e.bodies(url, queue.ReceiveMessageInput{}); !equal(got, []string{"same", "same"}) {
				t.Fatalf("= %v", got)
			}
		}},
		{"without an id or ContentBasedDeduplication the send is refused", fifoAttrs(), func(t *testing.T, e *env, url string) {
			_, err := e.svc.SendMessage(e.ctx, url, queue.SendMessageInput{MessageBody: "x", MessageGroupId: "g"})
			wantErr(t, err, awserr.ErrSQSInvalidParameterValue, "ContentBasedDeduplication")
		}},
		{"DeduplicationScope messageGroup deduplicates within a group only", fifoAttrs("DeduplicationScope", "messageGroup", "FifoThroughputLimit", "perMessageGroupId"), func(t *testing.T, e *env, url string) {
			e.sendIn(url, queue.SendMessageInput{MessageBody: "a", MessageGroupId: "g1", MessageDeduplicationId: "d"})
			e.sendIn(url, queue.SendMessageInput{MessageBody: "b", MessageGroupId: "g2", MessageDeduplicationId: "d"})
			e.sendIn(url, queue.SendMessageInput{MessageBody: "c", MessageGroupId: "g1", MessageDeduplicationId: "d"})
			if got := e.bodies(url, queue.ReceiveMessageInput{}); !equal(got, []string{"a", "b"}) {
				t.Fatalf("= %v", got)
			}
		}},
		{"duplicates within one batch", fifoAttrs(), func(t *testing.T, e *env, url string) {
			out, err := e.svc.SendMessageBatch(e.ctx, url, []queue.SendMessageBatchRequestEntry{
				{Id: "1", SendMessageInput: queue.SendMessageInput{MessageBody: "x", MessageGroupId: "g", MessageDeduplicationId: "d"}},
				{Id: "2", SendMessageInput: queue.SendMessageInput{MessageBody: "y", MessageGroupId: "g", MessageDeduplicationId: "d"}},
			})
			if err != nil || len(out.Successful) != 2 || out.Successful[0].MessageId != out.Successful[1].MessageId {
				t.Fatalf("= %+v, %v", out, err)
			}
			if got := e.bodies(url, queue.ReceiveMessageInput{}); !equal(got, []string{"x"}) {
				t.Fatalf("= %v", got)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			e := newEnv(t)
			tt.run(t, e, e.create("q.fifo", tt.attrs))
		})
	}
}

// TestPerMessageGroupThroughputNeedsMessageGroupDeduplication: "The
// perMessageGroupId value is allowed only when the value for
// DeduplicationScope is messageGroup" (API_SetQueueAttributes,
// FifoThroughputLimit), at CreateQueue and at SetQueueAttributes, where
// the queue's stored attributes count. Before, the pair was taken.
func TestPerMessageGroupThroughputNeedsMessageGroupDeduplication(t *testing.T) {
	e := newEnv(t)
	_, err := e.svc.CreateQueue(e.ctx, "a.fifo", fifoAttrs("FifoThroughputLimit", "perMessageGroupId"))
	wantErr(t, err, awserr.ErrInvalidAttributeValue, "DeduplicationScope is messageGroup")
	url := e.create("b.fifo", fifoAttrs("DeduplicationScope", "messageGroup", "FifoThroughputLimit", "perMessageGroupId"))
	err = e.svc.SetQueueAttributes(e.ctx, url, map[string]string{"DeduplicationScope": "queue"})
	wantErr(t, err, awserr.ErrInvalidAttributeValue, "FifoThroughputLimit")
	if got := e.attrs(url)["DeduplicationScope"]; got != "messageGroup" {
		t.Fatalf("DeduplicationScope after the refused change: %q", got)
	}
	if err := e.svc.SetQueueAttributes(e.ctx, url, map[string]string{"DeduplicationScope": "queue", "FifoThroughputLimit": "perQueue"}); err != nil {
		t.Fatalf("both changed together: %v", err)
	}
}

// TestAFIFOQueuesDelayChangeReachesTheMessagesInIt: "For FIFO queues, the
// per-queue delay setting is retroactive—changing the setting affects the
// delay of messages already in the queue" (sqs-delay-queues.html). The
// delay runs from each message's send, across a restart too. Before, a
// message kept the delay it was sent with.
func TestAFIFOQueuesDelayChangeReachesTheMessagesInIt(t *testing.T) {
	e := newEnv(t)
	url := e.create("d.fifo", fifoAttrs("DelaySeconds", "900"))
	e.sendG(url, "g", "a")
	e.clock.Advance(time.Minute)
	if err := e.svc.SetQueueAttributes(e.ctx, url, map[string]string{"DelaySeconds": "0"}); err != nil {
		t.Fatal(err)
	}
	if got := e.bodies(url, queue.ReceiveMessageInput{}); !equal(got, []string{"a"}) {
		t.Fatalf("after lowering DelaySeconds 900 to 0: %v, want a at once", got)
	}
	url2 := e.create("r.fifo", fifoAttrs())
	if err := e.svc.SetQueueAttributes(e.ctx, url2, map[string]string{"DelaySeconds": "0"}); err != nil {
		t.Fatal(err)
	}
	e.sendG(url2, "g", "b")
	if err := e.svc.SetQueueAttributes(e.ctx, url2, map[string]string{"DelaySeconds": "600"}); err != nil {
		t.Fatal(err)
	}
	if got := e.bodies(url2, queue.ReceiveMessageInput{}); len(got) != 0 {
		t.Fatalf("after raising DelaySeconds to 600: %v at once, want b delayed", got)
	}
	e.restart()
	e.clock.Advance(599 * time.Second)
	if got := e.bodies(url2, queue.ReceiveMessageInput{}); len(got) != 0 {
		t.Fatalf("after a restart, 599 s after the send: %v, want b still delayed", got)
	}
	e.clock.Advance(time.Second)
	if got := e.bodies(url2, queue.ReceiveMessageInput{}); !equal(got, []string{"b"}) {
		t.Fatalf("600 s after the send: %v, want b", got)
	}
}

// TestAReceiveRetriedWithItsAttemptIdReturnsTheSameMessages: "During a
// visibility timeout, subsequent calls with the same
// ReceiveRequestAttemptId return the same messages and receipt handles.
// If a retry occurs within the deduplication interval, it resets the
// visibility timeout", unless a message was modified (deleted or its
// visibility changed) (API_ReceiveMessage). Before, the id was ignored:
// a retry after a lost answer got nothing, and the group stayed blocked
// for the visibility timeout.
func TestAReceiveRetriedWithItsAttemptIdReturnsTheSameMessages(t *testing.T) {
	e := newEnv(t)
	url := e.create("a.fifo", fifoAttrs())
	e.sendG(url, "g", "m1")
	e.sendG(url, "g", "m2")
	in := queue.ReceiveMessageInput{MaxNumberOfMessages: 10, VisibilityTimeout: ptr(30), ReceiveRequestAttemptId: "attempt-1"}
	first := e.receive(url, in)
	if len(first) != 2 {
		t.Fatalf("first receive: %d messages, want 2", len(first))
	}
	e.clock.Advance(20 * time.Second)
	again := e.receive(url, in)
	if len(again) != 2 || again[0].ReceiptHandle != first[0].ReceiptHandle || again[1].ReceiptHandle != first[1].ReceiptHandle || again[0].Body != "m1" {
		t.Fatalf("the retry: %+v, want the same messages and receipt handles", again)
	}
	e.clock.Advance(29 * time.Second) // 49 s after the first receive, 29 after the retry reset the timeout
	if got := e.bodies(url, queue.ReceiveMessageInput{}); len(got) != 0 {
		t.Fatalf("%v visible 29 s after the retry, want the timeout reset by it", got)
	}
	e.delete(url, again[0].ReceiptHandle) // m1 deleted: the attempt is modified
	if got := e.receive(url, in); len(got) != 0 {
		t.Fatalf("a retry after a message of it was deleted: %+v, want a new receive (m2 in flight: nothing)", got)
	}
	other := queue.ReceiveMessageInput{MaxNumberOfMessages: 10, ReceiveRequestAttemptId: "never-used"}
	e.clock.Advance(time.Second) // m2's timeout ends
	if got := e.receive(url, other); len(got) != 1 || got[0].Body != "m2" {
		t.Fatalf("a receive with a new id: %+v, want m2", got)
	}
}
