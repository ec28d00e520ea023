package idempotency

import (
	"errors"
	"fmt"
)

// Errors of Wrap and Do. Test them with errors.Is; most are wrapped with
// the idempotency key or the cause.
var (
	// ErrAlreadyInProgress is returned when another execution holds the
	// key: an INPROGRESS record exists and its in-progress expiry (the
	// other execution's deadline) has not passed. The handler did not run.
	// Retry later (a stream or queue mapping does: the batch or message
	// fails and comes back). Powertools: IdempotencyAlreadyInProgressError.
	ErrAlreadyInProgress = errors.New("idempotency: execution already in progress")

	// ErrValidationMismatch is returned when Config.PayloadValidationJMESPath
	// is set and the stored record for this key was made from a payload
	// whose validated part hashes differently: the same key was reused for
	// a different request. The handler did not run. Powertools:
	// IdempotencyValidationError.
	ErrValidationMismatch = errors.New("idempotency: payload does not match the stored record for this idempotency key")

	// ErrNoIdempotencyKey is returned, without running the handler, when
	// the key expression finds nothing (null, "", an empty object, a list
	// of nulls) and Config.RaiseOnNoIdempotencyKey is true. When it is
	// false the handler runs without persistence and a warning is logged.
	// Powertools: IdempotencyKeyError.
	ErrNoIdempotencyKey = errors.New("idempotency: no data found to create an idempotency key")

	// ErrInconsistentState is returned when the record that refused the
	// write was gone or expired when read, three times in a row (the first
	// try and 2 retries). Powertools: IdempotencyInconsistentStateError.
	ErrInconsistentState = errors.New("idempotency: the store returned inconsistent results")

	// ErrPersistence wraps an error of the Store (errors.Is matches both
	// it and the store's own error). When it is returned after the handler
	// succeeded, the result is returned too but the record stays INPROGRESS
	// until its in-progress expiry. (A result too large to store is not
	// such a failure: see ErrResultNotStored.) Powertools:
	// IdempotencyPersistenceLayerError.
	ErrPersistence = errors.New("idempotency: store failed")

	// ErrResultNotStored is returned by a repeat of a call whose handler
	// succeeded with a result too large to store (a record over
	// MaxRecordBytes): the record was saved COMPLETED without the result,
	// so the handler does not run again and its result cannot be given
	// back. The first call returned the result (and logged a WARN naming
	// the key and the size). Powertools has no counterpart: its record
	// stays INPROGRESS and the handler runs again after the in-progress
	// expiry.
	ErrResultNotStored = errors.New("idempotency: the call succeeded but its result was too large to store")

	// ErrInvalidConfig is wrapped by Config.Validate's errors (a JMESPath
	// that does not compile, a negative ExpiresAfter).
	ErrInvalidConfig = errors.New("idempotency: invalid config")

	// ErrRecordExists is the Store contract's answer to Put when a live
	// record holds the key; Stores return it as an *ExistsError.
	ErrRecordExists = errors.New("idempotency: record exists")

	// ErrRecordChanged is the Store contract's answer to Update and
	// Delete when the record is no longer the INPROGRESS record the
	// caller put (another execution took the key over after the caller's
	// in-progress expiry, or the record is gone).
	ErrRecordChanged = errors.New("idempotency: record is no longer this execution's")

	// ErrRecordNotFound is the Store contract's answer to Get for a key
	// without a record.
	ErrRecordNotFound = errors.New("idempotency: record not found")
)

// ExistsError is a Store's answer to a Put refused by the condition.
// Record is the existing record when the store returned it (DynamoDB's
// ReturnValuesOnConditionCheckFailure ALL_OLD), nil otherwise (the caller
// then reads it with Get). errors.Is(err, ErrRecordExists) matches it.
type ExistsError struct {
	Record *Record
}

func (e *ExistsError) Error() string { return ErrRecordExists.Error() }

// Is matches ErrRecordExists.
func (e *ExistsError) Is(target error) bool { return target == ErrRecordExists }

// errStoreState is ErrInconsistentState as attempt finds it in the store
// (Do tries again); it wraps ErrInconsistentState.
type errStoreState struct{ msg string }

func (e errStoreState) Error() string { return ErrInconsistentState.Error() + ": " + e.msg }
func (e errStoreState) Unwrap() error { return ErrInconsistentState }

func storeState(format string, args ...any) error {
	return errStoreState{fmt.Sprintf(format, args...)}
}
