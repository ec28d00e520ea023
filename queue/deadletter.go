package queue

import (
	"context"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/lease"
)

// MoveToDeadLetterQueue moves a received (in-flight) message to the
// dead-letter queue of the queue's RedrivePolicy, as redrive does: the
// copy keeps its MessageId, body, attributes, AWSTraceHeader and group
// id, and its SentTimestamp on standard queues (FIFO queues reset it to
// now and replace its deduplication id by its MessageId); it records the queue as its
// DeadLetterQueueSourceArn, so a message move task without DestinationArn
// sends it back; it starts with a receive count of 0. It is for a
// consumer that gives up on a message before maxReceiveCount (an event
// source mapping's RetryPolicy); maxReceiveCount does not matter here.
//
// receiptHandle must be the handle of the message's latest receive, and
// the message still in flight. The call returns once JetStream stored
// both the copy and the deletion from the queue; a failure in between
// leaves the message in both queues (a duplicate, never a loss). When the
// copy can't be stored, the message stays in flight in the queue, its
// visibility timeout unchanged.
//
// Errors: awserr.ErrReceiptHandleIsInvalid for a malformed handle, a handle of
// another queue or of an earlier receive, or a message that is gone;
// awserr.ErrMessageNotInflight when its visibility timeout has ended (or another
// move of it is under way); awserr.ErrUnsupportedOperation, naming RedrivePolicy,
// when the queue has none or its dead-letter queue can't take the message
// (gone, of the other type, or its RedriveAllowPolicy refuses the queue);
// awserr.ErrQueueDoesNotExist; awserr.ErrInternal when JetStream failed: the call may
// be retried with the same handle (a message still in flight is moved; one
// whose copy was stored but whose removal was not gets its removal
// written again, and the retry answers once it is stored).
func (s *Service) MoveToDeadLetterQueue(ctx context.Context, queueURL, receiptHandle string) error {
	if remote, err := s.forward(ctx, "MoveToDeadLetterQueue", lease.Pair(queueURL, receiptHandle), nil); remote {
		return err
	}
	q, err := s.queue(ctx, queueURL)
	if err != nil {
		return err
	}
	// inflight resolves the handle to the in-flight message it may move.
	// Under q.mu.
	inflight := func() (*message, error) {
		if q.deleted {
			return nil, q.goneErr(queueURL)
		}
		q.advance(s.eng.Clock.Now().UnixMilli())
		m, rc, err := q.lookup(receiptHandle)
		if err != nil {
			return nil, err
		}
		if m == nil {
			return nil, awserr.New(awserr.ErrReceiptHandleIsInvalid, "Value %s for parameter ReceiptHandle is invalid. Reason: Message does not exist.", receiptHandle)
		}
		if m.nonce != rc.nonce {
			return nil, awserr.New(awserr.ErrReceiptHandleIsInvalid, "Value %s for parameter ReceiptHandle is invalid. Reason: the message was received again since; use the latest receipt handle.", receiptHandle)
		}
		if m.st != stInflight {
			return nil, awserr.New(awserr.ErrMessageNotInflight, "Value %s for parameter ReceiptHandle is invalid. Reason: Message is not in flight: its visibility timeout has expired, or it is being moved.", receiptHandle)
		}
		return m, nil
	}
	// Check the handle before the policy, then find the dead-letter queue
	// without holding q.mu (no goroutine holds two queue locks). A retry
	// of a move whose copy was stored but whose removal from this queue
	// failed to store (movedUnsynced) writes the removal again and waits
	// for it: the message is gone from memory, so without this the retry
	// answered ReceiptHandleIsInvalid and the message came back after a
	// restart, in both queues (a FIFO one after later ones of its group).
	q.mu.Lock()
	_, err = inflight()
	again := q.movedUnsynced[receiptHandle]
	if again != nil {
		q.markDirty(again)
	}
	futs, ferr := q.flush() // what advance expired, and a removal written again
	q.mu.Unlock()
	if again != nil {
		if err := durable(ctx, futs, ferr); err != nil {
			return err
		}
		q.mu.Lock()
		delete(q.movedUnsynced, receiptHandle)
		q.mu.Unlock()
		return nil
	}
	q.cleanup(futs)
	if err != nil {
		return err
	}
	dlq, reason := s.deadLetterQueue(ctx, q)
	if dlq == nil {
		return awserr.New(awserr.ErrUnsupportedOperation, "Cannot move the message of %s to a dead-letter queue: the queue's RedrivePolicy gives none it can use (%s).", q.name, reason)
	}

	// Set the message aside: invisible, out of the timer heap, counted in
	// flight; a FIFO group stays blocked until it is gone.
	q.mu.Lock()
	m, err := inflight()
	var p *payload
	if err == nil {
		q.timer.remove(m)
		q.setStatus(m, stMoving)
		p = m.payload
	}
	futs, _ = q.flush()
	q.mu.Unlock()
	q.cleanup(futs)
	if err != nil {
		return err
	}
	fail := func(err error) error {
		q.mu.Lock()
		q.unmove(m)
		q.mu.Unlock()
		return err
	}
	if p == nil {
		if p, err = q.fetchPayload(ctx, m); err != nil {
			return fail(awserr.New(awserr.ErrInternal, "read message %s: %v", m.id, err))
		}
	}
	now := s.eng.Clock.Now().UnixMilli()
	// The copy first, acknowledged, then the deletion: a crash in between
	// leaves a duplicate.
	if _, errs := dlq.store(ctx, []*message{deadLettered(m, p, q.fifo, now, q.arn)}, now, false); errs[0] != nil {
		return fail(errs[0])
	}
	q.mu.Lock()
	rec := m.rec
	removed := m.st == stMoving
	if removed {
		q.remove(m)
	} // else deleted, expired or purged meanwhile: nothing left to delete
	futs, ferr = q.flush()
	q.mu.Unlock()
	if err := durable(ctx, futs, ferr); err != nil {
		if removed {
			// The copy is stored, the removal is not: the next write of
			// the queue stores it again, and a retry with this handle
			// waits for it.
			q.mu.Lock()
			if q.movedUnsynced == nil {
				q.movedUnsynced = map[string]*record{}
			}
			q.movedUnsynced[receiptHandle] = rec
			q.markDirty(rec)
			q.mu.Unlock()
		}
		return err
	}
	return nil
}

// unmove puts a message set aside for a move that failed back in flight,
// visible again at its visibility timeout's end. Under q.mu.
func (q *queue) unmove(m *message) {
	if m.st != stMoving {
		return
	}
	q.setStatus(m, stInflight)
	q.schedule(m)
}
