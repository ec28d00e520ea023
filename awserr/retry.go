package awserr

import (
	"context"
	"errors"
)

// IsRetryable reports whether the call that returned err may succeed if
// made again unchanged: retry it (with backoff) rather than give up on it
// or send its input to a dead-letter destination.
//
// For an *Error it is the Retryable of the code's table entry:
//
//   - Internal failures (ErrService, ErrInternal, ErrInternalFailure) are
//     retryable: JetStream failed to store or read, which a later call may
//     not (a leader election, a full disk freed, a timeout).
//   - Throttles and waits are retryable: ErrTooManyRequests (concurrency
//     frees up), ErrPurgeQueueInProgress (60 seconds pass),
//     ErrTransactionInProgress (the first call with the token ends).
//   - Every other code is the request's fault (a bad parameter, a missing
//     resource, a failed condition, an expired iterator): the same call
//     fails the same way, so it is not retryable. ErrLimitExceeded is one
//     of these in runnel: it is returned for a call over a per-call limit,
//     never for a rate.
//   - A code without a table entry is not retryable (and is a bug).
//
// An error that is not an *Error is an internal failure of the engine and
// retryable, unless it is the caller's context ending
// (context.Canceled, context.DeadlineExceeded): retrying cannot help a
// caller that has gone.
func IsRetryable(err error) bool {
	if err == nil {
		return false
	}
	var e *Error
	if errors.As(err, &e) {
		s := e.Spec()
		return s != nil && s.Retryable
	}
	return !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}
