package target

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/backoff"
	"github.com/runnel-dev/runnel/engine"
	"github.com/runnel-dev/runnel/queue"
)

// retryBackoff is the delay before a retry: 1 s doubling to 5 minutes,
// full jitter. The attempts and the age are bounded by the target's
// RetryPolicy, not by the policy.
var retryBackoff = backoff.Policy{BaseDelaySeconds: 1, MaxDelaySeconds: 300, MaxAttempts: 1000, MaximumAgeInSeconds: MaxMaximumEventAgeInSeconds}

// visibility is how long a received delivery stays hidden while it is
// attempted (a crash brings it back after this).
const visibility = 120

// writeTimeout bounds the writes after an attempt (wall clock: a safety
// net against a dead engine, not a rule).
const writeTimeout = 30 * time.Second

// run long-polls the internal queue and attempts up to conc deliveries at
// once.
func (s *Service) run(ctx context.Context) {
	sem := make(chan struct{}, s.conc)
	for ctx.Err() == nil {
		wait, vt := queue.MaxWaitTimeSeconds, visibility
		n := min(queue.MaxBatchEntries, s.conc-len(sem))
		if n == 0 {
			sem <- struct{}{} // wait for a slot
			<-sem
			continue
		}
		msgs, err := s.queues.ReceiveMessage(ctx, QueueName, queue.ReceiveMessageInput{MaxNumberOfMessages: n,
			WaitTimeSeconds: &wait, VisibilityTimeout: &vt})
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warn("targets: cannot receive deliveries; retrying in a second", "err", err)
				s.ensureQueue(ctx)
				engine.Sleep(ctx, s.eng.Clock, time.Second)
			}
			continue
		}
		for i := range msgs {
			sem <- struct{}{}
			go func(m *queue.Message) {
				defer func() { <-sem }()
				s.handle(ctx, m)
			}(&msgs[i])
		}
	}
	for range s.conc {
		sem <- struct{}{} // wait for the attempts running
	}
}

// handle attempts one delivery and settles it: delivered (deleted),
// retried (sent again with a delay, then deleted) or dead-lettered (sent
// to the DLQ or the store, then deleted).
func (s *Service) handle(ctx context.Context, msg *queue.Message) {
	var d Delivery
	if err := json.Unmarshal([]byte(msg.Body), &d); err != nil {
		s.log.Error("targets: unreadable delivery kept in the dead-letter store", "messageId", msg.MessageId, "err", err)
		d := Delivery{ID: msg.MessageId, Payload: msg.Body, ErrorMsg: err.Error()}
		d.ErrorCode = CodeClientError
		s.keep(ctx, msg, d, "")
		return
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	defer cancel()
	if ok, err := s.claim(wctx, &d, msg); err != nil {
		s.log.Warn("targets: cannot claim a delivery; it comes back after its visibility timeout", "id", d.ID, "err", err)
		return
	} else if !ok {
		s.duplicates.Add(1)
		s.log.Info("targets: a second stored copy of a delivery dropped (its occurrence was fired again after a crash)",
			"id", d.ID, "schedule", d.ScheduleArn, "messageId", msg.MessageId)
		s.delete(wctx, msg)
		return
	}
	retries, maxAge := d.Retry.Resolved()
	age := s.eng.Clock.Now().Sub(time.UnixMilli(d.Accepted))
	if age > maxAge {
		s.deadLetter(wctx, msg, d, "MaximumEventAgeInSeconds")
		return
	}
	code, emsg, retry := s.guardedAttempt(ctx, &d)
	if code == "" {
		s.delivered.Add(1)
		s.count(&d, false)
		s.delete(wctx, msg)
		return
	}
	if ctx.Err() != nil {
		return // closing: the delivery comes back after its visibility timeout
	}
	s.failed(wctx, msg, d, code, emsg, retry, retries)
}

// guardedAttempt is attempt, with a panic (a bug) turned into a failure
// that is not retried: the delivery goes to its dead-letter queue or the
// store. Unrecovered, the panic ended the process, and the delivery, not
// deleted, panicked it again after every restart.
func (s *Service) guardedAttempt(ctx context.Context, d *Delivery) (code, msg string, retry bool) {
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("targets: a delivery attempt panicked; the delivery is dead-lettered", "id", d.ID, "target", d.TargetArn,
				"panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			code, msg, retry = CodeClientError, fmt.Sprintf("runnel: the delivery attempt failed with a panic: %v", p), false
			if d.ScheduleArn != "" {
				code = CodeSchedulerInternal
			}
		}
	}()
	return s.attempt(ctx, d)
}

// failed settles a failed attempt of d: dead-lettered when not to be
// retried or out of retries, else stored again with its backoff; then
// msg (nil: none, a first attempt made by Deliver) is deleted. It returns
// an error only when d could be neither retried nor dead-lettered.
func (s *Service) failed(ctx context.Context, msg *queue.Message, d Delivery, code, emsg string, retry bool, retries int) error {
	d.ErrorCode, d.ErrorMsg = code, emsg
	switch {
	case !retry:
		return s.deadLetter(ctx, msg, d, "")
	case d.Attempts >= retries:
		return s.deadLetter(ctx, msg, d, "MaximumRetryAttempts")
	}
	d.Attempts++
	s.rngMu.Lock()
	delay := retryBackoff.Delay(d.Attempts, s.rng)
	s.rngMu.Unlock()
	if err := s.resend(ctx, d, int(delay/time.Second)); err != nil {
		s.log.Warn("targets: could not schedule a retry; the delivery comes back after its visibility timeout", "id", d.ID, "err", err)
		return err
	}
	s.retried.Add(1)
	s.log.Debug("targets: delivery failed; retry scheduled", "id", d.ID, "target", d.TargetArn, "attempt", d.Attempts, "in", delay, "code", code, "err", emsg)
	s.delete(ctx, msg)
	return nil
}

// resend stores d again, visible after delay seconds.
func (s *Service) resend(ctx context.Context, d Delivery, delay int) error {
	b, err := json.Marshal(&d)
	if err != nil {
		return err
	}
	delay = min(delay, queue.MaxDelaySeconds)
	in := queue.SendMessageInput{MessageBody: string(b), DelaySeconds: &delay}
	_, err = s.queues.SendMessage(ctx, QueueName, in)
	if errors.Is(err, awserr.ErrQueueDoesNotExist) { // a first attempt by Deliver, before any Enqueue
		if err = s.ensureQueue(ctx); err == nil {
			_, err = s.queues.SendMessage(ctx, QueueName, in)
		}
	}
	return err
}

func (s *Service) delete(ctx context.Context, msg *queue.Message) {
	if msg == nil {
		return
	}
	if err := s.queues.DeleteMessage(ctx, QueueName, msg.ReceiptHandle); err != nil {
		s.log.Warn("targets: delete failed; the delivery will be attempted again (a duplicate)", "messageId", msg.MessageId, "err", err)
	}
}

// deadLetter sends a failed delivery to its dead-letter queue, or to the
// store when it has none or the queue refuses it, then deletes it.
// exhausted is the EXHAUSTED_RETRY_CONDITION ("" when not retried).
func (s *Service) deadLetter(ctx context.Context, msg *queue.Message, d Delivery, exhausted string) error {
	attrs := dlqAttributes(d, exhausted)
	if d.DeadLetterArn != "" {
		_, err := s.queues.SendMessage(ctx, d.DeadLetterArn, queue.SendMessageInput{MessageBody: d.deadLetterBody(), MessageAttributes: attrs})
		if err == nil {
			s.deadLettered.Add(1)
			s.count(&d, true)
			s.log.Info("targets: delivery failed; sent to its dead-letter queue", "id", d.ID, "target", d.TargetArn,
				"dlq", d.DeadLetterArn, "code", d.ErrorCode, "exhausted", exhausted)
			s.delete(ctx, msg)
			return nil
		}
		s.log.Warn("targets: the dead-letter queue refused a failed delivery; kept in the store", "id", d.ID, "dlq", d.DeadLetterArn, "err", err)
	}
	return s.keep(ctx, msg, d, exhausted)
}

// keep stores a failed delivery in DeadLetterStore (where AWS would drop
// it), then deletes it; a failed store leaves it in the internal queue.
func (s *Service) keep(ctx context.Context, msg *queue.Message, d Delivery, exhausted string) error {
	_, err := s.queues.EnsureQueue(ctx, DeadLetterStore, internalQueueAttrs)
	if err == nil {
		_, err = s.queues.SendMessage(ctx, DeadLetterStore, queue.SendMessageInput{MessageBody: d.deadLetterBody(), MessageAttributes: dlqAttributes(d, exhausted)})
		if err == nil {
			s.kept.Add(1)
			s.count(&d, true)
			s.log.Warn("targets: failed delivery without a dead-letter queue kept in "+DeadLetterStore+" (AWS drops it)",
				"id", d.ID, "target", d.TargetArn, "code", d.ErrorCode, "err", d.ErrorMsg)
			s.delete(ctx, msg)
			return nil
		}
		s.log.Error("targets: cannot keep a failed delivery; it comes back after its visibility timeout", "id", d.ID, "err", err)
	}
	return err
}

// deadLetterBody is what a dead-letter queue gets: the original event.
func (d *Delivery) deadLetterBody() string {
	if d.Event != "" {
		return d.Event
	}
	return d.Payload
}

// dlqAttributes are the message attributes of a dead-lettered delivery.
func dlqAttributes(d Delivery, exhausted string) map[string]queue.MessageAttributeValue {
	a := map[string]queue.MessageAttributeValue{}
	set := func(k, v string) {
		if v != "" {
			a[k] = queue.MessageAttributeValue{DataType: "String", StringValue: &v}
		}
	}
	set("RULE_ARN", d.RuleArn)
	set("SCHEDULE_ARN", d.ScheduleArn)
	if d.ScheduleArn != "" {
		// configuring-schedule-dlq: the last attempt's execution id, and
		// IS_PAYLOAD_TRUNCATED (runnel never truncates the body).
		set("EXECUTION_ID", d.ExecutionIDOf())
		set("SCHEDULED_TIME", time.UnixMilli(d.ScheduledTime).UTC().Format(time.RFC3339))
		set("IS_PAYLOAD_TRUNCATED", "false")
	}
	set("TARGET_ARN", d.TargetArn)
	set("ERROR_CODE", d.ErrorCode)
	set("ERROR_MESSAGE", truncate(d.ErrorMsg, 1024))
	set("EXHAUSTED_RETRY_CONDITION", exhausted)
	set("RETRY_ATTEMPTS", strconv.Itoa(d.Attempts))
	return a
}

// truncate returns the first n bytes of s as valid UTF-8 without control
// characters (an SQS attribute value refuses them).
func truncate(s string, n int) string {
	s = strings.ToValidUTF8(s[:min(len(s), n)], "")
	return strings.Map(func(r rune) rune {
		if r < 0x20 && r != '\t' && r != '\n' && r != '\r' || r == 0xFFFE || r == 0xFFFF {
			return -1
		}
		return r
	}, s)
}
