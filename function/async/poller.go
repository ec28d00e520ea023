package async

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/backoff"
	"github.com/runnel-dev/runnel/engine"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/queue"
)

// throttleBackoff is the delay of an event sent back after a throttle or
// a missing function: 1 s doubling to 5 minutes, full jitter. Its age is
// bounded by MaximumEventAgeInSeconds, not by the policy.
var throttleBackoff = backoff.Policy{BaseDelaySeconds: 1, MaxDelaySeconds: 300, MaxAttempts: 1000, MaximumAgeInSeconds: MaxMaximumEventAgeInSeconds}

// retryDelay is the delay before the retry that follows the n-th failed
// attempt: 1 minute, then 2 more minutes (SPEC 3).
func retryDelay(n int) int { return 60 * n }

// writeTimeout bounds the writes that follow an invocation (wall clock: a
// safety net against a dead engine, not a rule).
const writeTimeout = 30 * time.Second

// poller processes the events of one function.
type poller struct {
	s    *Service
	name string
	url  string
	log  *slog.Logger
	c    *counters
}

// ensurePoller starts the poller of a function (and creates its internal
// queue) unless it runs already or the service is closed.
func (s *Service) ensurePoller(ctx context.Context, name string) error {
	s.mu.Lock()
	running := s.closed || s.pollers[name] != nil
	s.mu.Unlock()
	if running {
		return nil
	}
	url, err := s.ensureQueue(ctx, name)
	if err != nil || s.passive {
		return err // a passive service stores events but runs no poller
	}
	p := &poller{s: s, name: name, url: url, log: s.log.With("function", name), c: s.counters(name)}
	s.mu.Lock()
	if s.closed || s.pollers[name] != nil {
		s.mu.Unlock()
		return nil
	}
	s.pollers[name] = p
	s.wg.Add(1)
	s.mu.Unlock()
	go func() { defer s.wg.Done(); p.run(s.bg) }()
	s.warnIfDropped(name)
	return nil
}

// visibility is how long a received event stays invisible: the longest
// timeout of the function's versions ($LATEST and every published one)
// and a minute for the writes that follow. One receive takes events of
// every qualifier, and an event for a version or an alias runs with that
// version's timeout: with $LATEST's alone, an event of a version with a
// longer timeout came back while its first invocation still ran, and was
// invoked twice at once. Trap: after a crash, the events in flight come
// back only when the longest of these has passed.
func (p *poller) visibility() int {
	t := 0
	if cfgs, err := p.s.fns.ListVersions(p.name); err == nil {
		for _, c := range cfgs {
			t = max(t, c.Timeout)
		}
	}
	if t == 0 {
		t = function.DefaultTimeout
	}
	return min(t+60, queue.MaxVisibilityTimeout)
}

var allAttributes = []string{"All"}

// limit is how many events of the function may run at once: its
// concurrency, as AWS's asynchronous invocation has it ("If the function
// doesn't have enough concurrency available to process all events,
// additional requests are throttled", invocation-async-error-handling.html):
// its ReservedConcurrentExecutions when set, else the account's
// concurrency that bounds its synchronous invocations
// (function.DefaultAccountConcurrency, 1000), and at most
// Options.Concurrency when that is set. At least 1: with a reservation of
// 0 the events are still taken, and fail at once (handle). A function
// this process cannot resolve gets the account's, its events are only
// sent back (handle).
func (p *poller) limit() int {
	n := function.DefaultAccountConcurrency
	if cfgs, err := p.s.fns.ListVersions(p.name); err == nil {
		if r := cfgs[0].ReservedConcurrentExecutions; r != nil {
			n = *r
		}
	}
	if p.s.conc > 0 {
		n = min(n, p.s.conc)
	}
	return max(n, 1)
}

// run long-polls the internal queue and processes up to the function's
// concurrency (limit, read again before each receive) events at once,
// each in a goroutine of its own. Memory: at most that many events (up to
// 1,000, each at most MaxEventPayloadSize) are held at once per
// function; the receive waits while they all run. A raised limit applies
// at the next receive, or once a running event finishes.
func (p *poller) run(ctx context.Context) {
	s := p.s
	var running atomic.Int64
	freed := make(chan struct{}, 1) // a running event finished
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		n := min(queue.MaxBatchEntries, p.limit()-int(running.Load()))
		if n <= 0 {
			select {
			case <-freed:
				continue
			case <-ctx.Done():
				return
			}
		}
		wait, vt := queue.MaxWaitTimeSeconds, p.visibility()
		msgs, err := s.queues.ReceiveMessage(ctx, p.url, queue.ReceiveMessageInput{MaxNumberOfMessages: n,
			WaitTimeSeconds: &wait, VisibilityTimeout: &vt, MessageAttributeNames: allAttributes,
			AttributeNames: []string{queue.MsgAttrSentTimestamp}})
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			p.log.Warn("async: cannot receive events; retrying in a second", "err", err)
			if errors.Is(err, awserr.ErrQueueDoesNotExist) {
				s.ensureQueue(ctx, p.name)
			}
			if engine.Sleep(ctx, s.eng.Clock, time.Second) != nil {
				return
			}
			continue
		}
		for i := range msgs {
			running.Add(1)
			wg.Add(1)
			go func(m *queue.Message) {
				defer wg.Done()
				defer func() {
					running.Add(-1)
					select {
					case freed <- struct{}{}:
					default:
					}
				}()
				if p.handle(ctx, m) {
					p.c.handled.Add(1)
				}
			}(&msgs[i])
		}
	}
}

// outcome is what an attempt ended with, for records and the DLQ.
type outcome struct {
	status    int    // HTTP status: 200 (function ran), 429, 404, 500; 0 = no attempt
	funcError string // "Unhandled" after a function error
	response  []byte // the function's response, or the error object (JSON)
	errMsg    string // the error message, for the DLQ's ErrorMessage
	executed  string // the version that ran ("" when none ran: the record says $LATEST)
}

// errorObject is Lambda's error object, {"errorMessage":...,"errorType":...},
// with the message cut to 1 KB.
func errorObject(errType, msg string) string {
	b, _ := json.Marshal(struct {
		Message string `json:"errorMessage"`
		Type    string `json:"errorType,omitempty"`
	}{truncate(sanitizeText(msg), 1024), errType})
	return string(b)
}

func errorOutcome(status int, errType, msg string) outcome {
	return outcome{status: status, response: []byte(errorObject(errType, msg)), errMsg: msg}
}

// lastOutcome is the outcome recorded in an event's attributes.
func (m meta) lastOutcome() outcome {
	o := outcome{status: m.lastStatus, funcError: m.lastFuncError, executed: m.lastExecuted}
	if m.lastError != "" {
		o.response = []byte(m.lastError)
		var e struct {
			Message string `json:"errorMessage"`
		}
		json.Unmarshal(o.response, &e)
		o.errMsg = e.Message
	}
	return o
}

// handle processes one event and reports whether its processing finished
// (false: the message stays and comes back after its visibility timeout).
func (p *poller) handle(ctx context.Context, msg *queue.Message) bool {
	s := p.s
	m := parseMeta(msg)
	cfg := s.config(configKey(p.name, m.qualifier))
	now := s.eng.Clock.Now()
	// Writes go on after a Close once the attempt is decided, so that an
	// invocation that ran is not run again for want of a delete.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	defer cancel()
	if now.Sub(m.enqueued) > cfg.maxAge {
		p.c.aged.Add(1)
		p.log.Info("async: event older than MaximumEventAgeInSeconds, not invoked", "requestId", m.requestID,
			"age", now.Sub(m.enqueued), "maximumEventAge", cfg.maxAge, "attempts", m.invokeCount)
		return p.fail(wctx, msg, m, ConditionEventAgeExceeded, m.lastOutcome())
	}
	ref := p.name
	if m.qualifier != "" {
		ref += ":" + m.qualifier
	}
	fn, err := s.fns.GetFunction(ref)
	if err != nil {
		return p.backOff(wctx, msg, m, errorOutcome(404, "ResourceNotFoundException", err.Error()))
	}
	if r := fn.Config().ReservedConcurrentExecutions; r != nil && *r == 0 {
		p.c.exhausted.Add(1)
		return p.fail(wctx, msg, m, ConditionRetriesExhausted, errorOutcome(429, "TooManyRequestsException",
			"Rate Exceeded. (function "+p.name+": reserved concurrency 0; the event is not retried)"))
	}
	res, err := fn.Invoke(function.WithRequestID(ctx, m.requestID), []byte(msg.Body))
	if ctx.Err() != nil {
		return false // closing: the event comes back after its visibility timeout
	}
	if err != nil {
		var ae *awserr.Error
		errType, status := "ServiceException", 500
		if errors.As(err, &ae) {
			errType = ae.Code
		}
		if errors.Is(err, awserr.ErrTooManyRequests) {
			p.c.throttles.Add(1)
			status = 429
		}
		if ae != nil {
			err = errors.New(ae.Message)
		}
		return p.backOff(wctx, msg, m, errorOutcome(status, errType, err.Error()))
	}
	p.c.invocations.Add(1)
	p.c.lastEventAgeMs.Store(max(0, s.eng.Clock.Since(m.enqueued).Milliseconds()))
	m.invokeCount++
	if !res.Failed() {
		p.c.succeeded.Add(1)
		if cfg.onSuccess != "" {
			rec := p.record(m, ConditionSuccess, outcome{status: 200, response: responsePayload(res), executed: fn.Config().ExecutedVersion()}, msg.Body)
			if !p.deliver(wctx, cfg.onSuccess, rec, msg.Body, m, ConditionSuccess) {
				return false
			}
		}
		return p.delete(wctx, msg)
	}
	p.c.functionErrors.Add(1)
	o := outcome{status: 200, funcError: res.FunctionError, response: res.Payload, executed: fn.Config().ExecutedVersion()}
	errType := ""
	if res.Error != nil {
		o.errMsg, errType = res.Error.Message, res.Error.Type
	}
	if m.invokeCount <= cfg.retries {
		m.throttles, m.lastStatus, m.lastFuncError, m.lastError = 0, 200, res.FunctionError, errorObject(errType, o.errMsg)
		m.lastExecuted = o.executed
		d := retryDelay(m.invokeCount)
		if !p.requeue(wctx, msg, m, d) {
			return false
		}
		p.c.retried.Add(1)
		p.log.Info("async: function error; retry scheduled", "requestId", m.requestID, "attempt", m.invokeCount, "in", time.Duration(d)*time.Second)
		return true
	}
	p.c.exhausted.Add(1)
	return p.fail(wctx, msg, m, ConditionRetriesExhausted, o)
}

// backOff sends an event that did not run (throttle, missing function)
// back to the queue with the throttle backoff; it is not an attempt.
func (p *poller) backOff(ctx context.Context, msg *queue.Message, m meta, o outcome) bool {
	m.throttles++
	m.lastStatus, m.lastFuncError, m.lastError = o.status, "", string(o.response)
	p.s.rngMu.Lock()
	d := throttleBackoff.Delay(m.throttles, p.s.rng)
	p.s.rngMu.Unlock()
	if !p.requeue(ctx, msg, m, int(d/time.Second)) {
		return false
	}
	p.c.requeued.Add(1)
	p.log.Debug("async: event not run; back to the queue", "requestId", m.requestID, "status", o.status, "in", d, "err", o.errMsg)
	return true
}

// requeue sends the event again with its new state and a delay, then
// deletes the received message: a crash in between leaves a duplicate.
func (p *poller) requeue(ctx context.Context, msg *queue.Message, m meta, delay int) bool {
	if err := p.s.send(ctx, p.name, msg.Body, m, min(delay, queue.MaxDelaySeconds)); err != nil {
		p.log.Warn("async: could not re-schedule the event; it comes back after its visibility timeout", "requestId", m.requestID, "err", err)
		return false
	}
	return p.delete(ctx, msg)
}

func (p *poller) delete(ctx context.Context, msg *queue.Message) bool {
	if err := p.s.queues.DeleteMessage(ctx, p.url, msg.ReceiptHandle); err != nil {
		p.log.Warn("async: delete failed; the event will be processed again (a duplicate)", "messageId", msg.MessageId, "err", err)
	}
	return true
}
