package queue

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/lease"
)

// SendMessageInput is the input of SendMessage (API_SendMessage).
type SendMessageInput struct {
	// MessageBody: 1 byte up to the queue's MaximumMessageSize together
	// with the attributes; XML characters only (#x9 #xA #xD #x20-#xD7FF
	// #xE000-#xFFFD #x10000-#x10FFFF). Required.
	MessageBody string
	// DelaySeconds delays this message: 0..900, default the queue's
	// DelaySeconds. Standard queues only (FIFO queues refuse it with
	// awserr.ErrSQSInvalidParameterValue: their delay is per queue).
	DelaySeconds *int
	// MessageAttributes: up to 10, see MessageAttributeValue.
	MessageAttributes map[string]MessageAttributeValue
	// MessageSystemAttributes: only AWSTraceHeader (a String), returned as
	// the system attribute AWSTraceHeader.
	MessageSystemAttributes map[string]MessageAttributeValue
	// MessageDeduplicationId (FIFO only, 1..128 characters): a send with an
	// id already sent within 5 minutes is accepted but not stored again.
	// Required unless the queue has ContentBasedDeduplication, whose
	// SHA-256 of the body it overrides.
	MessageDeduplicationId string
	// MessageGroupId (1..128 characters) orders a FIFO queue's messages:
	// required there. Standard queues accept and return it (fair queues)
	// without ordering.
	MessageGroupId string
}

// SendMessageOutput is the result of SendMessage.
type SendMessageOutput struct {
	MessageId              string
	MD5OfMessageBody       string
	MD5OfMessageAttributes string
	// MD5OfMessageSystemAttributes is the digest of MessageSystemAttributes
	// as MD5OfMessageAttributes is of MessageAttributes; "" when none was
	// sent. SDKs that check digests (Ruby's) check it when they send a
	// trace header.
	MD5OfMessageSystemAttributes string
	// SequenceNumber is set on FIFO queues: 20 digits, increasing with
	// each message of the queue.
	SequenceNumber string
}

// SendMessageBatchRequestEntry is one message of SendMessageBatch: an Id
// and the fields of SendMessageInput.
type SendMessageBatchRequestEntry struct {
	// Id identifies the entry in the result: 1..80 characters of
	// [a-zA-Z0-9_-], distinct within the batch.
	Id string
	SendMessageInput
}

// SendMessageBatchResultEntry is a stored (or deduplicated) entry.
type SendMessageBatchResultEntry struct {
	Id                           string
	MessageId                    string
	MD5OfMessageBody             string
	MD5OfMessageAttributes       string
	MD5OfMessageSystemAttributes string
	SequenceNumber               string
}

// BatchResultErrorEntry is a failed entry of a batch call. SenderFault
// tells whether the entry itself was wrong (Code is then the code of one
// of this package's sentinels) or runnel failed (InternalError: the
// entry may be sent again).
type BatchResultErrorEntry struct {
	Id          string
	Code        string
	Message     string
	SenderFault bool
}

// SendMessageBatchOutput lists the stored and the failed entries.
type SendMessageBatchOutput struct {
	Successful []SendMessageBatchResultEntry
	Failed     []BatchResultErrorEntry
}

// SendMessage stores one message (API_SendMessage). It returns once the
// message is in JetStream; it becomes receivable after its delay. On a
// FIFO queue, a send whose deduplication id was used within the last 5
// minutes returns the first send's MessageId and stores nothing.
func (s *Service) SendMessage(ctx context.Context, queueURL string, in SendMessageInput) (*SendMessageOutput, error) {
	out, err := s.SendMessageBatch(ctx, queueURL, []SendMessageBatchRequestEntry{{Id: "0", SendMessageInput: in}})
	if err != nil {
		return nil, err
	}
	if len(out.Failed) > 0 {
		f := out.Failed[0]
		return nil, &awserr.Error{Code: f.Code, Message: f.Message}
	}
	r := out.Successful[0]
	return &SendMessageOutput{MessageId: r.MessageId, MD5OfMessageBody: r.MD5OfMessageBody, MD5OfMessageAttributes: r.MD5OfMessageAttributes,
		MD5OfMessageSystemAttributes: r.MD5OfMessageSystemAttributes, SequenceNumber: r.SequenceNumber}, nil
}

var batchIDRE = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,80}$`)

// checkBatchIDs applies the rules common to every batch call.
func checkBatchIDs(ids []string) error {
	if len(ids) == 0 {
		return awserr.New(awserr.ErrEmptyBatchRequest, "There should be at least one entry in the request.")
	}
	if len(ids) > MaxBatchEntries {
		return awserr.New(awserr.ErrTooManyEntriesInBatchRequest, "Maximum number of entries per request are %d. You have sent %d.", MaxBatchEntries, len(ids))
	}
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		if !batchIDRE.MatchString(id) {
			return awserr.New(awserr.ErrInvalidBatchEntryId, "A batch entry id can only contain alphanumeric characters, hyphens and underscores. It can be at most 80 letters long: %q", id)
		}
		if seen[id] {
			return awserr.New(awserr.ErrBatchEntryIdsNotDistinct, "Id %s repeated.", id)
		}
		seen[id] = true
	}
	return nil
}

func failure(id string, err error) BatchResultErrorEntry {
	if e, ok := err.(*awserr.Error); ok {
		return BatchResultErrorEntry{Id: id, Code: e.Code, Message: e.Message, SenderFault: e.Code != awserr.ErrInternal.Code}
	}
	return BatchResultErrorEntry{Id: id, Code: awserr.ErrInternal.Code, Message: err.Error()}
}

// SendMessageBatch stores up to 10 messages (API_SendMessageBatch). The
// call fails as a whole for an empty batch (awserr.ErrEmptyBatchRequest), more
// than 10 entries (awserr.ErrTooManyEntriesInBatchRequest), bad or repeated
// Ids, or more than MaxBatchSize bytes in all (awserr.ErrBatchRequestTooLong).
// Otherwise each entry succeeds or fails on its own: an invalid entry is
// in Failed with SenderFault; the valid ones are stored together in one
// JetStream write and are in Successful once it is acknowledged.
func (s *Service) SendMessageBatch(ctx context.Context, queueURL string, entries []SendMessageBatchRequestEntry) (*SendMessageBatchOutput, error) {
	if remote, out, err := forwardOut[SendMessageBatchOutput](ctx, s, "SendMessageBatch", lease.Pair(queueURL, entries)); remote {
		return out, err
	}
	ids := make([]string, len(entries))
	total := 0
	for i := range entries {
		ids[i] = entries[i].Id
		total += len(entries[i].MessageBody) + attributesSize(entries[i].MessageAttributes)
	}
	if err := checkBatchIDs(ids); err != nil {
		return nil, err
	}
	if total > MaxBatchSize {
		return nil, awserr.New(awserr.ErrBatchRequestTooLong, "Batch requests cannot be longer than %d bytes. You have sent %d bytes.", MaxBatchSize, total)
	}
	q, err := s.queue(ctx, queueURL)
	if err != nil {
		return nil, err
	}
	q.mu.Lock()
	cfg, deleted := q.cfg, q.deleted
	gone := q.goneErr(queueURL)
	q.mu.Unlock()
	if deleted {
		return nil, gone
	}
	now := s.eng.Clock.Now().UnixMilli()
	out := &SendMessageBatchOutput{}
	msgs := make([]*message, 0, len(entries))
	entryOf := make([]int, 0, len(entries))
	for i := range entries {
		m, err := s.prepare(&entries[i], &cfg, now)
		if err != nil {
			out.Failed = append(out.Failed, failure(entries[i].Id, err))
			continue
		}
		msgs = append(msgs, m)
		entryOf = append(entryOf, i)
	}
	if len(msgs) == 0 {
		return out, nil
	}
	results, errs := q.store(ctx, msgs, now, true)
	for j, m := range msgs {
		id := entries[entryOf[j]].Id
		if errs[j] != nil {
			out.Failed = append(out.Failed, failure(id, errs[j]))
			continue
		}
		r := results[j]
		var md5Sys string
		if sys := entries[entryOf[j]].MessageSystemAttributes; len(sys) > 0 {
			md5Sys = MD5OfMessageAttributes(sys)
		}
		out.Successful = append(out.Successful, SendMessageBatchResultEntry{
			Id: id, MessageId: r.id, MD5OfMessageBody: m.md5Body, MD5OfMessageAttributes: m.md5Attrs, MD5OfMessageSystemAttributes: md5Sys, SequenceNumber: r.seq,
		})
	}
	return out, nil
}

// prepare validates one entry and builds its message.
func (s *Service) prepare(e *SendMessageBatchRequestEntry, cfg *config, now int64) (*message, error) {
	if e.MessageBody == "" {
		return nil, awserr.New(awserr.ErrMissingParameter, "The request must contain the parameter MessageBody.")
	}
	if !validChars(e.MessageBody) {
		return nil, awserr.New(awserr.ErrInvalidMessageContents, "Invalid binary character in the message body: only #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF are allowed.")
	}
	asize, err := validateMessageAttributes(e.MessageAttributes)
	if err != nil {
		return nil, err
	}
	size := len(e.MessageBody) + asize
	if size > cfg.maxSize {
		return nil, awserr.New(awserr.ErrSQSInvalidParameterValue, "One or more parameters are invalid. Reason: Message must be shorter than %d bytes (MaximumMessageSize); it is %d bytes with its attributes.", cfg.maxSize, size)
	}
	m := &message{id: uuid.NewString(), sentAt: now, readyIdx: -1, timerIdx: -1, expIdx: -1}
	delay := cfg.delay.Milliseconds()
	if e.DelaySeconds != nil && cfg.fifo && *e.DelaySeconds == 0 {
		// An explicit 0 is accepted on a FIFO queue, and the queue's delay
		// applies, as SQS does (reported by elasticmq#273 and LocalStack
		// #6612: clients that always pass DelaySeconds=0 work on AWS).
	} else if e.DelaySeconds != nil {
		if cfg.fifo {
			return nil, awserr.New(awserr.ErrSQSInvalidParameterValue, "Value %d for parameter DelaySeconds is invalid. Reason: The request include parameter that is not valid for this queue type: FIFO queues take DelaySeconds per queue only.", *e.DelaySeconds)
		}
		if *e.DelaySeconds < 0 || *e.DelaySeconds > MaxDelaySeconds {
			return nil, awserr.OutOfRange(awserr.ErrSQSInvalidParameterValue, "DelaySeconds", *e.DelaySeconds, 0, MaxDelaySeconds)
		}
		delay = int64(*e.DelaySeconds) * 1000
	}
	m.visibleAt = now + delay
	for k, v := range e.MessageSystemAttributes {
		if k != MsgAttrAWSTraceHeader || v.DataType != "String" || v.StringValue == nil {
			return nil, awserr.New(awserr.ErrSQSInvalidParameterValue, "Message system attribute %s is invalid: only AWSTraceHeader, a String, may be sent.", k)
		}
		m.trace = *v.StringValue
	}
	if e.MessageGroupId != "" {
		if !fifoIDRE.MatchString(e.MessageGroupId) {
			return nil, awserr.New(awserr.ErrSQSInvalidParameterValue, "Value %s for parameter MessageGroupId is invalid. Reason: 1..128 alphanumeric or punctuation characters.", e.MessageGroupId)
		}
		m.group = e.MessageGroupId
	}
	if cfg.fifo {
		if m.group == "" {
			return nil, awserr.New(awserr.ErrMissingParameter, "The request must contain the parameter MessageGroupId.")
		}
		switch {
		case e.MessageDeduplicationId != "":
			if !fifoIDRE.MatchString(e.MessageDeduplicationId) {
				return nil, awserr.New(awserr.ErrSQSInvalidParameterValue, "Value %s for parameter MessageDeduplicationId is invalid. Reason: 1..128 alphanumeric or punctuation characters.", e.MessageDeduplicationId)
			}
			m.dedup = e.MessageDeduplicationId
		case cfg.contentDedup:
			sum := sha256.Sum256([]byte(e.MessageBody))
			m.dedup = hex.EncodeToString(sum[:])
		default:
			return nil, awserr.New(awserr.ErrSQSInvalidParameterValue, "The queue should either have ContentBasedDeduplication enabled or MessageDeduplicationId provided explicitly")
		}
	} else if e.MessageDeduplicationId != "" {
		return nil, awserr.New(awserr.ErrSQSInvalidParameterValue, "Value %s for parameter MessageDeduplicationId is invalid. Reason: The request include parameter that is not valid for this queue type.", e.MessageDeduplicationId)
	}
	attrs := e.MessageAttributes
	if len(attrs) == 0 {
		attrs = nil
	}
	m.setPayload(&payload{body: e.MessageBody, attrs: attrs})
	m.md5Body = MD5OfBody(e.MessageBody)
	m.md5Attrs = MD5OfMessageAttributes(attrs)
	return m, nil
}

// sendResult is the MessageId and SequenceNumber a send reports.
type sendResult struct{ id, seq string }

// store writes msgs as one record and waits for JetStream's
// acknowledgement. With dedup (client sends), FIFO messages whose
// deduplication id is remembered are not stored: their result is the
// first send's. Moves (redrive, move tasks) pass dedup false.
func (q *queue) store(ctx context.Context, msgs []*message, now int64, dedup bool) ([]sendResult, []error) {
	results := make([]sendResult, len(msgs))
	errs := make([]error, len(msgs))
	var dups []int
	var dupOf []*dedupEntry
	q.mu.Lock()
	if q.deleted {
		q.mu.Unlock()
		for i := range errs {
			errs[i] = q.goneErr(q.name)
		}
		return results, errs
	}
	if q.fifo {
		q.pruneDedup(now)
	}
	rec := &record{n: q.nextN, acked: make(chan struct{}), moved: !dedup}
	kept := msgs[:0:0]
	for i, m := range msgs {
		if dedup && q.fifo {
			if e := q.dedup[q.dedupKey(m.group, m.dedup)]; e != nil && e.sentAt+DeduplicationInterval.Milliseconds() > now {
				dups, dupOf = append(dups, i), append(dupOf, e)
				continue
			}
		}
		m.rec, m.idx, m.st = rec, uint8(len(kept)), stPending
		kept = append(kept, m)
		results[i] = sendResult{id: m.id}
		if q.fifo {
			results[i].seq = q.sequenceNumber(rec.n, m.idx)
			if dedup {
				q.remember(m.group, m.dedup, m.id, results[i].seq, m.sentAt, rec, now)
			}
			q.addToGroup(m)
		}
	}
	if len(kept) > 0 {
		q.nextN++
		rec.msgs, rec.live = kept, len(kept)
		q.records[rec.n] = rec
		// A record's body subject is written once: JetStream refuses it
		// when the subject holds a message already (expected last subject
		// sequence 0), instead of replacing it (MaxMsgsPerSubject 1). A
		// record number is taken from the stream's last sequence when the
		// index is loaded; should that have been read behind the stream
		// (an index loaded while a new stream leader was still applying
		// the last writes), the number of a stored record would come
		// again, and its body, acknowledged to its sender, would be lost
		// (the fault test lost on-failure messages sent just before the
		// node serving the queues was killed). Refused, the index is
		// dropped and loaded again (wrongRecordNumber).
		f, err := q.svc.eng.JS.PublishMsgAsync(&nats.Msg{Subject: q.bodySubject(rec.n), Data: encodeBody(make([]byte, 0, 64+sizeOf(kept)), kept, rec.moved)},
			jetstream.WithExpectLastSequencePerSubject(0))
		if err != nil {
			rec.failed = true
			close(rec.acked)
			q.dropPending(rec)
			q.mu.Unlock()
			for i := range msgs {
				if msgs[i].rec == rec {
					errs[i] = awserr.New(awserr.ErrInternal, "store message: %v", err)
				}
			}
			return q.finishDups(ctx, results, errs, dups, dupOf)
		}
		q.mu.Unlock()
		ack, perr, late := awaitAck(ctx, f)
		if late != nil {
			// No answer yet (the caller gave up, or the stream had no
			// leader when the write was published): the write may still
			// land. Finish it in the background; the caller sees a
			// retryable error and may send again: a duplicate, never a
			// loss.
			go func() {
				var err error
				var ack *jetstream.PubAck
				select {
				case ack = <-f.Ok():
				case err = <-f.Err():
				}
				q.completeStore(rec, ack, err)
			}()
			for i := range msgs {
				if msgs[i].rec == rec {
					errs[i] = awserr.New(awserr.ErrInternal, "store message: %v", late)
				}
			}
			return q.finishDups(ctx, results, errs, dups, dupOf)
		}
		q.completeStore(rec, ack, perr)
		if isWrongLastSequence(perr) {
			q.svc.reloadIndex(q)
			perr = errMoved
		}
		q.mu.Lock()
		moved := q.moved
		q.mu.Unlock()
		if perr == nil && (moved || !q.svc.mayAct()) {
			// The index was dropped while the write was in flight (this
			// process lost the queues' lease), or the lease stopped being
			// valid before the acknowledgement came: another process may
			// hold the queues by now, and its index may have been read
			// from the stream before the write landed, and then does not
			// know the message. Refuse the send (retryable): the caller
			// sends again, into the new index; a move keeps the message in
			// its source queue. The stored copy is delivered too if a
			// later load finds it: a duplicate, never a loss
			// (TestOneRunnelRidesThroughTheLossOfEachNATSServer,
			// TestAStoreAcknowledgedAfterTheLeaseEndedIsRefused).
			//
			// Why validity and not only the loss: a holder whose renewals
			// fail stops being valid TTL/2 after its last renewal, but
			// learns that the lease is lost (and drops its indexes) only a
			// whole TTL after it, when another process may already hold
			// the lease and have read the queue. A write acknowledged while
			// the lease was valid landed at least TTL/2 before anyone else
			// could read the stream.
			perr = errMoved
		}
		if perr != nil {
			for i := range msgs {
				if msgs[i].rec == rec {
					errs[i] = awserr.New(awserr.ErrInternal, "store message: %v", perr)
				}
			}
		}
	} else {
		q.mu.Unlock()
	}
	return q.finishDups(ctx, results, errs, dups, dupOf)
}

// awaitAck waits for JetStream's answer to a message's write: its error
// (nil: stored), or, with late set, why it stopped waiting first: ctx
// ended, or ackWait passed. A write published while its stream had no
// leader (its node was just killed) is never answered, and waiting for
// the engine's 30 s publish timeout held every SendMessage to that queue
// (the demo's results) for 30 s after a kill (issue 13).
func awaitAck(ctx context.Context, f jetstream.PubAckFuture) (ack *jetstream.PubAck, err, late error) {
	t := time.NewTimer(ackWait)
	defer t.Stop()
	select {
	case ack := <-f.Ok():
		return ack, nil, nil
	case err := <-f.Err():
		return nil, err, nil
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	case <-t.C:
		return nil, nil, fmt.Errorf("no acknowledgement from JetStream within %v (a stream leader election?)", ackWait)
	}
}

func sizeOf(msgs []*message) int {
	n := 0
	for _, m := range msgs {
		n += m.size + len(m.id) + len(m.group) + len(m.dedup) + len(m.dlqSource) + len(m.trace) + 32
	}
	return n
}

// completeStore makes a stored record receivable, or forgets a refused one.
func (q *queue) completeStore(rec *record, ack *jetstream.PubAck, err error) {
	rec.failed = err != nil
	close(rec.acked)
	q.mu.Lock()
	defer q.mu.Unlock()
	if ack != nil {
		rec.seq = ack.Sequence
	}
	if rec.purged || q.deleted {
		return
	}
	if err != nil {
		q.dropPending(rec)
		return
	}
	now := q.svc.eng.Clock.Now().UnixMilli()
	for _, m := range rec.msgs {
		q.cachePayload(m)
		q.activate(m, now)
	}
}

// dropPending forgets the messages of a record JetStream refused.
func (q *queue) dropPending(rec *record) {
	delete(q.records, rec.n)
	for _, m := range rec.msgs {
		m.st = stDeleted
		m.payload = nil
		if q.fifo {
			key := q.dedupKey(m.group, m.dedup)
			if e := q.dedup[key]; e != nil && e.rec == rec {
				delete(q.dedup, key)
			}
			if g := q.groups[m.group]; g != nil {
				g.msgs = removeMsg(g.msgs, m)
				q.refreshGroup(g)
			}
		}
	}
}

func removeMsg(list []*message, m *message) []*message {
	for i, x := range list {
		if x == m {
			return append(list[:i:i], list[i+1:]...)
		}
	}
	return list
}

// finishDups fills in the results of deduplicated FIFO sends, waiting for
// the first send of each if it is still being stored.
func (q *queue) finishDups(ctx context.Context, results []sendResult, errs []error, dups []int, dupOf []*dedupEntry) ([]sendResult, []error) {
	for j, i := range dups {
		e := dupOf[j]
		if e.rec != nil {
			select {
			case <-e.rec.acked:
			case <-ctx.Done():
				errs[i] = awserr.New(awserr.ErrInternal, "store message: %v", ctx.Err())
				continue
			}
			if e.rec.failed {
				errs[i] = awserr.New(awserr.ErrInternal, "store message: the first send of deduplication id failed; send again")
				continue
			}
		}
		results[i] = sendResult{id: e.id, seq: e.seq}
	}
	return results, errs
}
