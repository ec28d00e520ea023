package queue_test

import (
	"testing"
	"time"

	"github.com/runnel-dev/runnel/queue"
)

// TestAPurgedFIFOQueueRemembersDeduplicationIdsAcrossARestart: "Amazon
// SQS continues tracking the deduplication ID even after the message has
// been received and deleted"; a resend within the 5-minute interval is
// "acknowledged but not delivered" (FIFO-queues-exactly-once-processing,
// API_SendMessage MessageDeduplicationId). PurgeQueue deletes messages,
// not that memory. Before, the purge emptied the whole stream, with the
// tombstones that carried the ids: the holder still dropped a resend,
// but after a restart (or a lease hand-over) the id was forgotten and a
// resend within the 5 minutes was stored and delivered.
func TestAPurgedFIFOQueueRemembersDeduplicationIdsAcrossARestart(t *testing.T) {
	e := newEnv(t)
	q := e.create("q.fifo", fifoAttrs())
	live := e.sendIn(q, queue.SendMessageInput{MessageBody: "live", MessageGroupId: "g", MessageDeduplicationId: "D"})
	// one deleted before the purge: its id is in a tombstone
	gone := e.sendIn(q, queue.SendMessageInput{MessageBody: "gone", MessageGroupId: "h", MessageDeduplicationId: "E"})
	for _, m := range e.receive(q, queue.ReceiveMessageInput{MaxNumberOfMessages: 10}) {
		if m.Body == "gone" {
			e.delete(q, m.ReceiptHandle)
		}
	}
	if err := e.svc.PurgeQueue(e.ctx, q); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Minute)
	resend := func(body, group, dedup string) *queue.SendMessageOutput {
		return e.sendIn(q, queue.SendMessageInput{MessageBody: body, MessageGroupId: group, MessageDeduplicationId: dedup})
	}
	if r := resend("live", "g", "D"); r.MessageId != live.MessageId {
		t.Fatalf("resend before the restart stored as %s", r.MessageId)
	}
	e.restart()
	e.clock.Advance(time.Minute)
	if r := resend("live", "g", "D"); r.MessageId != live.MessageId || r.SequenceNumber != live.SequenceNumber {
		t.Fatalf("resend after the restart = %s %s, want the first send's %s %s", r.MessageId, r.SequenceNumber, live.MessageId, live.SequenceNumber)
	}
	if r := resend("gone", "h", "E"); r.MessageId != gone.MessageId {
		t.Fatalf("resend of the id deleted before the purge stored as %s", r.MessageId)
	}
	if got := e.bodies(q, queue.ReceiveMessageInput{}); len(got) != 0 {
		t.Fatalf("received after the purge: %v (purged, or duplicates)", got)
	}
	// a second purge (after PurgeInterval) and a restart: still remembered
	e.clock.Advance(time.Minute)
	if err := e.svc.PurgeQueue(e.ctx, q); err != nil {
		t.Fatal(err)
	}
	e.restart()
	if r := resend("live", "g", "D"); r.MessageId != live.MessageId {
		t.Fatalf("resend after a second purge and a restart stored as %s", r.MessageId)
	}
	// the 5 minutes over, the id is new again
	e.clock.Advance(2 * time.Minute)
	if r := resend("again", "g", "D"); r.MessageId == live.MessageId {
		t.Fatalf("a send after 5 minutes was deduplicated")
	}
	if got := e.bodies(q, queue.ReceiveMessageInput{}); !equal(got, []string{"again"}) {
		t.Fatalf("received %v, want [again]", got)
	}
}

// TestADeduplicationScopeChangeKeepsTheIdsOfTheLast5Minutes: a send
// whose deduplication id was sent within 5 minutes is "acknowledged but
// not delivered" (API_SendMessage); with DeduplicationScope messageGroup
// deduplication "occurs at the message group level", with queue "at the
// queue level" (API_SetQueueAttributes, DeduplicationScope). A resend
// in the same group with the same id is a duplicate under both scopes.
// Before, the remembered ids kept the key of the scope they were sent
// under and a lookup used the new one: after SetQueueAttributes changed
// the scope either way, such a resend was stored and delivered twice.
func TestADeduplicationScopeChangeKeepsTheIdsOfTheLast5Minutes(t *testing.T) {
	for _, tc := range []struct{ from, to string }{{"queue", "messageGroup"}, {"messageGroup", "queue"}} {
		t.Run(tc.from+" to "+tc.to, func(t *testing.T) {
			e := newEnv(t)
			q := e.create("q.fifo", fifoAttrs("DeduplicationScope", tc.from))
			send := func(body, group, dedup string) *queue.SendMessageOutput {
				return e.sendIn(q, queue.SendMessageInput{MessageBody: body, MessageGroupId: group, MessageDeduplicationId: dedup})
			}
			first := send("a", "g", "D")
			if err := e.svc.SetQueueAttributes(e.ctx, q, map[string]string{"DeduplicationScope": tc.to}); err != nil {
				t.Fatal(err)
			}
			e.clock.Advance(time.Minute)
			if r := send("a", "g", "D"); r.MessageId != first.MessageId {
				t.Fatalf("a resend in the same group after the change was stored as %s", r.MessageId)
			}
			e.restart()
			if r := send("a", "g", "D"); r.MessageId != first.MessageId {
				t.Fatalf("a resend after the change and a restart was stored as %s", r.MessageId)
			}
			if got := e.bodies(q, queue.ReceiveMessageInput{}); !equal(got, []string{"a"}) {
				t.Fatalf("received %v, want [a] once", got)
			}
		})
	}
}
