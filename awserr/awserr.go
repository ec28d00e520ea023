// Package awserr holds the error type that every runnel service returns for
// a refused request, shaped like the errors of the AWS APIs runnel copies:
// a code such as "InvalidParameterValueException" and a message naming the
// field and its allowed range.
//
// Callers test for a kind of error with errors.Is against the exported
// sentinels (errors.Is(err, awserr.ErrResourceNotFound)); the sentinel
// matches any *Error with the same Code, whatever its message.
package awserr

import "fmt"

// Error is a refused request. Code is the AWS exception name; Message says
// what was wrong, naming the field and the allowed range where there is one.
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

// Sentinels, one per AWS exception runnel returns.
var (
	// ErrInvalidParameterValue is returned by Lambda-style APIs (functions,
	// event source mappings) when a parameter is out of its range or of the
	// wrong form. The message names the field and the allowed range.
	ErrInvalidParameterValue = &Error{Code: "InvalidParameterValueException"}
	// ErrInvalidArgument is the Kinesis-style counterpart of
	// ErrInvalidParameterValue (GetShardIterator, PutRecord...).
	ErrInvalidArgument = &Error{Code: "InvalidArgumentException"}
	// ErrResourceNotFound: the named stream, shard, function or mapping does
	// not exist.
	ErrResourceNotFound = &Error{Code: "ResourceNotFoundException"}
	// ErrResourceInUse: a stream or mapping of that name or UUID exists
	// already, or the resource is in a state that forbids the call.
	ErrResourceInUse = &Error{Code: "ResourceInUseException"}
	// ErrResourceConflict: Lambda's name for "already exists".
	ErrResourceConflict = &Error{Code: "ResourceConflictException"}
	// ErrExpiredIterator: a shard iterator older than 5 minutes was used.
	ErrExpiredIterator = &Error{Code: "ExpiredIteratorException"}
	// ErrLimitExceeded: a per-call limit (for example 500 records in
	// PutRecords) was passed.
	ErrLimitExceeded = &Error{Code: "LimitExceededException"}
	// ErrTooManyRequests: the function's concurrency is exhausted
	// (Lambda's throttle, HTTP 429).
	ErrTooManyRequests = &Error{Code: "TooManyRequestsException"}
	// ErrService is an internal failure of the engine; the request may be
	// retried.
	ErrService = &Error{Code: "ServiceException"}

	// DynamoDB's exceptions (package table).

	// ErrValidation: DynamoDB's ValidationException, for a malformed
	// request or expression; the message says what and where.
	ErrValidation = &Error{Code: "ValidationException"}
	// ErrConditionalCheckFailed: a write's ConditionExpression was false
	// ("The conditional request failed"). See table.ConditionalCheckFailedError
	// for the item returned with ReturnValuesOnConditionCheckFailure.
	ErrConditionalCheckFailed = &Error{Code: "ConditionalCheckFailedException"}
	// ErrTransactionCanceled: TransactWriteItems changed nothing; see
	// table.TransactionCanceledError for the reasons, one per action.
	ErrTransactionCanceled = &Error{Code: "TransactionCanceledException"}
	// ErrIdempotentParameterMismatch: a ClientRequestToken was used again
	// within its 10 minutes with different parameters.
	ErrIdempotentParameterMismatch = &Error{Code: "IdempotentParameterMismatchException"}
	// ErrTransactionInProgress: a ClientRequestToken was used again while
	// the first call with it was still running.
	ErrTransactionInProgress = &Error{Code: "TransactionInProgressException"}
)

// New returns an *Error with the code of sentinel and a formatted message.
func New(sentinel *Error, format string, args ...any) *Error {
	return &Error{Code: sentinel.Code, Message: fmt.Sprintf(format, args...)}
}

// OutOfRange returns the InvalidParameterValueException-style error for a
// numeric field outside [min,max], in the words AWS uses:
// "1 validation error detected: Value '0' at 'batchSize' failed to satisfy
// constraint: Member must have value greater than or equal to 1".
// runnel's message always gives both ends of the range.
func OutOfRange(sentinel *Error, field string, value any, min, max any) *Error {
	return New(sentinel, "1 validation error detected: Value '%v' at '%s' failed to satisfy constraint: Member must have value between %v and %v", value, field, min, max)
}
