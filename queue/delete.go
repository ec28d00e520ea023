package queue

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/lease"
)

// DeleteMessageBatchRequestEntry is one message of DeleteMessageBatch.
type DeleteMessageBatchRequestEntry struct {
	Id            string
	ReceiptHandle string
}

// ChangeMessageVisibilityBatchRequestEntry is one message of
// ChangeMessageVisibilityBatch.
type ChangeMessageVisibilityBatchRequestEntry struct {
	Id                string
	ReceiptHandle     string
	VisibilityTimeout int
}

// BatchResultEntry is a successful entry of DeleteMessageBatch or
// ChangeMessageVisibilityBatch.
type BatchResultEntry struct {
	Id string
}

// BatchOutput lists the successful and failed entries of
// DeleteMessageBatch and ChangeMessageVisibilityBatch.
type BatchOutput struct {
	Successful []BatchResultEntry
	Failed     []BatchResultErrorEntry
}

// DeleteMessage deletes a received message (API_DeleteMessage). It
// returns once the deletion is stored. On a standard queue any receipt
// handle the message was ever received with deletes it, even while
// another receive holds it; on a FIFO queue only the latest handle, and
// only while the message is in flight (awserr.ErrReceiptHandleIsInvalid: "The
// receipt handle has expired"). Deleting a message that is already gone
// succeeds. A malformed handle, or one of another queue, is
// awserr.ErrReceiptHandleIsInvalid.
func (s *Service) DeleteMessage(ctx context.Context, queueURL, receiptHandle string) error {
	out, err := s.DeleteMessageBatch(ctx, queueURL, DeleteEntries([]string{receiptHandle}, func(h string) string { return h }))
	return firstFailure(out, err)
}

// DeleteEntries returns the DeleteMessageBatch entries of items, whose
// receipt handles handle gives: entry i's Id is strconv.Itoa(i), so a
// failed entry's Id is the index of its item.
func DeleteEntries[T any](items []T, handle func(T) string) []DeleteMessageBatchRequestEntry {
	entries := make([]DeleteMessageBatchRequestEntry, len(items))
	for i, it := range items {
		entries[i] = DeleteMessageBatchRequestEntry{Id: strconv.Itoa(i), ReceiptHandle: handle(it)}
	}
	return entries
}

// DeleteMessageBatch deletes up to 10 messages (API_DeleteMessageBatch),
// each entry as DeleteMessage; the batch fails as a whole only for an
// empty batch, more than 10 entries, or bad or repeated Ids.
func (s *Service) DeleteMessageBatch(ctx context.Context, queueURL string, entries []DeleteMessageBatchRequestEntry) (*BatchOutput, error) {
	if remote, out, err := forwardOut[BatchOutput](ctx, s, "DeleteMessageBatch", lease.Pair(queueURL, entries)); remote {
		return out, err
	}
	return applyBatch(ctx, s, queueURL, entries, func(e DeleteMessageBatchRequestEntry) string { return e.Id },
		func(q *queue, _ int64, e DeleteMessageBatchRequestEntry) (*record, error) {
			m, rc, err := q.lookup(e.ReceiptHandle)
			if err != nil {
				return nil, err
			}
			if m == nil {
				// Already gone: deleting again succeeds, once the removal
				// is stored. A removal whose write failed (the call that
				// made it answered an error) is written again here, and
				// this call waits for it: answering success with nothing
				// stored let the message come back after a restart (a
				// FIFO message after later ones of its group).
				if rec := q.unsynced[rc.n]; rec != nil {
					q.markDirty(rec)
					return rec, nil
				}
				return nil, nil
			}
			if q.fifo && (m.nonce != rc.nonce || m.st != stInflight) {
				return nil, awserr.New(awserr.ErrReceiptHandleIsInvalid, "The receipt handle has expired.")
			}
			rec := m.rec
			q.remove(m)
			return rec, nil
		})
}

// applyBatch runs a batch call on a queue: it checks the entries' Ids,
// locks the queue, applies each entry in order (apply returns the record
// whose change the entry waits for, nil for none, or the entry's error),
// stores the changes, and answers each entry once its change is stored.
func applyBatch[E any](ctx context.Context, s *Service, queueURL string, entries []E, id func(E) string,
	apply func(q *queue, now int64, e E) (*record, error)) (*BatchOutput, error) {
	ids := idsOf(entries, id)
	q, now, err := s.lockBatch(ctx, queueURL, ids)
	if err != nil {
		return nil, err
	}
	errs := make([]error, len(entries))
	recs := make([]*record, len(entries))
	for i, e := range entries {
		recs[i], errs[i] = apply(q, now, e)
	}
	futs, ferr := q.flush()
	q.mu.Unlock()
	storeErr := durable(ctx, futs, ferr)
	if storeErr != nil || q.nUnsynced.Load() > 0 { // the common case takes no second lock
		q.mu.Lock()
		for _, rec := range recs {
			switch {
			case rec == nil:
			case storeErr != nil:
				if q.unsynced == nil {
					q.unsynced = map[uint64]*record{}
				}
				q.unsynced[rec.n] = rec
				q.markDirty(rec) // the next write of the queue stores it again
			default:
				delete(q.unsynced, rec.n)
			}
		}
		q.nUnsynced.Store(int32(len(q.unsynced)))
		q.mu.Unlock()
	}
	return batchOutput(entries, ids, errs, recs, storeErr), nil
}

// durable waits for a call's writes; nil when they are all stored.
func durable(ctx context.Context, futs []jetstream.PubAckFuture, err error) error {
	if err == nil {
		err = waitAcks(ctx, futs)
	}
	if err != nil {
		return awserr.New(awserr.ErrInternal, "the change was not stored: %v", err)
	}
	return nil
}

// batchOutput builds a batch result. A storage failure fails every entry
// that changed a record (a retry is harmless).
func batchOutput[E any](entries []E, ids []string, errs []error, recs []*record, storeErr error) *BatchOutput {
	out := &BatchOutput{}
	for i := range entries {
		err := errs[i]
		if err == nil && storeErr != nil && recs[i] != nil {
			err = storeErr
		}
		if err != nil {
			out.Failed = append(out.Failed, failure(ids[i], err))
		} else {
			out.Successful = append(out.Successful, BatchResultEntry{Id: ids[i]})
		}
	}
	return out
}

// ChangeMessageVisibility sets the remaining visibility timeout of an
// in-flight message to visibilityTimeout seconds from now
// (API_ChangeMessageVisibility); 0 makes it visible at once. The timeout
// may not end more than 12 hours (MaxVisibilityTimeout) after the receive
// that issued the handle (awserr.ErrSQSInvalidParameterValue). Errors:
// awserr.ErrReceiptHandleIsInvalid for a malformed handle, a handle of another
// queue, a handle of an earlier receive, or a message that is gone;
// awserr.ErrMessageNotInflight when the message's visibility timeout already
// ended.
func (s *Service) ChangeMessageVisibility(ctx context.Context, queueURL, receiptHandle string, visibilityTimeout int) error {
	out, err := s.ChangeMessageVisibilityBatch(ctx, queueURL, []ChangeMessageVisibilityBatchRequestEntry{{Id: "0", ReceiptHandle: receiptHandle, VisibilityTimeout: visibilityTimeout}})
	return firstFailure(out, err)
}

// ChangeMessageVisibilityBatch changes the visibility of up to 10
// messages (API_ChangeMessageVisibilityBatch), each entry as
// ChangeMessageVisibility.
func (s *Service) ChangeMessageVisibilityBatch(ctx context.Context, queueURL string, entries []ChangeMessageVisibilityBatchRequestEntry) (*BatchOutput, error) {
	if remote, out, err := forwardOut[BatchOutput](ctx, s, "ChangeMessageVisibilityBatch", lease.Pair(queueURL, entries)); remote {
		return out, err
	}
	return applyBatch(ctx, s, queueURL, entries, func(e ChangeMessageVisibilityBatchRequestEntry) string { return e.Id },
		func(q *queue, now int64, e ChangeMessageVisibilityBatchRequestEntry) (*record, error) {
			if e.VisibilityTimeout < 0 || e.VisibilityTimeout > MaxVisibilityTimeout {
				return nil, awserr.New(awserr.ErrSQSInvalidParameterValue, "Value %d for parameter VisibilityTimeout is invalid. Reason: Must be between 0 and %d.", e.VisibilityTimeout, MaxVisibilityTimeout)
			}
			m, rc, err := q.lookup(e.ReceiptHandle)
			if err != nil {
				return nil, err
			}
			if m == nil {
				return nil, awserr.New(awserr.ErrReceiptHandleIsInvalid, "Value %s for parameter ReceiptHandle is invalid. Reason: Message does not exist or is not available for visibility timeout change.", e.ReceiptHandle)
			}
			if m.nonce != rc.nonce {
				return nil, awserr.New(awserr.ErrReceiptHandleIsInvalid, "Value %s for parameter ReceiptHandle is invalid. Reason: the message was received again since; use the latest receipt handle.", e.ReceiptHandle)
			}
			if m.st != stInflight {
				return nil, awserr.New(awserr.ErrMessageNotInflight, "Value %s for parameter ReceiptHandle is invalid. Reason: Message is not in flight: its visibility timeout has expired.", e.ReceiptHandle)
			}
			vis := now + int64(e.VisibilityTimeout)*1000
			if vis-m.receivedAt > int64(MaxVisibilityTimeout)*1000 {
				return nil, awserr.New(awserr.ErrSQSInvalidParameterValue, "Value %d for parameter VisibilityTimeout is invalid. Reason: Total VisibilityTimeout for the message is beyond the limit [%d seconds].", e.VisibilityTimeout, MaxVisibilityTimeout)
			}
			m.visibleAt = vis
			if e.VisibilityTimeout == 0 {
				q.timer.remove(m)
				q.makeVisible(m)
			} else {
				q.schedule(m) // wakes receives armed on a later due time
			}
			q.markDirty(m.rec)
			return m.rec, nil
		})
}

// PurgeQueue deletes every message of the queue, in flight or not
// (API_PurgeQueue). Messages sent while it runs may be deleted too. A
// second purge within PurgeInterval (60 s, engine clock) is
// awserr.ErrPurgeQueueInProgress. FIFO deduplication ids of the last 5
// minutes are still remembered, also across a restart or a hand-over
// (purgeStream): a resend within their 5 minutes is acknowledged but not
// stored. A failure to store is awserr.ErrInternal (retryable; nothing
// was purged).
func (s *Service) PurgeQueue(ctx context.Context, queueURL string) error {
	if remote, err := s.forward(ctx, "PurgeQueue", queueURL, nil); remote {
		return err
	}
	q, err := s.liveQueue(ctx, queueURL)
	if err != nil {
		return err
	}
	defer q.mu.Unlock()
	now := s.eng.Clock.Now()
	if q.lastPurge.IsZero() && q.meta.LastPurge != 0 {
		q.lastPurge = time.UnixMilli(q.meta.LastPurge) // stored: before a restart
	}
	if !q.lastPurge.IsZero() && now.Sub(q.lastPurge) < PurgeInterval {
		return awserr.New(awserr.ErrPurgeQueueInProgress, "Only one PurgeQueue operation on %s is allowed every %d seconds.", q.name, int(PurgeInterval/time.Second))
	}
	// Sends publish under q.mu, so once the pending ones are answered the
	// stream holds exactly what the purge must remove.
	for _, rec := range q.records {
		select {
		case <-rec.acked:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if err := q.purgeStream(ctx, now.UnixMilli()); err != nil {
		return awserr.New(awserr.ErrInternal, "purge %s: %v", q.name, err)
	}
	for _, rec := range q.records {
		rec.purged = true
		for _, m := range rec.msgs {
			q.releasePayload(m)
			m.st = stDeleted
		}
	}
	for _, rec := range q.dirty {
		rec.dirty = false
	}
	q.dirty = q.dirty[:0]
	q.records = map[uint64]*record{}
	q.groups = map[string]*group{}
	newHeaps(q)
	q.nVisible, q.nDelayed, q.nInflight = 0, 0, 0
	q.lastPurge = now
	// The time is stored with the queue's metadata, so that the 60 s rule
	// holds across a restart (before, it lived in memory only). The purge
	// is done: a failed write only loosens the rule, and is logged.
	meta := q.meta
	meta.LastPurge = now.UnixMilli()
	if b, err := json.Marshal(meta); err == nil {
		if _, err := s.meta.Put(ctx, q.name, b); err != nil {
			s.log.Warn("queue: the purge's time not stored; a purge after a restart within 60 s is not refused", "queue", q.name, "err", err)
		} else {
			q.meta = meta
		}
	}
	return nil
}

// lockBatch checks a batch's entry ids, finds the queue and returns it
// locked (q.mu held) and advanced to now, the engine clock in Unix ms.
func (s *Service) lockBatch(ctx context.Context, queueURL string, ids []string) (*queue, int64, error) {
	if err := checkBatchIDs(ids); err != nil {
		return nil, 0, err
	}
	q, err := s.liveQueue(ctx, queueURL)
	if err != nil {
		return nil, 0, err
	}
	now := s.eng.Clock.Now().UnixMilli()
	q.advance(now)
	return q, now, nil
}

// firstFailure turns a one-entry batch result into the single call's error.
func firstFailure(out *BatchOutput, err error) error {
	if err != nil {
		return err
	}
	if len(out.Failed) > 0 {
		return &awserr.Error{Code: out.Failed[0].Code, Message: out.Failed[0].Message}
	}
	return nil
}

// idsOf is the Ids of a batch's entries, in order.
func idsOf[E any](entries []E, id func(E) string) []string {
	ids := make([]string, len(entries))
	for i, e := range entries {
		ids[i] = id(e)
	}
	return ids
}
