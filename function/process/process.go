// Package process runs Lambda functions as processes: an unmodified custom
// runtime binary (`bootstrap`, for example one built with
// github.com/aws/aws-lambda-go and -tags lambda.norpc) talking to the Lambda
// Runtime API (SPEC 4) that runnel serves.
//
// Each execution environment is one bootstrap process with its own Runtime
// API server on 127.0.0.1 (a random port, in AWS_LAMBDA_RUNTIME_API), as each
// Lambda sandbox has its own. A Function keeps a pool of them: an
// environment is started on first use (a cold start), reused when idle, and
// at most the reserved concurrency run at once. An environment that runs
// out of time is killed and replaced; one whose process exits (aws-lambda-go
// exits after reporting a panic) is replaced.
//
// A *Function implements aws-lambda-go's lambda.Handler, so it can be given
// to function.Register or function.New wherever an in-process handler can:
//
//	fn, err := process.Handler(process.Config{Config: cfg, Code: zipBytes})
//	function.Register("orders", fn)
//
// Its errors are *function.InvokeError, passed through unchanged by package
// function.
package process

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/google/uuid"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/function"
)

// Config configures a process function.
type Config struct {
	// Config is the function's configuration: FunctionName, Timeout,
	// MemorySize, ReservedConcurrentExecutions (the most environments that
	// run at once; nil for the account's 1000), Environment and
	// FunctionArn. Handler is passed to the runtime as _HANDLER (for a
	// custom runtime usually "bootstrap", the default).
	function.Config

	// Code is the deployment package: a zip holding an executable
	// `bootstrap` at its root.
	Code []byte
	// CodeDir is an already unpacked deployment package, used in place
	// when Code is nil (and not removed by Close).
	CodeDir string
	// Layers are the zips of the function's layers, in order (a later one
	// overwrites an earlier one's files), unpacked into the environment's
	// /opt: a directory of the function's own, whose bin, lib, python and
	// nodejs/nodeNN/node_modules, nodejs/node_modules are on PATH,
	// LD_LIBRARY_PATH, PYTHONPATH and NODE_PATH as Lambda puts /opt's
	// (an ES module's imports find the NODE_PATH packages too: bootstrap.cjs).
	Layers [][]byte
	// WorkDir is where the zip is unpacked (os.TempDir() when empty); a
	// relative WorkDir is taken against the current directory when
	// Handler is called.
	WorkDir string

	// Region and AccountID are used in AWS_REGION and the default
	// FunctionArn; default us-east-1 and 000000000000.
	Region    string
	AccountID string
	// Endpoint, when set, is passed as AWS_ENDPOINT_URL so that AWS SDKs in
	// the function call runnel.
	Endpoint string

	// Runtime is the function's Lambda runtime: empty or provided.* run
	// the package's bootstrap; python3.x and nodejs* run the code on this
	// machine's interpreter (managed.go), Handler naming the handler as
	// Lambda does (module.function, index.handler).
	Runtime string
	// Logs, when set, stores the function's log (logs.go): a log stream
	// per environment in group /aws/lambda/<name>, with START, END and
	// REPORT lines.
	Logs LogSink

	// Logger receives the function's log lines, a record per line with
	// the function name and the request id; slog.Default() when nil.
	Logger *slog.Logger
}

// Stats count a process function's environments.
type Stats struct {
	// ColdStarts counts environments started.
	ColdStarts int64
	// Live is the number of environments whose process is running; Idle
	// of those, the ones waiting for an invocation.
	Live, Idle int
}

// Function is a process function: a pool of execution environments
// running the function's bootstrap.
type Function struct {
	cfg      Config
	root     string // LAMBDA_TASK_ROOT
	base     string // directory created by Handler, removed by Close ("" if none)
	log      *slog.Logger
	max      int
	timeout  time.Duration
	nextEnv  atomic.Int64
	started  atomic.Int64
	mu       sync.Mutex
	idle     []*env // LIFO: the most recently used environment is reused first
	all      map[*env]struct{}
	changed  chan struct{} // closed and replaced when an environment is freed
	closed   bool
	closedCh chan struct{}
	interp   *interpreter // a managed runtime's; nil for a provided one
	opt      string       // the unpacked layers ("" without layers)
	command  []string     // an environment's command line
}

// Handler builds a process function from its configuration: it validates
// the configuration, unpacks the deployment package and checks that it
// holds a bootstrap. No process is started until the first invocation.
func Handler(cfg Config) (*Function, error) {
	if cfg.Handler == "" {
		cfg.Handler = "bootstrap"
	}
	cfg.Config = cfg.Config.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	if cfg.AccountID == "" {
		cfg.AccountID = "000000000000"
	}
	if cfg.FunctionArn == "" {
		cfg.FunctionArn = fmt.Sprintf("arn:aws:lambda:%s:%s:function:%s", cfg.Region, cfg.AccountID, cfg.FunctionName)
	}
	if cfg.WorkDir != "" {
		// The bootstrap's path is below WorkDir and the process runs in
		// the task root: a relative path would be resolved against that
		// directory by exec and never found.
		abs, err := filepath.Abs(cfg.WorkDir)
		if err != nil {
			return nil, awserr.New(awserr.ErrService, "work directory: %v", err)
		}
		cfg.WorkDir = abs
	}
	f := &Function{cfg: cfg, log: cfg.Logger, all: map[*env]struct{}{}, changed: make(chan struct{}), closedCh: make(chan struct{})}
	if f.log == nil {
		f.log = slog.Default()
	}
	f.max = function.DefaultAccountConcurrency
	if r := cfg.ReservedConcurrentExecutions; r != nil {
		f.max = *r
	}
	f.timeout = time.Duration(cfg.Timeout) * time.Second
	if IsManagedRuntime(cfg.Runtime) {
		in, err := findInterpreter(cfg.Runtime)
		if err != nil {
			return nil, err
		}
		f.interp = in
		if in.warning != "" {
			f.log.Warn(in.warning, "function", cfg.FunctionName)
		}
	}
	switch {
	case cfg.Code != nil:
		base, err := os.MkdirTemp(cfg.WorkDir, "runnel-fn-"+cfg.FunctionName+"-")
		if err != nil {
			return nil, awserr.New(awserr.ErrService, "unpack code: %v", err)
		}
		f.base = base
		f.root = filepath.Join(base, "task")
		if err := unzip(cfg.Code, f.root); err != nil {
			os.RemoveAll(base)
			return nil, awserr.New(awserr.ErrInvalidParameterValue, "Code: %v", err)
		}
	case cfg.CodeDir != "":
		root, err := filepath.Abs(cfg.CodeDir)
		if err != nil {
			return nil, awserr.New(awserr.ErrInvalidParameterValue, "CodeDir: %v", err)
		}
		f.root = root
		if f.base, err = os.MkdirTemp(cfg.WorkDir, "runnel-fn-"+cfg.FunctionName+"-"); err != nil {
			return nil, awserr.New(awserr.ErrService, "work directory: %v", err)
		}
	default:
		return nil, awserr.New(awserr.ErrInvalidParameterValue, "Code: a zip holding bootstrap is required")
	}
	if len(cfg.Layers) > 0 {
		f.opt = filepath.Join(f.base, "opt")
		for i, z := range cfg.Layers {
			if err := unzip(z, f.opt); err != nil {
				f.removeBase()
				return nil, awserr.New(awserr.ErrInvalidParameterValue, "Layers[%d]: %v", i, err)
			}
		}
	}
	if f.interp != nil {
		cmd, err := f.interp.install(filepath.Join(f.base, "runtime"))
		if err != nil {
			f.removeBase()
			return nil, awserr.New(awserr.ErrService, "install the runtime client: %v", err)
		}
		f.command = cmd
		return f, nil
	}
	if st, err := os.Stat(filepath.Join(f.root, "bootstrap")); err != nil || st.IsDir() {
		f.removeBase()
		return nil, awserr.New(awserr.ErrInvalidParameterValue, "Code: the deployment package holds no bootstrap file at its root (a provided runtime needs one)")
	}
	f.command = []string{filepath.Join(f.root, "bootstrap")}
	return f, nil
}

// RuntimeWarning is what differs between the function's runtime and the
// interpreter it runs on ("" when nothing does): CreateFunction reports
// it, and each environment's log begins with it.
func (f *Function) RuntimeWarning() string {
	if f.interp == nil {
		return ""
	}
	return f.interp.warning
}

// Config returns the function's configuration (with defaults applied).
func (f *Function) Config() Config { return f.cfg }

// TaskRoot is the directory the code was unpacked into (LAMBDA_TASK_ROOT).
func (f *Function) TaskRoot() string { return f.root }

// Stats returns the pool's counters.
func (f *Function) Stats() Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	live := 0
	for e := range f.all {
		if e.alive() { // not one whose process exited and reap has yet to forget
			live++
		}
	}
	idle := 0
	for _, e := range f.idle {
		if e.alive() {
			idle++
		}
	}
	return Stats{ColdStarts: f.started.Load(), Live: live, Idle: idle}
}

// InitTimeout bounds an environment's init phase (the runtime's start
// and the function's module-level code, up to its first /next), apart
// from the function's Timeout: "The Init phase is limited to 10 seconds"
// (lambda-runtime-environment.html, Init phase).
const InitTimeout = 10 * time.Second

// initTimeout is InitTimeout, shortened by tests.
var initTimeout = InitTimeout

// MaxInvocationTime is the longest Invoke can take (function.SelfTimed):
// the Timeout to wait for an environment, InitTimeout, and the Timeout of
// the invocation.
func (f *Function) MaxInvocationTime() time.Duration { return 2*f.timeout + initTimeout }

// Invoke runs one invocation in an environment of the pool (lambda.Handler).
// The request id and the client context are taken from ctx's
// lambdacontext when package function set them, else a new UUID.
//
// The function's Timeout (seconds) limits the Invoke phase: it starts when
// the invocation is handed to a ready runtime, so a cold start's init
// does not count against it (Lambda-Runtime-Deadline-Ms, and so
// get_remaining_time_in_millis, is Timeout from there). The init is
// bounded by InitTimeout (10 s); an init still running then goes on
// within the invocation's Timeout, counted from the 10 s mark. (Lambda
// instead restarts the init inside the invocation, with the function's
// timeout; either way a hung init ends.) Trap: before, the Timeout ran
// from the call, so a function whose init took most of it timed out on
// every cold start, and a timeout made the next call cold again.
//
// The invocation also ends when ctx ends (the in-process API's caller
// cancelled); the environment is then killed and replaced, as at a
// timeout. Waiting for a free environment (all the reserved concurrency
// busy) is bounded by the Timeout too.
//
// Errors are *function.InvokeError: the function's own error as the runtime
// reported it, Sandbox.Timedout ("Task timed out after N.00 seconds"),
// Runtime.ExitError when the process exited without reporting one, or an
// init error. A throttle (reserved concurrency 0) is an awserr error.
func (f *Function) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	if f.max == 0 {
		return nil, awserr.New(awserr.ErrTooManyRequests, "Rate Exceeded. (function %s: reserved concurrency 0)", f.cfg.FunctionName)
	}
	inv := &invocation{payload: payload, arn: f.cfg.FunctionArn, done: make(chan result, 1), tail: tailOf(ctx)}
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		inv.id = lc.AwsRequestID
		if lc.InvokedFunctionArn != "" {
			inv.arn = lc.InvokedFunctionArn
		}
		inv.clientContext = lc.ClientContext
		inv.identity = lc.Identity
		inv.tenantID = lc.TenantID
	}
	inv.rawClientContext = function.ClientContextOf(ctx)
	if inv.id == "" {
		inv.id = uuid.NewString()
	}
	inv.traceID = newTraceID()
	waitCtx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()

	for {
		e, cold, err := f.acquire(waitCtx)
		if err != nil {
			return nil, f.ctxError(waitCtx, err)
		}
		out, retry, err := f.run(ctx, e, inv, cold)
		if !retry {
			return out, err
		}
		// The environment died before taking the invocation: try another.
	}
}

// run delivers inv to e and waits for its outcome, between the START and
// the END and REPORT lines of e's log. retry reports that e exited before
// the runtime took the invocation, so it can go elsewhere. cold: e was
// started for inv.
//
// The invocation's deadline (ctx's, and Lambda-Runtime-Deadline-Ms) is
// the function's Timeout after e is ready: after a cold start's init, or
// after InitTimeout from e's start when the init is not done by then.
func (f *Function) run(ctx context.Context, e *env, inv *invocation, cold bool) (out []byte, retry bool, err error) {
	invokeStart := time.Now()
	if cold {
		// The init phase's output comes before START, as in Lambda.
		e.mu.Lock()
		initEnd := e.startedAt.Add(initTimeout)
		e.mu.Unlock()
		bound := time.NewTimer(time.Until(initEnd))
		select {
		case <-e.readyCh:
			e.awaitFlush()
			invokeStart = time.Now()
		case <-e.initFailed:
		case <-e.exited:
		case <-ctx.Done():
		case <-bound.C:
			// Init past its 10 s: the rest of it counts against the
			// invocation's Timeout.
			invokeStart = initEnd
		}
		bound.Stop()
	}
	ctx, cancel := context.WithDeadline(ctx, invokeStart.Add(f.timeout))
	defer cancel()
	inv.deadline, _ = ctx.Deadline()
	if !cold && !e.alive() {
		return nil, true, nil // gone while idle: START goes to the next one
	}
	e.logStart(inv)
	timedOut := false
	defer func() {
		if !retry {
			e.logEnd(inv, cold, timedOut)
		}
	}()
	if !e.offer(inv) {
		if cold && !e.wasReady() { // exited during init
			if err := e.initError(); err != nil {
				return nil, false, err
			}
			return nil, false, exitError(inv.id, e.exitErr)
		}
		return nil, true, nil
	}
	select {
	case r := <-inv.done:
		e.awaitFlush()
		f.release(e)
		return r.out, false, errOrNil(r.err)
	case <-e.initFailed:
		e.kill()
		return nil, false, e.initError()
	case <-e.exited:
		select {
		case r := <-inv.done: // reported, then exited (a panic)
			return r.out, false, errOrNil(r.err)
		default:
		}
		if err := e.initError(); err != nil {
			return nil, false, err
		}
		if !e.wasReady() || !e.withdraw(inv) {
			// Exited during init, or took the invocation and never
			// answered it.
			return nil, false, exitError(inv.id, e.exitErr)
		}
		return nil, true, nil
	case <-ctx.Done():
		select {
		case r := <-inv.done: // answered as time ran out
			e.awaitFlush()
			f.release(e)
			return r.out, false, errOrNil(r.err)
		default:
		}
		e.kill() // the environment is stopped and replaced
		timedOut = errors.Is(ctx.Err(), context.DeadlineExceeded)
		return nil, false, f.ctxError(ctx, ctx.Err())
	}
}

func errOrNil(e *function.InvokeError) error {
	if e == nil {
		return nil
	}
	return e
}

func (f *Function) ctxError(ctx context.Context, err error) error {
	var ae *awserr.Error
	var ie *function.InvokeError
	if errors.As(err, &ae) || errors.As(err, &ie) {
		return err
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &function.InvokeError{Message: fmt.Sprintf("Task timed out after %d.00 seconds", f.cfg.Timeout), Type: function.TimeoutErrorType}
	}
	if ctx.Err() != nil {
		return &function.InvokeError{Message: ctx.Err().Error(), Type: "Canceled"}
	}
	return &function.InvokeError{Message: err.Error(), Type: "Runtime.Unknown"}
}

// acquire returns an idle environment, or starts one (cold) if fewer than
// the reserved concurrency are live, or waits for one to be freed.
func (f *Function) acquire(ctx context.Context) (e *env, cold bool, err error) {
	for {
		f.mu.Lock()
		if f.closed {
			f.mu.Unlock()
			return nil, false, awserr.New(awserr.ErrResourceNotFound, "function %s is closed", f.cfg.FunctionName)
		}
		if n := len(f.idle); n > 0 {
			e := f.idle[n-1]
			f.idle = f.idle[:n-1]
			f.mu.Unlock()
			if e.alive() {
				return e, false, nil
			}
			continue
		}
		if len(f.all) < f.max {
			e := f.newEnv()
			f.all[e] = struct{}{}
			f.mu.Unlock()
			if err := e.start(); err != nil {
				f.remove(e)
				return nil, false, &function.InvokeError{Message: fmt.Sprintf("Couldn't start the runtime: %v", err), Type: "Runtime.InvalidEntrypoint"}
			}
			f.started.Add(1)
			return e, true, nil
		}
		ch := f.changed
		f.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, false, ctx.Err()
		}
	}
}

// Prestart starts environments until n are live (at most the pool's
// limit) and waits for each to finish its init phase, then leaves them
// idle: the invocations they take are warm (no Init Duration in REPORT),
// as with Lambda's provisioned concurrency. Their
// AWS_LAMBDA_INITIALIZATION_TYPE is "provisioned-concurrency". It
// returns the init error of an environment that failed, or ctx's error.
func (f *Function) Prestart(ctx context.Context, n int) error {
	var started []*env
	f.mu.Lock()
	for len(f.all) < min(n, f.max) && !f.closed {
		e := f.newEnv()
		e.provisioned = true
		f.all[e] = struct{}{}
		started = append(started, e)
	}
	f.mu.Unlock()
	var errs []error
	for _, e := range started {
		if err := e.start(); err != nil {
			f.remove(e)
			errs = append(errs, err)
			continue
		}
		f.started.Add(1)
	}
	for _, e := range started {
		select {
		case <-e.readyCh:
			e.awaitFlush()
			f.release(e)
		case <-e.initFailed:
			errs = append(errs, e.initError())
		case <-e.exited:
			f.remove(e)
			errs = append(errs, fmt.Errorf("environment exited during init"))
		case <-ctx.Done():
			errs = append(errs, ctx.Err())
		}
	}
	return errors.Join(errs...)
}

func (f *Function) broadcastLocked() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// release returns an environment to the idle pool.
func (f *Function) release(e *env) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.all[e]; ok && e.alive() && !f.closed {
		f.idle = append(f.idle, e)
	}
	f.broadcastLocked()
}

// remove forgets an environment whose process exited (or never started).
func (f *Function) remove(e *env) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.all, e)
	for i, x := range f.idle {
		if x == e {
			f.idle = append(f.idle[:i], f.idle[i+1:]...)
			break
		}
	}
	f.broadcastLocked()
}

// Close kills the function's environments and removes its unpacked code.
func (f *Function) Close() error {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil
	}
	f.closed = true
	close(f.closedCh)
	envs := make([]*env, 0, len(f.all))
	for e := range f.all {
		envs = append(envs, e)
	}
	f.idle = nil
	f.broadcastLocked()
	f.mu.Unlock()
	for _, e := range envs {
		e.kill()
	}
	for _, e := range envs {
		<-e.exited
	}
	f.removeBase()
	return nil
}

func (f *Function) removeBase() {
	if f.base != "" {
		os.RemoveAll(f.base)
	}
}
