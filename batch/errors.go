package batch

import "errors"

var (
	// ErrEntireBatchFailed is wrapped by the error of a Process function
	// when every record of the batch failed (or was not processed): the
	// invocation should fail as a whole, which it does when a handler
	// returns the error. errors.Is also matches each record's own error.
	// Not returned with EntireBatchError(false). Powertools:
	// BatchProcessingError.
	ErrEntireBatchFailed = errors.New("batch: all records failed")

	// ErrNotProcessed is the failure of a record that was not run because
	// an earlier one failed (StopOnFirstFailure, a FIFO queue, a failed
	// message group with SkipGroupOnError) or because the context was done.
	ErrNotProcessed = errors.New("batch: record not processed")

	// ErrRecordPanicked is the failure of a record whose handler panicked.
	ErrRecordPanicked = errors.New("batch: record handler panicked")
)
