package awsapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"mime"
	"net/http"
	"net/url"
	"runtime/debug"
	"strings"

	"github.com/google/uuid"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/sns"
)

// maxBody bounds a request body: PutRecords' 5 MiB in base64 with room.
const maxBody = 16 << 20

// protocol is how a request is decoded and answered.
type protocol int

const (
	protoKinesis         protocol = iota // JSON 1.1
	protoSQSJSON                         // JSON 1.0, query-compatible errors
	protoSQSQuery                        // form in, XML out
	protoDynamoDB                        // JSON 1.0, DynamoDB's error shapes
	protoDynamoDBStreams                 // JSON 1.0, DynamoDB's error shapes
	protoLambda                          // REST, JSON bodies
	protoLogs                            // JSON 1.1 (CloudWatch Logs)
	protoIAM                             // form in, XML out
	protoSTS                             // form in, XML out
	protoKinesisCBOR                     // Kinesis in CBOR (protocol_cbor.go)
	protoSNS                             // form in, XML out
	protoSNSJSON                         // JSON 1.0, query-compatible errors
	protoEvents                          // JSON 1.1 (EventBridge)
	protoScheduler                       // REST, JSON bodies (EventBridge Scheduler)
	protoREST                            // REST: a path no service here routes (unknownPath)
)

// serviceRoute names the service and protocol of a request by a key: an
// X-Amz-Target prefix (targets) or a SigV4 credential scope's service
// (queryServices).
type serviceRoute struct {
	key   string
	svc   Service
	proto protocol
}

// targets are the X-Amz-Target prefixes of the JSON services.
var targets = []serviceRoute{
	{"Kinesis_20131202.", Kinesis, protoKinesis},
	{"AmazonSQS.", SQS, protoSQSJSON},
	{"DynamoDB_20120810.", DynamoDB, protoDynamoDB},
	{"DynamoDBStreams_20120810.", DynamoDBStreams, protoDynamoDBStreams},
	{"Logs_20140328.", CloudWatchLogs, protoLogs},
	{"SNS_20100331.", SNS, protoSNSJSON},
	{"AWSEvents.", EventBridge, protoEvents},
}

// queryServices are the services of the query protocol by the service of
// their SigV4 credential scope; a request signed for another (or not
// signed) is SQS's, or IAM's or STS's if SQS has no such Action.
var queryServices = []serviceRoute{
	{"sqs", SQS, protoSQSQuery},
	{"iam", IAM, protoIAM},
	{"sts", STS, protoSTS},
	{"sns", SNS, protoSNS},
}

// lambdaPrefixes are the path prefixes of the Lambda REST API.
var lambdaPrefixes = []string{"/2015-03-31/", "/2016-08-19/", "/2017-03-31/", "/2017-10-31/", "/2018-10-31/", "/2019-09-25/", "/2019-09-30/", "/2021-10-31/"}

// request is one call being served.
type request struct {
	h      *Handler
	w      http.ResponseWriter
	r      *http.Request
	ctx    context.Context
	proto  protocol
	op     string // the operation's name as the client gave it
	body   []byte
	form   url.Values // query protocol
	reqID  string
	scheme string
	status int // Lambda: the status of a successful reply
	// parsed is the JSON body as the validation read it (nil: not read),
	// from which a DynamoDB input is built (decode_value.go).
	parsed any
}

// ServeHTTP answers one request: a Lambda path to its operation's route,
// anything else by X-Amz-Target or SQS Action (and a GET / with what this
// is).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if id, ok := urlIDOf(r.Host); ok && h.lambda {
		h.serveFunctionURL(w, r, id) // a function URL (lambda_url_serve.go)
		return
	}
	if cors(w, r) {
		return // a browser's preflight, answered
	}
	rq := &request{h: h, w: w, r: r, ctx: r.Context(), reqID: uuid.NewString(), scheme: "http"}
	defer rq.recoverPanic()
	if r.TLS != nil {
		rq.scheme = "https"
	}
	if h.json && isSchedulerPath(r.URL.Path) {
		w.Header().Set("X-Amzn-RequestId", rq.reqID)
		if rq.verifyREST(protoScheduler, maxBody) {
			h.schedMux.ServeHTTP(w, r)
		}
		return
	}
	if h.lambda && (!h.json || isLambdaPath(r.URL.Path)) {
		w.Header().Set("X-Amzn-RequestId", rq.reqID)
		if rq.verifyREST(protoLambda, lambdaMaxBody) {
			h.mux.ServeHTTP(w, r)
		}
		return
	}
	if r.Method == http.MethodGet && sns.IsCertPath(r.URL.Path) {
		// SigningCertURL: the certificate of SNS envelopes' signatures,
		// named by its hash (/SimpleNotificationService-<hash>.pem), the
		// same on every node; another hash is a 404.
		pem, ok := h.rn.SNS.SigningCert(r.URL.Path)
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/x-pem-file")
		w.Write(pem)
		return
	}
	body, err := readBody(r, maxBody)
	if err != nil {
		rq.proto = guessProtocol(r)
		if rq.proto == protoDynamoDB || rq.proto == protoDynamoDBStreams {
			rq.reqID = dynamoRequestID()
		}
		rq.fail(err)
		return
	}
	rq.body = body
	op, err := rq.route()
	if op == nil && err == nil {
		return // answered (a health check)
	}
	if rq.kinesisLegacyJSON() {
		return // answered as Kinesis answers the JSON 1.0 content type
	}
	// An operation the service does not have is refused first (DynamoDB
	// answers UnknownOperationException to an unsigned request naming
	// none, as dynalite's connection tests record); then the signature's
	// form (signatureForm), then with Options.Auth its value.
	if err != nil {
		rq.fail(err)
		return
	}
	if rq.op != "" && !h.opts.AllowUnsigned && !anonymousOK(rq) {
		if err := signatureForm(rq); err != nil {
			rq.fail(err)
			return
		}
	}
	if h.opts.Auth != nil && rq.op != "" {
		if err := h.verify(r, body, rq.proto); err != nil {
			rq.fail(err)
			return
		}
	}
	rq.serve(op)
}

// verifyREST checks the signature of a REST call (Lambda's, Scheduler's)
// with Options.Auth, as verify does the others', and reports whether the
// call may go on; the body it read is put back for the route. A refusal
// is HTTP 403 (toWire).
//
// Trap: these APIs were routed before any check, so --auth protected
// every API but the one that runs code (CreateFunction of a process
// function) and Scheduler.
func (rq *request) verifyREST(proto protocol, max int) bool {
	h, r := rq.h, rq.r
	rq.proto = proto
	if h.opts.Auth == nil {
		return true
	}
	body, err := readBody(r, max)
	if err != nil {
		rq.fail(err)
		return false
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	if err := h.verify(r, body, proto); err != nil {
		rq.fail(err)
		return false
	}
	return true
}

// dynamoRequestID is a request id in DynamoDB's form: 52 characters of
// [0-9A-Z] (the other services' are UUIDs).
func dynamoRequestID() string {
	const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	b := make([]byte, 52)
	for i := range b {
		b[i] = alphabet[rand.N(len(alphabet))]
	}
	return string(b)
}

// isSchedulerPath reports a path of the Scheduler REST API.
func isSchedulerPath(p string) bool {
	return p == "/schedules" || p == "/schedule-groups" || strings.HasPrefix(p, "/schedules/") || strings.HasPrefix(p, "/schedule-groups/") || strings.HasPrefix(p, "/tags/")
}

func isLambdaPath(p string) bool {
	for _, prefix := range lambdaPrefixes {
		if strings.HasPrefix(p, prefix) {
			return true
		}
	}
	return false
}

// route finds the operation of a Kinesis, SQS or DynamoDB request by its
// X-Amz-Target or SQS Action, and sets rq.proto.
func (rq *request) route() (*Operation, error) {
	r := rq.r
	target := r.Header.Get("X-Amz-Target")
	for _, t := range targets {
		if name, ok := strings.CutPrefix(target, t.key); ok {
			rq.proto, rq.op = t.proto, name
			if t.proto == protoKinesis && isCBOR(r) {
				rq.proto = protoKinesisCBOR
			}
			if t.svc == DynamoDB || t.svc == DynamoDBStreams {
				rq.reqID = dynamoRequestID()
			}
			if op := lookup(t.svc, name); op != nil {
				return op, nil
			}
			if t.svc == SQS {
				return nil, awserr.New(awserr.ErrUnsupportedOperation, "SQS operation %s is not supported by runnel", name)
			}
			if t.svc == DynamoDB {
				if _, inAWS := modelOf(DynamoDB).Operations[name]; !inAWS {
					return nil, awserr.New(awserr.ErrUnknownOperation, "") // DynamoDB says no more
				}
			}
			return nil, awserr.New(awserr.ErrUnknownOperation, "%s operation %s is not supported by runnel", t.svc, name)
		}
	}
	rq.proto = protoSQSQuery
	form := r.URL.Query()
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct == "application/x-www-form-urlencoded" {
		bf, err := url.ParseQuery(string(rq.body))
		if err != nil {
			return nil, awserr.New(awserr.ErrMalformedQueryString, "%v", err)
		}
		for k, v := range bf {
			form[k] = append(form[k], v...)
		}
	}
	rq.op, rq.form = form.Get("Action"), form
	if rq.op == "" && isDynamoJSON(r) {
		// JSON 1.0 without a target: DynamoDB's front end answers it
		// (dynalite's connection tests): a body that is not JSON, then
		// no such operation, in DynamoDB's shape and without a message.
		rq.proto, rq.reqID = protoDynamoDB, dynamoRequestID()
		if b := bytes.TrimSpace(rq.body); len(b) > 0 && !json.Valid(b) {
			return nil, awserr.New(awserr.ErrSerialization, "")
		}
		return nil, awserr.New(awserr.ErrUnknownOperation, "")
	}
	if rq.op == "" {
		rq.proto = guessProtocol(r)
		if err := rq.unknownPath(target); err != nil {
			return nil, err
		}
		if (r.Method == http.MethodGet || r.Method == http.MethodHead) && target == "" && r.URL.Path == "/" {
			// A health check (a probe may use HEAD): say what this is.
			rq.w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(rq.w, "{\"service\":\"runnel\",\"apis\":[\"kinesis\",\"sqs\",\"dynamodb\",\"dynamodbstreams\",\"lambda\",\"logs\",\"iam\",\"sts\",\"sns\",\"events\",\"scheduler\"]}\n")
			return nil, nil
		}
		return nil, awserr.New(awserr.ErrUnknownOperation, "no X-Amz-Target %q or Action this endpoint serves (Kinesis_20131202.*, AmazonSQS.*, DynamoDB_20120810.*, DynamoDBStreams_20120810.*, Logs_20140328.*, SNS_20100331.*, AWSEvents.*, SQS, IAM, STS or SNS query Action)", target)
	}
	service := scopeService(r)
	for _, q := range queryServices {
		if q.key == service {
			rq.proto = q.proto
			if op := lookup(q.svc, rq.op); op != nil {
				return op, nil
			}
			return nil, awserr.New(awserr.ErrInvalidAction, "The action %s is not valid for this endpoint.", rq.op)
		}
	}
	for _, q := range queryServices {
		if op := lookup(q.svc, rq.op); op != nil {
			rq.proto = q.proto
			return op, nil
		}
	}
	return nil, awserr.New(awserr.ErrInvalidAction, "The action %s is not valid for this endpoint.", rq.op)
}

// unknownPath refuses a REST call (restJson1, restXml: the operation in
// the method and path, no X-Amz-Target, no Action) to a path no service
// here routes: HTTP 404 UnknownOperationException, in the REST shape (the
// X-Amzn-ErrorType header), as smithy-rs's restJson1 router answers a
// path that matches no operation (aws-smithy-http-server,
// protocol/rest_json_1/router.rs) and as the Lambda API's own fallback
// does here. The JSON and query protocols are posted to "/" only
// (smithy-rs's awsJson router refuses any other path), so a request to
// another path without a target is REST.
//
// Trap: such a call (Scheduler's TagResource at POST /tags/{arn},
// Lambda's PutFunctionRecursionConfig at /2024-08-31/..., SESv2's
// SendEmail at /v2/email/outbound-emails, from a function whose SDK has
// AWS_ENDPOINT_URL pointing here) fell through to Kinesis's legacy JSON
// answer, HTTP 200, and the SDK took it for a success.
func (rq *request) unknownPath(target string) error {
	if target != "" || rq.r.URL.Path == "/" || rq.proto != protoKinesis {
		return nil // JSON or query: answered in their shapes
	}
	rq.proto = protoREST
	rq.w.Header().Set("X-Amzn-RequestId", rq.reqID)
	return awserr.New(awserr.ErrUnknownOperation, "runnel serves no operation at %s %s", rq.r.Method, rq.r.URL.Path)
}

// scopeService is the service of the request's SigV4 credential scope:
// the Authorization header's, or a presigned URL's X-Amz-Credential.
func scopeService(r *http.Request) string {
	if sig, _ := parseAuthorization(r.Header.Get("Authorization")); sig.service != "" {
		return sig.service
	}
	if f := strings.Split(r.URL.Query().Get("X-Amz-Credential"), "/"); len(f) == 5 {
		return f[3]
	}
	return ""
}

// isDynamoJSON reports a request of DynamoDB's content type,
// application/x-amz-json-1.0, not signed for SQS or SNS (which share it).
func isDynamoJSON(r *http.Request) bool {
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	authz := r.Header.Get("Authorization")
	return ct == "application/x-amz-json-1.0" && !strings.Contains(authz, "/sqs/aws4_request") && !strings.Contains(authz, "/sns/aws4_request")
}

// guessProtocol picks the error shape for a request that could not be
// routed, from its content type and signing scope.
func guessProtocol(r *http.Request) protocol {
	// The target names the service first: a DynamoDB request refused
	// before routing (a body over maxBody) answered in Kinesis's shape.
	target := r.Header.Get("X-Amz-Target")
	for _, t := range targets {
		if strings.HasPrefix(target, t.key) {
			if t.proto == protoKinesis && isCBOR(r) {
				return protoKinesisCBOR
			}
			return t.proto
		}
	}
	if strings.Contains(r.Header.Get("Content-Type"), "x-www-form-urlencoded") {
		return protoSQSQuery
	}
	if strings.Contains(r.Header.Get("Authorization"), "/sqs/aws4_request") {
		return protoSQSJSON
	}
	return protoKinesis
}

// restMux routes a REST API's paths (Lambda's, Scheduler's) to the
// service's operations of the table.
func (h *Handler) restMux(svc Service, proto protocol, maxBody int) *http.ServeMux {
	m := http.NewServeMux()
	// A route may end in "?key=value": the operation of that path whose
	// query has it (ListProvisionedConcurrencyConfigs is GetProvisioned...'s
	// path with List=ALL).
	type variant struct {
		key, value string
		op         *Operation
	}
	var patterns []string
	byPattern := map[string][]variant{}
	for _, op := range operations[svc] {
		for _, p := range op.Routes {
			p, q, _ := strings.Cut(p, "?")
			k, v, _ := strings.Cut(q, "=")
			if byPattern[p] == nil {
				patterns = append(patterns, p)
			}
			byPattern[p] = append(byPattern[p], variant{k, v, op})
		}
	}
	for _, p := range patterns {
		variants := byPattern[p]
		m.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) {
			var op *Operation
			for _, v := range variants {
				if v.key == "" && op == nil || v.key != "" && r.URL.Query().Get(v.key) == v.value {
					op = v.op
				}
			}
			if op == nil {
				op = variants[0].op
			}
			rq := &request{h: h, w: w, r: r, ctx: r.Context(), proto: proto, op: op.Name, status: op.Status}
			body, err := readBody(r, maxBody)
			if err != nil {
				rq.fail(err)
				return
			}
			rq.body = body
			rq.serve(op)
		})
	}
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		rq := &request{h: h, w: w, r: r, ctx: r.Context(), proto: proto}
		rq.fail(awserr.New(awserr.ErrUnknownOperation, "no %s operation at %s %s", svc, r.Method, r.URL.Path))
	})
	return m
}

// serve answers the request with op: a CBOR body is first turned into
// its JSON (protocol_cbor.go), then the body (or the query protocol's
// form, validate_query.go) is validated against the operation's input
// shape in the service's model (validate.go).
func (rq *request) serve(op *Operation) {
	defer rq.recoverPanic()
	if rq.proto == protoKinesisCBOR {
		b, err := cborBodyToJSON(rq.body)
		if err != nil {
			rq.fail(err)
			return
		}
		rq.body = b
	}
	if err := kinesisBodyError(rq); err != nil {
		rq.fail(err)
		return
	}
	if rq.proto == protoDynamoDB {
		rq.body = dynamoStringBooleans(rq.body)
	}
	var uri map[string]string
	if rq.proto == protoLambda {
		uri = map[string]string{"FunctionName": rq.r.PathValue("name"), "UUID": rq.r.PathValue("uuid"),
			"LayerName": rq.r.PathValue("layer"), "StatementId": rq.r.PathValue("sid")}
	}
	validate := func() error {
		switch rq.proto {
		case protoSQSQuery, protoIAM, protoSTS:
			return validateForm(op, rq.form)
		}
		v, err := validateJSONValue(op, rq.body, uri)
		rq.parsed = v
		return err
	}
	if !op.ValidateOnError {
		if err := validate(); err != nil {
			rq.fail(err)
			return
		}
	}
	out, err := op.h.serve(rq)
	if err != nil {
		if op.ValidateOnError {
			if verr := validate(); verr != nil {
				err = verr
			}
		}
		rq.fail(err)
		return
	}
	rq.reply(out)
}

// recoverPanic, deferred, answers a panic while serving the request as
// an internal failure (HTTP 500, in the API's shape) and logs it with the
// operation's name and the stack. A panic is a bug: every decoding path
// returns an error.
func (rq *request) recoverPanic() {
	p := recover()
	if p == nil {
		return
	}
	if p == http.ErrAbortHandler {
		panic(p)
	}
	rq.log().Error("aws api: panic serving a request", "op", rq.op, "panic", p, "stack", string(debug.Stack()))
	rq.fail(awserr.New(awserr.ErrInternalFailure, "internal failure serving %s", rq.op))
}

// replier is a result that writes itself (an encoded Kinesis body, an
// Invoke payload).
type replier interface{ writeReply(rq *request) }

// decoder is an input that reads itself from the request (Invoke's raw
// payload, UpdateTable's list of the keys given).
type decoder interface{ decodeFrom(rq *request) error }

// checker is an input that checks itself once decoded (the parameters
// it requires, their ranges).
type checker interface{ check() error }

// decode reads the request into in, in the request's protocol (an empty
// body is {}).
func (rq *request) decode(in any) error {
	if _, ok := in.(*noInput); ok {
		return nil
	}
	if d, ok := in.(decoder); ok {
		return d.decodeFrom(rq)
	}
	switch rq.proto {
	case protoSQSQuery, protoIAM, protoSTS, protoSNS:
		return decodeForm(rq.form, in)
	case protoDynamoDB, protoDynamoDBStreams:
		return rq.dynamoDecodeParsed(in)
	case protoLambda:
		return lambdaDecode(rq.body, in)
	case protoScheduler:
		return decodeJSONOr(rq.body, in, awserr.ErrValidation, "Could not parse request body into json: ")
	}
	return decodeJSON(rq.body, in)
}

// reply writes out as the protocol's result.
func (rq *request) reply(out any) {
	if r, ok := out.(replier); ok {
		r.writeReply(rq)
		return
	}
	switch rq.proto {
	case protoSQSQuery, protoIAM, protoSTS, protoSNS:
		rq.replyXML(out)
	case protoDynamoDB, protoDynamoDBStreams:
		rq.dynamoReply(out)
	case protoLambda, protoScheduler:
		rq.lambdaReply(out)
	default:
		rq.replyJSON(out)
	}
}

// log is the logger of the request's side of the endpoint.
func (rq *request) log() *slog.Logger {
	if rq.proto == protoLambda {
		return rq.h.lopts.Logger
	}
	return rq.h.opts.Logger
}

// readBody reads the request body, at most max bytes, into a buffer sized
// from Content-Length when there is one (io.ReadAll would grow and copy
// it step by step).
func readBody(r *http.Request, max int) ([]byte, error) {
	lr := io.LimitReader(r.Body, int64(max)+1)
	var b []byte
	var err error
	if r.ContentLength <= 0 || r.ContentLength > int64(max) {
		b, err = io.ReadAll(lr)
	} else {
		// bytes.MinRead spare: the read that sees the end does not grow it.
		buf := bytes.NewBuffer(make([]byte, 0, int(r.ContentLength)+bytes.MinRead))
		_, err = buf.ReadFrom(lr)
		b = buf.Bytes()
	}
	switch {
	case err != nil && r.URL != nil && isLambdaPath(r.URL.Path):
		return nil, awserr.New(awserr.ErrInvalidRequestContent, "reading the request body: %v", err)
	case err != nil:
		return nil, awserr.New(awserr.ErrSerialization, "reading the request body: %v", err)
	case len(b) > max && isLambdaPath(r.URL.Path):
		return nil, awserr.New(awserr.ErrRequestTooLarge, "Request must be smaller than %d bytes", max)
	case len(b) > max:
		return nil, awserr.New(awserr.ErrRequestEntityTooLarge, "request body over %d bytes", max)
	}
	return b, nil
}
