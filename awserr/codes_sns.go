package awserr

// The codes of SNS (https://docs.aws.amazon.com/sns/latest/api/CommonErrors.html
// and each action's Errors section). In SNS's query protocol a code is
// written as its Code with its Status (its Wire is the Spec's own); in
// its JSON protocol (X-Amz-Target SNS_20100331.*) the __type is the
// shape SNSShape names and x-amzn-query-error carries the Code.
// InternalError is ErrInternal, shared with SQS.
var (
	// ErrSNSInvalidParameter (InvalidParameter): a request parameter or
	// attribute is missing, out of its range or of the wrong form; the
	// message is AWS's "Invalid parameter: <field> Reason: ...".
	ErrSNSInvalidParameter = def(Spec{Code: "InvalidParameter"})
	// ErrSNSParameterValueInvalid (ParameterValueInvalid): a message
	// attribute's name, type or value is not valid.
	ErrSNSParameterValueInvalid = def(Spec{Code: "ParameterValueInvalid"})
	// ErrSNSNotFound (NotFound, HTTP 404): the topic, subscription or
	// confirmation token does not exist.
	ErrSNSNotFound = def(Spec{Code: "NotFound", Status: 404})
	// ErrSNSResourceNotFound (ResourceNotFound, HTTP 404): the resource of
	// TagResource, UntagResource or ListTagsForResource does not exist.
	ErrSNSResourceNotFound = def(Spec{Code: "ResourceNotFound", Status: 404})
	// ErrSNSTagLimitExceeded: a topic would have more than 50 tags.
	ErrSNSTagLimitExceeded = def(Spec{Code: "TagLimitExceeded"})
	// ErrSNSFilterPolicyLimitExceeded (HTTP 403): more than 200 filter
	// policies on a topic.
	ErrSNSFilterPolicyLimitExceeded = def(Spec{Code: "FilterPolicyLimitExceeded", Status: 403})
	// ErrSNSEmptyBatchRequest: PublishBatch without entries.
	ErrSNSEmptyBatchRequest = def(Spec{Code: "EmptyBatchRequest"})
	// ErrSNSTooManyEntriesInBatchRequest: PublishBatch with more than 10
	// entries.
	ErrSNSTooManyEntriesInBatchRequest = def(Spec{Code: "TooManyEntriesInBatchRequest"})
	// ErrSNSBatchEntryIdsNotDistinct: two PublishBatch entries share an Id.
	ErrSNSBatchEntryIdsNotDistinct = def(Spec{Code: "BatchEntryIdsNotDistinct"})
	// ErrSNSInvalidBatchEntryId: an entry Id is empty, longer than 80
	// characters or not made of alphanumerics, '-' and '_'.
	ErrSNSInvalidBatchEntryId = def(Spec{Code: "InvalidBatchEntryId"})
	// ErrSNSBatchRequestTooLong: the entries of a PublishBatch add up to
	// more than 262,144 bytes.
	ErrSNSBatchRequestTooLong = def(Spec{Code: "BatchRequestTooLong"})
)

// snsShapes are the SNS JSON protocol's shapes whose name is not the code
// with "Exception" added.
var snsShapes = map[string]string{
	ErrSNSParameterValueInvalid.Code: "InvalidParameterValueException",
	ErrInternal.Code:                 "InternalErrorException",
}

// SNSShape is the shape (the JSON protocol's __type after
// "com.amazonaws.sns#") of an SNS code: its entry in snsShapes, else the
// code followed by "Exception" (InvalidParameter: InvalidParameterException).
func SNSShape(code string) string {
	if s, ok := snsShapes[code]; ok {
		return s
	}
	return code + "Exception"
}
