package sns

// Direct delivery of a standard topic's messages to its SQS
// subscriptions, inside Publish: one SendMessageBatch per subscribed
// queue for a whole PublishBatch, with one envelope signature per
// message. What is not delivered there (other protocols, and SQS
// deliveries that failed for a reason a retry may cure) is stored in the
// topic's internal queue, naming the subscriptions already served, and
// the worker delivers it with the full retry policy.

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"

	"github.com/google/uuid"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/queue"
)

// taskServed, on an internal message of a standard topic: the ids of the
// subscriptions Publish already served (delivered, filtered out or
// dead-lettered), comma-separated; the worker skips them.
const taskServed = "Served"

// directJob is one subscribed queue's share of a publish: the messages
// for it, and the record each is of.
type directJob struct {
	sub  *subscription
	name string
	idx  []int
	msgs []queue.SendMessageInput
	errs []error // per message, after the send
}

// deliverDirect delivers recs (the records of the internal entries send,
// one each) to the topic's confirmed SQS subscriptions and returns the
// entries still to store in the internal queue, with their MessageId and
// the subscriptions served in attributes. It gives each record its
// MessageId. A crash before the publisher has its answer may leave some
// queues with a message the publisher will publish again (at least once).
func (s *Service) deliverDirect(ctx context.Context, t *topicMeta, send []queue.SendMessageBatchRequestEntry, recs []*record) []queue.SendMessageBatchRequestEntry {
	c := s.counters(t.Name)
	now := recs[0].Timestamp
	for _, r := range recs {
		r.MessageId = uuid.NewString()
	}
	s.mu.Lock()
	var subs []*subscription
	for _, sub := range s.subs {
		if sub.meta.TopicName == t.Name && sub.meta.Confirmed && sub.meta.ConfirmedAt <= now {
			subs = append(subs, sub)
		}
	}
	s.mu.Unlock()
	served := make([][]string, len(recs))
	var jobs []*directJob
	for _, sub := range subs {
		if sub.meta.Protocol != ProtocolSQS {
			continue
		}
		name, _ := queue.NameFromARN(sub.meta.Endpoint)
		j := &directJob{sub: sub, name: name}
		for i, r := range recs {
			if !sub.filter.match(r) {
				c.filteredOut.Add(1)
				served[i] = append(served[i], sub.meta.ID)
				continue
			}
			if err := rawAttributesError(sub, r); err != nil {
				if s.deadLetter(ctx, t, sub, r, err) {
					served[i] = append(served[i], sub.meta.ID)
				} // else the worker tries again
				continue
			}
			j.idx, j.msgs = append(j.idx, i), append(j.msgs, s.sqsMessage(t, sub, r, name))
		}
		if len(j.msgs) > 0 {
			jobs = append(jobs, j)
		}
	}
	var wg sync.WaitGroup
	for _, j := range jobs {
		wg.Go(func() { j.errs = s.sendBatches(ctx, j.name, j.msgs) })
	}
	wg.Wait()
	for _, j := range jobs {
		for k, err := range j.errs {
			i := j.idx[k]
			switch {
			case err == nil:
				c.delivered.Add(1)
			case isClientError(err):
				if !s.deadLetter(ctx, t, j.sub, recs[i], err) {
					continue // the worker tries again
				}
			default:
				s.log.Debug("sns: a direct delivery failed; the worker retries it", "messageId", recs[i].MessageId, "subscription", j.sub.meta.ID, "err", err)
				continue
			}
			served[i] = append(served[i], j.sub.meta.ID)
		}
	}
	var rest []queue.SendMessageBatchRequestEntry
	for i, qe := range send {
		recs[i].entryID = qe.Id
		if len(served[i]) == len(subs) {
			continue
		}
		qe.MessageBody = recs[i].body()
		qe.MessageAttributes = map[string]queue.MessageAttributeValue{taskMessageID: strAttr(recs[i].MessageId)}
		if len(served[i]) > 0 {
			qe.MessageAttributes[taskServed] = strAttr(strings.Join(served[i], ","))
		}
		rest = append(rest, qe)
	}
	return rest
}

// sendBatches sends msgs to one queue in SendMessageBatch calls (10
// messages and queue.MaxBatchSize bytes at most each) and returns each
// message's error: nil when stored, a *clientError when the queue refuses
// it for good.
func (s *Service) sendBatches(ctx context.Context, name string, msgs []queue.SendMessageInput) []error {
	errs := make([]error, len(msgs))
	for lo := 0; lo < len(msgs); {
		hi, size := lo, 0
		for hi < len(msgs) && hi-lo < queue.MaxBatchEntries {
			n := messageBytes(&msgs[hi])
			if hi > lo && size+n > queue.MaxBatchSize {
				break
			}
			size += n
			hi++
		}
		entries := make([]queue.SendMessageBatchRequestEntry, hi-lo)
		for k := range entries {
			m := &msgs[lo+k]
			entries[k] = queue.SendMessageBatchRequestEntry{Id: strconv.Itoa(k), SendMessageInput: queue.SendMessageInput{MessageBody: m.MessageBody,
				MessageAttributes: m.MessageAttributes, MessageGroupId: m.MessageGroupId, MessageDeduplicationId: m.MessageDeduplicationId}}
		}
		out, err := s.queues.SendMessageBatch(ctx, name, entries)
		if err != nil {
			err = classify(err)
			if errors.Is(err, awserr.ErrBatchRequestTooLong) { // one message over the limit: fail it alone
				err = &clientError{err}
			}
			for k := lo; k < hi; k++ {
				errs[k] = err
			}
		} else {
			for _, f := range out.Failed {
				k, _ := strconv.Atoi(f.Id)
				var e error = &awserr.Error{Code: f.Code, Message: f.Message}
				if f.SenderFault {
					e = &clientError{e}
				}
				errs[lo+k] = e
			}
		}
		lo = hi
	}
	return errs
}

// messageBytes is what SendMessageBatch counts of a message: its body and
// its attributes' names, types and values.
func messageBytes(m *queue.SendMessageInput) int {
	n := len(m.MessageBody)
	for k, v := range m.MessageAttributes {
		n += len(k) + len(v.DataType) + len(v.BinaryValue)
		if v.StringValue != nil {
			n += len(*v.StringValue)
		}
	}
	return n
}

// servedBy lists the subscriptions an internal message says Publish
// already served.
func servedBy(m *queue.Message) map[string]bool {
	v := attr(m, taskServed)
	if v == "" {
		return nil
	}
	out := map[string]bool{}
	for _, id := range strings.Split(v, ",") {
		out[id] = true
	}
	return out
}
