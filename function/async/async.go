// Package async is Lambda's asynchronous invocation
// (https://docs.aws.amazon.com/lambda/latest/dg/invocation-async.html) over
// runnel's functions and queues: Invoke with InvocationType Event stores
// the event durably and returns 202 at once; a poller per function runs it
// later, retries function errors, and sends records of the outcome to the
// destinations of the function's event invoke configuration.
//
// # Invocation types
//
//   - RequestResponse runs the function now and returns its result (200,
//     with FunctionError "Unhandled" and the error object as Payload on a
//     function error). No retry; a throttle is the caller's
//     TooManyRequestsException. Payload up to 6 MiB, as Lambda's.
//   - Event stores the event in the function's internal queue
//     ("_async-<function>", a standard runnel queue) and returns 202 once
//     it is on disk. Payload up to MaxEventPayloadSize: Lambda's 1 MiB less
//     512 bytes that runnel keeps for the event's retry metadata (the
//     message attributes below), so that the event fits the queue's 1 MiB
//     message.
//   - DryRun checks the function exists and the payload is acceptable: 204.
//
// A payload must be UTF-8 JSON (InvalidRequestContentException
// otherwise); an empty payload is sent as {}. An Event payload holding
// U+FFFE or U+FFFF, which queue messages refuse, is stored with those
// characters as JSON escapes (the same JSON value).
//
// # Processing an event (SPEC 3)
//
// Each event carries in message attributes its request id (the one Invoke
// returned, kept across retries and reported in destination records), its
// enqueue time, how many times the function ran it, how many times in a
// row it was throttled, and the last outcome. When it is due:
//
//   - Older than MaximumEventAgeInSeconds (default 21600): not invoked;
//     condition "EventAgeExceeded" (the record reports the last outcome,
//     statusCode 0 when there was none).
//   - Reserved concurrency 0: not invoked, not retried; condition
//     "RetriesExhausted" with approximateInvokeCount 0 and statusCode 429
//     (AWS: "new events go straight to the DLQ or on-failure destination").
//   - Throttled (the function's concurrency is in use) or the function is
//     missing (deleted, or its handler not registered in this process):
//     back to the queue with backoff, 1 s doubling to 5 minutes with full
//     jitter (package backoff), not counted as an attempt, until the event
//     ages out.
//   - Success: an OnSuccess destination, if any, gets a "Success" record.
//   - Function error (a timeout included): retried after 1 minute, then
//     after 2 more minutes, MaximumRetryAttempts (0..2, default 2) times;
//     after the last attempt condition "RetriesExhausted".
//
// A failed event (RetriesExhausted, EventAgeExceeded) goes to the OnFailure
// destination and to the DeadLetterConfig queue when both are set.
//
// Every move is write-then-delete: a retry is a new message (DelaySeconds
// 60 or 120, or the backoff delay) sent before the old one is deleted, and
// an event is deleted only once its records are stored. A crash in between
// duplicates, never loses; so may a Close during an invocation (the event
// comes back after its visibility timeout, the function's timeout + 60 s).
// The function's handler sees a new aws request id at each attempt
// (lambdacontext); the destination records carry the event's request id.
//
// # Destinations and the destination record
//
// OnSuccess and OnFailure take the ARN of a standard queue (the record is
// the message body), a stream (PutRecord, partition key = requestId) or a
// function (an Event invocation with the record as payload). FIFO queues,
// SNS topics, EventBridge buses and S3 buckets are refused, and so is the
// function itself (its records would invoke it without end). The record
// is SPEC 3's (see wire.InvocationRecord):
//
//	{"version":"1.0","timestamp":"2019-11-14T18:16:05.568Z",
//	 "requestContext":{"requestId":"...","functionArn":"arn:aws:lambda:...:function:f:$LATEST",
//	   "condition":"RetriesExhausted","approximateInvokeCount":3},
//	 "requestPayload":{...the event...},
//	 "responseContext":{"statusCode":200,"executedVersion":"$LATEST","functionError":"Unhandled"},
//	 "responsePayload":{"errorMessage":"...","errorType":"..."}}
//
// The legacy DeadLetterConfig (a standard queue) gets the raw event as the
// body with the message attributes RequestID (String), ErrorCode (Number:
// the HTTP status, 200 for a function error, 429 for a throttle) and
// ErrorMessage (String, the first 1 KB of the error message; ErrorCode is
// 0 for an event that aged out before any attempt). AWS keeps
// DeadLetterConfig on the function's configuration; runnel keeps it in the
// EventInvokeConfig, next to the destinations, so that the function
// package need not know about it.
//
// # Where runnel differs from AWS: nothing is dropped
//
// AWS drops a failed event when the function has neither an OnFailure
// destination nor a DeadLetterConfig, and drops a record whose delivery
// fails (DestinationDeliveryFailures, DeadLetterErrors). runnel keeps
// both in its built-in dead-letter store, the standard queue
// "runnel-async-dead-letters" (DeadLetterStore; 14 days' retention, the
// longest a queue keeps a message): the body is the destination record,
// with the message attributes FunctionName, Condition, RequestId and
// Reason. A record too large for a queue message is stored as the raw
// event with those attributes. PutFunctionEventInvokeConfig,
// UpdateFunctionEventInvokeConfig and the start of a function's poller log
// a WARN naming the store when a function has neither; so does the
// creation of a function (runnel watches the functions' bucket).
//
// # Storage and processes
//
// Configurations are in the key-value bucket "runnel_event_invoke_configs"
// (key = function name); events in the internal queues. At New, pollers
// start for every function with an internal queue or a configuration, so
// pending events survive a restart; otherwise a function's poller starts
// at its first Event invocation. As queues are, the service is meant to be
// run by one process.
package async

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jonboulle/clockwork"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/engine"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/clocks"
	"github.com/runnel-dev/runnel/internal/closing"
	"github.com/runnel-dev/runnel/internal/mapx"
	"github.com/runnel-dev/runnel/queue"
	"github.com/runnel-dev/runnel/stream"
)

// Invocation types (API_Invoke InvocationType).
const (
	RequestResponse = "RequestResponse"
	Event           = "Event"
	DryRun          = "DryRun"
)

// Limits.
const (
	// MaxSyncPayloadSize bounds a RequestResponse payload: 6 MiB.
	MaxSyncPayloadSize = 6 << 20
	// MaxEventPayloadSize bounds an Event payload: 1,048,064 bytes,
	// Lambda's 1 MiB (1,048,576) less the 512 bytes runnel keeps for the
	// event's metadata attributes (request id, enqueue time, attempts,
	// qualifier, last outcome: under 400 bytes, see meta.go), which ride
	// with the payload in one message of the internal queue, and a queue
	// message (body and attributes) is at most 1 MiB
	// (queue.MaxMaximumMessageSize, SQS's). Where runnel differs: a
	// payload of the last 512 bytes below 1 MiB is refused.
	MaxEventPayloadSize = queue.MaxMaximumMessageSize - metaReserve
	metaReserve         = 512
)

// Defaults and ranges of API_FunctionEventInvokeConfig.
const (
	DefaultMaximumRetryAttempts     = 2
	MaxMaximumRetryAttempts         = 2
	DefaultMaximumEventAgeInSeconds = 21600
	MinMaximumEventAgeInSeconds     = 60
	MaxMaximumEventAgeInSeconds     = 21600
)

// Conditions of a destination record.
const (
	ConditionSuccess          = "Success"
	ConditionRetriesExhausted = "RetriesExhausted"
	ConditionEventAgeExceeded = "EventAgeExceeded"
)

// DeadLetterStore is the queue where runnel keeps the failed events AWS
// would drop (see the package doc).
const DeadLetterStore = "runnel-async-dead-letters"

// QueuePrefix begins the name of every function's internal queue.
const QueuePrefix = "_async-"

// configBucket holds the event invoke configurations.
const configBucket = "runnel_event_invoke_configs"

// Errors of Invoke besides awserr's.
var (
	// ErrRequestTooLarge: the payload is larger than the invocation type
	// allows (HTTP 413).
	ErrRequestTooLarge = awserr.ErrRequestTooLarge
	// ErrInvalidRequestContent: the payload is not JSON.
	ErrInvalidRequestContent = awserr.ErrInvalidRequestContent
)

// InvokeOutput is the result of Invoke (API_Invoke's response).
type InvokeOutput struct {
	// StatusCode is 200 (RequestResponse), 202 (Event) or 204 (DryRun).
	StatusCode int
	// FunctionError is "Unhandled" when a RequestResponse invocation ended
	// in a function error (its error object is then the Payload).
	FunctionError string
	// Payload is the function's response (RequestResponse only).
	Payload []byte
	// ExecutedVersion is the version that ran: "$LATEST" or a number
	// (RequestResponse only).
	ExecutedVersion string
	// RequestID identifies the invocation; for an Event, the requestId of
	// its destination records.
	RequestID string
}

// Options tune the service.
type Options struct {
	// Logger; default the engine's.
	Logger *slog.Logger
	// Concurrency, when above 0, caps how many events of one function are
	// processed at once in this process. Default 0: no cap but the
	// function's concurrency (its ReservedConcurrentExecutions, else the
	// account's 1,000), as AWS's. Before, the default was 10: a burst of
	// slow events waited for each other and aged out unrun.
	Concurrency int
	// Passive accepts Event invocations (they are stored) but processes
	// none in this process: CLI commands use it so they never compete
	// with the `runnel serve` process for events.
	Passive bool
}

// Stats are a function's asynchronous counters since the service opened.
type Stats struct {
	// Accepted Event invocations.
	Accepted int64
	// Invocations of the function by the poller (attempts that ran).
	Invocations int64
	// Succeeded, FunctionErrors and Throttles of those attempts (a
	// throttle did not run).
	Succeeded, FunctionErrors, Throttles int64
	// Retried: events sent back to the queue for a retry after a function
	// error. Requeued: events sent back after a throttle or a missing
	// function.
	Retried, Requeued int64
	// RetriesExhausted and EventAgeExceeded count failed events.
	RetriesExhausted, EventAgeExceeded int64
	// DestinationDeliveries and DestinationDeliveryFailures count records
	// sent to (or not accepted by) OnSuccess and OnFailure destinations;
	// DeadLetterErrors the DeadLetterConfig sends that failed.
	DestinationDeliveries, DestinationDeliveryFailures, DeadLetterErrors int64
	// KeptInStore counts records kept in the built-in dead-letter store.
	KeptInStore int64
	// Handled counts internal queue messages whose processing finished
	// (deleted, or replaced by their retry).
	Handled int64
	// AsyncEventAgeMs is Lambda's AsyncEventAge: the time between the
	// event's acceptance and its latest invocation, in milliseconds.
	AsyncEventAgeMs int64
}

type counters struct {
	accepted, invocations, succeeded, functionErrors, throttles atomic.Int64
	retried, requeued, exhausted, aged                          atomic.Int64
	deliveries, deliveryFailures, deadLetterErrors, kept        atomic.Int64
	handled                                                     atomic.Int64
	lastEventAgeMs                                              atomic.Int64
}

// Service is asynchronous invocation over one engine. It is safe for
// concurrent use.
type Service struct {
	eng     *engine.Engine
	fns     *function.Service
	queues  *queue.Service
	streams *stream.Service
	kv      jetstream.KeyValue
	log     *slog.Logger
	conc    int // Options.Concurrency: a cap per function, 0 for none
	passive bool
	fanout  fanoutHolder // SNS and EventBridge destinations (SetFanout)

	bg     context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	rngMu sync.Mutex
	rng   *rand.Rand

	// queueMu serializes the creation of queues (CreateQueue of one name
	// from two goroutines at once would race on its stream).
	queueMu sync.Mutex

	mu      sync.Mutex
	closed  bool
	configs map[string]EventInvokeConfig
	// configRevs: the bucket revision each entry of configs was read at
	// (watchConfigs applies only newer ones).
	configRevs map[string]uint64
	pollers    map[string]*poller
	stats      map[string]*counters
	warned     map[string]bool
}

// New opens the service and starts the pollers of every function with
// pending events (an internal queue) or a configuration.
func New(ctx context.Context, eng *engine.Engine, fns *function.Service, queues *queue.Service, streams *stream.Service, opts Options) (*Service, error) {
	kv, err := eng.Bucket(ctx, configBucket)
	if err != nil {
		return nil, err
	}
	if opts.Logger == nil {
		opts.Logger = eng.Logger
	}
	if opts.Concurrency < 0 {
		opts.Concurrency = 0
	}
	bg, cancel := context.WithCancel(context.Background())
	s := &Service{eng: eng, fns: fns, queues: queues, streams: streams, kv: kv,
		log: opts.Logger.With("service", "async"), conc: opts.Concurrency, passive: opts.Passive, bg: bg, cancel: cancel,
		rng:     rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 11)),
		configs: map[string]EventInvokeConfig{}, configRevs: map[string]uint64{}, pollers: map[string]*poller{},
		stats: map[string]*counters{}, warned: map[string]bool{}}
	names := map[string]bool{}
	err = engine.LoadJSON(ctx, kv, func(k string, c EventInvokeConfig, err error) {
		if err != nil {
			s.log.Warn("unreadable event invoke configuration ignored", "function", k)
			return
		}
		s.configs[k] = c
		names[c.FunctionName] = true
	})
	if err != nil {
		cancel()
		return nil, err
	}
	urls, err := queues.ListQueues(ctx, QueuePrefix)
	if err != nil {
		cancel()
		return nil, err
	}
	for _, u := range urls {
		names[strings.TrimPrefix(u[strings.LastIndexByte(u, '/')+1:], QueuePrefix)] = true
	}
	for name := range names {
		if err := s.ensurePoller(ctx, name); err != nil {
			s.Close()
			return nil, err
		}
	}
	s.watchFunctions(ctx)
	if err := s.watchConfigs(); err != nil {
		s.Close()
		return nil, err
	}
	if !s.passive {
		s.wg.Go(s.discoverPollers)
	}
	return s, nil
}

// watchConfigs keeps configs as the bucket holds them: a configuration
// put or deleted through another process is applied here. Before, each
// process read the bucket once, at its start: an event invoked through
// another node than the one that stored the configuration got that
// node's stale copy (retries and destinations not as configured).
func (s *Service) watchConfigs() error {
	return engine.Watch(s.bg, &s.wg, s.kv, func(e jetstream.KeyValueEntry) {
		k := e.Key()
		s.mu.Lock()
		defer s.mu.Unlock()
		if e.Revision() <= s.configRevs[k] {
			return // this process's own write, applied already
		}
		s.configRevs[k] = e.Revision()
		if e.Operation() != jetstream.KeyValuePut {
			delete(s.configs, k)
			return
		}
		var c EventInvokeConfig
		if err := json.Unmarshal(e.Value(), &c); err != nil {
			s.log.Warn("unreadable event invoke configuration ignored", "function", k)
			return
		}
		s.configs[k] = c
	})
}

// DiscoveryInterval is how often a process looks for internal queues it
// does not poll yet.
const DiscoveryInterval = 5 * time.Second

// discoverPollers starts the poller of every function's internal queue
// that this process does not poll yet: a queue made by another process
// (its first Event invocation went there). Before, a process polled only
// the queues that existed when it started and those of the events it was
// invoked with: the events accepted by a node that then stopped waited
// for a restart, and could expire unattempted. Wall clock: it finds work,
// it decides no rule.
func (s *Service) discoverPollers() {
	clocks.Every(s.bg, clockwork.NewRealClock(), DiscoveryInterval, func() {
		urls, err := s.queues.ListQueues(s.bg, QueuePrefix)
		if err != nil {
			if s.bg.Err() == nil {
				s.log.Debug("async: cannot list the internal queues", "err", err)
			}
			return
		}
		for _, u := range urls {
			name := strings.TrimPrefix(u[strings.LastIndexByte(u, '/')+1:], QueuePrefix)
			if err := s.ensurePoller(s.bg, name); err != nil && s.bg.Err() == nil {
				s.log.Warn("async: cannot start a poller", "function", name, "err", err)
			}
		}
	})
}

// functionsBucket is where the function service stores configurations
// (docs/design.md): watching it gives the warning "when the function is
// created" without a hook in package function.
const functionsBucket = "runnel_functions"

// watchFunctions logs the built-in store warning for each function
// created (or replaced) while the service runs.
func (s *Service) watchFunctions(ctx context.Context) {
	kv, err := s.eng.Bucket(ctx, functionsBucket)
	if err != nil {
		s.log.Debug("async: cannot watch function creations", "err", err)
		return
	}
	err = engine.Watch(s.bg, &s.wg, kv, func(e jetstream.KeyValueEntry) {
		if e.Operation() == jetstream.KeyValuePut {
			s.warnIfDropped(e.Key())
		}
	}, jetstream.UpdatesOnly())
	if err != nil {
		s.log.Debug("async: cannot watch function creations", "err", err)
	}
}

// Close stops the pollers. An event being processed is abandoned and
// comes back after its visibility timeout (a possible duplicate).
func (s *Service) Close() { closing.Close(&s.mu, &s.closed, s.cancel, &s.wg) }

// Stats returns the counters of a function.
func (s *Service) Stats(functionName string) Stats {
	c := s.counters(nameOf(functionName))
	return Stats{Accepted: c.accepted.Load(), Invocations: c.invocations.Load(), Succeeded: c.succeeded.Load(),
		FunctionErrors: c.functionErrors.Load(), Throttles: c.throttles.Load(), Retried: c.retried.Load(),
		Requeued: c.requeued.Load(), RetriesExhausted: c.exhausted.Load(), EventAgeExceeded: c.aged.Load(),
		DestinationDeliveries: c.deliveries.Load(), DestinationDeliveryFailures: c.deliveryFailures.Load(),
		DeadLetterErrors: c.deadLetterErrors.Load(), KeptInStore: c.kept.Load(), Handled: c.handled.Load(),
		AsyncEventAgeMs: c.lastEventAgeMs.Load()}
}

func (s *Service) counters(name string) *counters {
	s.mu.Lock()
	defer s.mu.Unlock()
	return mapx.GetOrNew(s.stats, name)
}

// nameOf returns the function name of a name or function ARN.
func nameOf(ref string) string {
	if n, ok := function.FunctionNameFromARN(ref); ok {
		return n
	}
	return ref
}

// QueueName returns the name of a function's internal queue.
func QueueName(functionName string) string { return QueuePrefix + functionName }

// Invoke invokes a function (API_Invoke) by name or ARN. invocationType
// is RequestResponse (the default when empty), Event or DryRun; see the
// package doc.
//
// Errors: ErrInvalidParameterValue for another invocation type;
// ErrRequestTooLarge (413, Lambda's RequestTooLargeException, in its
// words: "<n> byte payload is too large for the Event invocation type
// (limit <limit> bytes)"); ErrInvalidRequestContent for a payload that is not
// JSON; ErrResourceNotFound for an unknown function; for RequestResponse,
// ErrTooManyRequests when the function is throttled; ErrService when the
// event could not be stored.
func (s *Service) Invoke(ctx context.Context, functionName, invocationType string, payload []byte) (*InvokeOutput, error) {
	if invocationType == "" {
		invocationType = RequestResponse
	}
	limit := MaxSyncPayloadSize
	switch invocationType {
	case RequestResponse, DryRun:
	case Event:
		limit = MaxEventPayloadSize
	default:
		return nil, awserr.New(awserr.ErrInvalidParameterValue, "InvocationType: %q must be one of RequestResponse, Event, DryRun", invocationType)
	}
	if len(payload) > limit && invocationType == Event {
		return nil, awserr.New(ErrRequestTooLarge, "%d byte payload is too large for the %s invocation type (limit %d bytes)", len(payload), invocationType, limit)
	}
	if len(payload) > limit { // Lambda's words for a synchronous payload
		return nil, awserr.New(ErrRequestTooLarge, "Request must be smaller than %d bytes for the InvokeFunction operation", limit)
	}
	if len(payload) == 0 {
		payload = []byte("{}")
	}
	if !utf8.Valid(payload) || !json.Valid(payload) {
		return nil, awserr.New(ErrInvalidRequestContent, "Could not parse request body into json: the payload is not valid UTF-8 JSON")
	}
	fn, err := s.fns.GetFunction(functionName)
	if err != nil {
		return nil, err
	}
	name := fn.Config().FunctionName
	switch invocationType {
	case DryRun:
		return &InvokeOutput{StatusCode: 204}, nil
	case Event:
		_, qualifier, _ := function.ParseRef(functionName)
		if qualifier == function.Latest {
			qualifier = ""
		}
		return s.enqueue(ctx, name, qualifier, payload)
	}
	res, err := fn.Invoke(ctx, payload)
	if err != nil {
		return nil, err
	}
	return &InvokeOutput{StatusCode: 200, FunctionError: res.FunctionError, Payload: responsePayload(res),
		ExecutedVersion: fn.Config().ExecutedVersion(), RequestID: res.RequestID}, nil
}

// enqueue stores an event for a function and makes sure it has a poller.
// qualifier is the version or alias invoked ("" for $LATEST), resolved
// again at each attempt.
func (s *Service) enqueue(ctx context.Context, name, qualifier string, payload []byte) (*InvokeOutput, error) {
	if err := s.ensurePoller(ctx, name); err != nil {
		return nil, err
	}
	m := meta{requestID: uuid.NewString(), enqueued: s.eng.Clock.Now(), qualifier: qualifier}
	body := string(sanitizeJSON(payload))
	if err := s.send(ctx, name, body, m, 0); err != nil {
		return nil, awserr.New(awserr.ErrService, "store the event of %s: %v", name, err)
	}
	s.counters(name).accepted.Add(1)
	return &InvokeOutput{StatusCode: 202, RequestID: m.requestID}, nil
}

// send stores an event message in a function's internal queue, creating
// the queue if it was deleted.
func (s *Service) send(ctx context.Context, name, body string, m meta, delay int) error {
	in := queue.SendMessageInput{MessageBody: body, MessageAttributes: m.attributes(len(body))}
	if delay > 0 {
		in.DelaySeconds = &delay
	}
	_, err := s.queues.SendMessage(ctx, QueueName(name), in)
	if errors.Is(err, awserr.ErrQueueDoesNotExist) {
		if _, err = s.ensureQueue(ctx, name); err == nil {
			_, err = s.queues.SendMessage(ctx, QueueName(name), in)
		}
	}
	return err
}

var internalQueueAttrs = map[string]string{
	queue.AttrMessageRetentionPeriod: "1209600",
	queue.AttrMaximumMessageSize:     "1048576",
}

func (s *Service) ensureQueue(ctx context.Context, name string) (string, error) {
	s.queueMu.Lock()
	url, err := s.queues.EnsureQueue(ctx, QueueName(name), internalQueueAttrs)
	s.queueMu.Unlock()
	if err != nil {
		return "", awserr.New(awserr.ErrService, "create the internal queue of %s: %v", name, err)
	}
	return url, nil
}

// responsePayload is the JSON a function returned: the raw handler's
// output, its typed response encoded, or the error object.
func responsePayload(res *function.Result) []byte {
	if len(res.Payload) > 0 || res.Response == nil {
		return res.Payload
	}
	b, err := json.Marshal(res.Response)
	if err != nil {
		return nil
	}
	return b
}

// sanitizeJSON makes JSON fit an SQS message: invalid UTF-8 becomes
// U+FFFD and the characters SQS refuses (U+FFFE, U+FFFF; valid JSON holds
// no other) become escapes. Both can only be inside strings, so the JSON
// keeps its meaning.
func sanitizeJSON(b []byte) []byte {
	if !utf8.Valid(b) {
		b = []byte(strings.ToValidUTF8(string(b), "\uFFFD"))
	}
	if !strings.ContainsAny(string(b), "\uFFFE\uFFFF") {
		return b
	}
	return []byte(strings.NewReplacer("\uFFFE", `\ufffe`, "\uFFFF", `\uffff`).Replace(string(b)))
}

// sanitizeText makes a string a valid SQS attribute value.
func sanitizeText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.Map(func(r rune) rune {
		if r == 0x9 || r == 0xA || r == 0xD || (r >= 0x20 && r <= 0xD7FF) || (r >= 0xE000 && r <= 0xFFFD) || r >= 0x10000 {
			return r
		}
		return '\uFFFD'
	}, s)
}

// truncate returns the first n bytes of s, cut at a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
