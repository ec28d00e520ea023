package mapping

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/engine"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/mapping/filter"
	"github.com/runnel-dev/runnel/queue"
)

// Queue event source mappings follow
// https://docs.aws.amazon.com/lambda/latest/dg/with-sqs.html and
// services-sqs-errorhandling.html:
//
//   - Pollers (ScalingConfig.MaximumConcurrency, default 5) long-poll the
//     queue and gather up to BatchSize messages, waiting up to
//     MaximumBatchingWindowInSeconds once the first message is there.
//     With a window, one poller gathers at a time (the others invoke), so
//     batches fill up instead of being split between pollers; and when
//     window + function timeout exceed the queue's VisibilityTimeout the
//     messages are received with window + timeout + 30 s, as Lambda does.
//   - Messages that match no FilterCriteria filter are deleted.
//   - A received batch whose event would pass 6 MB (MaxBatchPayloadBytes)
//     is invoked as consecutive parts within it (cut): side by side on a
//     standard queue, in order on a FIFO queue, where a group with a
//     failed message keeps its messages in the later parts. Every
//     invocation takes one of MaximumConcurrency slots shared by the
//     pollers, so the parts never run more invocations at once than
//     that (services-sqs-scaling.html).
//   - An update, a disable, a delete or a hand-over stops the pollers: a
//     running batch is let finish and a batch being gathered in its
//     window is closed at once and processed, so nothing received is
//     left to spend a receive unprocessed.
//   - On success the batch is deleted. On a function error nothing is
//     deleted: the messages become visible again when their visibility
//     timeout ends, and the queue's RedrivePolicy moves them to its
//     dead-letter queue after maxReceiveCount receives.
//   - With ReportBatchItemFailures, the messages listed in
//     batchItemFailures stay and the others are deleted; an empty, null or
//     unknown itemIdentifier fails the whole batch. On a FIFO queue every
//     message after a failed one in the same message group stays too, so
//     the group's order holds even if the function forgot to list them.
//   - Throttles are retried with backoff while the batch's visibility
//     timeout lasts; then the messages become visible again.
//   - With a RetryPolicy (runnel), a failed message's visibility timeout
//     is set to the policy's full-jitter delay for its attempt
//     (ApproximateReceiveCount), and a message past MaxAttempts or
//     MaximumAgeInSeconds is moved at once to the queue's dead-letter
//     queue (sent there, then deleted here: a crash in between leaves a
//     duplicate, never a loss).

// QueueStatus is the live state of a queue mapping.
type QueueStatus struct {
	QueueURL             string
	Pollers              int
	LastProcessingResult string
	LastError            string `json:",omitempty"`
	Invocations          int64
	ReceivedMessages     int64 // messages handed to the function, retries included
	DeletedMessages      int64 // processed and deleted
	FilteredMessages     int64 // matched no filter, deleted
	FailedMessages       int64 // left for a retry (visible again later)
	BackedOff            int64 // failed messages given a RetryPolicy delay
	MovedToDeadLetter    int64 // moved by the RetryPolicy to the dead-letter queue
	FunctionErrors       int64
	Throttles            int64
}

type queueRunner struct {
	svc      *Service
	cfg      Config
	queueURL string
	fifo     bool
	matcher  *filter.Matcher
	pollers  int
	// gathering is held by the poller forming a batch when there is a
	// batching window, so one batch fills up before the next one starts
	// (otherwise every poller would hold a part of the messages for the
	// whole window). Invocations still run concurrently.
	gathering chan struct{}
	// slots bounds the invocations running at once to pollers
	// (ScalingConfig.MaximumConcurrency): a poller takes one per
	// invocation, so the parts of a batch cut at 6 MB share them with the
	// other pollers' batches instead of running all at once.
	slots chan struct{}

	cancel context.CancelFunc
	wg     sync.WaitGroup

	rngMu sync.Mutex
	rng   *rand.Rand

	// settingsMu guards the queue's settings as last read (refresh).
	settingsMu sync.Mutex
	settings   queueSettings

	mu                        sync.Mutex
	lastResult, lastErr       string
	invocations, received     atomic.Int64
	deleted, filtered, failed atomic.Int64
	backedOff, moved          atomic.Int64
	functionErrors, throttles atomic.Int64
}

// validateQueue checks a queue source: the parameters, the queue, and
// Lambda's rule that the queue's visibility timeout is not shorter than
// the function's timeout.
func (s *Service) validateQueue(ctx context.Context, cfg *Config) error {
	if s.queues == nil {
		return invalid("EventSourceArn: %q: queue event sources are not available in this runnel", cfg.EventSourceArn)
	}
	name, ok := queue.NameFromARN(cfg.EventSourceArn)
	if !ok {
		return invalid("EventSourceArn: %q is not a queue ARN (arn:aws:sqs:<region>:<account>:<name>)", cfg.EventSourceArn)
	}
	attrs, err := s.queues.GetQueueAttributes(ctx, name, []string{"All"})
	if err != nil {
		return err
	}
	if err := cfg.validateQueue(attrs["FifoQueue"] == "true"); err != nil {
		return err // an *awserr.Error, filter errors too
	}
	fn, err := s.functions.GetFunction(cfg.FunctionName)
	if err != nil {
		return err
	}
	if !fn.Accepts(function.EventSQS) {
		// It would get an empty Kinesis event, "succeed", and the messages
		// would be deleted unprocessed.
		return invalid("FunctionName: the handler of %s takes only stream events (events.KinesisEvent); a queue event source needs an SQS handler or an EventHandler", cfg.FunctionName)
	}
	cfg.FunctionArn = fn.Config().FunctionArn
	vt, _ := strconv.Atoi(attrs["VisibilityTimeout"])
	if timeout := fn.Config().Timeout; vt < timeout {
		return invalid("Queue visibility timeout: %d seconds is less than Function timeout: %d seconds", vt, timeout)
	}
	return nil
}

func (s *Service) startQueueLocked(ctx context.Context, cfg Config) error {
	name, _ := queue.NameFromARN(cfg.EventSourceArn)
	attrs, err := s.queues.GetQueueAttributes(ctx, name, []string{"All"})
	if err != nil {
		return err
	}
	m, err := filter.Compile(cfg.FilterCriteria)
	if err != nil {
		return err
	}
	r := &queueRunner{svc: s, cfg: cfg, queueURL: s.queues.QueueURL(name), fifo: attrs["FifoQueue"] == "true",
		matcher: m, pollers: DefaultQueueConcurrency, gathering: make(chan struct{}, 1),
		rng: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7)), lastResult: "No records processed"}
	r.settings = r.readSettings(attrs)
	if cfg.ScalingConfig != nil {
		r.pollers = cfg.ScalingConfig.MaximumConcurrency
	}
	r.slots = make(chan struct{}, r.pollers)
	var rctx context.Context
	rctx, r.cancel = context.WithCancel(s.ctx)
	for i := 0; i < r.pollers; i++ {
		r.wg.Add(1)
		go func() { defer r.wg.Done(); r.poll(rctx) }()
	}
	s.runners[cfg.UUID] = r
	return nil
}

// queueSettings are the queue attributes a mapping acts on, as read at
// a time.
type queueSettings struct {
	vt  time.Duration // VisibilityTimeout
	dlq string        // the RedrivePolicy's dead-letter queue URL, "" if none
	at  time.Time
}

// settingsRefresh is how long a read of the queue's settings serves: a
// SetQueueAttributes of VisibilityTimeout or RedrivePolicy reaches a
// running mapping within it.
const settingsRefresh = 10 * time.Second

func (r *queueRunner) readSettings(attrs map[string]string) queueSettings {
	vt, _ := strconv.Atoi(attrs[queue.AttrVisibilityTimeout])
	st := queueSettings{vt: time.Duration(vt) * time.Second, at: r.svc.eng.Clock.Now()}
	if rp, err := queue.ParseRedrivePolicy(attrs[queue.AttrRedrivePolicy]); err == nil && rp != nil {
		if dlq, ok := queue.NameFromARN(rp.DeadLetterTargetArn); ok {
			st.dlq = r.svc.queues.QueueURL(dlq)
		}
	}
	return st
}

// currentSettings returns the queue's settings, read again when the last
// read is older than settingsRefresh (before, a mapping kept the
// VisibilityTimeout and RedrivePolicy of its start: a lowered timeout let
// throttle retries run past it, beside another poller's delivery). A
// failed read keeps the last settings.
func (r *queueRunner) currentSettings(ctx context.Context) queueSettings {
	r.settingsMu.Lock()
	defer r.settingsMu.Unlock()
	if r.svc.eng.Clock.Since(r.settings.at) < settingsRefresh {
		return r.settings
	}
	attrs, err := r.svc.queues.GetQueueAttributes(ctx, r.queueURL, []string{queue.AttrVisibilityTimeout, queue.AttrRedrivePolicy})
	if err != nil {
		r.settings.at = r.svc.eng.Clock.Now() // try again after the refresh period
		return r.settings
	}
	r.settings = r.readSettings(attrs)
	return r.settings
}

// stop ends the runner's receiving. A batch already being invoked runs on
// (process invokes and deletes on the service's context, not the
// runner's): an update, a delete or a hand-over of the mapping does not
// cancel a function that is running, whose success would otherwise leave
// its messages undeleted, to be delivered again. A batch being gathered
// in its batching window is closed at once and processed the same way:
// left in flight, its messages would spend a receive for nothing, and a
// RedrivePolicy with maxReceiveCount 1 would dead-letter them
// unprocessed. It waits for the pollers only when the service is closing
// (its context is cancelled first, and with it every invocation), not
// while the caller holds Service.mu for a function's whole timeout.
func (r *queueRunner) stop() {
	r.cancel()
	if r.svc.ctx.Err() != nil {
		r.wg.Wait()
	}
}

func (r *queueRunner) status(st *Status) {
	// The counters are read before the last result, and the pollers set
	// the result before they count: a count seen here therefore comes
	// with a result at least as new as the event it counts.
	qs := &QueueStatus{QueueURL: r.queueURL, Pollers: r.pollers}
	qs.Invocations, qs.ReceivedMessages, qs.DeletedMessages = r.invocations.Load(), r.received.Load(), r.deleted.Load()
	qs.FilteredMessages, qs.FailedMessages, qs.BackedOff = r.filtered.Load(), r.failed.Load(), r.backedOff.Load()
	qs.MovedToDeadLetter, qs.FunctionErrors, qs.Throttles = r.moved.Load(), r.functionErrors.Load(), r.throttles.Load()
	r.mu.Lock()
	qs.LastProcessingResult, qs.LastError = r.lastResult, r.lastErr
	r.mu.Unlock()
	st.Queue = qs
}

func (r *queueRunner) setResult(res string, err error) {
	r.mu.Lock()
	r.lastResult = res
	if err != nil {
		r.lastErr = err.Error()
	}
	r.mu.Unlock()
}

func (r *queueRunner) poll(ctx context.Context) {
	log := r.svc.eng.Logger.With("mapping", r.cfg.UUID, "queue", r.queueURL)
	for ctx.Err() == nil {
		msgs, rc, err := r.gatherTurn(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			r.setResult("PROBLEM: cannot receive from the queue", err)
			log.Warn("receive failed; retrying", "err", err)
			if engine.Sleep(ctx, r.svc.eng.Clock, time.Second) != nil {
				return
			}
			continue
		}
		if len(msgs) > 0 {
			// Even when ctx has ended (stop): the messages are received and
			// invisible; processed now, they are not lost (see stop).
			r.process(ctx, msgs, rc)
		}
	}
}

// gatherTurn gathers a batch, taking its turn first when there is a
// batching window.
func (r *queueRunner) gatherTurn(ctx context.Context) ([]queue.Message, receipt, error) {
	if r.cfg.MaximumBatchingWindowInSeconds == 0 {
		return r.gather(ctx)
	}
	select {
	case r.gathering <- struct{}{}:
	case <-ctx.Done():
		return nil, receipt{}, ctx.Err()
	}
	defer func() { <-r.gathering }()
	return r.gather(ctx)
}

// visibility is the visibility timeout the mapping receives with: the
// queue's, unless the batching window and the function timeout together
// exceed it; Lambda then uses window + timeout + 30 s, so that a message
// does not become visible again while its batch is still being gathered
// or processed.
func (r *queueRunner) visibility(vt time.Duration) time.Duration {
	window := time.Duration(r.cfg.MaximumBatchingWindowInSeconds) * time.Second
	if window == 0 {
		return vt
	}
	timeout := time.Duration(function.DefaultTimeout) * time.Second
	if fn, err := r.svc.functions.GetFunction(r.cfg.FunctionName); err == nil {
		timeout = time.Duration(fn.Config().Timeout) * time.Second
	}
	if window+timeout <= vt {
		return vt
	}
	return min(window+timeout+30*time.Second, queue.MaxVisibilityTimeout*time.Second)
}

var allNames = []string{"All"}

// gather receives up to BatchSize messages: it long-polls for the first
// one, then, with a batching window, keeps receiving until the batch is
// full or the window closes; without one it takes what is there. It
// returns the messages and how they were received. When ctx ends (stop)
// the window closes early: what was received is returned without an
// error, to be processed.
func (r *queueRunner) gather(ctx context.Context) ([]queue.Message, receipt, error) {
	clock := r.svc.eng.Clock
	var msgs []queue.Message
	var deadline time.Time
	st := r.currentSettings(ctx)
	rc := receipt{visibility: r.visibility(st.vt)}
	var visOverride *int
	if rc.visibility != st.vt {
		v := int(rc.visibility / time.Second)
		visOverride = &v
	}
	for len(msgs) < r.cfg.BatchSize {
		if ctx.Err() != nil { // stopped: close the batch now
			if len(msgs) > 0 {
				break
			}
			return nil, rc, ctx.Err()
		}
		wait := 20
		if len(msgs) > 0 {
			if r.cfg.MaximumBatchingWindowInSeconds == 0 {
				wait = 0
			} else {
				left := deadline.Sub(clock.Now())
				if left <= 0 {
					break
				}
				wait = min(20, int((left+time.Second-1)/time.Second))
			}
		}
		before := clock.Now()
		got, err := r.svc.queues.ReceiveMessage(ctx, r.queueURL, queue.ReceiveMessageInput{
			MaxNumberOfMessages: min(10, r.cfg.BatchSize-len(msgs)), WaitTimeSeconds: &wait,
			VisibilityTimeout: visOverride, AttributeNames: allNames, MessageAttributeNames: allNames,
		})
		if err != nil {
			if len(msgs) > 0 {
				// Process what we have: the error comes back next time, or
				// ctx has ended and the batch is closed early.
				return msgs, rc, nil
			}
			return msgs, rc, err
		}
		if len(msgs) == 0 && len(got) > 0 {
			rc.at = before
			deadline = clock.Now().Add(time.Duration(r.cfg.MaximumBatchingWindowInSeconds) * time.Second)
		}
		msgs = append(msgs, got...)
		if len(got) == 0 && len(msgs) > 0 && r.cfg.MaximumBatchingWindowInSeconds == 0 {
			break
		}
	}
	return msgs, rc, nil
}

// receipt says how a batch was received: no earlier than at (the time
// just before the receive call that returned its first messages), with
// the visibility timeout visibility.
type receipt struct {
	at         time.Time
	visibility time.Duration
}

func (r *queueRunner) event(msgs []queue.Message) *events.SQSEvent {
	ev := &events.SQSEvent{Records: make([]events.SQSMessage, len(msgs))}
	region := r.svc.eng.Region()
	for i := range msgs {
		m := &msgs[i]
		// Lambda sends "messageAttributes":{} for a message without any.
		attrs := make(map[string]events.SQSMessageAttribute, len(m.MessageAttributes))
		for k, v := range m.MessageAttributes {
			attrs[k] = events.SQSMessageAttribute{StringValue: v.StringValue, BinaryValue: v.BinaryValue,
				StringListValues: []string{}, BinaryListValues: [][]byte{}, DataType: v.DataType}
		}
		ev.Records[i] = events.SQSMessage{MessageId: m.MessageId, ReceiptHandle: m.ReceiptHandle, Body: m.Body,
			Md5OfBody: m.MD5OfBody, Md5OfMessageAttributes: m.MD5OfMessageAttributes, Attributes: m.Attributes,
			MessageAttributes: attrs, EventSourceARN: r.cfg.EventSourceArn, EventSource: "aws:sqs", AWSRegion: region}
	}
	return ev
}

// process runs one batch to its end: filter, invoke, delete what
// succeeded, and leave (or back off, or move) what failed.
func (r *queueRunner) process(ctx context.Context, msgs []queue.Message, rc receipt) {
	log := r.svc.eng.Logger.With("mapping", r.cfg.UUID, "queue", r.queueURL)
	// ctx (the runner's) ends the receiving and the waits between
	// attempts; the invocation and what follows it run on the service's
	// context, so that stopping the runner (stop) lets a running batch end
	// and be deleted.
	wait, ctx := ctx, r.svc.ctx
	if !r.matcher.Empty() {
		kept := msgs[:0:0]
		for _, m := range msgs {
			if r.matcher.Match(sqsFilterEvent(&m)) {
				kept = append(kept, m)
				continue
			}
			r.filtered.Add(1)
			r.deleteMessage(ctx, &m) // as Lambda: a message no filter matches is deleted
		}
		msgs = kept
		if len(msgs) == 0 {
			return
		}
	}
	parts := r.cut(msgs)
	if len(parts) > 1 {
		log.Info("batch cut into invocations of at most 6 MB", "messages", len(msgs), "invocations", len(parts))
	}
	if !r.fifo {
		// Standard queue: the parts are separate batches, as Lambda's
		// would be, invoked side by side as far as the slots allow.
		var wg sync.WaitGroup
		for _, part := range parts {
			wg.Go(func() { r.invokePart(wait, ctx, log, part, rc, false, nil) })
		}
		wg.Wait()
		return
	}
	// FIFO queue: in order, and a group with a failed message keeps its
	// later messages in the later parts too.
	blocked := map[string]bool{}
	for i, part := range parts {
		if !r.invokePart(wait, ctx, log, part, rc, i > 0, blocked) {
			return // the rest come back after their visibility timeout, in order
		}
	}
}

// cut splits msgs into consecutive parts whose SQS events stay within
// MaxBatchPayloadBytes: Lambda closes a batch when its payload reaches
// 6 MB ([ESM]), whatever BatchSize says. A single message whose record
// alone is larger is a part of its own.
func (r *queueRunner) cut(msgs []queue.Message) [][]queue.Message {
	const envelope = len(`{"Records":[]}`)
	bound := envelope
	for i := range msgs {
		bound += 6*(len(msgs[i].Body)+attrBytes(&msgs[i])) + 2048 // escaping at most sixfold
	}
	if bound <= MaxBatchPayloadBytes {
		return [][]queue.Message{msgs}
	}
	ev := r.event(msgs)
	var parts [][]queue.Message
	from, size := 0, envelope
	for i := range ev.Records {
		b, _ := json.Marshal(&ev.Records[i])
		n := len(b) + 1 // and a comma
		if i > from && size+n > MaxBatchPayloadBytes {
			parts = append(parts, msgs[from:i])
			from, size = i, envelope
		}
		size += n
	}
	return append(parts, msgs[from:])
}

// attrBytes is the size of m's attribute names and values.
func attrBytes(m *queue.Message) int {
	n := 0
	for k, v := range m.Attributes {
		n += len(k) + len(v)
	}
	for k, v := range m.MessageAttributes {
		n += len(k) + len(v.DataType) + len(v.BinaryValue)*2
		if v.StringValue != nil {
			n += len(*v.StringValue)
		}
	}
	return n + len(m.ReceiptHandle) + len(m.MessageId) + len(m.MD5OfBody) + len(m.MD5OfMessageAttributes)
}

// invokePart invokes the function with one part of a batch and deletes
// what succeeded; what failed is left or backed off (retry). wait is the
// runner's context (it ends the backoff waits), ctx the service's. later
// says an earlier part of the same receive was invoked first: the
// invocation then starts only while the messages stay invisible for a
// whole function timeout. blocked (FIFO only) holds the groups with a
// failed message: their messages here are kept without invoking, and the
// groups failing here are added. It reports whether the part ran to its
// end (false: the messages were left to come back after their timeout).
func (r *queueRunner) invokePart(wait, ctx context.Context, log *slog.Logger, msgs []queue.Message, rc receipt, later bool, blocked map[string]bool) bool {
	var held []queue.Message
	if len(blocked) > 0 {
		run := msgs[:0:0]
		for _, m := range msgs {
			if blocked[m.Attributes[queue.MsgAttrMessageGroupId]] {
				held = append(held, m)
			} else {
				run = append(run, m)
			}
		}
		msgs = run
	}
	for i := range held {
		r.failed.Add(1)
		r.retry(ctx, log, &held[i], rc)
	}
	if len(msgs) == 0 {
		return true
	}
	ev := r.event(msgs)
	var res *function.Result
	for attempt := 1; ; attempt++ {
		fn, err := r.svc.functions.GetFunction(r.cfg.FunctionName)
		if err == nil && !fn.Accepts(function.EventSQS) {
			// Replaced since the mapping was made (PutFunction) by a
			// handler of stream events only: it would get an empty event,
			// "succeed", and the messages would be deleted unprocessed.
			// They stay in the queue (visible again after their timeout).
			r.setResult("PROBLEM: Function's handler takes no SQS events", nil)
			log.Warn("the function's handler takes only stream events; the batch stays in the queue", "function", r.cfg.FunctionName, "messages", len(msgs))
			return false
		}
		if err == nil {
			waited, serr := r.takeSlot(ctx)
			if serr != nil {
				return false // the service is closing
			}
			// After a throttle's backoff, invoke again only while the batch
			// stays invisible for a whole function timeout; otherwise another
			// poller could take the same messages while this invocation runs.
			// The same holds for a later part of a batch cut at 6 MB, and for
			// a part that waited for a slot.
			left := rc.visibility - r.svc.eng.Clock.Since(rc.at)
			if (attempt > 1 || later || waited) && left < time.Duration(fn.Config().Timeout)*time.Second {
				<-r.slots
				r.setResult("PROBLEM: visibility timeout too short for the function timeout", nil)
				return false // visible again soon: another poller takes it from there
			}
			res, err = fn.Invoke(ctx, ev)
			<-r.slots
		}
		if ctx.Err() != nil {
			return false // the messages become visible again after their timeout
		}
		if err == nil {
			break
		}
		if errors.Is(err, awserr.ErrTooManyRequests) {
			r.setResult("PROBLEM: Function call throttled", err)
			r.throttles.Add(1)
		} else {
			r.setResult("PROBLEM: Function not found", err)
		}
		if r.svc.eng.Clock.Since(rc.at) >= rc.visibility {
			return false // visible again: another poller takes it from here
		}
		if r.svc.backoff(wait, attempt) != nil {
			return false
		}
	}
	failed := r.classify(msgs, res)
	if res.Failed() {
		r.setResult("PROBLEM: Function call failed", res.Error)
		r.functionErrors.Add(1)
	} else {
		r.setResult("OK", nil)
	}
	r.invocations.Add(1)
	r.received.Add(int64(len(msgs)))
	for i := range msgs {
		if failed[i] {
			if blocked != nil {
				blocked[msgs[i].Attributes[queue.MsgAttrMessageGroupId]] = true
			}
			r.failed.Add(1)
			r.retry(ctx, log, &msgs[i], rc)
			continue
		}
		if r.deleteMessage(ctx, &msgs[i]) {
			r.deleted.Add(1)
		}
	}
	return true
}

// slotWaitHook, when set (tests), is called when an invocation waits for
// a slot.
var slotWaitHook atomic.Pointer[func()]

// takeSlot takes one of the runner's MaximumConcurrency invocation
// slots, waiting (until ctx, the service's, ends) when they are all in
// use; it reports whether it waited. The caller gives the slot back
// (<-r.slots) when its invocation returns.
func (r *queueRunner) takeSlot(ctx context.Context) (waited bool, err error) {
	select {
	case r.slots <- struct{}{}:
		return false, nil
	default:
	}
	if f := slotWaitHook.Load(); f != nil {
		(*f)()
	}
	select {
	case r.slots <- struct{}{}:
		return true, nil
	case <-ctx.Done():
		return true, ctx.Err()
	}
}

// classify returns which messages failed.
func (r *queueRunner) classify(msgs []queue.Message, res *function.Result) []bool {
	failed := make([]bool, len(msgs))
	all := func() []bool {
		for i := range failed {
			failed[i] = true
		}
		return failed
	}
	if res.Failed() {
		return all()
	}
	if !r.cfg.reportBatchItemFailures() {
		return failed
	}
	var ids []string
	ok := true
	if resp, typed := res.Response.(*events.SQSEventResponse); typed {
		for _, f := range resp.BatchItemFailures {
			ids = append(ids, f.ItemIdentifier)
		}
	} else {
		ids, ok = itemFailures(res)
	}
	if !ok {
		return all()
	}
	index := make(map[string]int, len(msgs))
	for i, m := range msgs {
		index[m.MessageId] = i
	}
	for _, id := range ids {
		i, known := index[id]
		if id == "" || !known {
			return all() // an empty or unknown messageId fails the batch
		}
		failed[i] = true
	}
	if r.fifo {
		// Keep every later message of a group that has a failed message.
		blocked := map[string]bool{}
		for i, m := range msgs {
			g := m.Attributes[queue.MsgAttrMessageGroupId]
			if failed[i] {
				blocked[g] = true
			} else if blocked[g] {
				failed[i] = true
			}
		}
	}
	return failed
}

func (r *queueRunner) deleteMessage(ctx context.Context, m *queue.Message) bool {
	if err := r.svc.queues.DeleteMessage(ctx, r.queueURL, m.ReceiptHandle); err != nil {
		// The message comes back after its visibility timeout and is
		// processed again: a duplicate, not a loss.
		r.svc.eng.Logger.Warn("delete failed; the message will be delivered again", "mapping", r.cfg.UUID, "messageId", m.MessageId, "err", err)
		return false
	}
	return true
}

// sqsFilterEvent is the message as FilterCriteria sees it: body (parsed
// as JSON by the matcher when it is JSON), attributes, messageAttributes.
func sqsFilterEvent(m *queue.Message) map[string]any {
	attrs := make(map[string]any, len(m.Attributes))
	for k, v := range m.Attributes {
		attrs[k] = v
	}
	ev := map[string]any{"messageId": m.MessageId, "attributes": attrs}
	if json.Valid([]byte(m.Body)) {
		ev["body"] = json.RawMessage(m.Body)
	} else {
		ev["body"] = m.Body
	}
	if len(m.MessageAttributes) > 0 {
		ma := map[string]any{}
		for k, v := range m.MessageAttributes {
			a := map[string]any{"dataType": v.DataType}
			if v.StringValue != nil {
				a["stringValue"] = *v.StringValue
			}
			ma[k] = a
		}
		ev["messageAttributes"] = ma
	}
	return ev
}
