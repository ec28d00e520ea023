package awserr

import "sort"

// Spec is one row of the table of codes: how the code goes on the wire in
// each API, and whether a retry of the same call may succeed.
type Spec struct {
	// Code is the code services return (Error.Code).
	Code string
	// Status is the HTTP status; 400 when not given. 500 and above is a
	// server fault: the query protocol's <Type>Receiver</Type>, logged by
	// the endpoint.
	Status int
	// Kinesis, SQS, Lambda and DynamoDB rename the code (Wire.Shape) or
	// change its status (Wire.Status) in that API; an empty field is Code
	// or Status. SQS's shape is the JSON protocol's __type after
	// "com.amazonaws.sqs#" (the query protocol and the x-amzn-query-error
	// header carry Code); DynamoDB's shape is the __type after
	// "com.amazonaws.dynamodb.v20120810#" unless it names its own
	// namespace ("com.amazon.coral.service#...", the service framework's
	// errors); Lambda's is the X-Amzn-ErrorType header. DynamoDB covers
	// DynamoDB Streams.
	Kinesis, SQS, Lambda, DynamoDB Wire
	// Retryable: the same call may succeed later, unchanged. See
	// IsRetryable.
	Retryable bool
}

// Wire is how one API writes a code: the shape (type) name and the HTTP
// status. Zero fields take the Spec's.
type Wire struct {
	Shape  string
	Status int
}

// In returns the shape and status of the code in the API w belongs to
// (s.Kinesis, s.SQS, s.Lambda or s.DynamoDB), with the defaults filled in.
func (s *Spec) In(w Wire) (shape string, status int) {
	shape, status = w.Shape, w.Status
	if shape == "" {
		shape = s.Code
	}
	if status == 0 {
		status = s.Status
	}
	return shape, status
}

// table holds every code, by Code. It is filled once, by the sentinels'
// initializers below, and only read afterwards.
var table = map[string]*Spec{}

// def adds s to the table and returns its sentinel.
func def(s Spec) *Error {
	if s.Status == 0 {
		s.Status = 400
	}
	if _, dup := table[s.Code]; dup {
		panic("awserr: code " + s.Code + " defined twice")
	}
	table[s.Code] = &s
	return &Error{Code: s.Code}
}

// Lookup returns the entry of code, or nil when it has none.
func Lookup(code string) *Spec { return table[code] }

// Specs returns every entry of the table, sorted by Code.
func Specs() []Spec {
	out := make([]Spec, 0, len(table))
	for _, s := range table {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Code < out[j].Code })
	return out
}

// internal is the Spec of a server fault: status 500, retryable, written
// under each API's own name for an internal failure.
func internal(code string) Spec {
	return Spec{Code: code, Status: 500, Retryable: true,
		Kinesis: Wire{Shape: "InternalFailureException"}, SQS: Wire{Shape: "InternalError"},
		Lambda: Wire{Shape: "ServiceException"}, DynamoDB: Wire{Shape: "InternalServerError"}}
}

// coral is a DynamoDB shape in the service framework's namespace.
func coral(code string) Wire { return Wire{Shape: "com.amazon.coral.service#" + code} }

// dynamoValidation is DynamoDB's ValidationException, in the validation
// framework's namespace.
var dynamoValidation = Wire{Shape: "com.amazon.coral.validate#ValidationException"}

// The codes of Lambda and Kinesis, which DynamoDB and SQS share where they
// name them alike.
var (
	// ErrInvalidParameterValue (InvalidParameterValueException) is returned
	// by Lambda-style APIs (functions, event source mappings, filters,
	// retry policies) when a parameter is out of its range or of the wrong
	// form. The message names the field and the allowed range. SQS's
	// parameter error is ErrSQSInvalidParameterValue.
	ErrInvalidParameterValue = def(Spec{Code: "InvalidParameterValueException",
		SQS: Wire{Shape: "InvalidParameterValue"}, DynamoDB: dynamoValidation})
	// ErrInvalidArgument is the Kinesis-style counterpart of
	// ErrInvalidParameterValue (GetShardIterator, PutRecord...); Lambda
	// and DynamoDB report it as their own parameter errors.
	ErrInvalidArgument = def(Spec{Code: "InvalidArgumentException",
		Lambda: Wire{Shape: "InvalidParameterValueException"}, DynamoDB: dynamoValidation})
	// ErrResourceNotFound: the named stream, shard, function, mapping,
	// table or move task does not exist (HTTP 404 in Lambda and SQS, 400
	// in the JSON APIs).
	ErrResourceNotFound = def(Spec{Code: "ResourceNotFoundException", SQS: Wire{Status: 404}, Lambda: Wire{Status: 404}})
	// ErrResourceInUse: a stream, table or mapping of that name or UUID
	// exists already, or the resource is in a state that forbids the call.
	ErrResourceInUse = def(Spec{Code: "ResourceInUseException"})
	// ErrResourceConflict: Lambda's name for "already exists" (HTTP 409).
	ErrResourceConflict = def(Spec{Code: "ResourceConflictException", Lambda: Wire{Status: 409}})
	// ErrPreconditionFailed: Lambda's RevisionId check failed (the
	// function or alias changed since the caller read it; HTTP 412). Read
	// it again and retry with its new RevisionId.
	ErrPreconditionFailed = def(Spec{Code: "PreconditionFailedException", Lambda: Wire{Status: 412}})
	// ErrPolicyLengthExceeded: AddPermission would make a function's
	// resource policy larger than 20 KB (Lambda, 400).
	ErrPolicyLengthExceeded = def(Spec{Code: "PolicyLengthExceededException"})
	// ErrProvisionedConcurrencyConfigNotFound: the version or alias has no
	// provisioned concurrency configuration (HTTP 404).
	ErrProvisionedConcurrencyConfigNotFound = def(Spec{Code: "ProvisionedConcurrencyConfigNotFoundException", Lambda: Wire{Status: 404}})
	// ErrExpiredIterator: a shard iterator older than 5 minutes (Kinesis)
	// or 15 (DynamoDB Streams) was used. Not retryable as it is: get a
	// new iterator.
	ErrExpiredIterator = def(Spec{Code: "ExpiredIteratorException"})
	// ErrTrimmedDataAccess (TrimmedDataAccessException): DynamoDB Streams'
	// answer to a sequence number older than the stream's 24 hours.
	ErrTrimmedDataAccess = def(Spec{Code: "TrimmedDataAccessException"})
	// ErrExpiredNextToken: a Kinesis ListShards NextToken older than 300
	// seconds was used. Not retryable as it is: list again.
	ErrExpiredNextToken = def(Spec{Code: "ExpiredNextTokenException"})
	// ErrLimitExceeded: a per-call limit (for example 500 records in
	// PutRecords) was passed. Not retryable: the call must be smaller.
	ErrLimitExceeded = def(Spec{Code: "LimitExceededException", Lambda: Wire{Shape: "InvalidParameterValueException"}})
	// ErrTooManyRequests: the function's concurrency is exhausted
	// (Lambda's throttle, HTTP 429 with Retry-After). Retryable.
	ErrTooManyRequests = def(Spec{Code: "TooManyRequestsException", Lambda: Wire{Status: 429}, Retryable: true})
	// ErrService (ServiceException) is an internal failure of the engine;
	// the request may be retried. Each API writes it under its own name
	// for an internal failure (Kinesis InternalFailureException, SQS
	// InternalError, DynamoDB InternalServerError), HTTP 500.
	ErrService = def(internal("ServiceException"))
	// ErrInternalFailure (InternalFailure) is the code of a PutRecords entry
	// that JetStream failed to store; PutRecord returns it as its error.
	// Written like ErrService.
	ErrInternalFailure = def(internal("InternalFailure"))
	// ErrRequestTooLarge (RequestEntityTooLargeException): an Invoke payload
	// is larger than the invocation type allows (Lambda's
	// RequestTooLargeException, HTTP 413).
	ErrRequestTooLarge = def(Spec{Code: "RequestEntityTooLargeException", Status: 413, Lambda: Wire{Shape: "RequestTooLargeException"}})
	// ErrInvalidRequestContent (InvalidRequestContentException): an Invoke
	// payload or a Lambda request body is not JSON.
	ErrInvalidRequestContent = def(Spec{Code: "InvalidRequestContentException"})
)

// DynamoDB's codes (package table).
var (
	// ErrValidation: DynamoDB's ValidationException, for a malformed
	// request or expression; the message says what and where.
	ErrValidation = def(Spec{Code: "ValidationException", DynamoDB: dynamoValidation})
	// ErrConditionalCheckFailed: a write's ConditionExpression was false
	// ("The conditional request failed"). See table.ConditionalCheckFailedError
	// for the item returned with ReturnValuesOnConditionCheckFailure.
	ErrConditionalCheckFailed = def(Spec{Code: "ConditionalCheckFailedException"})
	// ErrTransactionCanceled: TransactWriteItems changed nothing; see
	// table.TransactionCanceledError for the reasons, one per action.
	ErrTransactionCanceled = def(Spec{Code: "TransactionCanceledException"})
	// ErrIdempotentParameterMismatch: a ClientRequestToken was used again
	// within its 10 minutes with different parameters.
	ErrIdempotentParameterMismatch = def(Spec{Code: "IdempotentParameterMismatchException"})
	// ErrTransactionInProgress: a ClientRequestToken was used again while
	// the first call with it was still running. Retryable: the first call
	// ends.
	ErrTransactionInProgress = def(Spec{Code: "TransactionInProgressException", Retryable: true})
	// ErrTableNotFound: DescribeContinuousBackups' name for a missing
	// table ("Table not found: <name>").
	ErrTableNotFound = def(Spec{Code: "TableNotFoundException"})
	// ErrTransactionConflict: a PutItem, UpdateItem or DeleteItem met an
	// item held by a TransactWriteItems in progress ("Transaction is
	// ongoing for the item"). Retryable: the transaction ends.
	ErrTransactionConflict = def(Spec{Code: "TransactionConflictException", Retryable: true})
)

// SQS's codes (package queue). Code is what the SQS query protocol reports
// (and the JSON protocol's x-amzn-query-error header); the SQS Wire holds
// the JSON shape and the status of the SQS model's awsQueryError traits.
var (
	// ErrQueueDoesNotExist: the queue named by a URL, name or ARN does not
	// exist (or was deleted). Returned by every call that takes a queue.
	ErrQueueDoesNotExist = def(Spec{Code: "AWS.SimpleQueueService.NonExistentQueue", SQS: Wire{Shape: "QueueDoesNotExist"}})
	// ErrQueueNameExists: CreateQueue named an existing queue but gave an
	// attribute whose value differs from the queue's. Same name and same
	// (or no) attributes is not an error: the existing URL is returned.
	ErrQueueNameExists = def(Spec{Code: "QueueAlreadyExists", SQS: Wire{Shape: "QueueNameExists"}})
	// ErrReceiptHandleIsInvalid: the handle is malformed, belongs to another
	// queue, or (ChangeMessageVisibility, MoveToDeadLetterQueue, and
	// DeleteMessage on FIFO queues) is not the handle of the message's
	// latest receive. HTTP 404 in SQS.
	ErrReceiptHandleIsInvalid = def(Spec{Code: "ReceiptHandleIsInvalid", SQS: Wire{Status: 404}})
	// ErrMessageNotInflight: ChangeMessageVisibility or
	// MoveToDeadLetterQueue named a message whose visibility timeout has
	// already expired.
	ErrMessageNotInflight = def(Spec{Code: "AWS.SimpleQueueService.MessageNotInflight", SQS: Wire{Shape: "MessageNotInflight"}})
	// ErrPurgeQueueInProgress: PurgeQueue was called less than 60 seconds
	// (by the engine clock) after the previous purge of the queue. HTTP
	// 403 in SQS. Retryable once the 60 seconds are over.
	ErrPurgeQueueInProgress = def(Spec{Code: "AWS.SimpleQueueService.PurgeQueueInProgress", SQS: Wire{Shape: "PurgeQueueInProgress", Status: 403}, Retryable: true})
	// ErrQueueDeletedRecently: CreateQueue named a queue deleted less than
	// 60 seconds (by the engine clock) before ("You must wait 60 seconds
	// after deleting a queue before you can create another queue with the
	// same name", API_DeleteQueue). HTTP 400 in SQS. Retryable once the 60
	// seconds are over.
	ErrQueueDeletedRecently = def(Spec{Code: "AWS.SimpleQueueService.QueueDeletedRecently", SQS: Wire{Shape: "QueueDeletedRecently"}, Retryable: true})
	// ErrInvalidAttributeName: an unknown queue or message attribute name,
	// or a FIFO-only attribute on a standard queue.
	ErrInvalidAttributeName = def(Spec{Code: "InvalidAttributeName"})
	// ErrInvalidAttributeValue: a queue attribute out of its range or of the
	// wrong form. The message names the attribute and the range.
	ErrInvalidAttributeValue = def(Spec{Code: "InvalidAttributeValue"})
	// ErrSQSInvalidParameterValue (InvalidParameterValue, without
	// "Exception"): a request parameter (not a queue attribute) is out of
	// range or not valid for the queue type: MaxNumberOfMessages,
	// WaitTimeSeconds, VisibilityTimeout of a call, DelaySeconds of a
	// message, a FIFO-only parameter on a standard queue, a queue name, a
	// NextToken or MaxResults.
	ErrSQSInvalidParameterValue = def(Spec{Code: "InvalidParameterValue"})
	// ErrMissingParameter: a required parameter is absent (QueueUrl,
	// ReceiptHandle, the body, the MessageGroupId of a FIFO message, a
	// deduplication id on a FIFO queue without ContentBasedDeduplication).
	ErrMissingParameter = def(Spec{Code: "MissingParameter"})
	// ErrOverLimit: a queue's limit is reached (AddPermission: more than
	// 7 actions in one permission), HTTP 403.
	ErrOverLimit = def(Spec{Code: "OverLimit", Status: 403})
	// ErrInvalidMessageContents: the body or a string attribute holds a
	// character outside the XML character set SQS allows.
	ErrInvalidMessageContents = def(Spec{Code: "InvalidMessageContents"})
	// ErrEmptyBatchRequest: a batch call without entries.
	ErrEmptyBatchRequest = def(Spec{Code: "AWS.SimpleQueueService.EmptyBatchRequest", SQS: Wire{Shape: "EmptyBatchRequest"}})
	// ErrTooManyEntriesInBatchRequest: a batch call with more than 10
	// entries.
	ErrTooManyEntriesInBatchRequest = def(Spec{Code: "AWS.SimpleQueueService.TooManyEntriesInBatchRequest", SQS: Wire{Shape: "TooManyEntriesInBatchRequest"}})
	// ErrBatchEntryIdsNotDistinct: two entries of a batch share an Id.
	ErrBatchEntryIdsNotDistinct = def(Spec{Code: "AWS.SimpleQueueService.BatchEntryIdsNotDistinct", SQS: Wire{Shape: "BatchEntryIdsNotDistinct"}})
	// ErrInvalidBatchEntryId: an entry Id is empty, longer than 80
	// characters, or not made of alphanumerics, '-' and '_'.
	ErrInvalidBatchEntryId = def(Spec{Code: "AWS.SimpleQueueService.InvalidBatchEntryId", SQS: Wire{Shape: "InvalidBatchEntryId"}})
	// ErrBatchRequestTooLong: the bodies and attributes of a
	// SendMessageBatch add up to more than MaxBatchSize bytes.
	ErrBatchRequestTooLong = def(Spec{Code: "AWS.SimpleQueueService.BatchRequestTooLong", SQS: Wire{Shape: "BatchRequestTooLong"}})
	// ErrUnsupportedOperation: the call is not possible on this queue (a
	// message move task from a queue that is no queue's dead-letter queue,
	// a second active task on one source, MoveToDeadLetterQueue on a queue
	// without a usable RedrivePolicy), or the endpoint does not serve the
	// SQS operation.
	ErrUnsupportedOperation = def(Spec{Code: "AWS.SimpleQueueService.UnsupportedOperation", SQS: Wire{Shape: "UnsupportedOperation"}})
	// ErrInternal (InternalError): JetStream failed to store or read a
	// message; the call may be retried. Per-entry batch failures carry
	// this code. Written like ErrService.
	ErrInternal = def(internal("InternalError"))
)

// The endpoint's own codes (package awsapi): requests refused before any
// service sees them.
var (
	// ErrSerialization: the body is not valid JSON of the operation's shape.
	ErrSerialization = def(Spec{Code: "SerializationException", DynamoDB: coral("SerializationException")})
	// ErrRequestEntityTooLarge: the body is larger than the endpoint reads
	// (16 MiB; 70 MiB for Lambda), HTTP 413.
	ErrRequestEntityTooLarge = def(Spec{Code: "RequestEntityTooLarge", Status: 413, DynamoDB: coral("RequestEntityTooLarge")})
	// ErrMalformedQueryString: an SQS query-protocol form that does not
	// parse.
	ErrMalformedQueryString = def(Spec{Code: "MalformedQueryString"})
	// ErrUnknownOperation: no operation of that name (X-Amz-Target) or path
	// (Lambda, HTTP 404).
	ErrUnknownOperation = def(Spec{Code: "UnknownOperationException", Lambda: Wire{Status: 404}, DynamoDB: coral("UnknownOperationException")})
	// ErrInvalidAction: an SQS query-protocol Action the endpoint does not
	// serve.
	ErrInvalidAction = def(Spec{Code: "InvalidAction"})
	// ErrRequestCanceled: the client went away before the answer.
	ErrRequestCanceled = def(Spec{Code: "RequestCanceled", DynamoDB: coral("RequestCanceled")})

	// Signature errors (Options.Auth) in the JSON APIs' words (Kinesis,
	// DynamoDB), HTTP 400.

	// ErrMissingAuthenticationToken: no Authorization header.
	ErrMissingAuthenticationToken = def(Spec{Code: "MissingAuthenticationTokenException", DynamoDB: coral("MissingAuthenticationTokenException")})
	// ErrUnrecognizedClient: the access key is not one of Options.Auth's.
	ErrUnrecognizedClient = def(Spec{Code: "UnrecognizedClientException", DynamoDB: coral("UnrecognizedClientException")})
	// ErrInvalidSignature: the signature does not match the request.
	ErrInvalidSignature = def(Spec{Code: "InvalidSignatureException", DynamoDB: coral("InvalidSignatureException")})
	// ErrIncompleteSignature: an Authorization header, or the query's
	// X-Amz-* parameters, without the parts a signature has.
	ErrIncompleteSignature = def(Spec{Code: "IncompleteSignatureException", DynamoDB: coral("IncompleteSignatureException")})

	// Signature errors in SQS's words, HTTP 403.

	// ErrSQSMissingAuthenticationToken: no Authorization header.
	ErrSQSMissingAuthenticationToken = def(Spec{Code: "MissingAuthenticationToken", Status: 403})
	// ErrInvalidClientTokenID: the access key is not one of Options.Auth's.
	ErrInvalidClientTokenID = def(Spec{Code: "InvalidClientTokenId", Status: 403})
	// ErrSignatureDoesNotMatch: the signature does not match the request.
	ErrSignatureDoesNotMatch = def(Spec{Code: "SignatureDoesNotMatch", Status: 403})
)
