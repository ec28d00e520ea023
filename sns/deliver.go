package sns

// The delivery worker of a topic: receives published messages (and
// retries) from the topic's internal queue, fans them out, retries, and
// dead-letters. See the package doc for the guarantees.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/engine"
	"github.com/runnel-dev/runnel/queue"
)

// Message attributes of a retry in the internal queue.
const (
	taskSubscription = "Subscription" // the subscription id
	taskRetry        = "Retry"        // the retry's number, 1-based
	taskMessageID    = "MessageId"    // the published message's id
	taskDue          = "Due"          // Unix ms before which it waits again (delays over 15 minutes)
)

// workVisibility is the visibility timeout (seconds) of a received
// message, set again every heartbeat while its handler delivers it
// (begin), so a fan-out of any length is not handed to a second
// receiver; after a crash the message shows again within 300 s.
const workVisibility = 300

// receivers is how many receive loops deliver a standard topic's
// messages at once (each up to 10 messages in parallel); a FIFO topic has
// one, which keeps its groups in order.
const receivers = 4

// startWorker starts t's delivery worker unless the service is passive or
// closed. The caller holds s.mu or is New.
func (s *Service) startWorker(t *topic) {
	if s.opts.Passive || s.closed {
		return
	}
	ctx, cancel := context.WithCancel(s.bg)
	var wg sync.WaitGroup
	t.stop = func() { cancel(); wg.Wait() }
	w := &worker{s: s, t: t, fifo: map[string]*fifoState{}, active: map[string]*inflight{}}
	n := receivers
	if t.meta().FIFO {
		n = 1
	}
	for range n {
		s.wg.Add(1)
		wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer wg.Done()
			w.run(ctx)
		}()
	}
}

type worker struct {
	s *Service
	t *topic
	// fifo: per received FIFO message, the subscriptions already served
	// and the retries of the others (in memory: after a crash the message
	// is delivered again, which FIFO queue subscribers deduplicate).
	mu   sync.Mutex
	fifo map[string]*fifoState
	// active: the internal messages this process's handlers are
	// delivering, by internal message id (begin).
	active map[string]*inflight
}

type fifoState struct {
	done    map[string]bool
	retries map[string]int
}

var receiveAttrs = []string{queue.MsgAttrSequenceNumber}

func (w *worker) run(ctx context.Context) {
	s := w.s
	s.mu.Lock()
	qname, fifo := w.t.meta().queueName(), w.t.meta().FIFO
	s.mu.Unlock()
	for {
		wait, vt := queue.MaxWaitTimeSeconds, workVisibility
		msgs, err := s.queues.ReceiveMessage(ctx, qname, queue.ReceiveMessageInput{MaxNumberOfMessages: queue.MaxBatchEntries,
			WaitTimeSeconds: &wait, VisibilityTimeout: &vt, MessageAttributeNames: []string{"All"}, AttributeNames: receiveAttrs})
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			s.log.Warn("sns: cannot receive from the topic's internal queue; retrying in a second", "topic", w.t.meta().Name, "err", err)
			if engine.Sleep(ctx, s.eng.Clock, time.Second) != nil {
				return
			}
			continue
		}
		if fifo {
			w.runFIFO(ctx, qname, msgs)
			continue
		}
		var wg sync.WaitGroup
		for i := range msgs {
			wg.Add(1)
			go func(m *queue.Message) {
				defer wg.Done()
				w.handle(ctx, qname, m)
			}(&msgs[i])
		}
		wg.Wait()
	}
}

// runFIFO handles a FIFO receive in order; once a message of a group is
// held back for a retry, the group's later messages are released
// unprocessed (they come back after it).
func (w *worker) runFIFO(ctx context.Context, qname string, msgs []queue.Message) {
	blocked := map[string]bool{}
	for i := range msgs {
		m := &msgs[i]
		var r record
		decodeRecord(m.Body, &r)
		if blocked[r.GroupId] {
			w.s.queues.ChangeMessageVisibility(ctx, qname, m.ReceiptHandle, 0)
			continue
		}
		if !w.handle(ctx, qname, m) {
			blocked[r.GroupId] = true
		}
	}
}

// handle processes one message of the internal queue; false when it
// stays for a retry in place (FIFO).
func (w *worker) handle(ctx context.Context, qname string, m *queue.Message) bool {
	s := w.s
	var r record
	if err := decodeRecord(m.Body, &r); err != nil {
		s.log.Error("sns: an internal message does not decode; deleted", "topic", w.t.meta().Name, "messageId", m.MessageId, "err", err)
		w.delete(ctx, qname, m)
		return true
	}
	stop, ok := w.begin(ctx, qname, m)
	if !ok {
		return true
	}
	defer stop()
	r.MessageId, r.SequenceNumber = m.MessageId, m.Attributes[queue.MsgAttrSequenceNumber]
	if id := attr(m, taskMessageID); id != "" {
		r.MessageId = id
	}
	if due, _ := strconv.ParseInt(attr(m, taskDue), 10, 64); due > s.eng.Clock.Now().UnixMilli() {
		stop()
		return w.retryLater(ctx, qname, m, &r, attr(m, taskSubscription), attr(m, taskRetry), time.Duration(due-s.eng.Clock.Now().UnixMilli())*time.Millisecond)
	}
	s.mu.Lock()
	meta := *w.t.meta()
	var subs []*subscription
	only, served := attr(m, taskSubscription), servedBy(m)
	for _, sub := range s.subs {
		if sub.meta.TopicName == meta.Name && sub.meta.Confirmed && sub.meta.ConfirmedAt <= r.Timestamp && (only == "" || sub.meta.ID == only) && !served[sub.meta.ID] {
			subs = append(subs, sub)
		}
	}
	s.mu.Unlock()
	if only != "" && len(subs) == 0 {
		s.log.Info("sns: a retry's subscription is gone (unsubscribed); not delivered", "topic", meta.Name, "messageId", r.MessageId, "subscription", only)
	}
	retry, _ := strconv.Atoi(attr(m, taskRetry))
	if meta.FIFO {
		return w.handleFIFO(ctx, qname, m, &meta, &r, subs, stop)
	}
	for _, sub := range subs {
		if only == "" && !sub.filter.match(&r) {
			w.t.c.filteredOut.Add(1)
			continue
		}
		next, d, pending := s.attempt(ctx, &meta, sub, &r, retry, time.Time{})
		if pending && !w.retryLater(ctx, qname, nil, &r, sub.meta.ID, strconv.Itoa(next), d) {
			return false // the message comes back after its visibility timeout
		}
	}
	stop()
	w.delete(ctx, qname, m)
	return true
}

// fifoRetryMargin is how long before its internal queue's retention ends
// a FIFO message's retries stop (internalQueueAttrs: 14 days).
const fifoRetryMargin = time.Hour

// fifoRetryDeadline is the last time a retry of FIFO message r may come
// due. A FIFO message is retried in place, holding its group back, so it
// ages in the topic's internal queue, whose retention (14 days, SQS's
// longest) is shorter than the managed policy's 23 days of retries: the
// queue would delete it, and the messages of its group behind it, with no
// dead letter. So its retries end an hour before the retention does, and
// it goes to the subscription's dead-letter queue (or is logged and
// counted, as AWS drops it); the messages behind it are then delivered.
// Standard topics store each retry as a new message and keep AWS's 23
// days.
func fifoRetryDeadline(r *record) time.Time {
	return time.UnixMilli(r.Timestamp).Add(internalQueueRetention - fifoRetryMargin)
}

// handleFIFO delivers a FIFO message to the subscriptions not yet served;
// a retry keeps the message in place (ChangeMessageVisibility), holding
// its group back. stop ends begin's renewals of m's visibility.
func (w *worker) handleFIFO(ctx context.Context, qname string, m *queue.Message, meta *topicMeta, r *record, subs []*subscription, stop func()) bool {
	w.mu.Lock()
	st := w.fifo[r.MessageId]
	if st == nil {
		st = &fifoState{done: map[string]bool{}, retries: map[string]int{}}
		w.fifo[r.MessageId] = st
	}
	w.mu.Unlock()
	var wait time.Duration
	pendingAny := false
	for _, sub := range subs {
		if st.done[sub.meta.ID] {
			continue
		}
		if !sub.filter.match(r) {
			w.t.c.filteredOut.Add(1)
			st.done[sub.meta.ID] = true
			continue
		}
		next, d, pending := w.s.attempt(ctx, meta, sub, r, st.retries[sub.meta.ID], fifoRetryDeadline(r))
		if !pending {
			st.done[sub.meta.ID] = true
			continue
		}
		st.retries[sub.meta.ID] = next
		if !pendingAny || d < wait {
			wait = d
		}
		pendingAny = true
	}
	stop()
	if pendingAny {
		if err := w.s.queues.ChangeMessageVisibility(ctx, qname, m.ReceiptHandle, int(min(wait, queue.MaxVisibilityTimeout*time.Second)/time.Second)); err != nil {
			w.s.log.Warn("sns: could not schedule a FIFO retry; it comes back after its visibility timeout", "messageId", r.MessageId, "err", err)
		}
		return false
	}
	w.mu.Lock()
	delete(w.fifo, r.MessageId)
	w.mu.Unlock()
	w.delete(ctx, qname, m)
	return true
}

// retryLater stores a retry of r for one subscription, due in d (waiting
// in steps of at most 15 minutes, the longest SQS delay), and deletes m
// (nil: nothing to delete). Write, then delete: a crash in between
// duplicates.
func (w *worker) retryLater(ctx context.Context, qname string, m *queue.Message, r *record, subID, retry string, d time.Duration) bool {
	s := w.s
	now := s.eng.Clock.Now()
	delay := min(int((d+time.Second-1)/time.Second), queue.MaxDelaySeconds)
	attrs := map[string]queue.MessageAttributeValue{
		taskSubscription: strAttr(subID), taskRetry: numAttr(retry), taskMessageID: strAttr(r.MessageId),
	}
	if d > queue.MaxDelaySeconds*time.Second {
		attrs[taskDue] = numAttr(strconv.FormatInt(now.Add(d).UnixMilli(), 10))
	}
	in := queue.SendMessageInput{MessageBody: r.body(), MessageAttributes: attrs}
	if delay > 0 {
		in.DelaySeconds = &delay
	}
	if _, err := s.queues.SendMessage(ctx, qname, in); err != nil {
		s.log.Warn("sns: could not store a retry; the message comes back after its visibility timeout", "messageId", r.MessageId, "subscription", subID, "err", err)
		return false
	}
	if m != nil {
		w.delete(ctx, qname, m)
	}
	return true
}

func (w *worker) delete(ctx context.Context, qname string, m *queue.Message) {
	if err := w.s.queues.DeleteMessage(ctx, qname, m.ReceiptHandle); err != nil {
		w.s.log.Warn("sns: delete failed; the message will be delivered again (a duplicate)", "messageId", m.MessageId, "err", err)
	}
}

func attr(m *queue.Message, name string) string {
	if v, ok := m.MessageAttributes[name]; ok && v.StringValue != nil {
		return *v.StringValue
	}
	return ""
}

func strAttr(v string) queue.MessageAttributeValue {
	return queue.MessageAttributeValue{DataType: "String", StringValue: &v}
}

func numAttr(v string) queue.MessageAttributeValue {
	return queue.MessageAttributeValue{DataType: "Number", StringValue: &v}
}

// attempt delivers r to sub, retrying at once while the policy's next
// retry has no delay. retry is the number of retries made before. It
// returns pending with the next retry's number and delay when a later
// retry is due; otherwise the message was delivered or dead-lettered.
//
// until, when set, is the last time a retry may come due: a retry due
// after it is not made, and the message goes to the dead-letter queue
// (or is logged and counted) at once, as when the retries are spent.
func (s *Service) attempt(ctx context.Context, t *topicMeta, sub *subscription, r *record, retry int, until time.Time) (next int, d time.Duration, pending bool) {
	for {
		err := s.deliver(ctx, t, sub, r)
		if err == nil {
			s.countDelivered(t.Name)
			return 0, 0, false
		}
		if isClientError(err) {
			if !s.deadLetter(ctx, t, sub, r, err) {
				return retry, deadLetterRetry, true
			}
			return 0, 0, false
		}
		retry++
		var ok bool
		if sub.meta.Protocol == ProtocolHTTP || sub.meta.Protocol == ProtocolHTTPS {
			d, ok = httpPolicy(t.Attributes[AttrDeliveryPolicy], sub).delay(retry)
		} else {
			d, ok = managedDelay(retry)
		}
		if ok && !until.IsZero() && s.eng.Clock.Now().Add(d).After(until) {
			s.log.Warn("sns: a FIFO message's retries would outlive its topic's internal queue (14 days); retries end now",
				"topic", t.Name, "messageId", r.MessageId, "subscription", sub.meta.ID, "retry", retry)
			ok = false
		}
		if !ok {
			if !s.deadLetter(ctx, t, sub, r, err) {
				return retry - 1, deadLetterRetry, true
			}
			return 0, 0, false
		}
		s.log.Debug("sns: delivery failed; retrying", "messageId", r.MessageId, "subscription", sub.meta.ID, "retry", retry, "in", d, "err", err)
		if d > 0 || ctx.Err() != nil {
			return retry, d, true
		}
	}
}

// deadLetterRetry is how long a message whose dead-letter queue refused
// it for now (deadLetter's settled false) waits before it is tried again.
const deadLetterRetry = 20 * time.Second

// clientError is a delivery error AWS does not retry: the endpoint is
// gone or refuses the message for good.
type clientError struct{ err error }

func (e *clientError) Error() string { return e.err.Error() }
func (e *clientError) Unwrap() error { return e.err }

func isClientError(err error) bool {
	var ce *clientError
	return errors.As(err, &ce)
}

// classify wraps a service's error: not found, and refusals a retry
// cannot change, are client errors.
func classify(err error) error {
	var ae *awserr.Error
	if err == nil || !errors.As(err, &ae) || awserr.IsRetryable(err) {
		return err
	}
	return &clientError{err}
}

func (s *Service) counters(topicName string) *counters {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t := s.topics[topicName]; t != nil {
		return t.c
	}
	return &counters{}
}

func (s *Service) countDelivered(topicName string) { s.counters(topicName).delivered.Add(1) }

// deadLetterDeduplicationID is the MessageDeduplicationId of r's dead
// letter for sub in a FIFO dead-letter queue: r's message id and a hash
// of the subscription id. The message's own deduplication id (or message
// id) is the same for every subscription, so a queue shared by two of
// them kept one dead letter and dropped the other as a duplicate while
// both were counted as stored; the same subscription's dead letter sent
// twice (a redelivery) is still a duplicate.
func deadLetterDeduplicationID(sub *subscription, r *record) string {
	h := sha256.Sum256([]byte(sub.meta.ID))
	return r.MessageId + "-" + hex.EncodeToString(h[:8])
}

// deadLetter sends what r would have been for sub to its dead-letter
// queue; without one the message is logged at WARN with its id and
// counted as failed (dropped, as AWS drops it). settled is false when the
// dead-letter queue refused the message for a reason a retry may cure
// (awserr.IsRetryable: a full stream, a leader election): the message is
// then not settled for sub, and the caller keeps it to try again, instead
// of dropping a message Publish accepted. A dead-letter queue that refuses
// it for good (gone, too small) drops it, logged at ERROR and counted
// (DeadLetterFailed, AWS's NumberOfNotificationsFailedToRedriveToDlq).
func (s *Service) deadLetter(ctx context.Context, t *topicMeta, sub *subscription, r *record, cause error) (settled bool) {
	c := s.counters(t.Name)
	if sub.dlq == "" {
		c.failed.Add(1) // Failed settles a delivery
		s.log.Warn("sns: message not delivered and the subscription has no dead-letter queue; dropped as AWS does",
			"topic", t.Name, "messageId", r.MessageId, "subscription", sub.meta.ID, "endpoint", sub.meta.Endpoint, "err", cause)
		return true
	}
	in := s.sqsMessage(t, sub, r, sub.dlq)
	if in.MessageDeduplicationId != "" {
		// Per subscription: subscriptions sharing a FIFO dead-letter
		// queue each keep their dead letter of the message.
		in.MessageDeduplicationId = deadLetterDeduplicationID(sub, r)
	}
	if n := len(r.Attributes); sub.raw() && r.MessageStructure != "json" && n > maxRawAttributes {
		s.log.Warn("sns: a raw dead letter keeps the first 10 of its message attributes (SQS takes no more)",
			"topic", t.Name, "messageId", r.MessageId, "subscription", sub.meta.ID, "attributes", n)
	}
	if _, err := s.queues.SendMessage(ctx, sub.dlq, in); err != nil {
		if awserr.IsRetryable(err) || ctx.Err() != nil {
			s.log.Warn("sns: the subscription's dead-letter queue refused the message for now; it is kept and tried again",
				"topic", t.Name, "messageId", r.MessageId, "subscription", sub.meta.ID, "dlq", sub.dlq, "err", err, "cause", cause)
			return false
		}
		c.failed.Add(1)
		c.deadLetterFailed.Add(1)
		s.log.Error("sns: message not delivered and its dead-letter queue refused it; dropped",
			"topic", t.Name, "messageId", r.MessageId, "subscription", sub.meta.ID, "dlq", sub.dlq, "err", err, "cause", cause)
		return true
	}
	c.failed.Add(1)
	c.deadLettered.Add(1)
	s.log.Info("sns: message sent to the subscription's dead-letter queue", "messageId", r.MessageId, "subscription", sub.meta.ID, "dlq", sub.dlq, "cause", cause)
	return true
}
