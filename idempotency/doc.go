// Package idempotency makes a Lambda handler, or one unit of work inside
// it, run at most once per payload: the model of Powertools for AWS
// Lambda's idempotency utility (Python: aws_lambda_powertools.utilities.
// idempotency; docs.powertools.aws.dev/lambda/python/latest/utilities/
// idempotency/), for Go, where no official Powertools exists
// (aws-powertools/powertools-lambda#82). SPEC §6 summarizes the rules.
//
// # Use
//
// A whole handler:
//
//	h, err := idempotency.Wrap(store, idempotency.Config{EventKeyJMESPath: "powertools_json(body).orderId"}, handle)
//	lambda.Start(h)
//
// One record of a batch (package batch runs the records):
//
//	out, err := idempotency.Do(ctx, store, cfg, record, func(ctx context.Context) (Receipt, error) {
//		return charge(ctx, record)
//	})
//
// # The state machine
//
// Each call derives an idempotency key from the payload (Config) and
// writes an INPROGRESS record under it with the condition of Powertools'
// DynamoDB layer:
//
//	attribute_not_exists(#id) OR #expiry < :now OR
//	(#status = :inprogress AND attribute_exists(#in_progress_expiry) AND #in_progress_expiry < :now_in_millis)
//
// with ReturnValuesOnConditionCheckFailure ALL_OLD. Then:
//
//   - the write succeeds (no record, or an expired one, or an INPROGRESS
//     one whose in-progress expiry passed): the handler runs; on success
//     the record becomes COMPLETED with the JSON of the result in "data"
//     (and a fresh expiration); on error (or panic) the record is deleted
//     so a retry runs the handler again, and the handler's error is
//     returned as it is.
//   - a COMPLETED record exists: its stored result is returned and the
//     handler does not run.
//   - an INPROGRESS record exists whose in-progress expiry has not passed:
//     ErrAlreadyInProgress.
//   - with PayloadValidationJMESPath, a record whose payload hash differs:
//     ErrValidationMismatch.
//   - the existing record vanished or expired between the write and the
//     read (Powertools' IdempotencyInconsistentStateError): the whole
//     sequence is retried, at most 2 more times, then
//     ErrInconsistentState.
//
// One difference from Powertools, deliberate: the COMPLETED update and
// the delete are conditional on the record still being the INPROGRESS
// record this call put (OwnCondition: same in_progress_expiration). A
// handler that outlives its in-progress expiry (an in-process function
// keeps running past its timeout) may find its key taken over by a
// retry; Powertools would then overwrite or delete the retry's record,
// and a third execution could start beside the retry. Here the late
// result is returned unsaved and a late error leaves the record, each
// logged with the record's id.
//
// EXPIRED is never stored: a record is EXPIRED when its expiration (epoch
// seconds) is before now (Record.StatusAt), as in Powertools' DataRecord.
//
// # Stores
//
// A Store is four calls on one table (pk "id"). Two ship with runnel:
// package idempotency/tablestore on a runnel table (*table.Service), and
// package idempotency/dynamodbstore on DynamoDB through aws-sdk-go-v2
// (which also works against runnel's AWS endpoint). Both pass the
// conformance suite of package idempotency/storetest.
//
// # Time
//
// Every "now" (expiration, in-progress expiry, the condition's :now and
// :now_in_millis) is read from Config.Clock, so tests move a fake clock.
// The in-progress expiry is the context's deadline (the Lambda deadline:
// runnel's functions and aws-lambda-go both set it); a context with a
// deadline from another clock than Config.Clock gives wrong expiries.
package idempotency
