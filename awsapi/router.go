package awsapi

import (
	"bytes"
	"context"
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
}

// queryServices are the services of the query protocol by the service of
// their SigV4 credential scope; a request signed for another (or not
// signed) is SQS's, or IAM's or STS's if SQS has no such Action.
var queryServices = []serviceRoute{
	{"sqs", SQS, protoSQSQuery},
	{"iam", IAM, protoIAM},
	{"sts", STS, protoSTS},
}

// lambdaPrefixes are the path prefixes of the Lambda REST API.
var lambdaPrefixes = []string{"/2015-03-31/", "/2017-10-31/", "/2019-09-25/", "/2019-09-30/"}

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
}

// ServeHTTP answers one request: a Lambda path to its operation's route,
// anything else by X-Amz-Target or SQS Action (and a GET / with what this
// is).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if cors(w, r) {
		return // a browser's preflight, answered
	}
	rq := &request{h: h, w: w, r: r, ctx: r.Context(), reqID: uuid.NewString(), scheme: "http"}
	defer rq.recoverPanic()
	if r.TLS != nil {
		rq.scheme = "https"
	}
	if h.lambda && (!h.json || isLambdaPath(r.URL.Path)) {
		rq.proto = protoLambda
		w.Header().Set("X-Amzn-RequestId", rq.reqID)
		h.mux.ServeHTTP(w, r)
		return
	}
	body, err := readBody(r, maxBody)
	if err != nil {
		rq.proto = guessProtocol(r)
		rq.fail(err)
		return
	}
	rq.body = body
	op, err := rq.route()
	if op == nil && err == nil {
		return // answered (a health check)
	}
	// A request for an operation, known or not, is checked first.
	if h.opts.Auth != nil && rq.op != "" {
		if err := h.verify(r, body, rq.proto); err != nil {
			rq.fail(err)
			return
		}
	}
	if err != nil {
		rq.fail(err)
		return
	}
	rq.serve(op)
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
	if rq.op == "" {
		rq.proto = guessProtocol(r)
		if r.Method == http.MethodGet && target == "" && r.URL.Path == "/" {
			// A health check: say what this is.
			rq.w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(rq.w, "{\"service\":\"runnel\",\"apis\":[\"kinesis\",\"sqs\",\"dynamodb\",\"dynamodbstreams\",\"lambda\",\"logs\",\"iam\",\"sts\"]}\n")
			return nil, nil
		}
		return nil, awserr.New(awserr.ErrUnknownOperation, "no X-Amz-Target %q or Action this endpoint serves (Kinesis_20131202.*, AmazonSQS.*, DynamoDB_20120810.*, DynamoDBStreams_20120810.*, Logs_20140328.*, SQS, IAM or STS query Action)", target)
	}
	sig, _ := parseAuthorization(r.Header.Get("Authorization"))
	for _, q := range queryServices {
		if q.key == sig.service {
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

// guessProtocol picks the error shape for a request that could not be
// routed, from its content type and signing scope.
func guessProtocol(r *http.Request) protocol {
	if strings.Contains(r.Header.Get("Content-Type"), "x-www-form-urlencoded") {
		return protoSQSQuery
	}
	if strings.Contains(r.Header.Get("Authorization"), "/sqs/aws4_request") {
		return protoSQSJSON
	}
	return protoKinesis
}

// lambdaMux routes the Lambda REST API's paths to the Lambda operations of
// the table.
func (h *Handler) lambdaMux() *http.ServeMux {
	m := http.NewServeMux()
	for _, op := range operations[Lambda] {
		for _, p := range op.Routes {
			m.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) {
				rq := &request{h: h, w: w, r: r, ctx: r.Context(), proto: protoLambda, op: op.Name, status: op.Status}
				body, err := readBody(r, lambdaMaxBody)
				if err != nil {
					rq.fail(err)
					return
				}
				rq.body = body
				rq.serve(op)
			})
		}
	}
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		rq := &request{h: h, w: w, r: r, ctx: r.Context(), proto: protoLambda}
		rq.fail(awserr.New(awserr.ErrUnknownOperation, "no Lambda operation at %s %s", r.Method, r.URL.Path))
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
	var uri map[string]string
	if rq.proto == protoLambda {
		uri = map[string]string{"FunctionName": rq.r.PathValue("name"), "UUID": rq.r.PathValue("uuid")}
	}
	validate := func() error {
		switch rq.proto {
		case protoSQSQuery, protoIAM, protoSTS:
			return validateForm(op, rq.form)
		}
		return validateJSON(op, rq.body, uri)
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
	case protoSQSQuery, protoIAM, protoSTS:
		return decodeForm(rq.form, in)
	case protoDynamoDB, protoDynamoDBStreams:
		return dynamoDecode(rq.body, in)
	case protoLambda:
		return lambdaDecode(rq.body, in)
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
	case protoSQSQuery, protoIAM, protoSTS:
		rq.replyXML(out)
	case protoDynamoDB, protoDynamoDBStreams:
		rq.dynamoReply(out)
	case protoLambda:
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
