package mapping

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/runnel-dev/runnel/queue"
	"github.com/runnel-dev/runnel/wire"
)

// retry applies the RetryPolicy to a failed message, if there is one.
func (r *queueRunner) retry(ctx context.Context, log interface {
	Warn(string, ...any)
	Info(string, ...any)
}, m *queue.Message, rc receipt) {
	p := r.cfg.RetryPolicy
	if p == nil {
		return
	}
	attempt, _ := strconv.Atoi(m.Attributes[queue.MsgAttrApproximateReceiveCount])
	first := sentTime(m)
	if env, ok := wire.UnwrapRetry([]byte(m.Body)); ok {
		attempt += env.Metadata.Attempt - 1
		first = time.Unix(env.Metadata.InitialTimestamp, 0)
	} else if onFailureRecord(m.Body) {
		// A stream's on-failure record (a pointer): the stream had the
		// first attempt, so its first receive is the second, as the
		// handler is told (recovery) and as a retry envelope counts.
		// Before, it counted one attempt fewer: MaxAttempts 4 ran a poison
		// record 5 times through a pointer, 4 through an envelope.
		attempt++
	}
	now := r.svc.eng.Clock.Now()
	if done, why := p.Exhausted(attempt, first, now); done {
		dlq := r.currentSettings(ctx).dlq
		if dlq == "" {
			log.Warn("retry policy exhausted but the queue has no dead-letter queue; the message stays for the queue's own redrive",
				"messageId", m.MessageId, "reason", why)
			return
		}
		// Moved as the queue's own redrive moves it: same MessageId,
		// SentTimestamp (standard queues) and DeadLetterQueueSourceArn, so a
		// move task can send it back. Durable when the call returns.
		if err := r.svc.queues.MoveToDeadLetterQueue(ctx, r.queueURL, m.ReceiptHandle); err != nil {
			log.Warn("move to the dead-letter queue failed; the message stays", "messageId", m.MessageId, "err", err)
			return
		}
		r.moved.Add(1)
		log.Info("message moved to the dead-letter queue", "messageId", m.MessageId, "reason", why, "attempt", attempt)
		return
	}
	r.rngMu.Lock()
	d := p.Delay(attempt, r.rng)
	r.rngMu.Unlock()
	// SQS refuses a visibility timeout ending more than 12 hours after
	// the receive: cap the delay (whole seconds, rounding the time since
	// the receive up).
	since := (now.Sub(rc.at) + time.Second - 1) / time.Second * time.Second
	d = max(0, min(d, queue.MaxVisibilityTimeout*time.Second-since))
	if err := r.svc.queues.ChangeMessageVisibility(ctx, r.queueURL, m.ReceiptHandle, int(d/time.Second)); err != nil {
		log.Warn("could not set the retry delay; the message comes back after its visibility timeout", "messageId", m.MessageId, "err", err)
		return
	}
	r.backedOff.Add(1)
}

// onFailureRecord reports whether body is a stream mapping's on-failure
// record (KinesisBatchInfo or DDBStreamBatchInfo).
func onFailureRecord(body string) bool {
	if !strings.Contains(body, "BatchInfo") {
		return false
	}
	var f wire.OnFailureRecord
	return json.Unmarshal([]byte(body), &f) == nil && f.BatchInfo() != nil
}

func sentTime(m *queue.Message) time.Time {
	ms, err := strconv.ParseInt(m.Attributes[queue.MsgAttrSentTimestamp], 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}
