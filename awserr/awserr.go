// Package awserr holds the error type that every runnel service returns for
// a refused request, and the one table of the AWS error codes runnel
// returns (codes.go), shaped like the errors of the AWS APIs runnel copies:
// a code such as "InvalidParameterValueException" and a message naming the
// field and its allowed range.
//
// Each code is an exported sentinel (ErrResourceNotFound,
// ErrQueueDoesNotExist...) whose table entry, a Spec, carries what the
// endpoint (package awsapi) needs to put it on the wire: the HTTP status,
// the shape names where a protocol renames the code, and whether a retry
// may succeed (IsRetryable). There is no other place that maps codes to
// statuses: a code without an entry is a bug, answered as an internal
// failure (HTTP 500) and caught by awsapi's tests.
//
// Callers test for a kind of error with errors.Is against the sentinels
// (errors.Is(err, awserr.ErrResourceNotFound)); a sentinel matches any
// *Error with the same Code, whatever its message.
package awserr

import "fmt"

// Error is a refused request. Code is the AWS error code (for SQS, the
// query-protocol code such as "AWS.SimpleQueueService.NonExistentQueue");
// Message says what was wrong, naming the field and the allowed range
// where there is one.
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string {
	if e.Message == "" {
		return e.Code
	}
	return e.Code + ": " + e.Message
}

// Is reports whether target is a sentinel (an *Error without a message) of
// the same Code, so that errors.Is(err, ErrInvalidParameterValue) works for
// any message.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code && (t.Message == "" || t.Message == e.Message)
}

// Spec returns the table entry of e's Code, or nil when the code has none
// (a bug: see the package doc).
func (e *Error) Spec() *Spec { return Lookup(e.Code) }

// New returns an *Error with the code of sentinel and a formatted message.
func New(sentinel *Error, format string, args ...any) *Error {
	return &Error{Code: sentinel.Code, Message: fmt.Sprintf(format, args...)}
}

// OutOfRange returns the InvalidParameterValueException-style error for a
// numeric field outside [min,max], in the words AWS uses:
// "1 validation error detected: Value '0' at 'batchSize' failed to satisfy
// constraint: Member must have value between 1 and 10000".
// runnel's message always gives both ends of the range.
func OutOfRange(sentinel *Error, field string, value any, min, max any) *Error {
	return New(sentinel, "1 validation error detected: Value '%v' at '%s' failed to satisfy constraint: Member must have value between %v and %v", value, field, min, max)
}
