package function

import (
	"encoding/json"
	"fmt"
	"reflect"
	"runtime"
	"strings"
)

// FunctionErrorUnhandled is the value of Result.FunctionError for a failed
// invocation, as the Lambda Invoke API reports it in X-Amz-Function-Error.
const FunctionErrorUnhandled = "Unhandled"

// TimeoutErrorType is the errorType of an invocation that ran out of time.
const TimeoutErrorType = "Sandbox.Timedout"

// InvokeError is a function error as the Lambda runtime reports it
// (aws-lambda-go lambda/messages.InvokeResponse_Error):
// {"errorMessage":"...","errorType":"...","stackTrace":[...]}.
type InvokeError struct {
	Message    string       `json:"errorMessage"`
	Type       string       `json:"errorType,omitempty"`
	StackTrace []StackFrame `json:"stackTrace,omitempty"`
	// Raw is the error object as a runtime posted it, when it is not in
	// aws-lambda-go's shape (Python's stackTrace of strings and requestId,
	// Node.js's trace): it is what the invocation's error payload is.
	Raw json.RawMessage `json:"-"`
}

// MarshalJSON writes Raw when the runtime gave one, else the fields.
func (e *InvokeError) MarshalJSON() ([]byte, error) {
	if len(e.Raw) > 0 {
		return e.Raw, nil
	}
	type plain InvokeError
	return json.Marshal((*plain)(e))
}

// StackFrame is one frame of a panic's stack trace.
type StackFrame struct {
	Path  string `json:"path"`
	Line  int32  `json:"line"`
	Label string `json:"label"`
}

func (e *InvokeError) Error() string {
	if e.Type == "" {
		return e.Message
	}
	return e.Type + ": " + e.Message
}

// errorType names an error the way aws-lambda-go does: the Go type name by
// reflection, dereferencing one pointer (errors.New -> "errorString",
// fmt.Errorf with %w -> "wrapError").
func errorType(v any) string {
	t := reflect.TypeOf(v)
	if t == nil {
		return ""
	}
	if t.Kind() == reflect.Ptr {
		return t.Elem().Name()
	}
	return t.Name()
}

func errorResponse(err error) *InvokeError {
	if ie, ok := err.(*InvokeError); ok {
		return ie
	}
	return &InvokeError{Message: err.Error(), Type: errorType(err)}
}

func panicResponse(v any) *InvokeError {
	e := &InvokeError{Message: fmt.Sprintf("%v", v), Type: errorType(v)}
	pcs := make([]uintptr, 32)
	n := runtime.Callers(4, pcs)
	frames := runtime.CallersFrames(pcs[:n])
	for {
		f, more := frames.Next()
		if !strings.HasPrefix(f.Function, "runtime.") {
			// as aws-lambda-go labels frames: the function name after the
			// package, "(*thrower).boom"
			label := f.Function[strings.LastIndex(f.Function, "/")+1:]
			label = label[strings.Index(label, ".")+1:]
			e.StackTrace = append(e.StackTrace, StackFrame{Path: f.File, Line: int32(f.Line), Label: label})
		}
		if !more {
			break
		}
	}
	return e
}

func timeoutError(seconds int) *InvokeError {
	return &InvokeError{Message: fmt.Sprintf("Task timed out after %d.00 seconds", seconds), Type: TimeoutErrorType}
}
