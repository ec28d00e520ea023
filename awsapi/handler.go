// Package awsapi serves runnel's streams and queues to unmodified AWS
// clients: one HTTP endpoint (HTTP/1.1 and cleartext HTTP/2) that speaks
// the Kinesis API (JSON 1.1, X-Amz-Target "Kinesis_20131202.<Op>") and the
// SQS API, both its JSON protocol (X-Amz-Target "AmazonSQS.<Op>", the
// protocol of current SDKs) and its older query protocol (a form POST with
// Action=<Op>, XML responses; what older AWS CLIs and SDKs send), and the
// DynamoDB and DynamoDB Streams APIs (JSON 1.0, X-Amz-Target
// "DynamoDB_20120810.<Op>" and "DynamoDBStreams_20120810.<Op>", over
// package table; see dynamodb.go and dynamodbstreams.go).
//
// Point a client at it with an endpoint override:
//
//	cfg := aws.Config{Region: "us-east-1", BaseEndpoint: aws.String("http://127.0.0.1:4566"),
//		Credentials: credentials.NewStaticCredentialsProvider("x", "x", "")}
//	kc := kinesis.NewFromConfig(cfg)
//
// or `aws --endpoint-url http://127.0.0.1:4566 kinesis list-streams`.
//
// SigV4 signatures are accepted from any credentials unless Options.Auth
// names the keys; then every request must be signed by one of them.
//
// Errors have AWS's shapes: {"__type": ..., "message": ...} with status 400
// (500 for internal failures) for JSON; SQS JSON errors carry the
// "com.amazonaws.sqs#<Shape>" type and the x-amzn-query-error header with
// the query-protocol code, as SQS sends them; query-protocol errors are an
// XML ErrorResponse.
package awsapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/awserr"
)

// DefaultAddr is the address `runnel serve` listens on for AWS clients by
// default: the port AWS emulators use.
const DefaultAddr = "127.0.0.1:4566"

// maxBody bounds a request body: PutRecords' 5 MiB in base64 with room.
const maxBody = 16 << 20

// Options configures NewHandler.
type Options struct {
	// Region and AccountID appear in the queue URLs the endpoint returns
	// (http://<host the client used>/<AccountID>/<queue>) and in error
	// messages. Default: the engine's (which also appear in every ARN).
	Region    string
	AccountID string
	// Auth, when not nil, maps access key ids to secret keys: every request
	// must then carry a SigV4 Authorization header signed by one of them.
	// When nil, any signature (or none) is accepted.
	Auth map[string]string
	// Logger receives internal failures (status 500). Default: discard.
	Logger *slog.Logger
}

// Handler is the endpoint. It is safe for concurrent use.
type Handler struct {
	rn   *runnel.Runnel
	opts Options
}

// NewHandler returns the endpoint for rn. It serves whatever protocol its
// server speaks; serve it with NewServer (or set Protocols as NewServer
// does) to accept HTTP/1.1 and cleartext HTTP/2 on one port.
func NewHandler(rn *runnel.Runnel, opts Options) http.Handler {
	return newHandler(rn, opts)
}

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

func newHandler(rn *runnel.Runnel, opts Options) *Handler {
	if opts.Region == "" {
		opts.Region = rn.Engine.Region()
	}
	if opts.AccountID == "" {
		opts.AccountID = rn.Engine.AccountID()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Handler{rn: rn, opts: opts}
}

// protocol is how a request is answered.
type protocol int

const (
	protoKinesis         protocol = iota // JSON 1.1
	protoSQSJSON                         // JSON 1.0, query-compatible errors
	protoSQSQuery                        // form in, XML out
	protoDynamoDB                        // JSON 1.0, DynamoDB's error shapes (dynamodb.go)
	protoDynamoDBStreams                 // JSON 1.0, DynamoDB Streams (dynamodbstreams.go)
)

// request is one call being served.
type request struct {
	h      *Handler
	w      http.ResponseWriter
	r      *http.Request
	proto  protocol
	op     string
	body   []byte
	form   url.Values // query protocol
	reqID  string
	scheme string
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rq := &request{h: h, w: w, r: r, reqID: uuid.NewString(), scheme: "http"}
	if r.TLS != nil {
		rq.scheme = "https"
	}
	body, err := readBody(r)
	if err != nil {
		rq.proto = guessProtocol(r)
		rq.fail(&apiError{status: 400, code: "SerializationException", message: "reading the request body: " + err.Error()})
		return
	}
	if len(body) > maxBody {
		rq.proto = guessProtocol(r)
		rq.fail(&apiError{status: 413, code: "RequestEntityTooLarge", message: fmt.Sprintf("request body over %d bytes", maxBody)})
		return
	}
	rq.body = body
	target := r.Header.Get("X-Amz-Target")
	switch {
	case strings.HasPrefix(target, "Kinesis_20131202."):
		rq.proto, rq.op = protoKinesis, strings.TrimPrefix(target, "Kinesis_20131202.")
	case strings.HasPrefix(target, "AmazonSQS."):
		rq.proto, rq.op = protoSQSJSON, strings.TrimPrefix(target, "AmazonSQS.")
	case strings.HasPrefix(target, dynamoDBTarget):
		rq.proto, rq.op = protoDynamoDB, strings.TrimPrefix(target, dynamoDBTarget)
	case strings.HasPrefix(target, dynamoDBStreamsTarget):
		rq.proto, rq.op = protoDynamoDBStreams, strings.TrimPrefix(target, dynamoDBStreamsTarget)
	default:
		form := r.URL.Query()
		if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct == "application/x-www-form-urlencoded" {
			bf, err := url.ParseQuery(string(body))
			if err != nil {
				rq.proto = protoSQSQuery
				rq.fail(&apiError{status: 400, code: "MalformedQueryString", message: err.Error()})
				return
			}
			for k, v := range bf {
				form[k] = append(form[k], v...)
			}
		}
		if form.Get("Action") == "" {
			rq.proto = guessProtocol(r)
			if r.Method == http.MethodGet && target == "" && r.URL.Path == "/" {
				// A health check: say what this is.
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprintf(w, "{\"service\":\"runnel\",\"apis\":[\"kinesis\",\"sqs\",\"dynamodb\",\"dynamodbstreams\"]}\n")
				return
			}
			rq.fail(&apiError{status: 400, code: "UnknownOperationException", message: fmt.Sprintf("no X-Amz-Target %q or Action this endpoint serves (Kinesis_20131202.*, AmazonSQS.*, DynamoDB_20120810.*, DynamoDBStreams_20120810.*, SQS query Action)", target)})
			return
		}
		rq.proto, rq.op, rq.form = protoSQSQuery, form.Get("Action"), form
	}
	if h.opts.Auth != nil {
		if e := h.verify(r, body, rq.proto); e != nil {
			rq.fail(e)
			return
		}
	}
	switch rq.proto {
	case protoKinesis:
		rq.kinesis()
	case protoDynamoDB:
		rq.dynamodb()
	case protoDynamoDBStreams:
		rq.dynamodbStreams()
	default:
		rq.sqs()
	}
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

// apiError is an error in AWS's terms.
type apiError struct {
	status int
	// code is the JSON __type (the shape name).
	code string
	// queryCode is the SQS query-protocol code (x-amzn-query-error and the
	// XML Code); empty means code.
	queryCode string
	message   string
	// receiver marks a server fault (query error Type Receiver).
	receiver bool
}

func (e *apiError) Error() string { return e.code + ": " + e.message }

func badRequest(code, format string, args ...any) *apiError {
	return &apiError{status: 400, code: code, message: fmt.Sprintf(format, args...)}
}

// sqsShapes maps SQS query codes (runnel's queue error codes) to the shape
// names of the SQS JSON protocol and their HTTP status (from the SQS
// model's awsQueryError traits).
var sqsShapes = map[string]struct {
	shape  string
	status int
}{
	"AWS.SimpleQueueService.NonExistentQueue":             {"QueueDoesNotExist", 400},
	"QueueAlreadyExists":                                  {"QueueNameExists", 400},
	"ReceiptHandleIsInvalid":                              {"ReceiptHandleIsInvalid", 404},
	"AWS.SimpleQueueService.MessageNotInflight":           {"MessageNotInflight", 400},
	"AWS.SimpleQueueService.PurgeQueueInProgress":         {"PurgeQueueInProgress", 403},
	"AWS.SimpleQueueService.QueueDeletedRecently":         {"QueueDeletedRecently", 400},
	"InvalidAttributeName":                                {"InvalidAttributeName", 400},
	"InvalidAttributeValue":                               {"InvalidAttributeValue", 400},
	"InvalidMessageContents":                              {"InvalidMessageContents", 400},
	"AWS.SimpleQueueService.EmptyBatchRequest":            {"EmptyBatchRequest", 400},
	"AWS.SimpleQueueService.TooManyEntriesInBatchRequest": {"TooManyEntriesInBatchRequest", 400},
	"AWS.SimpleQueueService.BatchEntryIdsNotDistinct":     {"BatchEntryIdsNotDistinct", 400},
	"AWS.SimpleQueueService.InvalidBatchEntryId":          {"InvalidBatchEntryId", 400},
	"AWS.SimpleQueueService.BatchRequestTooLong":          {"BatchRequestTooLong", 400},
	"AWS.SimpleQueueService.UnsupportedOperation":         {"UnsupportedOperation", 400},
	"ResourceNotFoundException":                           {"ResourceNotFoundException", 404},
	"InvalidParameterValue":                               {"InvalidParameterValue", 400},
	"InvalidParameterValueException":                      {"InvalidParameterValue", 400},
	"MissingParameter":                                    {"MissingParameter", 400},
	"InvalidAddress":                                      {"InvalidAddress", 404},
	"OverLimit":                                           {"OverLimit", 403},
	"InternalError":                                       {"InternalError", 500},
	"ServiceException":                                    {"InternalError", 500},
}

// toAPIError turns a service error into the protocol's error.
func (rq *request) toAPIError(err error) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	var e *awserr.Error
	if !errors.As(err, &e) {
		if rq.r.Context().Err() != nil {
			return &apiError{status: 400, code: "RequestCanceled", message: err.Error()}
		}
		rq.h.opts.Logger.Error("aws api: internal failure", "op", rq.op, "err", err)
		if rq.proto == protoKinesis {
			return &apiError{status: 500, code: "InternalFailureException", message: err.Error(), receiver: true}
		}
		return &apiError{status: 500, code: "InternalError", message: err.Error(), receiver: true}
	}
	if rq.proto == protoKinesis {
		if e.Code == awserr.ErrService.Code || e.Code == "InternalFailure" {
			rq.h.opts.Logger.Error("aws api: service failure", "op", rq.op, "err", err)
			return &apiError{status: 500, code: "InternalFailureException", message: e.Message, receiver: true}
		}
		return &apiError{status: 400, code: e.Code, message: e.Message}
	}
	s, ok := sqsShapes[e.Code]
	if !ok {
		s.shape, s.status = e.Code, 400
	}
	if s.status >= 500 {
		rq.h.opts.Logger.Error("aws api: service failure", "op", rq.op, "err", err)
	}
	return &apiError{status: s.status, code: s.shape, queryCode: e.Code, message: e.Message, receiver: s.status >= 500}
}

// fail writes err in the shape of the request's protocol.
func (rq *request) fail(err error) {
	if rq.proto == protoDynamoDB || rq.proto == protoDynamoDBStreams {
		rq.dynamoFail(err)
		return
	}
	e := rq.toAPIError(err)
	w := rq.w
	w.Header().Set("x-amzn-RequestId", rq.reqID)
	qcode := e.queryCode
	if qcode == "" {
		qcode = e.code
	}
	fault := "Sender"
	if e.receiver {
		fault = "Receiver"
	}
	switch rq.proto {
	case protoSQSQuery:
		w.Header().Set("Content-Type", "text/xml")
		w.WriteHeader(e.status)
		var b bytes.Buffer
		b.WriteString(`<?xml version="1.0"?>` + "\n")
		b.WriteString(`<ErrorResponse xmlns="` + sqsNS + `"><Error><Type>` + fault + `</Type><Code>`)
		xmlEscape(&b, qcode)
		b.WriteString(`</Code><Message>`)
		xmlEscape(&b, e.message)
		b.WriteString(`</Message><Detail/></Error><RequestId>` + rq.reqID + `</RequestId></ErrorResponse>`)
		w.Write(b.Bytes())
		return
	case protoSQSJSON:
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.Header().Set("x-amzn-query-error", qcode+";"+fault)
		w.WriteHeader(e.status)
		json.NewEncoder(w).Encode(map[string]string{"__type": "com.amazonaws.sqs#" + e.code, "message": e.message})
	default:
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		w.WriteHeader(e.status)
		json.NewEncoder(w).Encode(map[string]string{"__type": e.code, "message": e.message})
	}
}

// readBody reads the request body, at most maxBody+1 bytes, into a
// buffer sized from Content-Length when there is one (io.ReadAll would
// grow and copy it step by step).
func readBody(r *http.Request) ([]byte, error) {
	lr := io.LimitReader(r.Body, maxBody+1)
	if r.ContentLength <= 0 || r.ContentLength > maxBody {
		return io.ReadAll(lr)
	}
	// bytes.MinRead spare: the read that sees the end does not grow it.
	buf := bytes.NewBuffer(make([]byte, 0, int(r.ContentLength)+bytes.MinRead))
	_, err := buf.ReadFrom(lr)
	return buf.Bytes(), err
}

// jsonBuf is a response body already encoded (by the Kinesis data-plane
// calls, see kinesis.go), in a buffer that goes back to a pool once
// written.
type jsonBuf struct{ b []byte }

var jsonBufs sync.Pool

// newJSONBuf returns an empty buffer with at least size bytes of room.
func newJSONBuf(size int) *jsonBuf {
	if jb, _ := jsonBufs.Get().(*jsonBuf); jb != nil {
		if cap(jb.b) >= size {
			return jb
		}
	}
	return &jsonBuf{b: make([]byte, 0, size)}
}

func (jb *jsonBuf) free() {
	if cap(jb.b) > 16<<20 {
		return
	}
	jb.b = jb.b[:0]
	jsonBufs.Put(jb)
}

// reply writes a JSON result.
func (rq *request) reply(v any) {
	var b []byte
	if jb, ok := v.(*jsonBuf); ok {
		b = jb.b
		defer jb.free() // Write copies it or has sent it on return
		rq.w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	} else {
		var err error
		if b, err = json.Marshal(v); err != nil {
			rq.fail(err)
			return
		}
	}
	ct := "application/x-amz-json-1.1"
	if rq.proto == protoSQSJSON {
		ct = "application/x-amz-json-1.0"
	}
	rq.w.Header().Set("Content-Type", ct)
	rq.w.Header().Set("x-amzn-RequestId", rq.reqID)
	rq.w.Write(b)
}

// decode reads the JSON body into v (an empty body is {}).
func (rq *request) decode(v any) error {
	if len(bytes.TrimSpace(rq.body)) == 0 {
		return nil
	}
	if err := json.Unmarshal(rq.body, v); err != nil {
		return badRequest("SerializationException", "%v", err)
	}
	return nil
}
