// Package function runs functions the way AWS Lambda does: a handler with a
// timeout (a context deadline; running out of time is a function error), a
// concurrency limit (reserved concurrency; an invocation beyond it is
// throttled), and panics caught and reported as function errors with the
// errorType and errorMessage aws-lambda-go would report.
//
// Handlers are in-process Go functions registered by name in a Registry
// (Register fills the default one) that take the events of
// github.com/aws/aws-lambda-go/events.
package function

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/google/uuid"
	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/wire/ddbjson"
)

// Ranges and defaults from the Lambda API (API_CreateFunction,
// API_PutFunctionConcurrency).
const (
	DefaultTimeout = 3
	MaxTimeout     = 900
	DefaultMemory  = 128
	MinMemory      = 128
	MaxMemory      = 10240
	// DefaultAccountConcurrency is the account's concurrency, as Lambda's
	// default limit: the functions without a reservation share what the
	// reservations leave of it (in a Service, per node; a Function made by
	// New alone has all of it).
	DefaultAccountConcurrency = 1000
	// MinUnreservedConcurrency is what reservations must leave to the
	// functions without one: at most DefaultAccountConcurrency - 100 is
	// reserved in all (PutFunctionConcurrency refuses more).
	MinUnreservedConcurrency = 100
)

var functionNameRE = regexp.MustCompile(`^[a-zA-Z0-9-_]{1,64}$`)

// Config is a function's configuration (API_CreateFunction with the fields
// runnel uses).
type Config struct {
	// FunctionName: 1..64 characters of [a-zA-Z0-9-_]. Required.
	FunctionName string `json:"FunctionName" yaml:"FunctionName"`
	// Handler is the name an in-process handler was registered under.
	// Required.
	Handler string `json:"Handler" yaml:"Handler"`
	// Timeout in seconds, 1..900. Default 3.
	Timeout int `json:"Timeout" yaml:"Timeout"`
	// MemorySize in MB, 128..10240. Default 128. Informational in-process.
	MemorySize int `json:"MemorySize" yaml:"MemorySize"`
	// ReservedConcurrentExecutions caps concurrent invocations (0..1000),
	// across the nodes of a cluster; beyond it a TooManyRequestsException
	// (429, Reason ReservedFunctionConcurrentInvocationLimitExceeded). nil
	// leaves the function unreserved: it shares the account's unreserved
	// concurrency (1000 less the reservations, counted per node), beyond
	// which the Reason is ConcurrentInvocationLimitExceeded. 0 throttles
	// every invocation.
	ReservedConcurrentExecutions *int `json:"ReservedConcurrentExecutions,omitempty" yaml:"ReservedConcurrentExecutions"`
	// Environment variables, visible to the handler through its context
	// (Env(ctx)).
	Environment map[string]string `json:"Environment,omitempty" yaml:"Environment"`

	// FunctionArn is set by runnel: the unqualified ARN for $LATEST, the
	// qualified one (…:function:<name>:<version>) for a published version.
	FunctionArn string `json:"FunctionArn,omitempty" yaml:"-"`
	// Version is set by runnel: "" for $LATEST, the version number ("1",
	// "2"...) for a published version (versions.go).
	Version string `json:"Version,omitempty" yaml:"-"`
	// LastVersion is set by runnel on $LATEST: the number of the last
	// version published (0: none). Numbers are not reused after a version
	// is deleted.
	LastVersion int `json:"LastVersion,omitempty" yaml:"-"`
	// RevisionId is set by runnel: a UUID that changes with every update
	// of the configuration (API_FunctionConfiguration RevisionId).
	RevisionId string `json:"RevisionId,omitempty" yaml:"-"`
	// DeadLetterConfig is the function's dead-letter queue for failed
	// asynchronous events (API_DeadLetterConfig, CreateFunction and
	// UpdateFunctionConfiguration): a version's configuration, frozen by
	// PublishVersion. An event invoke configuration's own DeadLetterConfig
	// (runnel's extension) takes precedence. nil: none.
	DeadLetterConfig *DeadLetterConfig `json:"DeadLetterConfig,omitempty" yaml:"DeadLetterConfig"`
}

// DeadLetterConfig is a function's dead-letter queue: the ARN of a
// standard SQS queue (SNS topics, which Lambda also takes, are refused).
type DeadLetterConfig struct {
	TargetArn string `json:"TargetArn" yaml:"TargetArn"`
}

// ExecutedVersion is the version Lambda reports having run
// (X-Amz-Executed-Version): "$LATEST" or the version number.
func (c Config) ExecutedVersion() string {
	if c.Version == "" {
		return Latest
	}
	return c.Version
}

// WithDefaults returns c with the zero fields that have defaults filled
// in: Timeout 3 (DefaultTimeout), MemorySize 128 (DefaultMemory).
func (c Config) WithDefaults() Config {
	c.Timeout = cmp.Or(c.Timeout, DefaultTimeout)
	c.MemorySize = cmp.Or(c.MemorySize, DefaultMemory)
	return c
}

// Validate checks the configuration, with its defaults (WithDefaults),
// against Lambda's ranges, and returns an InvalidParameterValueException
// naming the field. It does not change c.
func (c Config) Validate() error {
	c = c.WithDefaults()
	if !functionNameRE.MatchString(c.FunctionName) {
		return awserr.New(awserr.ErrInvalidParameterValue, "FunctionName: %q must be 1..64 characters of [a-zA-Z0-9-_]", c.FunctionName)
	}
	if c.Handler == "" {
		return awserr.New(awserr.ErrInvalidParameterValue, "Handler: required (the name of a registered handler)")
	}
	if c.Timeout < 1 || c.Timeout > MaxTimeout {
		return awserr.OutOfRange(awserr.ErrInvalidParameterValue, "Timeout", c.Timeout, 1, MaxTimeout)
	}
	if c.MemorySize < MinMemory || c.MemorySize > MaxMemory {
		return awserr.OutOfRange(awserr.ErrInvalidParameterValue, "MemorySize", c.MemorySize, MinMemory, MaxMemory)
	}
	if r := c.ReservedConcurrentExecutions; r != nil && (*r < 0 || *r > DefaultAccountConcurrency) {
		return awserr.OutOfRange(awserr.ErrInvalidParameterValue, "ReservedConcurrentExecutions", *r, 0, DefaultAccountConcurrency)
	}
	return checkEnvironment(c.Environment)
}

// MaxEnvironmentBytes is the most the environment variables of a
// function may hold, keys and values together: "The total size of the
// set can be no more than 4 KB" (configuration-envvars.html).
const MaxEnvironmentBytes = 4096

// envKeyRE is API_Environment's key pattern.
var envKeyRE = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_]+$`)

// reservedEnvKeys are the keys Lambda's runtimes set and a function's
// configuration cannot (configuration-envvars.html, "Defined runtime
// environment variables").
var reservedEnvKeys = map[string]bool{
	"_HANDLER": true, "_X_AMZN_TRACE_ID": true, "AWS_DEFAULT_REGION": true, "AWS_REGION": true, "AWS_EXECUTION_ENV": true,
	"AWS_LAMBDA_FUNCTION_NAME": true, "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": true, "AWS_LAMBDA_FUNCTION_VERSION": true,
	"AWS_LAMBDA_INITIALIZATION_TYPE": true, "AWS_LAMBDA_LOG_GROUP_NAME": true, "AWS_LAMBDA_LOG_STREAM_NAME": true,
	"AWS_ACCESS_KEY": true, "AWS_ACCESS_KEY_ID": true, "AWS_SECRET_ACCESS_KEY": true, "AWS_SESSION_TOKEN": true,
	"AWS_LAMBDA_RUNTIME_API": true, "LAMBDA_TASK_ROOT": true, "LAMBDA_RUNTIME_DIR": true,
}

// checkEnvironment applies Lambda's rules to a function's environment
// variables: the key pattern, no reserved key, 4 KB in all; the error is
// an InvalidParameterValueException in Lambda's words. Before, any map was
// taken: a function set AWS_REGION that its runtime then overrode.
func checkEnvironment(env map[string]string) error {
	size := 0
	var reserved []string
	for k, v := range env {
		if !envKeyRE.MatchString(k) {
			return awserr.New(awserr.ErrInvalidParameterValue, "Environment.Variables: the key %q does not match [a-zA-Z]([a-zA-Z0-9_])+", k)
		}
		if reservedEnvKeys[k] {
			reserved = append(reserved, k)
		}
		size += len(k) + len(v)
	}
	if len(reserved) > 0 {
		slices.Sort(reserved)
		return awserr.New(awserr.ErrInvalidParameterValue, "Lambda was unable to configure your environment variables because the environment variables you have provided contains reserved keys that are currently not supported for modification. Reserved keys used in this request: %s", strings.Join(reserved, ", "))
	}
	if size > MaxEnvironmentBytes {
		return awserr.New(awserr.ErrInvalidParameterValue, "Lambda was unable to configure your environment variables because the environment variables you have provided exceeded the 4KB limit (%d bytes of keys and values).", size)
	}
	return nil
}

// Result is the outcome of an invocation that ran (API_Invoke's response).
type Result struct {
	// RequestID identifies the invocation (a UUID).
	RequestID string
	// Response is the handler's typed response when it returned one (for a
	// KinesisHandler, *events.KinesisEventResponse); nil otherwise.
	Response any
	// Payload is the JSON the handler returned (raw handlers), or on a
	// function error the error as JSON.
	Payload []byte
	// FunctionError is "" on success and "Unhandled" on a function error.
	FunctionError string
	// Error describes the function error (nil on success).
	Error *InvokeError
	// Duration is how long the handler ran (up to the timeout).
	Duration time.Duration
}

// Failed reports whether the invocation ended in a function error.
func (r *Result) Failed() bool { return r.FunctionError != "" }

// Stats are a function's counters since the process started (Lambda's
// CloudWatch metrics of the same names).
type Stats struct {
	Invocations, Errors, Throttles int64
	ConcurrentExecutions           int64
	TotalDuration                  time.Duration
	// Abandoned counts invocations given up at their timeout (or
	// cancellation) before the handler returned.
	Abandoned int64
}

// Function is a configured function ready to invoke: $LATEST, a published
// version, or an alias's view of a version (Service.GetFunction).
type Function struct {
	cfg Config
	*core
}

// core is what the views of one function version share: the handler, the
// concurrency semaphore and the counters.
type core struct {
	sinks      *sinkRef  // the service's log sink (logging.go); nil: none
	streamOnce sync.Once // the log stream is named at the first line
	stream     string
	inv        invoker
	clock      clockwork.Clock
	log        *slog.Logger
	lim        *limiter // concurrency semaphore, shared by a function's versions
	// cluster counts a reservation across the nodes (concurrency.go);
	// nil outside a Service: the limiter alone.
	cluster *clusterSlots

	invocations, errors, throttles, running, durationNs, abandoned atomic.Int64
}

// New builds a Function from a configuration and a handler without an
// engine (the handler is not looked up in the registry). Service.Create
// uses it; tests use it directly.
func New(cfg Config, handler any, clock clockwork.Clock, log *slog.Logger) (*Function, error) {
	if cfg.Handler == "" {
		cfg.Handler = "inline"
	}
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	inv, err := toInvoker(handler)
	if err != nil {
		return nil, awserr.New(awserr.ErrInvalidParameterValue, "Handler: %v", err)
	}
	return newFunction(cfg, inv, clock, log), nil
}

func newFunction(cfg Config, inv invoker, clock clockwork.Clock, log *slog.Logger) *Function {
	if clock == nil {
		clock = clockwork.NewRealClock()
	}
	if log == nil {
		log = slog.Default()
	}
	n, reserved := DefaultAccountConcurrency, cfg.ReservedConcurrentExecutions != nil
	if reserved {
		n = *cfg.ReservedConcurrentExecutions
	}
	return &Function{cfg: cfg, core: &core{inv: inv, clock: clock, log: log, lim: newLimiter(n, reserved)}}
}

// withConfig is f seen with configuration cfg (an alias's ARN, the
// function's reserved concurrency on a version): the same handler,
// concurrency and counters.
func (f *Function) withConfig(cfg Config) *Function { return &Function{cfg: cfg, core: f.core} }

// withReserved is f with the function's reserved concurrency r (a version
// reports $LATEST's: the reservation is the function's).
func (f *Function) withReserved(r *int) *Function {
	cfg := f.cfg
	cfg.ReservedConcurrentExecutions = r
	return f.withConfig(cfg)
}

// Accepts reports whether the function's handler can take events of kind
// (EventKinesis, EventSQS). A handler typed for Kinesis events given a
// queue event would decode it into an empty Kinesis event and "succeed",
// deleting the messages: event source mappings refuse that pairing.
func (f *Function) Accepts(kind string) bool { return accepts(f.inv, kind) }

// Config returns the function's configuration.
func (f *Function) Config() Config { return f.cfg }

// Stats returns the function's counters.
func (f *Function) Stats() Stats {
	return Stats{Invocations: f.invocations.Load(), Errors: f.errors.Load(), Throttles: f.throttles.Load(),
		ConcurrentExecutions: f.running.Load(), TotalDuration: time.Duration(f.durationNs.Load()), Abandoned: f.abandoned.Load()}
}

// hiddenDeadline is a context whose deadline is not exposed.
type hiddenDeadline struct{ context.Context }

func (hiddenDeadline) Deadline() (time.Time, bool) { return time.Time{}, false }

type envKey struct{}

// Env returns the function's environment variables inside a handler.
func Env(ctx context.Context) map[string]string {
	m, _ := ctx.Value(envKey{}).(map[string]string)
	return m
}

// Invoke runs the handler once, synchronously (InvocationType
// RequestResponse). event is the typed event (for example
// *events.KinesisEvent), passed as is to a typed handler and as JSON to any
// other.
//
// Invoke returns an error only when the function did not run: a throttle
// (awserr.ErrTooManyRequests, when all its concurrency is in use: its
// reservation, counted across the nodes sharing the JetStream, or the
// account's unreserved concurrency on this node; it does not wait; see
// ThrottleReason), an event that does not encode, or (ErrService) a
// reserved function's slot that could not be taken from the bucket
// runnel_function_concurrency. A response (or error object) over
// MaxResponseSize is a function error, Function.ResponseSizeTooLarge. A handler error, a panic and a
// timeout are function errors: a Result with FunctionError "Unhandled".
//
// The timeout is a context deadline. A handler that ignores its context is
// abandoned at the deadline and its concurrency slot freed, as Lambda stops
// the environment. Trap: an in-process handler cannot be killed; its
// goroutine runs on until it returns, outside the concurrency limit, and is
// counted in Stats().Abandoned.
//
// A SelfTimed handler (a process function) keeps the Timeout itself,
// from when its runtime is ready (a cold start's init does not count):
// Invoke sets only a backstop deadline and, when ctx ends first, waits
// (at most selfTimedGrace) for the handler to stop its environment and
// write the invocation's last log lines, so that a Tail has them.
//
// Cancelling ctx ends the invocation (a Canceled function error) as the
// Timeout does: that is the in-process API's contract. Lambda's Invoke
// endpoint and function URLs run a synchronous invocation to its end or
// its Timeout whatever the HTTP caller does: package awsapi passes a
// context that a disconnect does not cancel.
func (f *Function) Invoke(ctx context.Context, event any) (*Result, error) {
	// Encode the event before taking a slot, unless the handler takes it
	// typed: an event that does not encode is the caller's error.
	var marshalled []byte
	if !acceptsTyped(f.inv, event) {
		if b, ok := event.([]byte); ok {
			marshalled = b
		} else {
			var err error
			if marshalled, err = marshalEvent(event); err != nil {
				return nil, awserr.New(awserr.ErrInvalidParameterValue, "Could not parse request body into json: %v", err)
			}
		}
	}
	payload := func() ([]byte, error) {
		if marshalled == nil {
			var err error
			if marshalled, err = marshalEvent(event); err != nil {
				return nil, err
			}
		}
		return marshalled, nil
	}
	limit := time.Duration(f.cfg.Timeout) * time.Second
	sl, _ := f.inv.(selfLogged)
	if sl.bound > 0 {
		limit = sl.bound + selfTimedGrace // the handler times out first
	}
	g := f.lim.get()
	slots := g.ch
	select {
	case slots <- struct{}{}:
	default:
		f.throttles.Add(1)
		if !g.reserved {
			return nil, awserr.New(awserr.ErrTooManyRequests, "Rate Exceeded. (function %s: the %s, %d on this node, is in use)", f.cfg.FunctionName, unreservedPhrase, cap(slots))
		}
		return nil, awserr.New(awserr.ErrTooManyRequests, "Rate Exceeded. (function %s: reserved concurrency %d in use)", f.cfg.FunctionName, cap(slots))
	}
	var slotKey string // the cluster-wide slot taken, if any
	var slotRev uint64
	if g.reserved && cap(slots) > 0 && f.cluster != nil {
		key, rev, err := f.cluster.acquire(ctx, f.cfg.FunctionName, cap(slots), limit)
		if err != nil {
			<-slots
			if errors.Is(err, errSlotsFull) {
				f.throttles.Add(1)
				return nil, awserr.New(awserr.ErrTooManyRequests, "Rate Exceeded. (function %s: reserved concurrency %d in use across the cluster)", f.cfg.FunctionName, cap(slots))
			}
			return nil, awserr.New(awserr.ErrService, "function %s: take a reserved concurrency slot: %v", f.cfg.FunctionName, err)
		}
		slotKey, slotRev = key, rev
	}
	f.invocations.Add(1)
	f.running.Add(1)
	res := &Result{RequestID: uuid.NewString()}
	if id, ok := ctx.Value(requestIDKey{}).(string); ok {
		res.RequestID = id // an asynchronous event's retry keeps its id
	}
	ilog := f.invocationLog(ctx, res.RequestID)
	ilog.start()
	ctx, cancel := clockwork.WithTimeout(ctx, f.clock, limit)
	defer cancel()
	if _, fake := f.clock.(*clockwork.FakeClock); fake {
		// A fake-clock deadline means nothing to libraries that read
		// ctx.Deadline() against the wall clock (nats.go would fail every
		// call at once): hide it; the context still ends on fake time.
		ctx = hiddenDeadline{ctx}
	}
	lc := &lambdacontext.LambdaContext{AwsRequestID: res.RequestID, InvokedFunctionArn: f.cfg.FunctionArn}
	if raw := ClientContextOf(ctx); raw != nil {
		lc.ClientContext = lambdaClientContext(raw)
	}
	ctx = lambdacontext.NewContext(ctx, lc)
	if f.cfg.Environment != nil {
		ctx = context.WithValue(ctx, envKey{}, f.cfg.Environment)
	}
	type outcome struct {
		resp any
		out  []byte
		err  *InvokeError
	}
	done := make(chan outcome, 1)
	start := f.clock.Now()
	release := sync.OnceFunc(func() {
		f.running.Add(-1)
		if slotKey != "" {
			f.cluster.release(slotKey, slotRev)
		}
		<-slots
	})
	go func() {
		var o outcome
		// Release the slot before reporting, so a caller that invokes again
		// as soon as this returns finds it free.
		defer func() {
			release()
			done <- o
		}()
		defer func() {
			if v := recover(); v != nil {
				o = outcome{err: panicResponse(v)}
			}
		}()
		resp, out, err := f.inv.invoke(ctx, event, payload)
		if err != nil {
			o = outcome{err: errorResponse(err)}
			return
		}
		o = outcome{resp: resp, out: out}
	}()
	var o outcome
	select {
	case o = <-done:
		// A handler that returns after its deadline still timed out. (Check
		// Done before Err: a clockwork fake-clock context's Err blocks until
		// the context is done.)
		select {
		case <-ctx.Done():
			if o.err == nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
				o = outcome{err: timeoutError(f.cfg.Timeout)}
			}
		default:
		}
	case <-ctx.Done():
		returned := false
		if sl.bound > 0 {
			// The handler stops its environment at ctx's end and then
			// writes the timeout's line, END and REPORT: wait for them.
			select {
			case o = <-done:
				returned = true
			case <-f.clock.After(selfTimedGrace):
			}
		}
		timedOut := errors.Is(ctx.Err(), context.DeadlineExceeded)
		switch {
		case returned:
			if timedOut && (o.err == nil || o.err.Type != TimeoutErrorType) {
				o = outcome{err: timeoutError(f.cfg.Timeout)}
			}
		case timedOut:
			o = outcome{err: timeoutError(f.cfg.Timeout)}
		default:
			o = outcome{err: &InvokeError{Message: ctx.Err().Error(), Type: "Canceled"}}
		}
		if !returned {
			release() // the environment is stopped: its concurrency is free
			f.abandoned.Add(1)
		}
	}
	res.Duration = f.clock.Since(start)
	f.durationNs.Add(int64(res.Duration))
	if o.err != nil && o.err.Type == TimeoutErrorType {
		ilog.line(TimeoutLine(f.clock.Now(), res.RequestID, f.cfg.Timeout))
	}
	ilog.end(res.Duration)
	if o.err == nil && len(o.out) > MaxResponseSize {
		o = outcome{err: responseTooLarge()}
	}
	if o.err != nil {
		f.errors.Add(1)
		res.FunctionError = FunctionErrorUnhandled
		res.Error = o.err
		res.Payload, _ = json.Marshal(o.err)
		if len(res.Payload) > MaxResponseSize {
			res.Error = responseTooLarge()
			res.Payload, _ = json.Marshal(res.Error)
		}
		return res, nil
	}
	res.Response, res.Payload = o.resp, o.out
	return res, nil
}

// MaxResponseSize is the largest response (or error object) an invocation
// may return, in bytes: 6 MiB + 100, 6291556, the limit of Lambda's
// runtime interface and of process functions (process.MaxResponseSize).
// An in-process handler's JSON response over it, or an error object over
// it, becomes the function error Function.ResponseSizeTooLarge
// (FunctionError "Unhandled", still a 200 on the Invoke API), as Lambda
// reports it. Trap: the typed response of a Kinesis, SQS or DynamoDB
// handler (batchItemFailures) is not encoded here and not measured.
const MaxResponseSize = 6*1024*1024 + 100

// responseTooLarge is Lambda's error for a response over MaxResponseSize,
// in the words of the runtime interface (process/runtimeapi.go).
func responseTooLarge() *InvokeError {
	return &InvokeError{Type: "Function.ResponseSizeTooLarge",
		Message: fmt.Sprintf("Response payload size exceeded maximum allowed payload size (%d bytes).", MaxResponseSize)}
}

// selfTimedGrace is how long past a SelfTimed handler's
// MaxInvocationTime Invoke's backstop deadline comes, and how long Invoke
// then waits for the handler to return (it kills its environment and
// writes END and REPORT, which takes milliseconds) before abandoning it.
const selfTimedGrace = 5 * time.Second

// marshalEvent is json.Marshal(event); a DynamoDB stream mapping's event
// is written by wire/ddbjson (the same bytes, a seventh of the CPU).
func marshalEvent(event any) ([]byte, error) {
	switch ev := event.(type) {
	case *events.DynamoDBEvent:
		if ev != nil {
			return ddbjson.AppendEvent(nil, ev), nil
		}
	case events.DynamoDBEvent:
		return ddbjson.AppendEvent(nil, &ev), nil
	}
	return json.Marshal(event)
}
