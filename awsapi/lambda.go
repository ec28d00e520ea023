package awsapi

// The Lambda REST API (restJson1) over runnel's functions, asynchronous
// invocation and event source mappings. It is its own http.Handler
// (NewLambdaHandler): Lambda requests are routed by path, not by
// X-Amz-Target, and their errors have Lambda's shape.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/backoff"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/function/async"
	"github.com/runnel-dev/runnel/function/process"
	"github.com/runnel-dev/runnel/mapping"
	"github.com/runnel-dev/runnel/mapping/filter"
)

const (
	// FunctionCodeBucket is the JetStream object store holding the
	// deployment packages (zips) of process functions, key = function name.
	FunctionCodeBucket = "runnel_function_code"
	// lambdaMetaBucket keeps what the Lambda API reports about a function
	// beyond function.Config (Runtime, the runtime's Handler, Role...).
	lambdaMetaBucket = "runnel_lambda_functions"
	// ProcessHandlerPrefix begins the registered handler name of every
	// process function: "process:<function name>".
	ProcessHandlerPrefix = "process:"
	// RuntimeRunnel is the Runtime of in-process functions.
	RuntimeRunnel = "runnel"

	lambdaMaxBody    = 70 << 20 // a 50 MB zip in base64, with room
	lambdaTimeLayout = "2006-01-02T15:04:05.000-0700"
)

// lambdaProcessRuntimes are the custom runtimes a process function may name.
var lambdaProcessRuntimes = []string{"provided.al2023", "provided.al2", "provided"}

// LambdaOptions configures NewLambdaHandler.
type LambdaOptions struct {
	// Logger receives internal failures and restore messages. Default: the
	// engine's logger.
	Logger *slog.Logger
	// WorkDir is where process functions' zips are unpacked
	// (os.TempDir() when empty).
	WorkDir string
	// Endpoint, when set, is given to process functions as
	// AWS_ENDPOINT_URL so that AWS SDKs inside them call runnel.
	Endpoint string
}

// lambdaProcs are the process functions of this process, by function name,
// registered with function.Register under "process:<name>" (the registry
// is process-wide, so this is too). A nil entry was closed by
// CloseProcessFunctions.
var lambdaProcs = struct {
	sync.Mutex
	m map[string]*process.Function
}{m: map[string]*process.Function{}}

// CloseProcessFunctions stops the execution environments of every process
// function started in this process (call it at shutdown). Their handlers
// stay registered: a later invocation fails.
func CloseProcessFunctions() {
	lambdaProcs.Lock()
	defer lambdaProcs.Unlock()
	for name, f := range lambdaProcs.m {
		if f != nil {
			f.Close()
		}
		lambdaProcs.m[name] = nil // closed: RestoreProcessFunctions restores it
	}
}

// lambdaMeta is what the Lambda API reports about a function beyond its
// function.Config.
type lambdaMeta struct {
	Runtime      string    `json:"Runtime"`
	Handler      string    `json:"Handler"`
	Role         string    `json:"Role,omitempty"`
	Description  string    `json:"Description,omitempty"`
	CodeSha256   string    `json:"CodeSha256,omitempty"`
	CodeSize     int64     `json:"CodeSize,omitempty"`
	LastModified time.Time `json:"LastModified"`
}

func (m *lambdaMeta) isProcess() bool { return slices.Contains(lambdaProcessRuntimes, m.Runtime) }

type lambdaHandler struct {
	rn   *runnel.Runnel
	opts LambdaOptions
	mux  *http.ServeMux
	// mu serializes the calls that create, change or delete functions.
	mu sync.Mutex
}

// NewLambdaHandler returns the Lambda REST API for rn (paths
// /2015-03-31/functions..., /2017-10-31/.../concurrency,
// /2019-09-25/.../event-invoke-config, /2015-03-31/event-source-mappings).
// It first restores the process functions whose code is stored
// (RestoreProcessFunctions); failures are logged.
func NewLambdaHandler(rn *runnel.Runnel, opts LambdaOptions) http.Handler {
	if opts.Logger == nil {
		opts.Logger = rn.Engine.Logger
	}
	h := &lambdaHandler{rn: rn, opts: opts, mux: http.NewServeMux()}
	if err := restoreProcessFunctions(context.Background(), rn, opts); err != nil {
		opts.Logger.Error("lambda api: restoring process functions", "err", err)
	}
	m := h.mux
	for _, p := range []string{"/2015-03-31/functions", "/2015-03-31/functions/{$}"} {
		m.HandleFunc("POST "+p, h.createFunction)
		m.HandleFunc("GET "+p, h.listFunctions)
	}
	m.HandleFunc("GET /2015-03-31/functions/{name}", h.getFunction)
	m.HandleFunc("DELETE /2015-03-31/functions/{name}", h.deleteFunction)
	m.HandleFunc("GET /2015-03-31/functions/{name}/configuration", h.getFunctionConfiguration)
	m.HandleFunc("PUT /2015-03-31/functions/{name}/configuration", h.updateFunctionConfiguration)
	m.HandleFunc("PUT /2015-03-31/functions/{name}/code", h.updateFunctionCode)
	m.HandleFunc("POST /2015-03-31/functions/{name}/invocations", h.invoke)
	m.HandleFunc("PUT /2017-10-31/functions/{name}/concurrency", h.putConcurrency)
	m.HandleFunc("DELETE /2017-10-31/functions/{name}/concurrency", h.deleteConcurrency)
	m.HandleFunc("GET /2019-09-30/functions/{name}/concurrency", h.getConcurrency)
	m.HandleFunc("PUT /2019-09-25/functions/{name}/event-invoke-config", h.putEventInvokeConfig)
	m.HandleFunc("POST /2019-09-25/functions/{name}/event-invoke-config", h.updateEventInvokeConfig)
	m.HandleFunc("GET /2019-09-25/functions/{name}/event-invoke-config", h.getEventInvokeConfig)
	m.HandleFunc("DELETE /2019-09-25/functions/{name}/event-invoke-config", h.deleteEventInvokeConfig)
	m.HandleFunc("GET /2019-09-25/functions/{name}/event-invoke-config/list", h.listEventInvokeConfigs)
	for _, p := range []string{"/2015-03-31/event-source-mappings", "/2015-03-31/event-source-mappings/{$}"} {
		m.HandleFunc("POST "+p, h.createMapping)
		m.HandleFunc("GET "+p, h.listMappings)
	}
	m.HandleFunc("GET /2015-03-31/event-source-mappings/{uuid}", h.getMapping)
	m.HandleFunc("PUT /2015-03-31/event-source-mappings/{uuid}", h.updateMapping)
	m.HandleFunc("DELETE /2015-03-31/event-source-mappings/{uuid}", h.deleteMapping)
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		lambdaWriteError(w, r, h.opts.Logger, &lambdaError{status: 404, code: "UnknownOperationException",
			message: fmt.Sprintf("no Lambda operation at %s %s", r.Method, r.URL.Path)})
	})
	return h
}

func (h *lambdaHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Amzn-RequestId", uuid.NewString())
	h.mux.ServeHTTP(w, r)
}

// ---- restore ----

// RestoreProcessFunctions registers a handler ("process:<name>") for every
// process function whose code is stored in FunctionCodeBucket and whose
// handler is not registered in this process, and loads the function into
// rn.Functions. NewLambdaHandler calls it; call it yourself to restore
// process functions without serving the Lambda API.
func RestoreProcessFunctions(ctx context.Context, rn *runnel.Runnel) error {
	return restoreProcessFunctions(ctx, rn, LambdaOptions{Logger: rn.Engine.Logger})
}

func restoreProcessFunctions(ctx context.Context, rn *runnel.Runnel, opts LambdaOptions) error {
	if opts.Logger == nil {
		opts.Logger = rn.Engine.Logger
	}
	store, err := lambdaCodeStore(ctx, rn)
	if err != nil {
		return err
	}
	objs, err := store.List(ctx)
	if err != nil && !errors.Is(err, jetstream.ErrNoObjectsFound) {
		return fmt.Errorf("list %s: %w", FunctionCodeBucket, err)
	}
	fkv, err := rn.Engine.Bucket(ctx, "runnel_functions")
	if err != nil {
		return err
	}
	// A handler registered by this package but closed (CloseProcessFunctions)
	// is restored too; one registered by someone else is left alone.
	var errs []error
	for _, o := range objs {
		name := o.Name
		lambdaProcs.Lock()
		pf, ours := lambdaProcs.m[name]
		lambdaProcs.Unlock()
		if pf != nil || (!ours && slices.Contains(function.Handlers(), ProcessHandlerPrefix+name)) {
			continue
		}
		e, err := fkv.Get(ctx, name)
		if err != nil {
			opts.Logger.Warn("lambda api: stored code of a function that is not stored; not restored", "function", name)
			continue
		}
		var cfg function.Config
		if err := json.Unmarshal(e.Value(), &cfg); err != nil {
			errs = append(errs, fmt.Errorf("function %s: %w", name, err))
			continue
		}
		meta, _ := lambdaLoadMeta(ctx, rn, name)
		runtimeHandler := "bootstrap"
		if meta != nil && meta.Handler != "" {
			runtimeHandler = meta.Handler
		}
		code, err := store.GetBytes(ctx, name)
		if err != nil {
			errs = append(errs, fmt.Errorf("function %s: read code: %w", name, err))
			continue
		}
		if err := lambdaDeployProcess(ctx, rn, opts, cfg, runtimeHandler, code, true); err != nil {
			errs = append(errs, fmt.Errorf("function %s: %w", name, err))
			continue
		}
		opts.Logger.Info("lambda api: process function restored", "function", name)
	}
	return errors.Join(errs...)
}

func lambdaCodeStore(ctx context.Context, rn *runnel.Runnel) (jetstream.ObjectStore, error) {
	s, err := rn.Engine.JS.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{
		Bucket: FunctionCodeBucket, Storage: jetstream.FileStorage, Replicas: rn.Engine.Replicas(),
	})
	if err != nil {
		return nil, fmt.Errorf("open object store %s: %w", FunctionCodeBucket, err)
	}
	return s, nil
}

func lambdaLoadMeta(ctx context.Context, rn *runnel.Runnel, name string) (*lambdaMeta, error) {
	kv, err := rn.Engine.Bucket(ctx, lambdaMetaBucket)
	if err != nil {
		return nil, err
	}
	e, err := kv.Get(ctx, name)
	if err != nil {
		return nil, err
	}
	var m lambdaMeta
	if err := json.Unmarshal(e.Value(), &m); err != nil {
		return nil, err
	}
	return &m, nil
}

func lambdaStoreMeta(ctx context.Context, rn *runnel.Runnel, name string, m *lambdaMeta) error {
	kv, err := rn.Engine.Bucket(ctx, lambdaMetaBucket)
	if err != nil {
		return err
	}
	b, _ := json.Marshal(m)
	_, err = kv.Put(ctx, name, b)
	return err
}

// deployProcess builds a process function from cfg (its Handler is set to
// "process:<name>") and code, registers it, and creates (or replaces) the
// function in rn.Functions. The pool gets no reserved concurrency of its
// own: package function enforces the function's.
func lambdaDeployProcess(ctx context.Context, rn *runnel.Runnel, opts LambdaOptions, cfg function.Config, runtimeHandler string, code []byte, replace bool) error {
	name := cfg.FunctionName
	cfg.Handler = ProcessHandlerPrefix + name
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return err
	}
	pcfg := cfg
	pcfg.Handler = runtimeHandler
	pcfg.ReservedConcurrentExecutions = nil
	pcfg.FunctionArn = rn.Functions.ARN(name)
	pf, err := process.Handler(process.Config{
		Config: pcfg, Code: code, WorkDir: opts.WorkDir,
		Region: rn.Engine.Region(), AccountID: rn.Engine.AccountID(),
		Endpoint: opts.Endpoint, Logger: opts.Logger,
	})
	if err != nil {
		var ae *awserr.Error
		if errors.As(err, &ae) {
			return err
		}
		return awserr.New(awserr.ErrInvalidParameterValue, "Code.ZipFile: %v", err)
	}
	lambdaProcs.Lock()
	old := lambdaProcs.m[name]
	function.Register(cfg.Handler, pf)
	put := rn.Functions.CreateFunction
	if replace {
		put = rn.Functions.PutFunction
	}
	if _, err := put(ctx, cfg); err != nil {
		if old != nil {
			function.Register(cfg.Handler, old)
		}
		lambdaProcs.Unlock()
		pf.Close()
		return err
	}
	lambdaProcs.m[name] = pf
	lambdaProcs.Unlock()
	if old != nil {
		lambdaRetire(old, cfg.Timeout)
	}
	return nil
}

// retire closes a replaced process function once its invocations in flight
// have had their timeout to finish.
func lambdaRetire(f *process.Function, timeout int) {
	if timeout <= 0 {
		timeout = function.DefaultTimeout
	}
	time.AfterFunc(time.Duration(timeout)*time.Second+time.Second, func() { f.Close() })
}

// ---- errors and replies ----

type lambdaError struct {
	status  int
	code    string
	message string
	reason  string
}

func (e *lambdaError) Error() string { return e.code + ": " + e.message }

func lambdaInvalid(format string, args ...any) error {
	return awserr.New(awserr.ErrInvalidParameterValue, format, args...)
}

// lambdaStatus maps runnel's error codes to the Lambda error shape names
// and statuses the Lambda client deserializes.
var lambdaStatus = map[string]struct {
	code   string
	status int
}{
	"ResourceNotFoundException":      {"ResourceNotFoundException", 404},
	"ResourceConflictException":      {"ResourceConflictException", 409},
	"ResourceInUseException":         {"ResourceInUseException", 400},
	"InvalidParameterValueException": {"InvalidParameterValueException", 400},
	"InvalidArgumentException":       {"InvalidParameterValueException", 400},
	"LimitExceededException":         {"InvalidParameterValueException", 400},
	"TooManyRequestsException":       {"TooManyRequestsException", 429},
	"ServiceException":               {"ServiceException", 500},
	"InvalidRequestContentException": {"InvalidRequestContentException", 400},
	"RequestEntityTooLargeException": {"RequestTooLargeException", 413},
}

func lambdaWriteError(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	var le *lambdaError
	if !errors.As(err, &le) {
		var ae *awserr.Error
		switch {
		case errors.As(err, &ae):
			s, ok := lambdaStatus[ae.Code]
			if !ok {
				s.code, s.status = ae.Code, 400
			}
			le = &lambdaError{status: s.status, code: s.code, message: ae.Message}
			if s.status == 429 {
				le.reason = "ReservedFunctionConcurrentInvocationLimitExceeded"
			}
		case r.Context().Err() != nil:
			le = &lambdaError{status: 400, code: "RequestCanceled", message: err.Error()}
		default:
			le = &lambdaError{status: 500, code: "ServiceException", message: err.Error()}
		}
	}
	if le.status >= 500 {
		log.Error("lambda api: service failure", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	typ := "User"
	if le.status >= 500 {
		typ = "Service"
	}
	body := map[string]string{"Type": typ, "message": le.message}
	if le.reason != "" {
		body["Reason"] = le.reason
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-ErrorType", le.code)
	if le.status == 429 {
		w.Header().Set("Retry-After", "1")
	}
	w.WriteHeader(le.status)
	json.NewEncoder(w).Encode(body)
}

func (h *lambdaHandler) fail(w http.ResponseWriter, r *http.Request, err error) {
	lambdaWriteError(w, r, h.opts.Logger, err)
}

func (h *lambdaHandler) reply(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if v != nil {
		json.NewEncoder(w).Encode(v)
	}
}

// decode reads the JSON body into v (an empty body is {}).
func lambdaDecode(r *http.Request, v any) error {
	b, err := io.ReadAll(io.LimitReader(r.Body, lambdaMaxBody+1))
	if err != nil {
		return &lambdaError{status: 400, code: "InvalidRequestContentException", message: "reading the request body: " + err.Error()}
	}
	if len(b) > lambdaMaxBody {
		return &lambdaError{status: 413, code: "RequestTooLargeException", message: fmt.Sprintf("Request must be smaller than %d bytes", lambdaMaxBody)}
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	if err := json.Unmarshal(b, v); err != nil {
		return &lambdaError{status: 400, code: "InvalidRequestContentException", message: "Could not parse request body into json: " + err.Error()}
	}
	return nil
}

// functionName resolves the {name} path value: a name, an ARN or a
// partial ARN, with an optional qualifier (only $LATEST exists in runnel),
// also accepted in the Qualifier query parameter.
func (h *lambdaHandler) functionName(r *http.Request) (string, error) {
	s := r.PathValue("name")
	qual := r.URL.Query().Get("Qualifier")
	if n, ok := function.FunctionNameFromARN(s); ok {
		s = n
	} else if strings.HasPrefix(s, "arn:") {
		// arn:aws:lambda:region:account:function:name[:qualifier]
		parts := strings.Split(s, ":")
		if len(parts) < 7 || parts[5] != "function" {
			return "", lambdaInvalid("FunctionName: %q is not a function name or ARN", s)
		}
		s = parts[6]
		if len(parts) > 7 {
			qual = parts[7]
		}
	} else if i := strings.LastIndex(s, ":"); i >= 0 {
		// account:function:name, name:qualifier
		parts := strings.Split(s, ":")
		switch {
		case len(parts) >= 3 && parts[1] == "function":
			s = parts[2]
			if len(parts) > 3 {
				qual = parts[3]
			}
		default:
			s, qual = s[:i], s[i+1:]
		}
	}
	if qual != "" && qual != "$LATEST" {
		return "", awserr.New(awserr.ErrResourceNotFound, "Function not found: %s:%s (runnel has only $LATEST)", h.rn.Functions.ARN(s), qual)
	}
	return s, nil
}

// ---- functions ----

type lambdaEnvironment struct {
	Variables map[string]string `json:"Variables"`
}

type lambdaFunctionCode struct {
	ZipFile         []byte `json:"ZipFile"`
	S3Bucket        string `json:"S3Bucket"`
	S3Key           string `json:"S3Key"`
	S3ObjectVersion string `json:"S3ObjectVersion"`
	ImageUri        string `json:"ImageUri"`
}

type lambdaCreateFunctionInput struct {
	FunctionName string              `json:"FunctionName"`
	Runtime      string              `json:"Runtime"`
	Role         string              `json:"Role"`
	Handler      string              `json:"Handler"`
	Code         *lambdaFunctionCode `json:"Code"`
	Description  string              `json:"Description"`
	Timeout      int                 `json:"Timeout"`
	MemorySize   int                 `json:"MemorySize"`
	Environment  *lambdaEnvironment  `json:"Environment"`
	PackageType  string              `json:"PackageType"`
}

type lambdaFunctionConfiguration struct {
	FunctionName     string             `json:"FunctionName"`
	FunctionArn      string             `json:"FunctionArn"`
	Runtime          string             `json:"Runtime"`
	Role             string             `json:"Role"`
	Handler          string             `json:"Handler"`
	CodeSize         int64              `json:"CodeSize"`
	Description      string             `json:"Description"`
	Timeout          int                `json:"Timeout"`
	MemorySize       int                `json:"MemorySize"`
	LastModified     string             `json:"LastModified"`
	CodeSha256       string             `json:"CodeSha256"`
	Version          string             `json:"Version"`
	Environment      *lambdaEnvironment `json:"Environment,omitempty"`
	State            string             `json:"State"`
	LastUpdateStatus string             `json:"LastUpdateStatus"`
	PackageType      string             `json:"PackageType"`
	Architectures    []string           `json:"Architectures"`
}

func (h *lambdaHandler) configuration(ctx context.Context, cfg function.Config) lambdaFunctionConfiguration {
	meta, err := lambdaLoadMeta(ctx, h.rn, cfg.FunctionName)
	if err != nil || meta == nil {
		meta = &lambdaMeta{Runtime: RuntimeRunnel, Handler: cfg.Handler}
	}
	out := lambdaFunctionConfiguration{
		FunctionName: cfg.FunctionName, FunctionArn: cfg.FunctionArn,
		Runtime: meta.Runtime, Role: meta.Role, Handler: meta.Handler,
		CodeSize: meta.CodeSize, Description: meta.Description,
		Timeout: cfg.Timeout, MemorySize: cfg.MemorySize,
		CodeSha256: meta.CodeSha256, Version: "$LATEST",
		State: "Active", LastUpdateStatus: "Successful", PackageType: "Zip",
		Architectures: []string{"x86_64"},
	}
	if !meta.LastModified.IsZero() {
		out.LastModified = meta.LastModified.UTC().Format(lambdaTimeLayout)
	}
	if out.FunctionArn == "" {
		out.FunctionArn = h.rn.Functions.ARN(cfg.FunctionName)
	}
	if len(cfg.Environment) > 0 {
		out.Environment = &lambdaEnvironment{Variables: cfg.Environment}
	}
	return out
}

func lambdaCodeDigest(zip []byte) string {
	sum := sha256.Sum256(zip)
	return base64.StdEncoding.EncodeToString(sum[:])
}

func (h *lambdaHandler) createFunction(w http.ResponseWriter, r *http.Request) {
	var in lambdaCreateFunctionInput
	if err := lambdaDecode(r, &in); err != nil {
		h.fail(w, r, err)
		return
	}
	ctx := r.Context()
	cfg := function.Config{
		FunctionName: in.FunctionName, Handler: in.Handler, Timeout: in.Timeout, MemorySize: in.MemorySize,
	}
	if in.Environment != nil {
		cfg.Environment = in.Environment.Variables
	}
	if in.PackageType != "" && in.PackageType != "Zip" {
		h.fail(w, r, lambdaInvalid("PackageType: %q is not supported: only Zip", in.PackageType))
		return
	}
	meta := &lambdaMeta{Runtime: in.Runtime, Handler: in.Handler, Role: in.Role, Description: in.Description, LastModified: time.Now()}
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, err := h.rn.Functions.GetFunction(in.FunctionName); err == nil {
		h.fail(w, r, awserr.New(awserr.ErrResourceConflict, "Function already exist: %s", in.FunctionName))
		return
	}
	switch {
	case meta.isProcess():
		if in.Code == nil || len(in.Code.ZipFile) == 0 {
			h.fail(w, r, lambdaInvalid("Code.ZipFile: required for Runtime %s (a zip holding an executable bootstrap); S3 and image code are not supported", in.Runtime))
			return
		}
		if meta.Handler == "" {
			meta.Handler = "bootstrap"
		}
		zip := in.Code.ZipFile
		meta.CodeSha256, meta.CodeSize = lambdaCodeDigest(zip), int64(len(zip))
		probe := cfg
		probe.Handler = ProcessHandlerPrefix + cfg.FunctionName
		if err := probe.Validate(); err != nil {
			h.fail(w, r, err)
			return
		}
		store, err := lambdaCodeStore(ctx, h.rn)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		if _, err := store.PutBytes(ctx, cfg.FunctionName, zip); err != nil {
			h.fail(w, r, awserr.New(awserr.ErrService, "store code: %v", err))
			return
		}
		if err := lambdaDeployProcess(ctx, h.rn, h.opts, cfg, meta.Handler, zip, false); err != nil {
			store.Delete(ctx, cfg.FunctionName)
			h.fail(w, r, err)
			return
		}
	case in.Runtime == RuntimeRunnel || in.Runtime == "" || slices.Contains(function.Handlers(), in.Handler):
		if in.Code != nil && len(in.Code.ZipFile) > 0 {
			h.fail(w, r, lambdaInvalid("Code.ZipFile: an in-process function (Runtime %s) has no code; use Runtime provided.al2023 for a zip", RuntimeRunnel))
			return
		}
		if strings.HasPrefix(in.Handler, ProcessHandlerPrefix) {
			h.fail(w, r, lambdaInvalid("Handler: %q names a process function's handler", in.Handler))
			return
		}
		if meta.Runtime == "" {
			meta.Runtime = RuntimeRunnel
		}
		if _, err := h.rn.Functions.CreateFunction(ctx, cfg); err != nil {
			h.fail(w, r, err)
			return
		}
	default:
		h.fail(w, r, lambdaInvalid("Runtime: %q is not supported: use provided.al2023 or provided.al2 with Code.ZipFile holding bootstrap, or %s with Handler naming a registered in-process handler (registered: %v)", in.Runtime, RuntimeRunnel, function.Handlers()))
		return
	}
	if err := lambdaStoreMeta(ctx, h.rn, cfg.FunctionName, meta); err != nil {
		h.opts.Logger.Error("lambda api: store function metadata", "function", cfg.FunctionName, "err", err)
	}
	f, err := h.rn.Functions.GetFunction(cfg.FunctionName)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.reply(w, http.StatusCreated, h.configuration(ctx, f.Config()))
}

func (h *lambdaHandler) lookup(w http.ResponseWriter, r *http.Request) (*function.Function, bool) {
	name, err := h.functionName(r)
	if err != nil {
		h.fail(w, r, err)
		return nil, false
	}
	f, err := h.rn.Functions.GetFunction(name)
	if err != nil {
		h.fail(w, r, err)
		return nil, false
	}
	return f, true
}

func (h *lambdaHandler) getFunction(w http.ResponseWriter, r *http.Request) {
	f, ok := h.lookup(w, r)
	if !ok {
		return
	}
	cfg := f.Config()
	out := map[string]any{
		"Configuration": h.configuration(r.Context(), cfg),
		"Code":          map[string]string{"RepositoryType": "S3", "Location": ""},
	}
	if cfg.ReservedConcurrentExecutions != nil {
		out["Concurrency"] = map[string]int{"ReservedConcurrentExecutions": *cfg.ReservedConcurrentExecutions}
	}
	h.reply(w, 200, out)
}

func (h *lambdaHandler) getFunctionConfiguration(w http.ResponseWriter, r *http.Request) {
	f, ok := h.lookup(w, r)
	if !ok {
		return
	}
	h.reply(w, 200, h.configuration(r.Context(), f.Config()))
}

// page applies Marker (an index) and MaxItems to n items.
func lambdaPage(r *http.Request, n, def int) (from, to int, next string, err error) {
	q := r.URL.Query()
	if m := q.Get("Marker"); m != "" {
		if from, err = strconv.Atoi(m); err != nil || from < 0 || from > n {
			return 0, 0, "", lambdaInvalid("Marker: %q is not a marker this endpoint returned", m)
		}
	}
	max := def
	if m := q.Get("MaxItems"); m != "" {
		if max, err = strconv.Atoi(m); err != nil || max < 1 || max > 10000 {
			return 0, 0, "", awserr.OutOfRange(awserr.ErrInvalidParameterValue, "MaxItems", m, 1, 10000)
		}
	}
	to = min(n, from+max)
	if to < n {
		next = strconv.Itoa(to)
	}
	return from, to, next, nil
}

func (h *lambdaHandler) listFunctions(w http.ResponseWriter, r *http.Request) {
	all := h.rn.Functions.ListFunctions()
	from, to, next, err := lambdaPage(r, len(all), 50)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	out := struct {
		Functions  []lambdaFunctionConfiguration `json:"Functions"`
		NextMarker string                        `json:"NextMarker,omitempty"`
	}{Functions: []lambdaFunctionConfiguration{}, NextMarker: next}
	for _, c := range all[from:to] {
		out.Functions = append(out.Functions, h.configuration(r.Context(), c))
	}
	h.reply(w, 200, out)
}

func (h *lambdaHandler) deleteFunction(w http.ResponseWriter, r *http.Request) {
	name, err := h.functionName(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	ctx := r.Context()
	h.mu.Lock()
	defer h.mu.Unlock()
	if f, err := h.rn.Functions.GetFunction(name); err == nil {
		name = f.Config().FunctionName
	}
	if err := h.rn.Functions.DeleteFunction(ctx, name); err != nil {
		h.fail(w, r, err)
		return
	}
	lambdaProcs.Lock()
	if pf := lambdaProcs.m[name]; pf != nil {
		pf.Close()
	}
	delete(lambdaProcs.m, name)
	lambdaProcs.Unlock()
	if store, err := lambdaCodeStore(ctx, h.rn); err == nil {
		if err := store.Delete(ctx, name); err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
			h.opts.Logger.Warn("lambda api: delete function code", "function", name, "err", err)
		}
	}
	if kv, err := h.rn.Engine.Bucket(ctx, lambdaMetaBucket); err == nil {
		kv.Purge(ctx, name)
	}
	if err := h.rn.Async.DeleteFunctionEventInvokeConfig(ctx, name); err != nil && !errors.Is(err, awserr.ErrResourceNotFound) {
		h.opts.Logger.Warn("lambda api: delete event invoke config", "function", name, "err", err)
	}
	w.WriteHeader(http.StatusNoContent)
}

// redeploy replaces function cfg (already changed) with meta and, for a
// process function, code (nil: the stored code).
func (h *lambdaHandler) redeploy(ctx context.Context, cfg function.Config, meta *lambdaMeta, code []byte) error {
	if !meta.isProcess() {
		if _, err := h.rn.Functions.PutFunction(ctx, cfg); err != nil {
			return err
		}
		return lambdaStoreMeta(ctx, h.rn, cfg.FunctionName, meta)
	}
	store, err := lambdaCodeStore(ctx, h.rn)
	if err != nil {
		return err
	}
	if code == nil {
		if code, err = store.GetBytes(ctx, cfg.FunctionName); err != nil {
			return awserr.New(awserr.ErrService, "read stored code of %s: %v", cfg.FunctionName, err)
		}
	}
	if err := lambdaDeployProcess(ctx, h.rn, h.opts, cfg, meta.Handler, code, true); err != nil {
		return err
	}
	return lambdaStoreMeta(ctx, h.rn, cfg.FunctionName, meta)
}

func (h *lambdaHandler) metaOf(ctx context.Context, cfg function.Config) *lambdaMeta {
	meta, err := lambdaLoadMeta(ctx, h.rn, cfg.FunctionName)
	if err != nil || meta == nil {
		meta = &lambdaMeta{Runtime: RuntimeRunnel, Handler: cfg.Handler}
	}
	if strings.HasPrefix(cfg.Handler, ProcessHandlerPrefix) && !meta.isProcess() {
		meta.Runtime = lambdaProcessRuntimes[0]
	}
	return meta
}

func (h *lambdaHandler) updateFunctionConfiguration(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Runtime     *string            `json:"Runtime"`
		Role        *string            `json:"Role"`
		Handler     *string            `json:"Handler"`
		Description *string            `json:"Description"`
		Timeout     *int               `json:"Timeout"`
		MemorySize  *int               `json:"MemorySize"`
		Environment *lambdaEnvironment `json:"Environment"`
	}
	if err := lambdaDecode(r, &in); err != nil {
		h.fail(w, r, err)
		return
	}
	ctx := r.Context()
	h.mu.Lock()
	defer h.mu.Unlock()
	f, ok := h.lookup(w, r)
	if !ok {
		return
	}
	cfg := f.Config()
	meta := h.metaOf(ctx, cfg)
	if in.Runtime != nil && *in.Runtime != meta.Runtime {
		if meta.isProcess() != slices.Contains(lambdaProcessRuntimes, *in.Runtime) {
			h.fail(w, r, lambdaInvalid("Runtime: cannot change %s to %s (between a process function and an in-process one); delete and create the function", meta.Runtime, *in.Runtime))
			return
		}
		meta.Runtime = *in.Runtime
	}
	if in.Role != nil {
		meta.Role = *in.Role
	}
	if in.Description != nil {
		meta.Description = *in.Description
	}
	if in.Handler != nil {
		if meta.isProcess() {
			meta.Handler = *in.Handler
		} else {
			if strings.HasPrefix(*in.Handler, ProcessHandlerPrefix) {
				h.fail(w, r, lambdaInvalid("Handler: %q names a process function's handler", *in.Handler))
				return
			}
			cfg.Handler, meta.Handler = *in.Handler, *in.Handler
		}
	}
	if in.Timeout != nil {
		cfg.Timeout = *in.Timeout
	}
	if in.MemorySize != nil {
		cfg.MemorySize = *in.MemorySize
	}
	if in.Environment != nil {
		cfg.Environment = in.Environment.Variables
	}
	meta.LastModified = time.Now()
	if err := h.redeploy(ctx, cfg, meta, nil); err != nil {
		h.fail(w, r, err)
		return
	}
	f, _ = h.rn.Functions.GetFunction(cfg.FunctionName)
	h.reply(w, 200, h.configuration(ctx, f.Config()))
}

func (h *lambdaHandler) updateFunctionCode(w http.ResponseWriter, r *http.Request) {
	var in struct {
		ZipFile  []byte `json:"ZipFile"`
		S3Bucket string `json:"S3Bucket"`
		ImageUri string `json:"ImageUri"`
		DryRun   bool   `json:"DryRun"`
	}
	if err := lambdaDecode(r, &in); err != nil {
		h.fail(w, r, err)
		return
	}
	ctx := r.Context()
	h.mu.Lock()
	defer h.mu.Unlock()
	f, ok := h.lookup(w, r)
	if !ok {
		return
	}
	cfg := f.Config()
	meta := h.metaOf(ctx, cfg)
	if !meta.isProcess() {
		h.fail(w, r, lambdaInvalid("ZipFile: function %s is an in-process function (Runtime %s); it has no code to update", cfg.FunctionName, meta.Runtime))
		return
	}
	if len(in.ZipFile) == 0 {
		h.fail(w, r, lambdaInvalid("ZipFile: required (S3 and image code are not supported)"))
		return
	}
	if !in.DryRun {
		store, err := lambdaCodeStore(ctx, h.rn)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		meta.CodeSha256, meta.CodeSize, meta.LastModified = lambdaCodeDigest(in.ZipFile), int64(len(in.ZipFile)), time.Now()
		// Deploy first (it checks the zip), then store the code.
		if err := h.redeploy(ctx, cfg, meta, in.ZipFile); err != nil {
			h.fail(w, r, err)
			return
		}
		if _, err := store.PutBytes(ctx, cfg.FunctionName, in.ZipFile); err != nil {
			h.fail(w, r, awserr.New(awserr.ErrService, "store code: %v", err))
			return
		}
	}
	f, _ = h.rn.Functions.GetFunction(cfg.FunctionName)
	h.reply(w, 200, h.configuration(ctx, f.Config()))
}

// ---- invoke ----

func (h *lambdaHandler) invoke(w http.ResponseWriter, r *http.Request) {
	name, err := h.functionName(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	payload, err := io.ReadAll(io.LimitReader(r.Body, async.MaxSyncPayloadSize+1))
	if err != nil {
		h.fail(w, r, &lambdaError{status: 400, code: "InvalidRequestContentException", message: err.Error()})
		return
	}
	typ := r.Header.Get("X-Amz-Invocation-Type")
	out, err := h.rn.Async.Invoke(r.Context(), name, typ, payload)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if out.RequestID != "" {
		w.Header().Set("X-Amzn-RequestId", out.RequestID)
	}
	if out.FunctionError != "" {
		w.Header().Set("X-Amz-Function-Error", out.FunctionError)
	}
	if out.ExecutedVersion != "" {
		w.Header().Set("X-Amz-Executed-Version", out.ExecutedVersion)
	}
	if r.Header.Get("X-Amz-Log-Type") == "Tail" && out.StatusCode == 200 {
		w.Header().Set("X-Amz-Log-Result", base64.StdEncoding.EncodeToString(nil))
	}
	if len(out.Payload) > 0 {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(out.StatusCode)
	w.Write(out.Payload)
}

// ---- concurrency ----

func (h *lambdaHandler) setConcurrency(w http.ResponseWriter, r *http.Request, n *int) (*function.Function, bool) {
	ctx := r.Context()
	h.mu.Lock()
	defer h.mu.Unlock()
	f, ok := h.lookup(w, r)
	if !ok {
		return nil, false
	}
	cfg := f.Config()
	cfg.ReservedConcurrentExecutions = n
	// A process function's pool has no limit of its own (deployProcess),
	// so the registered handler is kept: only the configuration changes.
	if _, err := h.rn.Functions.PutFunction(ctx, cfg); err != nil {
		h.fail(w, r, err)
		return nil, false
	}
	f, err := h.rn.Functions.GetFunction(cfg.FunctionName)
	if err != nil {
		h.fail(w, r, err)
		return nil, false
	}
	return f, true
}

func (h *lambdaHandler) putConcurrency(w http.ResponseWriter, r *http.Request) {
	var in struct {
		ReservedConcurrentExecutions *int `json:"ReservedConcurrentExecutions"`
	}
	if err := lambdaDecode(r, &in); err != nil {
		h.fail(w, r, err)
		return
	}
	if in.ReservedConcurrentExecutions == nil {
		h.fail(w, r, lambdaInvalid("ReservedConcurrentExecutions: required"))
		return
	}
	f, ok := h.setConcurrency(w, r, in.ReservedConcurrentExecutions)
	if !ok {
		return
	}
	h.reply(w, 200, map[string]int{"ReservedConcurrentExecutions": *f.Config().ReservedConcurrentExecutions})
}

func (h *lambdaHandler) deleteConcurrency(w http.ResponseWriter, r *http.Request) {
	if _, ok := h.setConcurrency(w, r, nil); ok {
		w.WriteHeader(http.StatusNoContent)
	}
}

func (h *lambdaHandler) getConcurrency(w http.ResponseWriter, r *http.Request) {
	f, ok := h.lookup(w, r)
	if !ok {
		return
	}
	out := map[string]int{}
	if n := f.Config().ReservedConcurrentExecutions; n != nil {
		out["ReservedConcurrentExecutions"] = *n
	}
	h.reply(w, 200, out)
}

// ---- event invoke config ----

type lambdaDestination struct {
	Destination string `json:"Destination"`
}

type lambdaEventInvokeConfig struct {
	FunctionArn              string  `json:"FunctionArn,omitempty"`
	LastModified             float64 `json:"LastModified,omitempty"`
	MaximumRetryAttempts     *int    `json:"MaximumRetryAttempts,omitempty"`
	MaximumEventAgeInSeconds *int    `json:"MaximumEventAgeInSeconds,omitempty"`
	DestinationConfig        *struct {
		OnSuccess *lambdaDestination `json:"OnSuccess,omitempty"`
		OnFailure *lambdaDestination `json:"OnFailure,omitempty"`
	} `json:"DestinationConfig,omitempty"`
	// DeadLetterConfig is a runnel extension (AWS keeps it on the
	// function's configuration).
	DeadLetterConfig *async.DeadLetterConfig `json:"DeadLetterConfig,omitempty"`
}

func lambdaEpoch(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return math.Round(float64(t.UnixMilli())) / 1000
}

func lambdaFromEpoch(f float64) time.Time {
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)).UTC()
}

func (h *lambdaHandler) eicOut(c *async.EventInvokeConfig) lambdaEventInvokeConfig {
	out := lambdaEventInvokeConfig{
		FunctionArn: c.FunctionArn, LastModified: lambdaEpoch(c.LastModified),
		MaximumRetryAttempts: c.MaximumRetryAttempts, MaximumEventAgeInSeconds: c.MaximumEventAgeInSeconds,
		DeadLetterConfig: c.DeadLetterConfig,
	}
	if out.FunctionArn == "" {
		out.FunctionArn = h.rn.Functions.ARN(c.FunctionName)
	}
	if !strings.HasSuffix(out.FunctionArn, ":$LATEST") {
		out.FunctionArn += ":$LATEST"
	}
	out.DestinationConfig = &struct {
		OnSuccess *lambdaDestination `json:"OnSuccess,omitempty"`
		OnFailure *lambdaDestination `json:"OnFailure,omitempty"`
	}{OnSuccess: &lambdaDestination{}, OnFailure: &lambdaDestination{}}
	if d := c.DestinationConfig; d != nil {
		if d.OnSuccess != nil {
			out.DestinationConfig.OnSuccess.Destination = d.OnSuccess.Destination
		}
		if d.OnFailure != nil {
			out.DestinationConfig.OnFailure.Destination = d.OnFailure.Destination
		}
	}
	return out
}

func (h *lambdaHandler) eicIn(w http.ResponseWriter, r *http.Request) (*async.EventInvokeConfig, bool) {
	name, err := h.functionName(r)
	if err != nil {
		h.fail(w, r, err)
		return nil, false
	}
	var in lambdaEventInvokeConfig
	if err := lambdaDecode(r, &in); err != nil {
		h.fail(w, r, err)
		return nil, false
	}
	c := &async.EventInvokeConfig{
		FunctionName: name, MaximumRetryAttempts: in.MaximumRetryAttempts,
		MaximumEventAgeInSeconds: in.MaximumEventAgeInSeconds, DeadLetterConfig: in.DeadLetterConfig,
	}
	if d := in.DestinationConfig; d != nil {
		c.DestinationConfig = &async.DestinationConfig{}
		if d.OnSuccess != nil {
			c.DestinationConfig.OnSuccess = &async.OnSuccess{Destination: d.OnSuccess.Destination}
		}
		if d.OnFailure != nil {
			c.DestinationConfig.OnFailure = &async.OnFailure{Destination: d.OnFailure.Destination}
		}
	}
	return c, true
}

func (h *lambdaHandler) putEventInvokeConfig(w http.ResponseWriter, r *http.Request) {
	c, ok := h.eicIn(w, r)
	if !ok {
		return
	}
	out, err := h.rn.Async.PutFunctionEventInvokeConfig(r.Context(), *c)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.reply(w, 200, h.eicOut(out))
}

func (h *lambdaHandler) updateEventInvokeConfig(w http.ResponseWriter, r *http.Request) {
	c, ok := h.eicIn(w, r)
	if !ok {
		return
	}
	out, err := h.rn.Async.UpdateFunctionEventInvokeConfig(r.Context(), *c)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.reply(w, 200, h.eicOut(out))
}

func (h *lambdaHandler) getEventInvokeConfig(w http.ResponseWriter, r *http.Request) {
	name, err := h.functionName(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	out, err := h.rn.Async.GetFunctionEventInvokeConfig(r.Context(), name)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.reply(w, 200, h.eicOut(out))
}

func (h *lambdaHandler) listEventInvokeConfigs(w http.ResponseWriter, r *http.Request) {
	name, err := h.functionName(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if _, err := h.rn.Functions.GetFunction(name); err != nil {
		h.fail(w, r, err)
		return
	}
	list := []lambdaEventInvokeConfig{}
	out, err := h.rn.Async.GetFunctionEventInvokeConfig(r.Context(), name)
	switch {
	case err == nil:
		list = append(list, h.eicOut(out))
	case !errors.Is(err, awserr.ErrResourceNotFound):
		h.fail(w, r, err)
		return
	}
	h.reply(w, 200, map[string]any{"FunctionEventInvokeConfigs": list})
}

func (h *lambdaHandler) deleteEventInvokeConfig(w http.ResponseWriter, r *http.Request) {
	name, err := h.functionName(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if err := h.rn.Async.DeleteFunctionEventInvokeConfig(r.Context(), name); err != nil {
		h.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// ---- event source mappings ----

type lambdaESMDestinations struct {
	OnSuccess *lambdaDestination `json:"OnSuccess,omitempty"`
	OnFailure *lambdaDestination `json:"OnFailure,omitempty"`
}

// lambdaESMInput is CreateEventSourceMapping's and UpdateEventSourceMapping's
// request: pointers tell "not given" from zero.
type lambdaESMInput struct {
	EventSourceArn                 string                 `json:"EventSourceArn"`
	FunctionName                   string                 `json:"FunctionName"`
	Enabled                        *bool                  `json:"Enabled"`
	BatchSize                      *int                   `json:"BatchSize"`
	MaximumBatchingWindowInSeconds *int                   `json:"MaximumBatchingWindowInSeconds"`
	ParallelizationFactor          *int                   `json:"ParallelizationFactor"`
	StartingPosition               string                 `json:"StartingPosition"`
	StartingPositionTimestamp      *float64               `json:"StartingPositionTimestamp"`
	MaximumRetryAttempts           *int                   `json:"MaximumRetryAttempts"`
	MaximumRecordAgeInSeconds      *int                   `json:"MaximumRecordAgeInSeconds"`
	BisectBatchOnFunctionError     *bool                  `json:"BisectBatchOnFunctionError"`
	FunctionResponseTypes          []string               `json:"FunctionResponseTypes"`
	DestinationConfig              *lambdaESMDestinations `json:"DestinationConfig"`
	FilterCriteria                 *filter.Criteria       `json:"FilterCriteria"`
	ScalingConfig                  *mapping.ScalingConfig `json:"ScalingConfig"`
	// RetryPolicy is a runnel extension (queue sources).
	RetryPolicy *backoff.Policy `json:"RetryPolicy"`

	// Parameters of other event sources, refused when set.
	TumblingWindowInSeconds    *int              `json:"TumblingWindowInSeconds"`
	Topics                     []string          `json:"Topics"`
	Queues                     []string          `json:"Queues"`
	SourceAccessConfigurations []json.RawMessage `json:"SourceAccessConfigurations"`
	SelfManagedEventSource     json.RawMessage   `json:"SelfManagedEventSource"`
}

func (in *lambdaESMInput) check() error {
	switch {
	case in.TumblingWindowInSeconds != nil && *in.TumblingWindowInSeconds != 0:
		return lambdaInvalid("TumblingWindowInSeconds: not supported by runnel")
	case len(in.Topics) > 0, len(in.Queues) > 0, len(in.SourceAccessConfigurations) > 0, len(in.SelfManagedEventSource) > 0:
		return lambdaInvalid("Topics, Queues, SourceAccessConfigurations and SelfManagedEventSource are for Kafka and MQ event sources, which runnel does not have")
	case in.BatchSize != nil && *in.BatchSize < 1:
		return awserr.OutOfRange(awserr.ErrInvalidParameterValue, "BatchSize", *in.BatchSize, 1, mapping.MaxBatchSize)
	case in.ParallelizationFactor != nil && *in.ParallelizationFactor < 1:
		return awserr.OutOfRange(awserr.ErrInvalidParameterValue, "ParallelizationFactor", *in.ParallelizationFactor, 1, mapping.MaxParallelizationFactor)
	case in.DestinationConfig != nil && in.DestinationConfig.OnSuccess != nil && in.DestinationConfig.OnSuccess.Destination != "":
		return lambdaInvalid("DestinationConfig.OnSuccess: not supported for stream and queue event sources (only OnFailure)")
	}
	return nil
}

// destinations converts the request's DestinationConfig: nil when not
// given, an empty one (no destination) when OnFailure is absent or empty.
func (in *lambdaESMInput) destinations() *mapping.DestinationConfig {
	if in.DestinationConfig == nil {
		return nil
	}
	d := &mapping.DestinationConfig{}
	if f := in.DestinationConfig.OnFailure; f != nil && f.Destination != "" {
		d.OnFailure = &mapping.OnFailure{Destination: f.Destination}
	}
	return d
}

type lambdaESMOutput struct {
	UUID                           string                 `json:"UUID"`
	EventSourceArn                 string                 `json:"EventSourceArn"`
	FunctionArn                    string                 `json:"FunctionArn"`
	State                          string                 `json:"State"`
	StateTransitionReason          string                 `json:"StateTransitionReason"`
	LastModified                   float64                `json:"LastModified"`
	LastProcessingResult           string                 `json:"LastProcessingResult,omitempty"`
	BatchSize                      int                    `json:"BatchSize"`
	MaximumBatchingWindowInSeconds int                    `json:"MaximumBatchingWindowInSeconds"`
	ParallelizationFactor          int                    `json:"ParallelizationFactor,omitempty"`
	StartingPosition               string                 `json:"StartingPosition,omitempty"`
	StartingPositionTimestamp      float64                `json:"StartingPositionTimestamp,omitempty"`
	MaximumRetryAttempts           *int                   `json:"MaximumRetryAttempts,omitempty"`
	MaximumRecordAgeInSeconds      *int                   `json:"MaximumRecordAgeInSeconds,omitempty"`
	BisectBatchOnFunctionError     *bool                  `json:"BisectBatchOnFunctionError,omitempty"`
	FunctionResponseTypes          []string               `json:"FunctionResponseTypes,omitempty"`
	DestinationConfig              *lambdaESMDestinations `json:"DestinationConfig,omitempty"`
	FilterCriteria                 *filter.Criteria       `json:"FilterCriteria,omitempty"`
	ScalingConfig                  *mapping.ScalingConfig `json:"ScalingConfig,omitempty"`
	RetryPolicy                    *backoff.Policy        `json:"RetryPolicy,omitempty"`
}

func (h *lambdaHandler) esmOut(c *mapping.Config) lambdaESMOutput {
	out := lambdaESMOutput{
		UUID: c.UUID, EventSourceArn: c.EventSourceArn, FunctionArn: c.FunctionArn,
		State: c.State, StateTransitionReason: c.StateTransitionReason, LastModified: lambdaEpoch(c.LastModified),
		BatchSize: c.BatchSize, MaximumBatchingWindowInSeconds: c.MaximumBatchingWindowInSeconds,
		ParallelizationFactor: c.ParallelizationFactor, StartingPosition: c.StartingPosition,
		MaximumRetryAttempts: c.MaximumRetryAttempts, MaximumRecordAgeInSeconds: c.MaximumRecordAgeInSeconds,
		FunctionResponseTypes: c.FunctionResponseTypes, FilterCriteria: c.FilterCriteria,
		ScalingConfig: c.ScalingConfig, RetryPolicy: c.RetryPolicy,
	}
	if c.StartingPositionTimestamp != nil {
		out.StartingPositionTimestamp = lambdaEpoch(*c.StartingPositionTimestamp)
	}
	if !strings.HasPrefix(c.EventSourceArn, "arn:aws:sqs:") {
		b := c.BisectBatchOnFunctionError
		out.BisectBatchOnFunctionError = &b
		out.DestinationConfig = &lambdaESMDestinations{OnFailure: &lambdaDestination{}}
		if c.DestinationConfig != nil && c.DestinationConfig.OnFailure != nil {
			out.DestinationConfig.OnFailure.Destination = c.DestinationConfig.OnFailure.Destination
		}
	}
	if st, err := h.rn.Mappings.Status(c.UUID); err == nil {
		switch {
		case st.Queue != nil:
			out.LastProcessingResult = st.Queue.LastProcessingResult
		case len(st.Shards) > 0:
			out.LastProcessingResult = st.Shards[0].LastProcessingResult
		}
	}
	return out
}

func (h *lambdaHandler) createMapping(w http.ResponseWriter, r *http.Request) {
	var in lambdaESMInput
	if err := lambdaDecode(r, &in); err != nil {
		h.fail(w, r, err)
		return
	}
	if err := in.check(); err != nil {
		h.fail(w, r, err)
		return
	}
	cfg := mapping.Config{
		EventSourceArn: in.EventSourceArn, FunctionName: in.FunctionName, Enabled: in.Enabled,
		StartingPosition: in.StartingPosition, MaximumRetryAttempts: in.MaximumRetryAttempts,
		MaximumRecordAgeInSeconds: in.MaximumRecordAgeInSeconds, FunctionResponseTypes: in.FunctionResponseTypes,
		DestinationConfig: in.destinations(), FilterCriteria: in.FilterCriteria,
		ScalingConfig: in.ScalingConfig, RetryPolicy: in.RetryPolicy,
	}
	if cfg.DestinationConfig != nil && cfg.DestinationConfig.OnFailure == nil {
		cfg.DestinationConfig = nil
	}
	if in.BatchSize != nil {
		cfg.BatchSize = *in.BatchSize
	}
	if in.MaximumBatchingWindowInSeconds != nil {
		cfg.MaximumBatchingWindowInSeconds = *in.MaximumBatchingWindowInSeconds
	}
	if in.ParallelizationFactor != nil {
		cfg.ParallelizationFactor = *in.ParallelizationFactor
	}
	if in.BisectBatchOnFunctionError != nil {
		cfg.BisectBatchOnFunctionError = *in.BisectBatchOnFunctionError
	}
	if in.StartingPositionTimestamp != nil {
		t := lambdaFromEpoch(*in.StartingPositionTimestamp)
		cfg.StartingPositionTimestamp = &t
	}
	out, err := h.rn.Mappings.CreateEventSourceMapping(r.Context(), cfg)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.reply(w, http.StatusAccepted, h.esmOut(out))
}

func (h *lambdaHandler) getMapping(w http.ResponseWriter, r *http.Request) {
	c, err := h.rn.Mappings.GetEventSourceMapping(r.PathValue("uuid"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.reply(w, 200, h.esmOut(c))
}

func (h *lambdaHandler) listMappings(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	src, fn := q.Get("EventSourceArn"), q.Get("FunctionName")
	if fn != "" {
		if n, ok := function.FunctionNameFromARN(fn); ok {
			fn = n
		}
		fn = h.rn.Functions.ARN(fn)
	}
	var all []mapping.Config
	for _, c := range h.rn.Mappings.ListEventSourceMappings() {
		if src != "" && c.EventSourceArn != src {
			continue
		}
		if fn != "" && strings.TrimSuffix(c.FunctionArn, ":$LATEST") != fn {
			continue
		}
		all = append(all, c)
	}
	from, to, next, err := lambdaPage(r, len(all), 100)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	out := struct {
		EventSourceMappings []lambdaESMOutput `json:"EventSourceMappings"`
		NextMarker          string            `json:"NextMarker,omitempty"`
	}{EventSourceMappings: []lambdaESMOutput{}, NextMarker: next}
	for i := from; i < to; i++ {
		out.EventSourceMappings = append(out.EventSourceMappings, h.esmOut(&all[i]))
	}
	h.reply(w, 200, out)
}

func (h *lambdaHandler) updateMapping(w http.ResponseWriter, r *http.Request) {
	var in lambdaESMInput
	if err := lambdaDecode(r, &in); err != nil {
		h.fail(w, r, err)
		return
	}
	if err := in.check(); err != nil {
		h.fail(w, r, err)
		return
	}
	switch {
	case in.EventSourceArn != "":
		h.fail(w, r, lambdaInvalid("EventSourceArn: cannot be changed; create a new mapping"))
		return
	case in.StartingPosition != "" || in.StartingPositionTimestamp != nil:
		h.fail(w, r, lambdaInvalid("StartingPosition: cannot be changed; create a new mapping"))
		return
	}
	old, err := h.rn.Mappings.GetEventSourceMapping(r.PathValue("uuid"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	cfg := mapping.Config{
		UUID: old.UUID, FunctionName: in.FunctionName, Enabled: in.Enabled,
		MaximumRetryAttempts: in.MaximumRetryAttempts, MaximumRecordAgeInSeconds: in.MaximumRecordAgeInSeconds,
		FunctionResponseTypes: in.FunctionResponseTypes, DestinationConfig: in.destinations(),
		FilterCriteria: in.FilterCriteria, ScalingConfig: in.ScalingConfig, RetryPolicy: in.RetryPolicy,
		// Always taken as given by the service: keep the stored values
		// unless the request sets them.
		BisectBatchOnFunctionError:     old.BisectBatchOnFunctionError,
		MaximumBatchingWindowInSeconds: old.MaximumBatchingWindowInSeconds,
	}
	if in.BatchSize != nil {
		cfg.BatchSize = *in.BatchSize
	}
	if in.MaximumBatchingWindowInSeconds != nil {
		cfg.MaximumBatchingWindowInSeconds = *in.MaximumBatchingWindowInSeconds
	}
	if in.ParallelizationFactor != nil {
		cfg.ParallelizationFactor = *in.ParallelizationFactor
	}
	if in.BisectBatchOnFunctionError != nil {
		cfg.BisectBatchOnFunctionError = *in.BisectBatchOnFunctionError
	}
	out, err := h.rn.Mappings.UpdateEventSourceMapping(r.Context(), cfg)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.reply(w, http.StatusAccepted, h.esmOut(out))
}

func (h *lambdaHandler) deleteMapping(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("uuid")
	c, err := h.rn.Mappings.GetEventSourceMapping(id)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if err := h.rn.Mappings.DeleteEventSourceMapping(r.Context(), id); err != nil {
		h.fail(w, r, err)
		return
	}
	out := h.esmOut(c)
	out.State, out.LastProcessingResult = "Deleting", ""
	h.reply(w, http.StatusAccepted, out)
}
