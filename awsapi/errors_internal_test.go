package awsapi

import (
	"context"
	"errors"
	"log/slog"
	"reflect"
	"testing"

	"github.com/runnel-dev/runnel/awserr"
)

func wireOf(p protocol, err error) wireError {
	discard := slog.New(slog.DiscardHandler)
	rq := &request{h: &Handler{opts: Options{Logger: discard}, lopts: LambdaOptions{Logger: discard}}, ctx: context.Background(), proto: p, op: "Test"}
	return rq.toWire(err)
}

// TestErrorWire pins how codes go on the wire in each API: the shapes and
// statuses the endpoint answered with when they came from string-keyed maps
// (sqsShapes, lambdaStatus, the DynamoDB renames), now from awserr's table.
func TestErrorWire(t *testing.T) {
	for _, tt := range []struct {
		p      protocol
		err    error
		shape  string
		status int
	}{
		// Kinesis: the code as it is, 400; internal failures 500.
		{protoKinesis, awserr.ErrResourceNotFound, "ResourceNotFoundException", 400},
		{protoKinesis, awserr.ErrInvalidArgument, "InvalidArgumentException", 400},
		{protoKinesis, awserr.ErrService, "InternalFailureException", 500},
		{protoKinesis, awserr.ErrInternalFailure, "InternalFailureException", 500},
		{protoKinesis, awserr.ErrMissingAuthenticationToken, "MissingAuthenticationTokenException", 400},
		{protoKinesis, errors.New("disk on fire"), "InternalFailureException", 500},
		// SQS (both protocols): the SQS model's shapes and statuses.
		{protoSQSJSON, awserr.ErrQueueDoesNotExist, "QueueDoesNotExist", 400},
		{protoSQSJSON, awserr.ErrQueueNameExists, "QueueNameExists", 400},
		{protoSQSQuery, awserr.ErrReceiptHandleIsInvalid, "ReceiptHandleIsInvalid", 404},
		{protoSQSJSON, awserr.ErrPurgeQueueInProgress, "PurgeQueueInProgress", 403},
		{protoSQSJSON, awserr.ErrResourceNotFound, "ResourceNotFoundException", 404},
		{protoSQSJSON, awserr.ErrSQSInvalidParameterValue, "InvalidParameterValue", 400},
		{protoSQSJSON, awserr.ErrInvalidParameterValue, "InvalidParameterValue", 400},
		{protoSQSJSON, awserr.ErrUnsupportedOperation, "UnsupportedOperation", 400},
		{protoSQSJSON, awserr.ErrInternal, "InternalError", 500},
		{protoSQSJSON, awserr.ErrService, "InternalError", 500},
		{protoSQSQuery, awserr.ErrSQSMissingAuthenticationToken, "MissingAuthenticationToken", 403},
		{protoSQSJSON, errors.New("disk on fire"), "InternalError", 500},
		// Lambda: REST statuses, and Lambda's names for others' codes.
		{protoLambda, awserr.ErrResourceNotFound, "ResourceNotFoundException", 404},
		{protoLambda, awserr.ErrResourceConflict, "ResourceConflictException", 409},
		{protoLambda, awserr.ErrResourceInUse, "ResourceInUseException", 400},
		{protoLambda, awserr.ErrInvalidArgument, "InvalidParameterValueException", 400},
		{protoLambda, awserr.ErrLimitExceeded, "InvalidParameterValueException", 400},
		{protoLambda, awserr.ErrTooManyRequests, "TooManyRequestsException", 429},
		{protoLambda, awserr.ErrService, "ServiceException", 500},
		{protoLambda, awserr.ErrRequestTooLarge, "RequestTooLargeException", 413},
		{protoLambda, awserr.ErrInvalidRequestContent, "InvalidRequestContentException", 400},
		{protoLambda, awserr.ErrUnknownOperation, "UnknownOperationException", 404},
		{protoLambda, errors.New("disk on fire"), "ServiceException", 500},
		// DynamoDB: its namespaces; others' parameter errors are ValidationException.
		{protoDynamoDB, awserr.ErrValidation, "com.amazon.coral.validate#ValidationException", 400},
		{protoDynamoDB, awserr.ErrInvalidArgument, "com.amazon.coral.validate#ValidationException", 400},
		{protoDynamoDBStreams, awserr.ErrInvalidParameterValue, "com.amazon.coral.validate#ValidationException", 400},
		{protoDynamoDB, awserr.ErrSerialization, "com.amazon.coral.service#SerializationException", 400},
		{protoDynamoDB, awserr.ErrUnrecognizedClient, "com.amazon.coral.service#UnrecognizedClientException", 400},
		{protoDynamoDB, awserr.ErrRequestEntityTooLarge, "com.amazon.coral.service#RequestEntityTooLarge", 413},
		{protoDynamoDB, awserr.ErrTransactionConflict, "TransactionConflictException", 400},
		{protoDynamoDB, awserr.ErrTableNotFound, "TableNotFoundException", 400},
		{protoDynamoDB, awserr.ErrService, "InternalServerError", 500},
		{protoDynamoDB, errors.New("disk on fire"), "InternalServerError", 500},
	} {
		we := wireOf(tt.p, tt.err)
		if we.shape != tt.shape || we.status != tt.status {
			t.Errorf("protocol %d, %v: %s %d, want %s %d", tt.p, tt.err, we.shape, we.status, tt.shape, tt.status)
		}
	}
}

// TestUnknownCodeIsInternal: a code without an entry in awserr's table is
// a bug; it is answered as an internal failure, never as a 400.
func TestUnknownCodeIsInternal(t *testing.T) {
	for _, p := range []protocol{protoKinesis, protoSQSJSON, protoSQSQuery, protoLambda, protoDynamoDB} {
		if we := wireOf(p, &awserr.Error{Code: "NoSuchCodeException", Message: "m"}); we.status != 500 {
			t.Errorf("protocol %d: unknown code answered %d %s", p, we.status, we.shape)
		}
	}
}

// TestCanceledRequest: a client that went away is not an internal failure.
func TestCanceledRequest(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rq := &request{h: &Handler{opts: Options{Logger: slog.New(slog.DiscardHandler)}}, ctx: ctx, proto: protoKinesis}
	if we := rq.toWire(ctx.Err()); we.status != 400 || we.shape != "RequestCanceled" {
		t.Errorf("canceled: %d %s", we.status, we.shape)
	}
}

// TestSQSInputsReadTheForm: every SQS operation's input reads itself from
// the query protocol's form.
func TestSQSInputsReadTheForm(t *testing.T) {
	for _, op := range operations[SQS] {
		if _, ok := reflectNew(op).(formReader); !ok {
			t.Errorf("SQS %s: input %v does not implement readForm", op.Name, op.Input)
		}
	}
}

// reflectNew returns a new *Input of op.
func reflectNew(op *Operation) any { return reflect.New(op.Input).Interface() }
