package awsapi

// Lambda: functions (REST, /2015-03-31/functions) over package function.
// A function is in-process (Runtime "runnel": Handler names a handler
// registered in the runnel instance's function.Registry; no code) or a
// process function (lambda_process.go): Runtime provided.al2023,
// provided.al2 or provided with an executable bootstrap in Code.ZipFile,
// or a managed runtime (python3.x, nodejs*) run on this machine's
// interpreter, its Handler resolved as Lambda does; a different minor
// version of the interpreter is reported in StateReason. Versions and
// aliases: lambda_versions.go, lambda_aliases.go. No layers, S3 or image
// code.

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/engine"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/function/process"
	"github.com/runnel-dev/runnel/queue"
)

// functionTimeLayout is the form of a function's LastModified.
const functionTimeLayout = "2006-01-02T15:04:05.000-0700"

type environment struct {
	Variables map[string]string
}

type functionCode struct {
	ZipFile                                    []byte
	S3Bucket, S3Key, S3ObjectVersion, ImageUri string
}

type createFunctionInput struct {
	FunctionName, Runtime, Role, Handler string
	// Publish publishes version 1 once the function is created; the
	// answer is that version's configuration.
	Publish             bool
	Code                *functionCode
	Description         string
	Timeout, MemorySize int
	Environment         *environment
	PackageType         string
	Tags                map[string]string
	Layers              []string
	DeadLetterConfig    *deadLetterConfig
	EphemeralStorage    *ephemeralStorage
	Architectures       []string
	TracingConfig       *tracingConfig
}

// ephemeralStorage is API_EphemeralStorage: Size in MB, 512..10240.
type ephemeralStorage struct{ Size int }

// tracingConfig is API_TracingConfig: Mode Active or PassThrough.
type tracingConfig struct{ Mode string }

// Ranges of CreateFunction's EphemeralStorage (MB).
const (
	minEphemeralStorage = 512
	maxEphemeralStorage = 10240
)

// setExtras checks and sets on meta what CreateFunction and
// UpdateFunctionConfiguration take beyond function.Config and report as
// given: EphemeralStorage (Size 512..10240 MB), Architectures (exactly
// one of x86_64, arm64; nil: unchanged) and TracingConfig (Mode Active or
// PassThrough). Errors are InvalidParameterValueException naming the
// field. Before, CreateFunction dropped them and answered nil,
// [x86_64] and nil.
func setExtras(meta *functionMeta, es *ephemeralStorage, archs []string, tc *tracingConfig) error {
	if es != nil {
		if es.Size < minEphemeralStorage || es.Size > maxEphemeralStorage {
			return awserr.OutOfRange(awserr.ErrInvalidParameterValue, "EphemeralStorage.Size", es.Size, minEphemeralStorage, maxEphemeralStorage)
		}
		meta.EphemeralStorage = es.Size
	}
	if archs != nil {
		if len(archs) != 1 || (archs[0] != "x86_64" && archs[0] != "arm64") {
			return lambdaInvalid("Architectures: %q must be exactly one of x86_64, arm64", archs)
		}
		meta.Architectures = archs
	}
	if tc != nil {
		if tc.Mode != "Active" && tc.Mode != "PassThrough" {
			return lambdaInvalid("TracingConfig.Mode: %q must be Active or PassThrough", tc.Mode)
		}
		meta.TracingMode = tc.Mode
	}
	return nil
}

// deadLetterConfig is API_DeadLetterConfig; an empty TargetArn (in
// UpdateFunctionConfiguration) removes it.
type deadLetterConfig struct {
	TargetArn string
}

// deadLetterOf checks a DeadLetterConfig of CreateFunction or
// UpdateFunctionConfiguration: nil for none (or an empty TargetArn), else
// an existing standard queue. Before, the field was not read: the call
// succeeded and failed events never reached the queue.
func (rq *request) deadLetterOf(in *deadLetterConfig) (*function.DeadLetterConfig, error) {
	if in == nil || in.TargetArn == "" {
		return nil, nil
	}
	if _, ok := queue.NameFromARN(in.TargetArn); !ok {
		return nil, lambdaInvalid("DeadLetterConfig.TargetArn: %q is not a queue ARN (arn:aws:sqs:<region>:<account>:<name>); runnel's dead-letter queues are queues (SNS topics are not supported)", in.TargetArn)
	}
	attrs, err := rq.h.rn.Queues.GetQueueAttributes(rq.ctx, in.TargetArn, []string{queue.AttrFifoQueue})
	if err != nil {
		return nil, lambdaInvalid("DeadLetterConfig.TargetArn: queue %s does not exist", in.TargetArn)
	}
	if attrs[queue.AttrFifoQueue] == "true" {
		return nil, lambdaInvalid("DeadLetterConfig.TargetArn: %s is a FIFO queue; Lambda supports only standard queues as dead-letter queues", in.TargetArn)
	}
	return &function.DeadLetterConfig{TargetArn: in.TargetArn}, nil
}

type functionConfiguration struct {
	FunctionName, FunctionArn, Runtime, Role, Handler string
	CodeSize                                          int64
	Description                                       string
	Timeout, MemorySize                               int
	LastModified, CodeSha256, Version                 string
	RevisionId                                        string       `json:",omitempty"`
	Environment                                       *environment `json:",omitempty"`
	State, LastUpdateStatus, PackageType              string
	// StateReason says what differs between a managed runtime and the
	// interpreter it runs on (python3.12 on Python 3.11).
	StateReason      string `json:",omitempty"`
	Architectures    []string
	Layers           []functionLayer            `json:",omitempty"`
	DeadLetterConfig *function.DeadLetterConfig `json:",omitempty"`
	EphemeralStorage ephemeralStorage
	TracingConfig    tracingConfig
}

// functionLayer is a layer of a FunctionConfiguration (API_Layer).
type functionLayer struct {
	Arn      string
	CodeSize int64
}

// configuration is the FunctionConfiguration of cfg.
func (h *Handler) configuration(ctx context.Context, cfg function.Config) functionConfiguration {
	meta, err := h.loadMeta(ctx, metaKey(cfg))
	if err != nil || meta == nil {
		meta = &functionMeta{Runtime: RuntimeRunnel, Handler: cfg.Handler}
	}
	out := functionConfiguration{
		FunctionName: cfg.FunctionName, FunctionArn: cfg.FunctionArn,
		Runtime: meta.Runtime, Role: meta.Role, Handler: meta.Handler,
		CodeSize: meta.CodeSize, Description: meta.Description,
		Timeout: cfg.Timeout, MemorySize: cfg.MemorySize,
		CodeSha256: meta.CodeSha256, Version: cfg.ExecutedVersion(), StateReason: meta.RuntimeWarning,
		RevisionId: cfg.RevisionId,
		State:      "Active", LastUpdateStatus: "Successful", PackageType: "Zip",
		Architectures: []string{"x86_64"}, DeadLetterConfig: cfg.DeadLetterConfig,
		EphemeralStorage: ephemeralStorage{Size: cmp.Or(meta.EphemeralStorage, minEphemeralStorage)},
		TracingConfig:    tracingConfig{Mode: cmp.Or(meta.TracingMode, "PassThrough")},
	}
	if len(meta.Architectures) > 0 {
		out.Architectures = meta.Architectures
	}
	if !meta.LastModified.IsZero() {
		out.LastModified = meta.LastModified.UTC().Format(functionTimeLayout)
	}
	if out.FunctionArn == "" {
		out.FunctionArn = h.rn.Functions.ARN(cfg.FunctionName)
	}
	if len(cfg.Environment) > 0 {
		out.Environment = &environment{Variables: cfg.Environment}
	}
	for _, arn := range meta.Layers {
		l := functionLayer{Arn: arn}
		if i := strings.LastIndex(arn, ":"); i > 0 {
			if v, err := strconv.ParseInt(arn[i+1:], 10, 64); err == nil {
				if lv, err := h.readLayer(ctx, arn[strings.LastIndex(arn[:i], ":")+1:i], v); err == nil {
					l.CodeSize = lv.Content.CodeSize
				}
			}
		}
		out.Layers = append(out.Layers, l)
	}
	return out
}

// current is the configuration of the function name as it is now.
func (rq *request) current(name string) (any, error) {
	f, err := rq.h.rn.Functions.GetFunction(name)
	if err != nil {
		return nil, err
	}
	return rq.h.configuration(rq.ctx, f.Config()), nil
}

func lambdaCreateFunction(rq *request, in *createFunctionInput) (any, error) {
	h, ctx := rq.h, rq.ctx
	cfg := function.Config{
		FunctionName: in.FunctionName, Handler: in.Handler, Timeout: in.Timeout, MemorySize: in.MemorySize,
	}
	dl, err := rq.deadLetterOf(in.DeadLetterConfig)
	if err != nil {
		return nil, err
	}
	cfg.DeadLetterConfig = dl
	if in.Environment != nil {
		cfg.Environment = in.Environment.Variables
	}
	if in.PackageType != "" && in.PackageType != "Zip" {
		return nil, lambdaInvalid("PackageType: %q is not supported: only Zip", in.PackageType)
	}
	meta := &functionMeta{Runtime: in.Runtime, Handler: in.Handler, Role: in.Role, Description: in.Description, LastModified: time.Now(), Layers: in.Layers}
	if err := setExtras(meta, in.EphemeralStorage, in.Architectures, in.TracingConfig); err != nil {
		return nil, err
	}
	h.fnMu.Lock()
	defer h.fnMu.Unlock()
	if _, err := h.rn.Functions.GetFunction(in.FunctionName); err == nil {
		return nil, awserr.New(awserr.ErrResourceConflict, "Function already exist: %s", in.FunctionName)
	}
	switch {
	case meta.isProcess():
		if err := h.checkNewLayers(ctx, in.Layers, nil); err != nil {
			return nil, err
		}
		if in.Code == nil || len(in.Code.ZipFile) == 0 {
			return nil, lambdaInvalid("Code.ZipFile: required for Runtime %s (a zip holding an executable bootstrap); S3 and image code are not supported", in.Runtime)
		}
		if meta.Handler == "" && process.IsManagedRuntime(meta.Runtime) {
			return nil, lambdaInvalid("Handler: required for Runtime %s (module.function, as handler.handler)", meta.Runtime)
		}
		if meta.Handler == "" {
			meta.Handler = "bootstrap"
		}
		zip := in.Code.ZipFile
		meta.CodeSha256, meta.CodeSize = codeDigest(zip), int64(len(zip))
		probe := cfg
		probe.Handler = ProcessHandlerPrefix + cfg.FunctionName
		if err := probe.Validate(); err != nil {
			return nil, err
		}
		// Code and metadata are stored before the configuration (another
		// node builds the pool from them when it sees the function).
		if err := h.deployProcess(ctx, cfg, meta, zip, true, false); err != nil {
			if !errors.Is(err, awserr.ErrResourceConflict) {
				h.forgetCode(ctx, cfg.FunctionName)
				h.forgetVersionsMeta(ctx, cfg.FunctionName)
			}
			return nil, err
		}
	case in.Runtime == RuntimeRunnel || in.Runtime == "" || slices.Contains(h.rn.Functions.Registry().Handlers(), in.Handler):
		if in.Code != nil && len(in.Code.ZipFile) > 0 {
			return nil, lambdaInvalid("Code.ZipFile: an in-process function (Runtime %s) has no code; use Runtime provided.al2023 for a zip", RuntimeRunnel)
		}
		if strings.HasPrefix(in.Handler, ProcessHandlerPrefix) {
			return nil, lambdaInvalid("Handler: %q names a process function's handler", in.Handler)
		}
		if len(in.Layers) > 0 {
			return nil, lambdaInvalid("Layers: an in-process function (Runtime %s) takes no layers", RuntimeRunnel)
		}
		if meta.Runtime == "" {
			meta.Runtime = RuntimeRunnel
		}
		if _, err := h.rn.Functions.CreateFunction(ctx, cfg); err != nil {
			return nil, err
		}
	default:
		return nil, lambdaInvalid("Runtime: %q is not supported: use python3.x or nodejs* (run on this machine's interpreter), provided.al2023 or provided.al2 with Code.ZipFile holding bootstrap, or %s with Handler naming a registered in-process handler (registered: %v)", in.Runtime, RuntimeRunnel, h.rn.Functions.Registry().Handlers())
	}
	if !meta.isProcess() {
		if err := h.storeMeta(ctx, cfg.FunctionName, meta); err != nil {
			h.lopts.Logger.Error("lambda api: store function metadata", "function", cfg.FunctionName, "err", err)
		}
	}
	if len(in.Tags) > 0 {
		if err := h.rn.Functions.TagResource(ctx, cfg.FunctionName, in.Tags); err != nil {
			return nil, err
		}
	}
	if in.Publish {
		return h.publishLocked(ctx, cfg.FunctionName, &publishVersionInput{}) // fnMu held since the start
	}
	return rq.current(cfg.FunctionName)
}

// function is the function the path names.
func (rq *request) function() (*function.Function, error) {
	name, err := rq.functionName()
	if err != nil {
		return nil, err
	}
	return rq.h.rn.Functions.GetFunction(name)
}

// described is the function, version or alias's version the path and
// Qualifier name (no alias routing).
func (rq *request) described() (*function.Function, error) {
	ref, err := rq.qualifiedRef()
	if err != nil {
		return nil, err
	}
	return rq.h.rn.Functions.Describe(ref)
}

func lambdaGetFunction(rq *request, _ *noInput) (any, error) {
	f, err := rq.described()
	if err != nil {
		return nil, err
	}
	cfg := f.Config()
	out := map[string]any{
		"Configuration": rq.h.configuration(rq.ctx, cfg),
		"Code":          map[string]string{"RepositoryType": "S3", "Location": ""},
	}
	if cfg.ReservedConcurrentExecutions != nil {
		out["Concurrency"] = map[string]int{"ReservedConcurrentExecutions": *cfg.ReservedConcurrentExecutions}
	}
	if tags, err := rq.h.rn.Functions.ListTags(rq.ctx, cfg.FunctionName); err == nil && len(tags) > 0 {
		out["Tags"] = tags
	}
	return out, nil
}

func lambdaGetFunctionConfiguration(rq *request, _ *noInput) (any, error) {
	f, err := rq.described()
	if err != nil {
		return nil, err
	}
	return rq.h.configuration(rq.ctx, f.Config()), nil
}

func lambdaListFunctions(rq *request, _ *noInput) (any, error) {
	fns := rq.h.rn.Functions.ListFunctions()
	if v := rq.r.URL.Query().Get("FunctionVersion"); v == "ALL" {
		// Each function's $LATEST, then its published versions.
		var all []function.Config
		for _, c := range fns {
			vs, err := rq.h.rn.Functions.ListVersions(c.FunctionName)
			if err != nil {
				vs = []function.Config{c}
			}
			all = append(all, vs...)
		}
		fns = all
	} else if v != "" {
		return nil, lambdaInvalid("FunctionVersion: %q must be ALL", v)
	}
	return pageOf(rq, fns, 50, "Functions", func(c *function.Config) functionConfiguration {
		return rq.h.configuration(rq.ctx, *c)
	})
}

func lambdaDeleteFunction(rq *request, _ *noInput) (any, error) {
	name, qualifier, err := rq.functionRef()
	if err != nil {
		return nil, err
	}
	h, ctx := rq.h, rq.ctx
	h.fnMu.Lock()
	defer h.fnMu.Unlock()
	if qualifier != "" {
		return nil, h.deleteVersion(ctx, name, qualifier)
	}
	if f, err := h.rn.Functions.GetFunction(name); err == nil {
		name = f.Config().FunctionName
	}
	usedLayers := h.layersOf(ctx, name)
	if err := h.rn.Functions.DeleteFunction(ctx, name); err != nil {
		return nil, err
	}
	defer h.collectLayers(ctx, usedLayers)
	for _, key := range h.procs.removeFunction(name, h.rn.Engine.Clock) {
		h.forgetCode(ctx, key)
	}
	h.forgetCode(ctx, name)
	h.forgetVersionsMeta(ctx, name)
	for _, c := range h.rn.Async.ListFunctionEventInvokeConfigs(name) {
		ref := name + ":" + cmp.Or(c.Qualifier, function.Latest)
		if err := h.rn.Async.DeleteFunctionEventInvokeConfig(ctx, ref); err != nil && !errors.Is(err, awserr.ErrResourceNotFound) {
			h.lopts.Logger.Warn("lambda api: delete event invoke config", "function", ref, "err", err)
		}
	}
	return nil, nil
}

// redeploy replaces function cfg (already changed) with meta and, for a
// process function, code (nil: the stored code; else it is stored too,
// before the configuration).
func (h *Handler) redeploy(ctx context.Context, cfg function.Config, meta *functionMeta, code []byte) error {
	if !meta.isProcess() {
		if _, err := h.rn.Functions.PutFunction(ctx, cfg); err != nil {
			return err
		}
		return h.storeMeta(ctx, cfg.FunctionName, meta)
	}
	store, err := h.codeStore(ctx)
	if err != nil {
		return err
	}
	storeCode := code != nil
	if code == nil {
		if code, err = store.GetBytes(ctx, cfg.FunctionName); err != nil {
			return awserr.New(awserr.ErrService, "read stored code of %s: %v", cfg.FunctionName, err)
		}
	}
	return h.deployProcess(ctx, cfg, meta, code, storeCode, true)
}

// metaOf is the stored metadata of cfg, or what it must be.
func (h *Handler) metaOf(ctx context.Context, cfg function.Config) *functionMeta {
	meta, err := h.loadMeta(ctx, cfg.FunctionName)
	if err != nil || meta == nil {
		meta = &functionMeta{Runtime: RuntimeRunnel, Handler: cfg.Handler}
	}
	if strings.HasPrefix(cfg.Handler, ProcessHandlerPrefix) && !meta.isProcess() {
		meta.Runtime = processRuntimes[0]
	}
	return meta
}

type updateFunctionConfigurationInput struct {
	// RevisionId, when set, must be $LATEST's (else PreconditionFailed):
	// the update applies to the revision the caller read.
	RevisionId                          string
	Runtime, Role, Handler, Description *string
	Timeout, MemorySize                 *int
	Environment                         *environment
	Layers                              *[]string
	DeadLetterConfig                    *deadLetterConfig
	EphemeralStorage                    *ephemeralStorage
	TracingConfig                       *tracingConfig
}

// change calls fn with the configuration and metadata of the function
// the path names, holding fnMu (the calls that change functions are
// serialized), and answers with the function's configuration after.
func (rq *request) change(fn func(cfg *function.Config, meta *functionMeta) error) (any, error) {
	rq.h.fnMu.Lock()
	defer rq.h.fnMu.Unlock()
	f, err := rq.function()
	if err != nil {
		return nil, err
	}
	cfg := f.Config()
	if err := fn(&cfg, rq.h.metaOf(rq.ctx, cfg)); err != nil {
		return nil, err
	}
	return rq.current(cfg.FunctionName)
}

func lambdaUpdateFunctionConfiguration(rq *request, in *updateFunctionConfigurationInput) (any, error) {
	return rq.change(func(cfg *function.Config, meta *functionMeta) error {
		if err := rq.h.rn.Functions.CheckRevision(cfg.FunctionName, in.RevisionId); err != nil {
			return err
		}
		if in.Runtime != nil && *in.Runtime != meta.Runtime {
			if meta.isProcess() != isProcessRuntime(*in.Runtime) {
				return lambdaInvalid("Runtime: cannot change %s to %s (between a process function and an in-process one); delete and create the function", meta.Runtime, *in.Runtime)
			}
			meta.Runtime = *in.Runtime
		}
		setIf(&meta.Role, in.Role)
		setIf(&meta.Description, in.Description)
		if err := setExtras(meta, in.EphemeralStorage, nil, in.TracingConfig); err != nil {
			return err
		}
		if in.Handler != nil {
			if meta.isProcess() {
				meta.Handler = *in.Handler
			} else {
				if strings.HasPrefix(*in.Handler, ProcessHandlerPrefix) {
					return lambdaInvalid("Handler: %q names a process function's handler", *in.Handler)
				}
				cfg.Handler, meta.Handler = *in.Handler, *in.Handler
			}
		}
		oldLayers := meta.Layers
		if in.Layers != nil {
			if !meta.isProcess() && len(*in.Layers) > 0 {
				return lambdaInvalid("Layers: an in-process function (Runtime %s) takes no layers", meta.Runtime)
			}
			if err := rq.h.checkNewLayers(rq.ctx, *in.Layers, oldLayers); err != nil {
				return err
			}
			meta.Layers = *in.Layers
		}
		setIf(&cfg.Timeout, in.Timeout)
		setIf(&cfg.MemorySize, in.MemorySize)
		if in.Environment != nil {
			cfg.Environment = in.Environment.Variables
		}
		if in.DeadLetterConfig != nil {
			dl, err := rq.deadLetterOf(in.DeadLetterConfig)
			if err != nil {
				return err
			}
			cfg.DeadLetterConfig = dl
		}
		meta.LastModified = time.Now()
		if err := rq.h.redeploy(rq.ctx, *cfg, meta, nil); err != nil {
			return err
		}
		rq.h.collectLayers(rq.ctx, oldLayers)
		return nil
	})
}

type updateFunctionCodeInput struct {
	ZipFile            []byte
	S3Bucket, ImageUri string
	DryRun             bool
	// RevisionId as UpdateFunctionConfiguration's; Publish publishes a
	// version after the update, as PublishVersion would.
	RevisionId string
	Publish    bool
}

func lambdaUpdateFunctionCode(rq *request, in *updateFunctionCodeInput) (any, error) {
	out, err := rq.change(func(cfg *function.Config, meta *functionMeta) error {
		if err := rq.h.rn.Functions.CheckRevision(cfg.FunctionName, in.RevisionId); err != nil {
			return err
		}
		if !meta.isProcess() {
			return lambdaInvalid("ZipFile: function %s is an in-process function (Runtime %s); it has no code to update", cfg.FunctionName, meta.Runtime)
		}
		if len(in.ZipFile) == 0 {
			return lambdaInvalid("ZipFile: required (S3 and image code are not supported)")
		}
		if in.DryRun {
			return nil
		}
		meta.CodeSha256, meta.CodeSize, meta.LastModified = codeDigest(in.ZipFile), int64(len(in.ZipFile)), time.Now()
		// The new pool checks the zip before it is stored.
		return rq.h.redeploy(rq.ctx, *cfg, meta, in.ZipFile)
	})
	if err != nil || !in.Publish || in.DryRun {
		return out, err
	}
	name, err := rq.functionName()
	if err != nil {
		return nil, err
	}
	rq.h.fnMu.Lock()
	defer rq.h.fnMu.Unlock()
	return rq.h.publishLocked(rq.ctx, name, &publishVersionInput{})
}

// Account limits GetAccountSettings reports, in bytes (Lambda quotas:
// 75 GB of code storage, 250 MB unzipped, 50 MB zipped per upload).
const (
	accountTotalCodeSize = 75 << 30
	codeSizeUnzipped     = 250 << 20
	codeSizeZipped       = 50 << 20
)

// lambdaGetAccountSettings is GetAccountSettings
// (GET /2016-08-19/account-settings): AccountLimit {TotalCodeSize,
// CodeSizeUnzipped, CodeSizeZipped (bytes), ConcurrentExecutions 1000,
// UnreservedConcurrentExecutions = 1000 minus the functions'
// reservations} and AccountUsage {TotalCodeSize (bytes of the stored
// deployment packages, published versions' and layer versions' included),
// FunctionCount}.
// https://docs.aws.amazon.com/lambda/latest/api/API_GetAccountSettings.html
func lambdaGetAccountSettings(rq *request, _ *noInput) (any, error) {
	h, ctx := rq.h, rq.ctx
	fns := h.rn.Functions.ListFunctions()
	reserved := 0
	for _, c := range fns {
		if r := c.ReservedConcurrentExecutions; r != nil {
			reserved += *r
		}
	}
	var used int64
	kv, err := h.rn.Engine.Bucket(ctx, functionMetaBucket)
	if err != nil {
		return nil, err
	}
	if err := engine.LoadJSON(ctx, kv, func(_ string, m functionMeta, err error) { used += m.CodeSize }); err != nil {
		return nil, err
	}
	if _, lkv, err := h.layerStores(ctx); err == nil {
		engine.LoadJSON(ctx, lkv, func(key string, lv layerVersion, err error) {
			if strings.Contains(key, ".") && err == nil {
				used += lv.Content.CodeSize
			}
		})
	}
	return map[string]any{
		"AccountLimit": map[string]int64{
			"TotalCodeSize": accountTotalCodeSize, "CodeSizeUnzipped": codeSizeUnzipped, "CodeSizeZipped": codeSizeZipped,
			"ConcurrentExecutions":           function.DefaultAccountConcurrency,
			"UnreservedConcurrentExecutions": int64(function.DefaultAccountConcurrency - reserved),
		},
		"AccountUsage": map[string]int64{"TotalCodeSize": used, "FunctionCount": int64(len(fns))},
	}, nil
}
