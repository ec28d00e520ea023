package queue

import (
	"context"
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/lease"
)

// ReceiveMessageInput is the input of ReceiveMessage (API_ReceiveMessage).
type ReceiveMessageInput struct {
	// MaxNumberOfMessages: 1..10, default (0) 1.
	MaxNumberOfMessages int
	// VisibilityTimeout, seconds (0..43200), overrides the queue's for the
	// messages of this call.
	VisibilityTimeout *int
	// WaitTimeSeconds (0..20) overrides the queue's
	// ReceiveMessageWaitTimeSeconds: with a wait, the call returns as soon
	// as at least one message is available, or empty when the wait ends
	// (engine clock).
	WaitTimeSeconds *int
	// AttributeNames and MessageSystemAttributeNames name the system
	// attributes to return (MsgAttr* names, or "All"); they are merged.
	AttributeNames              []string
	MessageSystemAttributeNames []string
	// MessageAttributeNames names the message attributes to return:
	// "All" or ".*", "prefix.*", or exact names.
	MessageAttributeNames []string
	// ReceiveRequestAttemptId (FIFO queues, up to 128 characters): a
	// receive retried with the same id within 5 minutes returns the same
	// messages and receipt handles, their visibility timeout reset, as
	// long as none was deleted or had its visibility changed and their
	// visibility timeout has not ended (then it is a new receive:
	// receive_attempt.go). On standard queues it is ignored.
	ReceiveRequestAttemptId string
}

// delivery is a message as a receive took it, captured under the lock.
type delivery struct {
	m     *message
	p     *payload
	n     uint64
	count uint32
	first int64
	nonce uint64
}

// ReceiveMessage returns up to MaxNumberOfMessages visible messages, in
// send order, and makes them invisible for the visibility timeout
// (API_ReceiveMessage). Each receive increments ApproximateReceiveCount
// and issues a new receipt handle. On a FIFO queue a message group with a
// message in flight delivers nothing more until that message is deleted
// or visible again; one call may return several messages of a group, in
// order. With a RedrivePolicy, a message already received
// maxReceiveCount times is moved to the dead-letter queue instead of
// being returned, with its MessageId (standard queues keep its
// SentTimestamp; FIFO queues reset it and replace its deduplication id
// by its MessageId; DeadLetterQueueSourceArn records the source). Messages older
// than MessageRetentionPeriod are deleted, never returned.
//
// Errors: awserr.ErrSQSInvalidParameterValue for MaxNumberOfMessages outside 1..10,
// VisibilityTimeout outside 0..43200, WaitTimeSeconds outside 0..20;
// awserr.ErrInvalidAttributeName for an unknown system attribute;
// awserr.ErrQueueDoesNotExist, also when the queue is deleted during a wait.
func (s *Service) ReceiveMessage(ctx context.Context, queueURL string, in ReceiveMessageInput) ([]Message, error) {
	var msgs []Message
	if remote, err := s.forward(ctx, "ReceiveMessage", lease.Pair(queueURL, in), &msgs); remote {
		return msgs, err
	}
	max := in.MaxNumberOfMessages
	if max == 0 {
		max = 1
	}
	if max < 1 || max > MaxBatchEntries {
		return nil, awserr.New(awserr.ErrSQSInvalidParameterValue, "Value %d for parameter MaxNumberOfMessages is invalid. Reason: Must be between 1 and %d, if provided.", max, MaxBatchEntries)
	}
	if v := in.VisibilityTimeout; v != nil && (*v < 0 || *v > MaxVisibilityTimeout) {
		return nil, awserr.New(awserr.ErrSQSInvalidParameterValue, "Value %d for parameter VisibilityTimeout is invalid. Reason: Must be between 0 and %d, if provided.", *v, MaxVisibilityTimeout)
	}
	if v := in.WaitTimeSeconds; v != nil && (*v < 0 || *v > MaxWaitTimeSeconds) {
		return nil, awserr.New(awserr.ErrSQSInvalidParameterValue, "Value %d for parameter WaitTimeSeconds is invalid. Reason: Must be >= 0 and <= %d, if provided.", *v, MaxWaitTimeSeconds)
	}
	want, err := systemAttrsWanted(in.AttributeNames, in.MessageSystemAttributeNames)
	if err != nil {
		return nil, err
	}
	q, err := s.queue(ctx, queueURL)
	if err != nil {
		return nil, err
	}
	q.mu.Lock()
	wait, vt := q.cfg.waitTime, q.cfg.visibility
	q.mu.Unlock()
	if in.WaitTimeSeconds != nil {
		wait = time.Duration(*in.WaitTimeSeconds) * time.Second
	}
	if in.VisibilityTimeout != nil {
		vt = time.Duration(*in.VisibilityTimeout) * time.Second
	}
	clock := s.eng.Clock
	attemptID := ""
	if q.fifo {
		attemptID = in.ReceiveRequestAttemptId
	}
	if attemptID != "" {
		if ds, futs, ok := q.retryAttempt(attemptID, vt); ok {
			if err := waitAcks(ctx, futs); err != nil {
				s.log.Warn("queue: receive state not stored; the messages may be visible again early after a crash", "queue", q.name, "err", err)
			}
			return s.deliver(ctx, q, ds, want, in.MessageAttributeNames), nil
		}
	}
	deadline := clock.Now().Add(wait)
	for {
		waiting := wait > 0 && clock.Now().Before(deadline)
		r, err := q.receiveOnce(max, vt, waiting)
		if err != nil {
			return nil, err
		}
		if err := waitAcks(ctx, r.futs); err != nil {
			s.log.Warn("queue: receive state not stored; the messages may be visible again early after a crash", "queue", q.name, "err", err)
		}
		if attemptID != "" && len(r.ds) > 0 {
			q.keepAttempt(attemptID, r.ds)
		}
		ds := r.ds
		if len(r.moves) > 0 {
			ds = append(ds, s.redrive(ctx, q, r.moves, r.movePayloads, vt)...)
		}
		if len(ds) > 0 {
			return s.deliver(ctx, q, ds, want, in.MessageAttributeNames), nil
		}
		if len(r.moves) > 0 {
			continue // what was moved made room: look again
		}
		if r.ch == nil {
			return nil, nil
		}
		now := clock.Now()
		d := deadline.Sub(now)
		if r.due != 0 {
			if dd := time.UnixMilli(r.due).Sub(now); dd < d {
				d = dd
			}
		}
		t := clock.NewTimer(d)
		select {
		case <-r.ch:
		case <-t.Chan():
		case <-ctx.Done():
		}
		t.Stop()
		q.mu.Lock()
		q.waiters--
		q.mu.Unlock()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
}

type receiveResult struct {
	ds           []delivery
	moves        []*message
	movePayloads []*payload
	ch           chan struct{} // set when nothing was found and the caller waits
	due          int64         // next delay or visibility end, Unix ms, or 0
	futs         []jetstream.PubAckFuture
}

// receiveOnce takes what is receivable now. With nothing to take and
// waiting set, it registers the caller as a waiter and returns the
// channel a send closes.
func (q *queue) receiveOnce(max int, vt time.Duration, waiting bool) (r receiveResult, err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.deleted {
		return r, q.goneErr(q.name)
	}
	now := q.svc.eng.Clock.Now().UnixMilli()
	q.advance(now)
	maxRC := uint32(0)
	if q.cfg.redrive != nil {
		maxRC = uint32(q.cfg.redrive.MaxReceiveCount)
	}
	vms := vt.Milliseconds()
	// take receives m or, past maxReceiveCount, sets it aside for the
	// dead-letter queue; it reports whether m was set aside.
	take := func(m *message) bool {
		if m.readyIdx >= 0 {
			q.ready.remove(m)
		}
		if maxRC > 0 && m.receiveCount >= maxRC {
			q.setStatus(m, stMoving)
			if q.fifo {
				q.groups[m.group].inflight++
			}
			r.moves = append(r.moves, m)
			r.movePayloads = append(r.movePayloads, m.payload)
			return true
		}
		r.ds = append(r.ds, q.receive(m, now, vms))
		return false
	}
	// Messages set aside for the dead-letter queue count towards max: if
	// the move fails they are delivered instead (see redrive).
	for len(r.ds)+len(r.moves) < max && len(r.moves) < MaxBatchEntries && q.ready.len() > 0 {
		h := q.ready.pop()
		if !q.fifo {
			take(h)
			continue
		}
		g := q.groups[h.group]
		for _, m := range g.msgs {
			if len(r.ds)+len(r.moves) >= max {
				break
			}
			if m.st == stDeleted {
				continue
			}
			if m.st != stVisible || take(m) {
				break
			}
		}
	}
	if len(r.ds) == 0 && len(r.moves) == 0 && waiting {
		q.waiters++
		r.ch = q.notify
		r.due = q.nextDue()
		armed := r.due
		if armed == 0 {
			armed = math.MaxInt64 // only the wait's end
		}
		if armed > q.armed {
			q.armed = armed
		}
	}
	r.futs, err = q.flush()
	if err != nil {
		q.svc.log.Warn("queue: receive state not stored", "queue", q.name, "err", err)
	}
	return r, nil
}

// receive makes m in flight for vms milliseconds and captures it for the
// response.
func (q *queue) receive(m *message, now, vms int64) delivery {
	if q.fifo && m.st != stMoving {
		q.groups[m.group].inflight++
	}
	m.receiveCount++
	if m.firstReceive == 0 {
		m.firstReceive = now
	}
	m.receivedAt = now
	m.nonce = rand.Uint64() | 1
	m.visibleAt = now + vms
	q.setStatus(m, stInflight)
	q.schedule(m)
	q.markDirty(m.rec)
	return delivery{m: m, p: m.payload, n: m.rec.n, count: m.receiveCount, first: m.firstReceive, nonce: m.nonce}
}

// redrive moves messages past maxReceiveCount to the dead-letter queue.
// If that is impossible (the queue is gone, of the other type, or its
// RedriveAllowPolicy refuses), the messages are received as usual
// instead, and returned, so they are never stuck.
func (s *Service) redrive(ctx context.Context, q *queue, moves []*message, payloads []*payload, vt time.Duration) []delivery {
	fifo, src := q.fifo, q.arn
	dlq, reason := s.deadLetterQueue(ctx, q)
	var errs []error
	if dlq != nil {
		errs = make([]error, len(moves))
		var copies []*message
		var of []int // copies[k] is of moves[of[k]]
		now := s.eng.Clock.Now().UnixMilli()
		for i, m := range moves {
			p := payloads[i]
			if p == nil {
				var err error
				if p, err = q.fetchPayload(ctx, m); err != nil {
					// Never moved without its body: received as usual
					// this time (deliver reads it again, or skips it for
					// its visibility timeout), moved at a later receive.
					s.log.Warn("queue: message body unreadable; not moved to the dead-letter queue this time", "queue", q.name, "message", m.id, "err", err)
					errs[i] = err
					continue
				}
			}
			copies = append(copies, deadLettered(m, p, fifo, now, src))
			of = append(of, i)
		}
		if len(copies) > 0 {
			_, stored := dlq.store(ctx, copies, now, false)
			for k, i := range of {
				errs[i] = stored[k]
			}
		}
	} else {
		s.log.Warn("queue: cannot move messages to the dead-letter queue; delivering them", "queue", q.name, "reason", reason)
	}
	q.mu.Lock()
	now := s.eng.Clock.Now().UnixMilli()
	var out []delivery
	for i, m := range moves {
		if m.st != stMoving {
			continue // deleted or expired meanwhile
		}
		if dlq != nil && errs[i] == nil {
			q.remove(m)
			continue
		}
		out = append(out, q.receive(m, now, vt.Milliseconds()))
	}
	futs, _ := q.flush()
	q.mu.Unlock()
	if err := waitAcks(ctx, futs); err != nil {
		s.log.Warn("queue: state after redrive not stored", "queue", q.name, "err", err)
	}
	return out
}

// deadLetterQueue returns the dead-letter queue of q's RedrivePolicy, or
// nil and why it can't take q's messages (no policy, the queue is gone,
// of the other type, or its RedriveAllowPolicy refuses q).
func (s *Service) deadLetterQueue(ctx context.Context, q *queue) (*queue, string) {
	q.mu.Lock()
	rp, fifo, src := q.cfg.redrive, q.fifo, q.arn
	q.mu.Unlock()
	if rp == nil {
		return nil, "the queue has no RedrivePolicy"
	}
	d, err := s.queue(ctx, rp.DeadLetterTargetArn)
	if err != nil {
		return nil, err.Error()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case d.cfg.fifo != fifo:
		return nil, "the dead-letter queue is of the other type"
	case !d.cfg.redriveAllow.allows(src):
		return nil, "the dead-letter queue's RedriveAllowPolicy refuses this source"
	}
	return d, ""
}

// moved returns a copy of m for another queue: MessageId id, same body,
// attributes and group id, deduplication id dedup, sent at sentAt,
// visible at once, with DeadLetterQueueSourceArn source ("" when moved
// back to a source).
func moved(m *message, p *payload, id, dedup string, sentAt, now int64, source string) *message {
	c := &message{
		id: id, sentAt: sentAt, visibleAt: now, group: m.group, dedup: dedup,
		dlqSource: source, trace: m.trace, md5Body: m.md5Body, md5Attrs: m.md5Attrs,
		readyIdx: -1, timerIdx: -1, expIdx: -1,
	}
	c.setPayload(p)
	return c
}

// deadLettered is the copy of m that a dead-letter queue stores: the
// same MessageId; on a FIFO queue the enqueue time reset to now and the
// deduplication id replaced by the MessageId ("When a message is moved
// from a FIFO queue to a FIFO DLQ, the original message's deduplication
// ID will be replaced with the original message's ID",
// sqs-configure-dead-letter-queue-redrive; before, it kept the original
// deduplication id).
func deadLettered(m *message, p *payload, fifo bool, now int64, source string) *message {
	if fifo {
		return moved(m, p, m.id, m.id, now, now, source)
	}
	return moved(m, p, m.id, m.dedup, m.sentAt, now, source)
}

// systemAttrsWanted merges AttributeNames and MessageSystemAttributeNames;
// nil means none, a map with "All" all.
func systemAttrsWanted(lists ...[]string) (map[string]bool, error) {
	var want map[string]bool
	for _, l := range lists {
		for _, n := range l {
			if n != AttrAll && !systemAttrNames[n] {
				return nil, awserr.New(awserr.ErrInvalidAttributeName, "Unknown Attribute %s.", n)
			}
			if want == nil {
				want = map[string]bool{}
			}
			want[n] = true
		}
	}
	return want, nil
}

// deliver turns deliveries into Messages, reading evicted payloads back.
func (s *Service) deliver(ctx context.Context, q *queue, ds []delivery, want map[string]bool, attrNames []string) []Message {
	out := make([]Message, 0, len(ds))
	all := want[AttrAll]
	sender := s.eng.AccountID()
	// skipped: FIFO groups with a message left out of this delivery. The
	// group's later messages are left out too: they stay in flight and
	// come back after the visibility timeout, behind it, in order. Before,
	// they were returned, and a consumer processed m2 before m1.
	var skipped map[string]bool
	for _, d := range ds {
		m, p := d.m, d.p
		if q.fifo && skipped[m.group] {
			s.log.Warn("queue: message held back behind an unreadable one of its group", "queue", q.name, "message", m.id, "group", m.group)
			continue
		}
		if p == nil {
			var err error
			if p, err = q.fetchPayload(ctx, m); err != nil {
				s.log.Error("queue: message body unreadable; skipped", "queue", q.name, "message", m.id, "err", err)
				if q.fifo {
					if skipped == nil {
						skipped = map[string]bool{}
					}
					skipped[m.group] = true
				}
				continue
			}
		}
		msg := Message{
			MessageId:              m.id,
			ReceiptHandle:          encodeReceipt(q.id, d.n, m.idx, d.nonce),
			MD5OfBody:              m.md5Body,
			Body:                   p.body,
			MD5OfMessageAttributes: m.md5Attrs,
			MessageAttributes:      selectAttributes(p.attrs, attrNames),
		}
		if len(msg.MessageAttributes) != len(p.attrs) {
			// The digest is of the attributes returned, as the SDKs that
			// check it compute it (Java, .NET, Ruby, PHP): with only some
			// asked for, the digest of all failed every such receive.
			msg.MD5OfMessageAttributes = MD5OfMessageAttributes(msg.MessageAttributes)
		}
		if want != nil {
			a := map[string]string{}
			set := func(name, v string) {
				if v != "" && (all || want[name]) {
					a[name] = v
				}
			}
			set(MsgAttrApproximateReceiveCount, strconv.FormatUint(uint64(d.count), 10))
			set(MsgAttrApproximateFirstReceiveTimestamp, strconv.FormatInt(d.first, 10))
			set(MsgAttrSentTimestamp, strconv.FormatInt(m.sentAt, 10))
			set(MsgAttrSenderId, sender)
			set(MsgAttrAWSTraceHeader, m.trace)
			set(MsgAttrMessageGroupId, m.group)
			set(MsgAttrDeadLetterQueueSourceArn, m.dlqSource)
			if q.fifo {
				set(MsgAttrMessageDeduplicationId, m.dedup)
				set(MsgAttrSequenceNumber, q.sequenceNumber(d.n, m.idx))
			}
			msg.Attributes = a
		}
		out = append(out, msg)
	}
	return out
}
