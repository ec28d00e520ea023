// Package target delivers the events of EventBridge rules and the
// invocations of EventBridge Scheduler schedules to their targets, with
// the targets' RetryPolicy and DeadLetterConfig, at least once.
//
// # Targets
//
// A target is named by its ARN:
//
//   - a Lambda function (arn:aws:lambda:<region>:<account>:function:<name>):
//     invoked asynchronously (function/async: the event is accepted into the
//     function's own queue; the function's errors follow Lambda's async
//     retries, not the target's RetryPolicy);
//   - an SQS queue (arn:aws:sqs:...:<name>): SendMessage of the payload;
//     a FIFO queue gets Delivery.MessageGroupId and the delivery's id as
//     its MessageDeduplicationId (so a retry is not stored twice; a
//     schedule's FIFO queue only with content-based deduplication, see
//     schedule.go);
//   - a Kinesis stream (arn:aws:kinesis:...:stream/<name>): PutRecord with
//     Delivery.PartitionKey (the event id when empty);
//   - an event bus (arn:aws:events:...:event-bus/<name>): the payload is put
//     on the bus again (Options.Bus).
//
// # Durability and retries
//
// Enqueue stores every delivery in the internal queue
// "_eventbridge-deliveries" before it returns: an accepted event survives a
// crash. A poller takes deliveries from it and attempts each; a failed
// attempt is sent back with a delay (exponential backoff with full jitter,
// 1 s doubling to 5 minutes: AWS documents "exponential backoff and jitter"
// without its constants) before the old message is deleted, so a crash
// duplicates, never loses. An attempt that fails because the target does
// not exist (ResourceNotFoundException, QueueDoesNotExist) is not retried
// (AWS: NO_RESOURCE, straight to the dead-letter queue). Otherwise the
// delivery is retried until MaximumRetryAttempts retries (0..185, default
// 185) have failed or it is older than MaximumEventAgeInSeconds (60..86400,
// default 86400), both on the engine's clock.
//
// # Dead letters
//
// A delivery that failed for good goes to the target's DeadLetterConfig
// queue (a standard SQS queue): the body is the event (a schedule's: its
// payload), even when the target received a transformed input, with the message
// attributes AWS adds (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-rule-dlq.html):
// RULE_ARN (or, for a schedule, SCHEDULE_ARN, EXECUTION_ID and
// SCHEDULED_TIME), TARGET_ARN, ERROR_CODE (NO_RESOURCE, THROTTLING,
// TIMEOUT, SDK_CLIENT_ERROR), ERROR_MESSAGE, RETRY_ATTEMPTS and, when the
// retries ran out, EXHAUSTED_RETRY_CONDITION (MaximumRetryAttempts or
// MaximumEventAgeInSeconds). AWS drops the event when there is no
// dead-letter queue or it refuses the message; runnel keeps it, with the
// same attributes, in the standard queue "runnel-eventbridge-dead-letters"
// (DeadLetterStore), counts it and logs its id.
//
// A schedule's delivery (ScheduleArn set) differs (schedule.go,
// https://docs.aws.amazon.com/scheduler/latest/UserGuide/configuring-schedule-dlq.html):
// each attempt templates its payload again (execution id and attempt
// number); a failure's ERROR_CODE is the target service's own code
// ("AWS.SimpleQueueService.NonExistentQueue", "InvalidParameterValue",
// "TooManyRequestsException"...; "AWS.Scheduler.InternalServerError" for
// runnel's own), ERROR_MESSAGE its message; only what a retry may cure is
// retried (awserr.IsRetryable, timeouts, runnel's own failures), never a
// client error; its dead letter has IS_PAYLOAD_TRUNCATED "false" and the
// last attempt's EXECUTION_ID.
package target

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/engine"
	"github.com/runnel-dev/runnel/function/async"
	"github.com/runnel-dev/runnel/internal/mapx"
	"github.com/runnel-dev/runnel/queue"
	"github.com/runnel-dev/runnel/stream"
)

// Retry policy defaults and ranges (API_RetryPolicy of EventBridge and of
// Scheduler).
const (
	DefaultMaximumRetryAttempts     = 185
	MaxMaximumRetryAttempts         = 185
	DefaultMaximumEventAgeInSeconds = 86400
	MinMaximumEventAgeInSeconds     = 60
	MaxMaximumEventAgeInSeconds     = 86400
)

// ERROR_CODE values of a dead-lettered delivery (eb-rule-dlq).
const (
	// CodeNoResource: the target does not exist (not retried).
	CodeNoResource = "NO_RESOURCE"
	// CodeThrottling: the target throttled the delivery.
	CodeThrottling = "THROTTLING"
	// CodeTimeout: the attempt timed out.
	CodeTimeout = "TIMEOUT"
	// CodeClientError: the target refused the delivery otherwise.
	CodeClientError = "SDK_CLIENT_ERROR"
)

// QueueName is the internal queue of pending deliveries.
const QueueName = "_eventbridge-deliveries"

// DeadLetterStore is the queue where runnel keeps the failed deliveries
// AWS would drop (no DeadLetterConfig, or its queue refused them).
const DeadLetterStore = "runnel-eventbridge-dead-letters"

// RetryPolicy is a target's RetryPolicy. Nil fields take the defaults.
// The yaml names are a stack file's (package stack).
type RetryPolicy struct {
	// MaximumRetryAttempts: retries after the first attempt, 0..185,
	// default 185.
	MaximumRetryAttempts *int `json:",omitempty" yaml:"MaximumRetryAttempts"`
	// MaximumEventAgeInSeconds: an event older than this is not attempted
	// again, 60..86400, default 86400.
	MaximumEventAgeInSeconds *int `json:",omitempty" yaml:"MaximumEventAgeInSeconds"`
}

// Validate checks the ranges; the error (awserr.ErrValidation) names
// prefix + the field and the range.
func (p *RetryPolicy) Validate(prefix string) error {
	if p == nil {
		return nil
	}
	if v := p.MaximumRetryAttempts; v != nil && (*v < 0 || *v > MaxMaximumRetryAttempts) {
		return awserr.OutOfRange(awserr.ErrValidation, prefix+"MaximumRetryAttempts", *v, 0, MaxMaximumRetryAttempts)
	}
	if v := p.MaximumEventAgeInSeconds; v != nil && (*v < MinMaximumEventAgeInSeconds || *v > MaxMaximumEventAgeInSeconds) {
		return awserr.OutOfRange(awserr.ErrValidation, prefix+"MaximumEventAgeInSeconds", *v, MinMaximumEventAgeInSeconds, MaxMaximumEventAgeInSeconds)
	}
	return nil
}

// Resolved returns the attempts and the age with the defaults filled in.
func (p *RetryPolicy) Resolved() (retries int, maxAge time.Duration) {
	retries, age := DefaultMaximumRetryAttempts, DefaultMaximumEventAgeInSeconds
	if p != nil && p.MaximumRetryAttempts != nil {
		retries = *p.MaximumRetryAttempts
	}
	if p != nil && p.MaximumEventAgeInSeconds != nil {
		age = *p.MaximumEventAgeInSeconds
	}
	return retries, time.Duration(age) * time.Second
}

// Supported reports whether runnel delivers to arn: a Lambda function, an
// SQS queue, a Kinesis stream or an event bus.
func Supported(arn string) bool {
	for _, p := range []string{"arn:aws:lambda:", "arn:aws:sqs:", "arn:aws:kinesis:", "arn:aws:events:"} {
		if strings.HasPrefix(arn, p) {
			return true
		}
	}
	return false
}

// DeadLetterConfig names a standard SQS queue for failed deliveries
// (EventBridge's and Scheduler's DeadLetterConfig).
type DeadLetterConfig struct {
	Arn string `yaml:"Arn"`
}

// SqsParameters of a FIFO queue target: MessageGroupId (1..128).
type SqsParameters struct {
	MessageGroupId string `yaml:"MessageGroupId"`
}

// Set sets d's retry policy, dead-letter queue and message group from a
// target's configuration (nil: not configured).
func (d *Delivery) Set(retry *RetryPolicy, dlq *DeadLetterConfig, sqs *SqsParameters) {
	if retry != nil {
		d.Retry = *retry
	}
	if dlq != nil {
		d.DeadLetterArn = dlq.Arn
	}
	if sqs != nil {
		d.MessageGroupId = sqs.MessageGroupId
	}
}

// Delivery is one payload on its way to one target.
type Delivery struct {
	// ID is the event's id (a rule) or the execution id (a schedule).
	ID string
	// RuleArn or ScheduleArn names what sent it (its DLQ attributes).
	RuleArn     string `json:",omitempty"`
	ScheduleArn string `json:",omitempty"`
	// ScheduledTime is a schedule's occurrence (Unix ms).
	ScheduledTime int64 `json:",omitempty"`
	TargetArn     string
	Payload       string
	// Event is the original event when Payload is not it (Input,
	// InputPath, InputTransformer): the dead-letter queue gets the event,
	// as AWS's does, so that it can be resolved and sent again.
	Event         string      `json:",omitempty"`
	Retry         RetryPolicy `json:",omitzero"`
	DeadLetterArn string      `json:",omitempty"`
	// MessageGroupId for a FIFO queue target; PartitionKey for a stream.
	MessageGroupId string `json:",omitempty"`
	PartitionKey   string `json:",omitempty"`
	// Accepted is when the event was accepted (Unix ms, engine clock);
	// set by Enqueue when zero.
	Accepted int64 `json:",omitempty"`
	// Once: ID names what the delivery is (a schedule's occurrence), and
	// only one stored copy of it is attempted (see once.go).
	Once bool `json:",omitempty"`
	// Template is a schedule's Input: each attempt's Payload is it with
	// that attempt's context attributes (schedule.go). Empty: Payload as
	// it is.
	Template string `json:",omitempty"`
	// ExecutionID is a schedule's last attempt's execution id (set by
	// the attempt; ExecutionIDOf).
	ExecutionID string `json:",omitempty"`
	// Attempts that failed so far, and the last error.
	Attempts  int    `json:",omitempty"`
	ErrorCode string `json:",omitempty"`
	ErrorMsg  string `json:",omitempty"`
}

// Options tune the service.
type Options struct {
	Logger *slog.Logger
	// Concurrency is how many deliveries are attempted at once. Default 16.
	Concurrency int
	// Passive stores deliveries but attempts none in this process (CLI
	// commands).
	Passive bool
}

// Stats are the service's counters since it opened.
type Stats struct {
	// Enqueued deliveries; Delivered, Retried and DeadLettered of them.
	Enqueued, Delivered, Retried, DeadLettered int64
	// KeptInStore: failed deliveries kept in DeadLetterStore.
	KeptInStore int64
	// Duplicates: stored copies of a Once delivery dropped because
	// another copy of its ID is the one attempted.
	Duplicates int64
}

// Service delivers to targets. It is safe for concurrent use.
type Service struct {
	eng     *engine.Engine
	queues  *queue.Service
	streams *stream.Service
	async   *async.Service
	log     *slog.Logger
	conc    int

	// bus puts a payload on an event bus (set by the eventbus service).
	busMu sync.RWMutex
	bus   func(ctx context.Context, busArn string, payload, event []byte) error

	rngMu sync.Mutex
	rng   *rand.Rand

	enqueued, delivered, retried, deadLettered, kept, duplicates atomic.Int64

	claimMu sync.Mutex
	claimKV jetstream.KeyValue

	// bySource counts deliveries by their rule or schedule ARN.
	sourceMu sync.Mutex
	bySource map[string]*SourceStats

	bg      context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	once    sync.Once
	passive bool
	// queueMu serializes the creation of the internal queue.
	queueMu sync.Mutex
}

// New opens the service and (unless Passive) starts its poller when the
// internal queue exists: pending deliveries of an earlier run are
// attempted again. The queue is created by the first Enqueue (so that an
// instance without rules or schedules lists no queue of runnel's).
func New(ctx context.Context, eng *engine.Engine, queues *queue.Service, streams *stream.Service, as *async.Service, opts Options) (*Service, error) {
	if opts.Logger == nil {
		opts.Logger = eng.Logger
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = 16
	}
	s := &Service{eng: eng, queues: queues, streams: streams, async: as, log: opts.Logger.With("service", "targets"),
		conc: opts.Concurrency, bySource: map[string]*SourceStats{}, rng: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 17))}
	s.bg, s.cancel = context.WithCancel(context.Background())
	s.passive = opts.Passive
	if _, err := queues.GetQueueURL(ctx, QueueName); err == nil {
		s.startPoller()
	} else if !errors.Is(err, awserr.ErrQueueDoesNotExist) {
		s.cancel()
		return nil, err
	}
	return s, nil
}

// startPoller starts the poller once (not in a Passive service).
func (s *Service) startPoller() {
	s.once.Do(func() {
		if !s.passive {
			s.wg.Add(1)
			go func() { defer s.wg.Done(); s.run(s.bg) }()
		}
	})
}

// ensureQueue creates the internal queue and starts the poller.
func (s *Service) ensureQueue(ctx context.Context) error {
	s.queueMu.Lock()
	defer s.queueMu.Unlock()
	if _, err := s.queues.EnsureQueue(ctx, QueueName, internalQueueAttrs); err != nil {
		return err
	}
	s.startPoller()
	return nil
}

var internalQueueAttrs = map[string]string{
	queue.AttrMessageRetentionPeriod: "1209600",
	queue.AttrMaximumMessageSize:     "1048576",
}

// SetBus sets how a payload is put on an event bus (an event bus target):
// fn gets the delivery's payload and, when the payload is not the rule's
// event (Input, InputPath, InputTransformer), the event; else nil.
func (s *Service) SetBus(fn func(ctx context.Context, busArn string, payload, event []byte) error) {
	s.busMu.Lock()
	s.bus = fn
	s.busMu.Unlock()
}

// Close stops the poller; a delivery being attempted comes back after its
// visibility timeout (a possible duplicate).
func (s *Service) Close() {
	s.cancel()
	s.wg.Wait()
}

// Stats returns the counters.
func (s *Service) Stats() Stats {
	return Stats{Enqueued: s.enqueued.Load(), Delivered: s.delivered.Load(), Retried: s.retried.Load(),
		DeadLettered: s.deadLettered.Load(), KeptInStore: s.kept.Load(), Duplicates: s.duplicates.Load()}
}

// SourceStats count the deliveries of one rule or schedule since the
// service opened: Delivered, and Failed (dead-lettered or kept in the
// store: CloudWatch's FailedInvocations).
type SourceStats struct{ Delivered, Failed int64 }

// Source returns the counters of a rule's or schedule's ARN.
func (s *Service) Source(arn string) SourceStats {
	s.sourceMu.Lock()
	defer s.sourceMu.Unlock()
	if c := s.bySource[arn]; c != nil {
		return *c
	}
	return SourceStats{}
}

// count adds a delivery's outcome to its source's counters.
func (s *Service) count(d *Delivery, failed bool) {
	src := d.RuleArn + d.ScheduleArn
	s.sourceMu.Lock()
	defer s.sourceMu.Unlock()
	c := mapx.GetOrNew(s.bySource, src)
	if failed {
		c.Failed++
	} else {
		c.Delivered++
	}
}

// Enqueue stores deliveries durably (10 a call to the internal queue) and
// returns once all are stored. On an error some may be stored: the caller
// reports the event failed, and a retry of it may duplicate them.
func (s *Service) Enqueue(ctx context.Context, ds []Delivery) error {
	now := s.eng.Clock.Now().UnixMilli()
	for start := 0; start < len(ds); start += queue.MaxBatchEntries {
		batch := ds[start:min(len(ds), start+queue.MaxBatchEntries)]
		entries := make([]queue.SendMessageBatchRequestEntry, len(batch))
		for i := range batch {
			if batch[i].Accepted == 0 {
				batch[i].Accepted = now
			}
			b, err := json.Marshal(&batch[i])
			if err != nil {
				return err
			}
			entries[i] = queue.SendMessageBatchRequestEntry{Id: strconv.Itoa(i), SendMessageInput: queue.SendMessageInput{MessageBody: string(b)}}
		}
		out, err := s.queues.SendMessageBatch(ctx, QueueName, entries)
		if errors.Is(err, awserr.ErrQueueDoesNotExist) {
			if err = s.ensureQueue(ctx); err == nil {
				out, err = s.queues.SendMessageBatch(ctx, QueueName, entries)
			}
		}
		if err != nil {
			return err
		}
		if len(out.Failed) > 0 {
			return awserr.New(awserr.ErrInternalFailure, "storing a delivery: %s", out.Failed[0].Message)
		}
		s.enqueued.Add(int64(len(batch)))
	}
	return nil
}

// attempt delivers d once. It returns "" on success, else the error code
// for the dead-letter queue, the message, and whether to retry.
func (s *Service) attempt(ctx context.Context, d *Delivery) (code, msg string, retry bool) {
	var err error
	if d.ScheduleArn != "" {
		d.prepareScheduleAttempt()
		if f := attemptFault.Load(); f != nil {
			if err := (*f)(d); err != nil {
				return classifySchedule(ctx, err)
			}
		}
	}
	payload := []byte(d.Payload)
	switch arn := d.TargetArn; {
	case strings.HasPrefix(arn, "arn:aws:lambda:"):
		_, err = s.async.Invoke(ctx, arn, async.Event, payload)
	case strings.HasPrefix(arn, "arn:aws:sqs:"):
		in := queue.SendMessageInput{MessageBody: d.Payload, MessageGroupId: d.MessageGroupId}
		if strings.HasSuffix(arn, ".fifo") {
			in.MessageDeduplicationId, err = s.fifoDeduplicationID(ctx, d)
		}
		if err == nil {
			_, err = s.queues.SendMessage(ctx, arn, in)
		}
	case strings.HasPrefix(arn, "arn:aws:kinesis:"):
		name, ok := stream.NameFromARN(arn)
		if !ok {
			if d.ScheduleArn != "" {
				return classifySchedule(ctx, awserr.New(awserr.ErrResourceNotFound, "not a stream ARN: %s", arn))
			}
			return CodeNoResource, "not a stream ARN: " + arn, false
		}
		key := d.PartitionKey
		if key == "" {
			key = d.ID
		}
		_, err = s.streams.PutRecord(ctx, name, stream.PutRecordsRequestEntry{Data: payload, PartitionKey: key})
	case strings.HasPrefix(arn, "arn:aws:events:"):
		s.busMu.RLock()
		bus := s.bus
		s.busMu.RUnlock()
		if bus == nil {
			return CodeNoResource, "no event bus service", false
		}
		var event []byte
		if d.Event != "" {
			event = []byte(d.Event)
		}
		err = bus(ctx, arn, payload, event)
	default:
		return CodeNoResource, "runnel cannot deliver to " + arn + " (Lambda, SQS, Kinesis and event bus targets only)", false
	}
	if err == nil {
		return "", "", false
	}
	if d.ScheduleArn != "" {
		return classifySchedule(ctx, err)
	}
	return classify(ctx, err)
}

// classify names an attempt's error as AWS's dead-letter ERROR_CODE and
// says whether a retry may help: a missing target is not retried.
func classify(ctx context.Context, err error) (code, msg string, retry bool) {
	msg = err.Error()
	var ae *awserr.Error
	if errors.As(err, &ae) {
		msg = ae.Message
	}
	switch {
	case errors.Is(err, awserr.ErrResourceNotFound), errors.Is(err, awserr.ErrQueueDoesNotExist):
		return CodeNoResource, msg, false
	case errors.Is(err, awserr.ErrTooManyRequests):
		return CodeThrottling, msg, true
	case ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded):
		return CodeTimeout, msg, true
	}
	return CodeClientError, msg, true
}
