package awsapi

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/function/logs"
)

// DefaultAddr is the address `runnel serve` listens on for AWS clients by
// default: the port AWS emulators use.
const DefaultAddr = "127.0.0.1:4566"

// Options configures the Kinesis, SQS and DynamoDB side of the endpoint.
type Options struct {
	// Region and AccountID appear in the queue URLs the endpoint returns
	// (http://<host the client used>/<AccountID>/<queue>) and in error
	// messages. Default: the engine's (which also appear in every ARN).
	Region    string
	AccountID string
	// Auth, when not nil, maps access key ids to secret keys: every request
	// must then carry a SigV4 signature (an Authorization header, or a
	// presigned URL's query) made with one of them, with session
	// credentials STS AssumeRole issued (until they expire), or with the
	// credentials the Handler gives its process functions (sts_sessions.go).
	// When nil, any credentials are accepted, but a request must still be
	// signed, as AWS requires (signatureForm): a request without a
	// signature, or with one of the wrong form, is refused in AWS's words.
	Auth map[string]string
	// AllowUnsigned accepts requests without a signature (hand-made ones,
	// curl), as runnel did before: not AWS's behaviour. Ignored with Auth.
	AllowUnsigned bool
	// Logger receives internal failures (status 500). Default: discard.
	Logger *slog.Logger
}

// LambdaOptions configures the Lambda side of the endpoint.
type LambdaOptions struct {
	// Logger receives internal failures and restore messages. Default: the
	// engine's logger (NewLambdaHandler), Options.Logger (NewEndpoint).
	Logger *slog.Logger
	// WorkDir is where process functions' zips are unpacked
	// (os.TempDir() when empty).
	WorkDir string
	// Endpoint, when set, is given to process functions as
	// AWS_ENDPOINT_URL so that AWS SDKs inside them call runnel.
	Endpoint string
}

// Handler is the endpoint: an http.Handler for the APIs it was made for
// (NewHandler, NewLambdaHandler, NewEndpoint). It is safe for concurrent
// use. Close stops the process functions it started.
type Handler struct {
	rn    *runnel.Runnel
	opts  Options
	lopts LambdaOptions
	// json serves Kinesis, SQS and DynamoDB; lambda serves the Lambda
	// REST API (on mux).
	json, lambda bool
	mux          *http.ServeMux
	// schedMux serves the Scheduler REST API (with json).
	schedMux *http.ServeMux
	// fnMu serializes the Lambda calls that create, change or delete
	// functions.
	fnMu sync.Mutex
	// procs are the process functions this Handler started.
	procs processFunctions
	// logs is the CloudWatch Logs store functions write to (nil if it
	// could not be opened: logged, and the Logs calls fail).
	logs *logs.Store
	// sessions caches the AssumeRole sessions verify read (by access key
	// id; *stsSession).
	sessions sync.Map
	// fnCreds are the process functions' credentials under Options.Auth
	// (nil without).
	fnCreds *functionCreds
}

// NewHandler returns the Kinesis, SQS and DynamoDB APIs for rn. It serves
// whatever protocol its server speaks; serve it with NewServer (or set
// Protocols as NewServer does) to accept HTTP/1.1 and cleartext HTTP/2 on
// one port.
func NewHandler(rn *runnel.Runnel, opts Options) *Handler {
	return newHandler(rn, opts, LambdaOptions{}, true, false)
}

// NewLambdaHandler returns the Lambda REST API for rn (paths
// /2015-03-31/functions..., /2017-10-31/.../concurrency,
// /2019-09-25/.../event-invoke-config, /2015-03-31/event-source-mappings).
// It first restores the process functions whose code is stored
// (RestoreProcessFunctions); failures are logged. Close it at shutdown.
func NewLambdaHandler(rn *runnel.Runnel, opts LambdaOptions) *Handler {
	if opts.Logger == nil {
		opts.Logger = rn.Engine.Logger
	}
	return newHandler(rn, Options{}, opts, false, true)
}

// NewEndpoint is the whole AWS-compatible endpoint on one address: the
// Lambda REST API (by path, as NewLambdaHandler) and the Kinesis, SQS and
// DynamoDB APIs (by X-Amz-Target or Action, as NewHandler). This is what
// `runnel serve --aws` serves. Close it at shutdown.
func NewEndpoint(rn *runnel.Runnel, opts Options, lopts LambdaOptions) *Handler {
	if lopts.Logger == nil {
		lopts.Logger = opts.Logger
	}
	if lopts.Logger == nil {
		lopts.Logger = rn.Engine.Logger
	}
	return newHandler(rn, opts, lopts, true, true)
}

func newHandler(rn *runnel.Runnel, opts Options, lopts LambdaOptions, json, lambda bool) *Handler {
	if opts.Region == "" {
		opts.Region = rn.Engine.Region()
	}
	if opts.AccountID == "" {
		opts.AccountID = rn.Engine.AccountID()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	h := &Handler{rn: rn, opts: opts, lopts: lopts, json: json, lambda: lambda}
	if opts.Auth != nil && lambda {
		// Before the functions are restored: they start with these.
		h.fnCreds, h.lopts.Endpoint = functionCredentials(lopts.Endpoint)
	}
	var err error
	if h.logs, err = logs.Open(context.Background(), rn.Engine, lopts.Logger); err != nil {
		opts.Logger.Error("aws api: opening the log store", "err", err)
	}
	if json {
		h.schedMux = h.restMux(Scheduler, protoScheduler, maxBody)
	}
	if lambda {
		if h.logs != nil {
			rn.Functions.SetLogSink(h.logs) // in-process functions' START, END and REPORT
		}
		h.mux = h.restMux(Lambda, protoLambda, lambdaMaxBody)
		// Bounded tries: listing a new object store in a cluster under
		// load hung for minutes once (its consumer's creation unanswered),
		// and the node did not serve meanwhile.
		for attempt := 1; ; attempt++ {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			err := h.RestoreProcessFunctions(ctx)
			cancel()
			if err == nil || attempt == 3 {
				if err != nil {
					lopts.Logger.Error("lambda api: restoring process functions", "err", err)
				}
				break
			}
			lopts.Logger.Warn("lambda api: restoring process functions; trying again", "attempt", attempt, "err", err)
		}
	}
	return h
}

// Close stops the execution environments of the process functions this
// Handler started. Their handlers stay registered: a later invocation
// fails until RestoreProcessFunctions (or a new Handler) restores them.
func (h *Handler) Close() { h.procs.closeAll() }

// Protocols returns HTTP/1.1 plus cleartext HTTP/2 with prior knowledge
// (h2c, what the AWS SDK for JavaScript v3 and other HTTP/2 clients send to
// an http:// endpoint). net/http serves both on one listener since Go
// 1.24, so golang.org/x/net/http2/h2c is not needed; the HTTP/1.1
// "Upgrade: h2c" dance is not supported (no AWS client uses it).
func Protocols() *http.Protocols {
	p := new(http.Protocols)
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	return p
}

// NewServer returns an http.Server for the endpoint on addr, speaking
// HTTP/1.1 and h2c.
func NewServer(addr string, h http.Handler) *http.Server {
	return &http.Server{Addr: addr, Handler: h, Protocols: Protocols(), ReadHeaderTimeout: 30 * time.Second}
}
