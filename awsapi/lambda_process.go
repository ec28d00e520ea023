package awsapi

// Lambda: process functions, the functions of a provided.* runtime whose
// code is a zip holding an executable bootstrap (package
// function/process). Their code is stored in the JetStream object store
// FunctionCodeBucket, what the Lambda API reports beyond function.Config
// in the KV bucket functionMetaBucket; each runs under the registered
// handler "process:<name>". The Handler that started them owns them
// (Handler.procs) and stops them on Close.

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

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

// processFunctions are the process functions a Handler started, by
// function name. A nil entry was closed by Close.
type processFunctions struct {
	mu sync.Mutex
	m  map[string]*process.Function
}

// live reports whether name runs in this Handler.
func (p *processFunctions) live(name string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.m[name] != nil
}

// remove stops and forgets the function name.
func (p *processFunctions) remove(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if pf := p.m[name]; pf != nil {
		pf.Close()
	}
	delete(p.m, name)
}

func (p *processFunctions) closeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for name, f := range p.m {
		if f != nil {
			f.Close()
		}
		p.m[name] = nil // closed: RestoreProcessFunctions restores it
	}
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
}

func (m *functionMeta) isProcess() bool { return isProcessRuntime(m.Runtime) }

// RestoreProcessFunctions starts every process function whose code is
// stored in FunctionCodeBucket and that does not run in this Handler
// (never started here, or stopped by Close): it registers its handler
// "process:<name>" (replacing one registered under that name) and loads
// the function into the runnel's Functions. NewLambdaHandler and
// NewEndpoint call it.
func (h *Handler) RestoreProcessFunctions(ctx context.Context) error {
	store, err := h.codeStore(ctx)
	if err != nil {
		return err
	}
	objs, err := store.List(ctx)
	if err != nil && !errors.Is(err, jetstream.ErrNoObjectsFound) {
		return fmt.Errorf("list %s: %w", FunctionCodeBucket, err)
	}
	fkv, err := h.rn.Engine.Bucket(ctx, "runnel_functions")
	if err != nil {
		return err
	}
	var errs []error
	for _, o := range objs {
		name := o.Name
		if h.procs.live(name) {
			continue
		}
		if fn, v, ok := strings.Cut(name, ":"); ok {
			errs = append(errs, h.restoreVersion(ctx, store, fn, v))
			continue
		}
		e, err := fkv.Get(ctx, name)
		if err != nil {
			h.lopts.Logger.Warn("lambda api: stored code of a function that is not stored; not restored", "function", name)
			continue
		}
		var cfg function.Config
		if err := json.Unmarshal(e.Value(), &cfg); err != nil {
			errs = append(errs, fmt.Errorf("function %s: %w", name, err))
			continue
		}
		meta, _ := h.loadMeta(ctx, name)
		if meta == nil {
			meta = &functionMeta{Runtime: processRuntimes[0], Handler: "bootstrap"}
		}
		code, err := store.GetBytes(ctx, name)
		if err != nil {
			errs = append(errs, fmt.Errorf("function %s: read code: %w", name, err))
			continue
		}
		if err := h.deployProcess(ctx, cfg, meta, code, true); err != nil {
			errs = append(errs, fmt.Errorf("function %s: %w", name, err))
			continue
		}
		h.lopts.Logger.Info("lambda api: process function restored", "function", name)
	}
	errs = append(errs, h.restoreProvisioned(ctx))
	return errors.Join(errs...)
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
// "process:<name>"), meta's Runtime and Handler and code, registers it,
// and creates (or replaces) the function in the runnel's Functions; it
// sets meta.RuntimeWarning. The pool gets no reserved concurrency of its
// own: package function enforces the function's. Its log goes to the
// endpoint's log store.
func (h *Handler) deployProcess(ctx context.Context, cfg function.Config, meta *functionMeta, code []byte, replace bool) error {
	name := cfg.FunctionName
	cfg.Handler = ProcessHandlerPrefix + name
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return err
	}
	cfg.FunctionArn = h.rn.Functions.ARN(name)
	pf, err := h.startProcess(ctx, cfg, meta, code)
	if err != nil {
		return err
	}
	p := &h.procs
	p.mu.Lock()
	if p.m == nil {
		p.m = map[string]*process.Function{}
	}
	old := p.m[name]
	reg := h.rn.Functions.Registry()
	reg.Register(cfg.Handler, pf) // a *process.Function is a lambda.Handler: never refused
	put := h.rn.Functions.CreateFunction
	if replace {
		put = h.rn.Functions.PutFunction
	}
	if _, err := put(ctx, cfg); err != nil {
		if old != nil {
			reg.Register(cfg.Handler, old)
		}
		p.mu.Unlock()
		pf.Close()
		return err
	}
	p.m[name] = pf
	p.mu.Unlock()
	meta.RuntimeWarning = pf.RuntimeWarning()
	if old != nil {
		retire(old, cfg.Timeout)
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

// retire closes a replaced process function once its invocations in flight
// have had their timeout to finish.
func retire(f *process.Function, timeout int) {
	if timeout <= 0 {
		timeout = function.DefaultTimeout
	}
	time.AfterFunc(time.Duration(timeout)*time.Second+time.Second, func() { f.Close() })
}

func codeDigest(zip []byte) string {
	sum := sha256.Sum256(zip)
	return base64.StdEncoding.EncodeToString(sum[:])
}
