package awsapi

// Lambda: process functions, the functions of a provided.* runtime whose
// code is a zip holding an executable bootstrap (package
// function/process). Their code is stored in the JetStream object store
// FunctionCodeBucket, what the Lambda API reports beyond function.Config
// in the KV bucket functionMetaBucket; each runs under the registered
// handler "process:<name>". Every node runs its own pool of a function:
// the node that takes a create or update builds it, and the others build
// theirs from the stored code when their watch applies the stored
// configuration (onStored, the function.Service's stored hook). The
// Handler that started the pools owns them (Handler.procs) and stops them
// on Close; a pool replaced by an update is closed once its running
// invocations have finished (procPool.retire).

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/function/process"
)

const (
	// FunctionCodeBucket is the JetStream object store holding the
	// deployment packages (zips) of process functions, key = function name.
	FunctionCodeBucket = "runnel_function_code"
	// functionMetaBucket keeps what the Lambda API reports about a function
	// beyond function.Config (Runtime, the runtime's Handler, Role...).
	functionMetaBucket = "runnel_lambda_functions"
	// ProcessHandlerPrefix begins the registered handler name of every
	// process function: "process:<function name>".
	ProcessHandlerPrefix = "process:"
	// RuntimeRunnel is the Runtime of in-process functions.
	RuntimeRunnel = "runnel"
)

// processRuntimes are the custom runtimes a process function may name;
// the managed runtimes python3.x and nodejs* are process functions too,
// run on this machine's interpreter (process.IsManagedRuntime).
var processRuntimes = []string{"provided.al2023", "provided.al2", "provided"}

// isProcessRuntime reports whether a function of runtime is a process
// function.
func isProcessRuntime(runtime string) bool {
	return slices.Contains(processRuntimes, runtime) || process.IsManagedRuntime(runtime)
}

// processFunctions are the process functions a Handler started, by key:
// the function's name for $LATEST, "<name>:<version>" for a published
// version. A closed pool stays until one replaces it (Close, then
// RestoreProcessFunctions), so that an invocation still holding it goes to
// its successor.
type processFunctions struct {
	mu       sync.Mutex
	m        map[string]*procPool
	retiring map[*procPool]struct{} // replaced pools waiting for their invocations
	// deployMu serializes building and installing $LATEST's pools: a
	// deploy through this node's API (from the new pool through the stored
	// configuration) and the stored hook applying another node's change.
	deployMu sync.Mutex
	// unhook removes the Handler's stored hook (RestoreProcessFunctions
	// installs it, closeAll removes it).
	unhook func()
}

// get is the pool of key, nil if none.
func (p *processFunctions) get(key string) *procPool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.m[key]
}

// live reports whether key runs in this Handler.
func (p *processFunctions) live(key string) bool {
	pf := p.get(key)
	return pf != nil && pf.live()
}

// install makes pool key's; the pool it replaces is retired (pool takes
// its later invocations; it is closed once those running finish).
func (p *processFunctions) install(key string, pool *procPool, clock clockwork.Clock) {
	p.mu.Lock()
	if p.m == nil {
		p.m = map[string]*procPool{}
	}
	old := p.m[key]
	p.m[key] = pool
	p.mu.Unlock()
	if old != nil && old != pool {
		p.retire(old, pool, clock)
	}
}

// retire closes old once its running invocations have finished (at the
// latest when its own MaxInvocationTime plus retireGrace has passed on
// clock); next, when not nil, takes the invocations that reach old from
// now on.
func (p *processFunctions) retire(old, next *procPool, clock clockwork.Clock) {
	p.mu.Lock()
	if p.retiring == nil {
		p.retiring = map[*procPool]struct{}{}
	}
	p.retiring[old] = struct{}{}
	p.mu.Unlock()
	old.retire(next, clock, func() {
		p.mu.Lock()
		delete(p.retiring, old)
		p.mu.Unlock()
	})
}

// remove retires the pool of key (its running invocations finish) and
// forgets it.
func (p *processFunctions) remove(key string, clock clockwork.Clock) {
	p.mu.Lock()
	old := p.m[key]
	delete(p.m, key)
	p.mu.Unlock()
	if old != nil {
		p.retire(old, nil, clock)
	}
}

// closeAll stops every pool now, the retiring ones too, and removes the
// stored hook.
func (p *processFunctions) closeAll() {
	p.mu.Lock()
	pools := make([]*procPool, 0, len(p.m)+len(p.retiring))
	for _, f := range p.m {
		pools = append(pools, f) // kept, closed: RestoreProcessFunctions replaces it
	}
	for f := range p.retiring {
		pools = append(pools, f)
	}
	unhook := p.unhook
	p.unhook = nil
	p.mu.Unlock()
	if unhook != nil {
		unhook()
	}
	for _, f := range pools {
		f.close()
	}
}

// retireGrace is what a replaced pool gets past its MaxInvocationTime
// before it is closed with invocations still running (package function's
// own backstop has ended them by then).
const retireGrace = 5 * time.Second

// procPool is a process function's pool as registered (a lambda.Handler,
// function.SelfLogging and function.SelfTimed through its
// process.Function): it counts its running invocations, so that a pool
// replaced by an update is closed only once they have finished. Before,
// the replaced pool was closed when the NEW Timeout plus 1 s had passed:
// lowering the Timeout (or any change, on a cold start) killed the
// invocations already running (Runtime.ExitError "signal: killed").
type procPool struct {
	*process.Function
	// spec is poolSpec of what the pool was built from.
	spec string

	mu       sync.Mutex
	running  int
	closed   bool
	retiring bool
	next     *procPool     // takes the invocations once retiring
	drained  chan struct{} // closed when running reaches 0 while retiring
}

func newPool(f *process.Function, spec string) *procPool { return &procPool{Function: f, spec: spec} }

// live reports whether the pool takes invocations of its own.
func (p *procPool) live() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.closed && !p.retiring
}

// Invoke runs an invocation in the pool, or in the pool that replaced it
// once it is retiring (an invocation that looked the function up before
// the update).
func (p *procPool) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	p.mu.Lock()
	if next := p.next; next != nil && (p.retiring || p.closed) {
		p.mu.Unlock()
		return next.Invoke(ctx, payload)
	}
	p.running++
	p.mu.Unlock()
	defer p.finish()
	return p.Function.Invoke(ctx, payload)
}

func (p *procPool) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.running--
	if p.running == 0 && p.drained != nil {
		close(p.drained)
		p.drained = nil
	}
}

// retire makes next (nil: none) take the pool's later invocations and
// closes the pool once its running ones have finished, or when its
// MaxInvocationTime (the OLD Timeout twice plus the init's 10 s) and
// retireGrace have passed on clock; done runs after.
func (p *procPool) retire(next *procPool, clock clockwork.Clock, done func()) {
	p.mu.Lock()
	p.next = next
	if p.retiring || p.closed {
		p.mu.Unlock()
		done()
		return
	}
	p.retiring = true
	drained := make(chan struct{})
	if p.running == 0 {
		close(drained)
	} else {
		p.drained = drained
	}
	p.mu.Unlock()
	limit := p.MaxInvocationTime() + retireGrace
	go func() {
		t := clock.NewTimer(limit)
		defer t.Stop()
		select {
		case <-drained:
		case <-t.Chan():
		}
		p.close()
		done()
	}()
}

// close stops the pool now (its environments are killed).
func (p *procPool) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.Function.Close()
}

// poolSpec identifies what a pool is built from: the configuration its
// environments see (Timeout, MemorySize, Environment, ARN, version) and
// the code (CodeSha256), Runtime, Handler and Layers. A change of
// anything else (Description, Role, reserved concurrency, the dead-letter
// queue) keeps the pool and its warm environments.
func poolSpec(cfg function.Config, meta *functionMeta) string {
	cfg.RevisionId, cfg.LastVersion, cfg.Handler = "", 0, ""
	cfg.ReservedConcurrentExecutions, cfg.DeadLetterConfig = nil, nil
	cfg = cfg.WithDefaults()
	b, _ := json.Marshal(struct {
		C                            function.Config
		Runtime, Handler, CodeSha256 string
		Layers                       []string
	}{cfg, meta.Runtime, meta.Handler, meta.CodeSha256, meta.Layers})
	return codeDigest(b)
}

// functionMeta is what the Lambda API reports about a function beyond its
// function.Config.
type functionMeta struct {
	Runtime      string
	Handler      string
	Role         string `json:",omitempty"`
	Description  string `json:",omitempty"`
	CodeSha256   string `json:",omitempty"`
	CodeSize     int64  `json:",omitempty"`
	LastModified time.Time
	// RuntimeWarning is what differs between a managed runtime and the
	// interpreter it runs on (StateReason).
	RuntimeWarning string `json:",omitempty"`
	// Fingerprint is set on a published version's: what it froze
	// (lambda_versions.go's fingerprint).
	Fingerprint string `json:",omitempty"`
	// Layers are the ARNs of the layer versions a process function uses
	// (lambda_layers.go).
	Layers []string `json:",omitempty"`
	// EphemeralStorage is the /tmp size in MB (512..10240; 0: 512),
	// Architectures the one instruction set (x86_64 or arm64; none:
	// x86_64), TracingMode Active or PassThrough ("": PassThrough), as
	// configured (informational: runnel runs the code on this machine).
	EphemeralStorage int      `json:",omitempty"`
	Architectures    []string `json:",omitempty"`
	TracingMode      string   `json:",omitempty"`
}

func (m *functionMeta) isProcess() bool { return isProcessRuntime(m.Runtime) }

// RestoreProcessFunctions installs the Handler's stored hook
// (function.Service.OnStored: onStored) and starts every stored process
// function and published version that does not run in this Handler
// (never started here, or stopped by Close) from its stored code, then the
// provisioned concurrency configurations. It writes nothing: the stored
// configurations keep their RevisionIds (before, every node's start
// stored $LATEST again, with a new RevisionId, possibly over a concurrent
// update). NewLambdaHandler and NewEndpoint call it.
func (h *Handler) RestoreProcessFunctions(ctx context.Context) error {
	h.procs.mu.Lock()
	if h.procs.unhook == nil {
		h.procs.unhook = h.rn.Functions.OnStored(h.onStored)
	}
	h.procs.mu.Unlock()
	err := h.rn.Functions.Resync(ctx)
	return errors.Join(err, h.restoreProvisioned(ctx))
}

// onStored is the Handler's function.StoredHook: for a process function
// (or version) stored by another node, or stored before this node
// started, it builds the pool from the stored code when none runs here
// or the one here was built from other code or configuration (poolSpec),
// and registers it as the function's handler; a deleted one's pool is
// retired. Before, only RestoreProcessFunctions (at the start) built
// pools: a function created through another node was ResourceNotFound
// here, and one updated through another node ran its old code here.
func (h *Handler) onStored(ctx context.Context, c function.StoredChange) error {
	key := c.Config.FunctionName
	if c.Config.Version != "" {
		key += ":" + c.Config.Version
	}
	if c.Deleted {
		h.procs.deployMu.Lock()
		defer h.procs.deployMu.Unlock()
		if c.Current() {
			h.procs.remove(key, h.rn.Engine.Clock)
		}
		return nil
	}
	if c.Config.Handler != ProcessHandlerPrefix+key {
		return nil // an in-process function
	}
	if c.Config.Version == "" {
		h.procs.deployMu.Lock()
		defer h.procs.deployMu.Unlock()
		if !c.Current() {
			return nil // this node (or the watch) applied a later change
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return h.syncPool(ctx, key, c.Config)
}

// syncPool makes the pool registered as cfg's handler (key: $LATEST's or
// "<name>:<version>") the one of cfg, of the stored metadata and of the
// stored code: the pool running here when it was built from the same
// (poolSpec), else a new one, built from the stored zip, that replaces it.
func (h *Handler) syncPool(ctx context.Context, key string, cfg function.Config) error {
	meta, err := h.loadMeta(ctx, metaKey(cfg))
	if err != nil {
		if cfg.Version != "" {
			return fmt.Errorf("function %s: read metadata: %w", key, err)
		}
		meta = &functionMeta{Runtime: processRuntimes[0], Handler: "bootstrap"}
	}
	spec := poolSpec(cfg, meta)
	reg := h.rn.Functions.Registry()
	if old := h.procs.get(key); old != nil && old.live() && old.spec == spec {
		reg.Register(cfg.Handler, old)
		return nil
	}
	store, err := h.codeStore(ctx)
	if err != nil {
		return err
	}
	code, err := store.GetBytes(ctx, key)
	if err != nil {
		return fmt.Errorf("function %s: read code: %w", key, err)
	}
	if meta.CodeSha256 != "" && codeDigest(code) != meta.CodeSha256 {
		return fmt.Errorf("function %s: the stored code (CodeSha256 %s) is not the configured one (%s)", key, codeDigest(code), meta.CodeSha256)
	}
	pf, err := h.startProcess(ctx, cfg, meta, code)
	if err != nil {
		return fmt.Errorf("function %s: %w", key, err)
	}
	pool := newPool(pf, spec)
	reg.Register(cfg.Handler, pool)
	h.procs.install(key, pool, h.rn.Engine.Clock)
	h.lopts.Logger.Info("lambda api: process function started from its stored code", "function", key)
	return nil
}

func (h *Handler) codeStore(ctx context.Context) (jetstream.ObjectStore, error) {
	s, err := h.rn.Engine.EnsureObjectStore(ctx, jetstream.ObjectStoreConfig{
		Bucket: FunctionCodeBucket, Storage: jetstream.FileStorage, Replicas: h.rn.Engine.Replicas(),
	})
	if err != nil {
		return nil, fmt.Errorf("open object store %s: %w", FunctionCodeBucket, err)
	}
	return s, nil
}

func (h *Handler) loadMeta(ctx context.Context, name string) (*functionMeta, error) {
	kv, err := h.rn.Engine.Bucket(ctx, functionMetaBucket)
	if err != nil {
		return nil, err
	}
	e, err := kv.Get(ctx, name)
	if err != nil {
		return nil, err
	}
	var m functionMeta
	if err := json.Unmarshal(e.Value(), &m); err != nil {
		return nil, err
	}
	return &m, nil
}

func (h *Handler) storeMeta(ctx context.Context, name string, m *functionMeta) error {
	kv, err := h.rn.Engine.Bucket(ctx, functionMetaBucket)
	if err != nil {
		return err
	}
	b, _ := json.Marshal(m)
	_, err = kv.Put(ctx, name, b)
	return err
}

// deployProcess builds a process function from cfg (its Handler is set to
// "process:<name>"), meta's Runtime and Handler and code (stored under
// the function's name first when storeCode), stores meta (setting
// meta.RuntimeWarning), registers the pool, and creates (or, with
// replace, replaces) the function in the runnel's Functions, in that
// order: another node applying the stored configuration finds the code
// and metadata it was stored with. A pool built from the same
// configuration and code (poolSpec) is kept; a replaced one finishes its
// running invocations (procPool.retire). The pool gets no reserved
// concurrency of its own: package function enforces the function's. Its
// log goes to the endpoint's log store.
func (h *Handler) deployProcess(ctx context.Context, cfg function.Config, meta *functionMeta, code []byte, storeCode, replace bool) error {
	name := cfg.FunctionName
	cfg.Handler = ProcessHandlerPrefix + name
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return err
	}
	cfg.FunctionArn = h.rn.Functions.ARN(name)
	p := &h.procs
	p.deployMu.Lock()
	defer p.deployMu.Unlock()
	spec := poolSpec(cfg, meta)
	old := p.get(name)
	pool := old
	if old == nil || !old.live() || old.spec != spec {
		pf, err := h.startProcess(ctx, cfg, meta, code)
		if err != nil {
			return err
		}
		pool = newPool(pf, spec)
	}
	fresh := pool != old
	fail := func(err error) error {
		if fresh {
			pool.close()
		}
		return err
	}
	if storeCode {
		store, err := h.codeStore(ctx)
		if err != nil {
			return fail(err)
		}
		if _, err := store.PutBytes(ctx, name, code); err != nil {
			return fail(awserr.New(awserr.ErrService, "store code: %v", err))
		}
	}
	meta.RuntimeWarning = pool.RuntimeWarning()
	if err := h.storeMeta(ctx, name, meta); err != nil {
		return fail(awserr.New(awserr.ErrService, "store function metadata: %v", err))
	}
	reg := h.rn.Functions.Registry()
	reg.Register(cfg.Handler, pool) // a *procPool is a lambda.Handler: never refused
	put := h.rn.Functions.CreateFunction
	if replace {
		put = h.rn.Functions.PutFunction
	}
	if _, err := put(ctx, cfg); err != nil {
		if old != nil && fresh {
			reg.Register(cfg.Handler, old)
		}
		return fail(err)
	}
	if fresh {
		p.install(name, pool, h.rn.Engine.Clock)
	}
	return nil
}

// startProcess builds the process function of cfg (FunctionArn and
// Version set: $LATEST's or a published version's) with meta's Runtime and
// Handler and code. The pool gets no reserved concurrency of its own:
// package function enforces the function's. Its log goes to the
// endpoint's log store.
func (h *Handler) startProcess(ctx context.Context, cfg function.Config, meta *functionMeta, code []byte) (*process.Function, error) {
	layers, err := h.layerZips(ctx, meta.Layers)
	if err != nil {
		return nil, err
	}
	pcfg := cfg
	pcfg.Handler = meta.Handler
	pcfg.ReservedConcurrentExecutions = nil
	pc := process.Config{
		Config: pcfg, Code: code, WorkDir: h.lopts.WorkDir, Runtime: meta.Runtime,
		Region: h.rn.Engine.Region(), AccountID: h.rn.Engine.AccountID(),
		Endpoint: h.lopts.Endpoint, Logger: h.lopts.Logger, Layers: layers,
	}
	if h.logs != nil {
		pc.Logs = h.logs
	}
	pf, err := process.Handler(pc)
	if err != nil {
		var ae *awserr.Error
		if errors.As(err, &ae) {
			return nil, err
		}
		return nil, awserr.New(awserr.ErrInvalidParameterValue, "Code.ZipFile: %v", err)
	}
	return pf, nil
}

func codeDigest(zip []byte) string {
	sum := sha256.Sum256(zip)
	return base64.StdEncoding.EncodeToString(sum[:])
}
