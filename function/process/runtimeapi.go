package process

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/runnel-dev/runnel/function"
)

// MaxResponseSize is the largest response or error body a runtime may post
// (6 MiB + 100 bytes, as the Lambda runtime interface emulator allows).
const MaxResponseSize = 6*1024*1024 + 100

// Runtime API headers and trailers (SPEC 4).
const (
	headerRequestID     = "Lambda-Runtime-Aws-Request-Id"
	headerDeadline      = "Lambda-Runtime-Deadline-Ms"
	headerFunctionArn   = "Lambda-Runtime-Invoked-Function-Arn"
	headerTraceID       = "Lambda-Runtime-Trace-Id"
	headerClientContext = "Lambda-Runtime-Client-Context"
	headerCognito       = "Lambda-Runtime-Cognito-Identity"
	headerTenantID      = "Lambda-Runtime-Aws-Tenant-Id"
	headerErrorType     = "Lambda-Runtime-Function-Error-Type"
	headerErrorBody     = "Lambda-Runtime-Function-Error-Body"
)

// mux is an environment's Runtime API.
func (e *env) mux() *http.ServeMux {
	m := http.NewServeMux()
	m.HandleFunc("GET /2018-06-01/runtime/invocation/next", e.handleNext)
	m.HandleFunc("POST /2018-06-01/runtime/invocation/{id}/response", e.handleResponse)
	m.HandleFunc("POST /2018-06-01/runtime/invocation/{id}/error", e.handleError)
	m.HandleFunc("POST /2018-06-01/runtime/init/error", e.handleInitError)
	return m
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func writeAPIError(w http.ResponseWriter, status int, typ, msg string) {
	writeJSON(w, status, map[string]string{"errorMessage": msg, "errorType": typ})
}

func writeAccepted(w http.ResponseWriter) {
	writeJSON(w, http.StatusAccepted, map[string]string{"status": "OK"})
}

func invalidTransition(w http.ResponseWriter, from, to string) {
	writeAPIError(w, http.StatusForbidden, "InvalidStateTransition",
		fmt.Sprintf("State transition from %s to %s failed for runtime. Error: State transition is not allowed", from, to))
}

func invalidRequestID(w http.ResponseWriter) {
	writeAPIError(w, http.StatusBadRequest, "InvalidRequestID", "Invalid request ID")
}

// handleNext is the long poll for the next invocation.
func (e *env) handleNext(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	if e.state == stInvoked {
		e.mu.Unlock()
		invalidTransition(w, stInvoked.String(), "Ready")
		return
	}
	if !e.ready {
		e.readyAt = time.Now()
		close(e.readyCh)
	}
	e.ready = true
	e.state = stWaiting
	e.cur = nil
	e.mu.Unlock()

	var inv *invocation
	select {
	case inv = <-e.queue:
	case <-r.Context().Done():
		return
	case <-e.exited:
		return
	}
	for len(e.flushed) > 0 { // marks of an invocation that stopped waiting
		<-e.flushed
	}
	e.mu.Lock()
	e.cur = inv
	e.logInv = inv
	e.state = stInvoked
	e.mu.Unlock()

	h := w.Header()
	set := func(k, v string) { // RIE omits empty headers
		if v != "" {
			h.Set(k, v)
		}
	}
	set(headerRequestID, inv.id)
	set(headerDeadline, strconv.FormatInt(inv.deadline.UnixMilli(), 10))
	set(headerFunctionArn, inv.arn)
	set(headerTraceID, inv.traceID)
	set(headerTenantID, inv.tenantID)
	if inv.rawClientContext != nil {
		set(headerClientContext, string(inv.rawClientContext)) // as the caller sent it
	} else if cc := inv.clientContext; cc.Client != (lambdacontext.ClientApplication{}) || len(cc.Env) > 0 || len(cc.Custom) > 0 {
		b, _ := json.Marshal(cc)
		set(headerClientContext, string(b))
	}
	if id := inv.identity; id != (lambdacontext.CognitoIdentity{}) {
		b, _ := json.Marshal(map[string]string{"cognitoIdentityId": id.CognitoIdentityID, "cognitoIdentityPoolId": id.CognitoIdentityPoolID})
		set(headerCognito, string(b))
	}
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(inv.payload)))
	w.WriteHeader(http.StatusOK)
	w.Write(inv.payload)
}

// lookup finds the invocation a /response or /error names: 400 for an id
// that is not the current invocation's, 403 if it was already answered.
func (e *env) lookup(w http.ResponseWriter, r *http.Request, to string) *invocation {
	id := r.PathValue("id")
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cur == nil || e.cur.id != id {
		invalidRequestID(w)
		return nil
	}
	if e.state != stInvoked {
		invalidTransition(w, e.state.String(), to)
		return nil
	}
	return e.cur
}

// finish records the outcome of inv, if it is still the one awaiting it.
func (e *env) finish(inv *invocation, res result) bool {
	e.mu.Lock()
	if e.cur != inv || e.state != stInvoked {
		e.mu.Unlock()
		return false
	}
	e.state = stResponded
	e.mu.Unlock()
	inv.done <- res
	return true
}

// readBody reads a posted body up to MaxResponseSize; tooLarge reports that
// it was over (413 already written).
func readBody(w http.ResponseWriter, r *http.Request) (body []byte, tooLarge bool, err error) {
	body, err = io.ReadAll(http.MaxBytesReader(w, r.Body, MaxResponseSize))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		writeAPIError(w, http.StatusRequestEntityTooLarge, "RequestEntityTooLarge",
			fmt.Sprintf("Exceeded maximum allowed payload size (%d bytes).", MaxResponseSize))
		return nil, true, err
	}
	return body, false, err
}

func tooLargeError() *function.InvokeError {
	return &function.InvokeError{Type: "Function.ResponseSizeTooLarge",
		Message: fmt.Sprintf("Response payload size exceeded maximum allowed payload size (%d bytes).", MaxResponseSize)}
}

func (e *env) handleResponse(w http.ResponseWriter, r *http.Request) {
	e.handleReport(w, r, "Response", func(r *http.Request, body []byte) result {
		// A streamed body that failed part way carries the error in trailers.
		if typ := r.Trailer.Get(headerErrorType); typ != "" {
			ie := &function.InvokeError{Type: typ}
			if b, err := base64.StdEncoding.DecodeString(r.Trailer.Get(headerErrorBody)); err == nil {
				_ = json.Unmarshal(b, ie)
			}
			if ie.Type == "" {
				ie.Type = typ
			}
			return result{err: ie}
		}
		return result{out: body}
	})
}

// handleReport takes a runtime's report on its invocation (what:
// "Response" or "Error"): the body, turned into the invocation's result by
// toResult (a body over MaxResponseSize is a
// Function.ResponseSizeTooLarge error).
func (e *env) handleReport(w http.ResponseWriter, r *http.Request, what string, toResult func(r *http.Request, body []byte) result) {
	inv := e.lookup(w, r, what)
	if inv == nil {
		return
	}
	body, tooLarge, err := readBody(w, r)
	if tooLarge {
		e.finish(inv, result{err: tooLargeError()})
		return
	}
	if err != nil {
		return // the runtime went away mid-body
	}
	if !e.finish(inv, toResult(r, body)) {
		invalidTransition(w, what, what)
		return
	}
	writeAccepted(w)
}

// parseError reads a runtime's error body ({"errorMessage","errorType",
// "stackTrace"}), with the Lambda-Runtime-Function-Error-Type header as
// the type when the body has none.
func parseError(r *http.Request, body []byte) *function.InvokeError {
	ie := &function.InvokeError{}
	if json.Unmarshal(body, ie) != nil {
		// Another runtime's shape: the type and message, and the body as
		// the error payload.
		var other struct {
			Message string `json:"errorMessage"`
			Type    string `json:"errorType"`
		}
		if json.Unmarshal(body, &other) == nil {
			ie = &function.InvokeError{Message: other.Message, Type: other.Type, Raw: body}
		} else {
			ie = &function.InvokeError{Message: string(body)}
		}
	} else if bytes.Contains(body, []byte(`"requestId"`)) || bytes.Contains(body, []byte(`"trace"`)) {
		ie.Raw = body // Python's requestId, Node.js's trace: kept as posted
	}
	if ie.Type == "" {
		ie.Type = r.Header.Get(headerErrorType)
	}
	if ie.Type == "" && ie.Message == "" {
		ie.Type = "Runtime.Unknown"
		ie.Message = "Unknown application error occurred"
	}
	return ie
}

func (e *env) handleError(w http.ResponseWriter, r *http.Request) {
	e.handleReport(w, r, "Error", func(r *http.Request, body []byte) result {
		return result{err: parseError(r, body)}
	})
}

func (e *env) handleInitError(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	if e.ready || e.initErr != nil {
		from := e.state.String()
		e.mu.Unlock()
		invalidTransition(w, from, "InitError")
		return
	}
	e.mu.Unlock()
	body, tooLarge, err := readBody(w, r)
	if tooLarge || err != nil {
		return
	}
	ie := parseError(r, body)
	e.mu.Lock()
	e.initErr = ie
	e.mu.Unlock()
	e.initOnce.Do(func() { close(e.initFailed) })
	e.f.log.Warn("function init error", "function", e.f.cfg.FunctionName, "errorType", ie.Type, "errorMessage", ie.Message)
	writeAccepted(w)
}
