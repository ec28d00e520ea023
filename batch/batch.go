// Package batch runs a record handler over each record of a Kinesis, SQS
// or DynamoDB Streams event and builds Lambda's partial batch response
// (ReportBatchItemFailures), in the manner of Powertools for AWS Lambda's
// batch utility (BatchProcessor, SqsFifoPartialProcessor; SPEC §6,
// docs.powertools.aws.dev/lambda/python/latest/utilities/batch/).
//
//	function.Register("orders", batch.SQSHandler(func(ctx context.Context, m events.SQSMessage) error {
//		return place(ctx, m.Body)
//	}))
//	// or, in a Lambda binary: lambda.Start(batch.SQSHandler(...))
//
// The response lists the failed records by the identifier Lambda expects:
// the Kinesis record's kinesis.sequenceNumber, the SQS message's
// messageId, the DynamoDB record's dynamodb.SequenceNumber. Lambda reads
// it only when the event source mapping has FunctionResponseTypes
// ["ReportBatchItemFailures"]; without it any response counts as success
// and failed records are lost, so turn it on.
//
// # Rules
//
//   - Records run one at a time, in the event's order (the shard's order
//     for streams, the receive order for queues).
//   - A record fails when the handler returns an error or panics (the
//     panic is recovered: one bad record does not fail its batch).
//   - If every record failed, the Process functions return an error
//     wrapping ErrEntireBatchFailed and every record's error, so the
//     invocation fails as a whole (Lambda's retry and bisect rules then
//     apply). EntireBatchError(false) returns the response listing them
//     all instead.
//   - Streams (Kinesis, DynamoDB): Lambda retries from the lowest
//     reported sequence number, so records after a failure are delivered
//     again even when they succeeded; StopOnFirstFailure stops there and
//     reports the rest as failed (ErrNotProcessed), which keeps a shard's
//     records in order and each record processed once per success. Without
//     it the later records run now and again on the retry: make them
//     idempotent (package idempotency).
//   - SQS FIFO queues (the event source ARN ends in ".fifo"): the first
//     failure stops the batch and every later message is reported failed,
//     because Lambda must not delete a message of a group ahead of an
//     earlier failed one (SPEC §2.2). With SkipGroupOnError only the later
//     messages of the failed message's MessageGroupId are skipped and
//     other groups go on.
//   - Once the context is done (the function's timeout), the remaining
//     records are not started and are reported failed.
package batch

import (
	"context"
	"errors"
	"fmt"
)

// record is one record of any source: its identifier in the response,
// and its FIFO message group ("" when not FIFO).
type record[R any] struct {
	rec   R
	id    string
	group string
}

// process runs fn over recs under the rules of the package doc and
// returns the identifiers of the failed records, and the error for an
// entirely failed batch.
func process[R any](ctx context.Context, recs []record[R], fn func(context.Context, R) error, o options, fifo bool) ([]string, error) {
	var (
		failed       []string
		errs         []error
		failedGroups map[string]bool
		stopped      error // why the rest is not processed
	)
	fail := func(r record[R], err error) {
		failed = append(failed, r.id)
		errs = append(errs, fmt.Errorf("record %s: %w", r.id, err))
	}
	for _, r := range recs {
		if stopped == nil && ctx.Err() != nil {
			stopped = fmt.Errorf("%w: %w", ErrNotProcessed, context.Cause(ctx))
		}
		if stopped != nil {
			fail(r, stopped)
			continue
		}
		if fifo && o.skipGroupOnError && failedGroups[r.group] {
			fail(r, fmt.Errorf("%w: an earlier message of group %q failed", ErrNotProcessed, r.group))
			continue
		}
		err := run(ctx, r.rec, fn)
		if err == nil {
			continue
		}
		fail(r, err)
		switch {
		case fifo && o.skipGroupOnError:
			if failedGroups == nil {
				failedGroups = map[string]bool{}
			}
			failedGroups[r.group] = true
		case fifo:
			stopped = fmt.Errorf("%w: FIFO batch stopped at message %s", ErrNotProcessed, r.id)
		case o.stopOnFirstFailure:
			stopped = fmt.Errorf("%w: batch stopped at record %s", ErrNotProcessed, r.id)
		}
	}
	if len(recs) > 0 && len(failed) == len(recs) && o.entireBatchError {
		return failed, fmt.Errorf("%w: %w", ErrEntireBatchFailed, errors.Join(errs...))
	}
	return failed, nil
}

// run calls fn, turning a panic into an error.
func run[R any](ctx context.Context, r R, fn func(context.Context, R) error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: %v", ErrRecordPanicked, p)
		}
	}()
	return fn(ctx, r)
}
