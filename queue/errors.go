package queue

import "github.com/runnel-dev/runnel/awserr"

// Sentinels for the SQS errors this package returns. Codes are the ones the
// SQS query protocol reports (the JSON protocol sends the same code in its
// x-amzn-query-error header); test with errors.Is, which matches any
// message. Errors that SQS shares with other services use awserr's own
// sentinels (awserr.ErrResourceNotFound for move tasks).
var (
	// ErrQueueDoesNotExist: the queue named by a URL, name or ARN does not
	// exist (or was deleted). Returned by every call that takes a queue.
	ErrQueueDoesNotExist = &awserr.Error{Code: "AWS.SimpleQueueService.NonExistentQueue"}
	// ErrQueueNameExists: CreateQueue named an existing queue but gave an
	// attribute whose value differs from the queue's. Same name and same
	// (or no) attributes is not an error: the existing URL is returned.
	ErrQueueNameExists = &awserr.Error{Code: "QueueAlreadyExists"}
	// ErrReceiptHandleIsInvalid: the handle is malformed, belongs to another
	// queue, or (ChangeMessageVisibility, MoveToDeadLetterQueue, and
	// DeleteMessage on FIFO queues) is not the handle of the message's
	// latest receive.
	ErrReceiptHandleIsInvalid = &awserr.Error{Code: "ReceiptHandleIsInvalid"}
	// ErrMessageNotInflight: ChangeMessageVisibility or
	// MoveToDeadLetterQueue named a message whose visibility timeout has
	// already expired.
	ErrMessageNotInflight = &awserr.Error{Code: "AWS.SimpleQueueService.MessageNotInflight"}
	// ErrPurgeQueueInProgress: PurgeQueue was called less than 60 seconds
	// (by the engine clock) after the previous purge of the queue.
	ErrPurgeQueueInProgress = &awserr.Error{Code: "AWS.SimpleQueueService.PurgeQueueInProgress"}
	// ErrInvalidAttributeName: an unknown queue or message attribute name,
	// or a FIFO-only attribute on a standard queue.
	ErrInvalidAttributeName = &awserr.Error{Code: "InvalidAttributeName"}
	// ErrInvalidAttributeValue: a queue attribute out of its range or of the
	// wrong form. The message names the attribute and the range.
	ErrInvalidAttributeValue = &awserr.Error{Code: "InvalidAttributeValue"}
	// ErrInvalidParameterValue: a request parameter (not a queue attribute)
	// is out of range or not valid for the queue type: MaxNumberOfMessages,
	// WaitTimeSeconds, VisibilityTimeout of a call, DelaySeconds of a
	// message, a FIFO-only parameter on a standard queue, a queue name.
	ErrInvalidParameterValue = &awserr.Error{Code: "InvalidParameterValue"}
	// ErrMissingParameter: a required parameter is absent (the body, the
	// MessageGroupId of a FIFO message, a deduplication id on a FIFO queue
	// without ContentBasedDeduplication).
	ErrMissingParameter = &awserr.Error{Code: "MissingParameter"}
	// ErrInvalidMessageContents: the body or a string attribute holds a
	// character outside the XML character set SQS allows.
	ErrInvalidMessageContents = &awserr.Error{Code: "InvalidMessageContents"}
	// ErrEmptyBatchRequest: a batch call without entries.
	ErrEmptyBatchRequest = &awserr.Error{Code: "AWS.SimpleQueueService.EmptyBatchRequest"}
	// ErrTooManyEntriesInBatchRequest: a batch call with more than 10
	// entries.
	ErrTooManyEntriesInBatchRequest = &awserr.Error{Code: "AWS.SimpleQueueService.TooManyEntriesInBatchRequest"}
	// ErrBatchEntryIdsNotDistinct: two entries of a batch share an Id.
	ErrBatchEntryIdsNotDistinct = &awserr.Error{Code: "AWS.SimpleQueueService.BatchEntryIdsNotDistinct"}
	// ErrInvalidBatchEntryId: an entry Id is empty, longer than 80
	// characters, or not made of alphanumerics, '-' and '_'.
	ErrInvalidBatchEntryId = &awserr.Error{Code: "AWS.SimpleQueueService.InvalidBatchEntryId"}
	// ErrBatchRequestTooLong: the bodies and attributes of a
	// SendMessageBatch add up to more than MaxBatchSize bytes.
	ErrBatchRequestTooLong = &awserr.Error{Code: "AWS.SimpleQueueService.BatchRequestTooLong"}
	// ErrUnsupportedOperation: the call is not possible on this queue: a
	// message move task from a queue that is no queue's dead-letter queue,
	// a second active task on one source, MoveToDeadLetterQueue on a queue
	// without a usable RedrivePolicy.
	ErrUnsupportedOperation = &awserr.Error{Code: "AWS.SimpleQueueService.UnsupportedOperation"}
	// ErrInternal: JetStream failed to store or read; the call may be
	// retried. Per-entry batch failures carry the code "InternalError".
	ErrInternal = &awserr.Error{Code: "InternalError"}
)
