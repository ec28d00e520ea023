package wire

import "encoding/json"

// InvocationRecord is the invocation record asynchronous invocation sends
// to its destinations (OnSuccess, OnFailure) and keeps in its built-in
// dead-letter store, in AWS's field order
// (https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-retain-records.html):
//
//	{"version":"1.0","timestamp":"2019-11-14T18:16:05.568Z",
//	 "requestContext":{"requestId":"e4b46cbf-...","functionArn":"arn:aws:lambda:...:function:f:$LATEST","condition":"RetriesExhausted","approximateInvokeCount":3},
//	 "requestPayload":{"ORDER_IDS":["9e07af03-..."]},
//	 "responseContext":{"statusCode":200,"executedVersion":"$LATEST","functionError":"Unhandled"},
//	 "responsePayload":{"errorMessage":"...","errorType":"..."}}
type InvocationRecord struct {
	Version        string         `json:"version"`
	Timestamp      string         `json:"timestamp"`
	RequestContext RequestContext `json:"requestContext"`
	// RequestPayload is the event as invoked (a JSON string when the event
	// was not JSON).
	RequestPayload  json.RawMessage           `json:"requestPayload"`
	ResponseContext InvocationResponseContext `json:"responseContext"`
	// ResponsePayload is the function's response (Success), the error
	// object of the last attempt, or absent when there was none.
	ResponsePayload json.RawMessage `json:"responsePayload,omitempty"`
}

// InvocationResponseContext of an InvocationRecord: the last attempt's
// HTTP status (200 when the function ran, 429 when it was throttled, 0
// when nothing was tried), the version, and "Unhandled" after a function
// error. Unlike ResponseContext, functionError is omitted when empty, as
// AWS writes it.
type InvocationResponseContext struct {
	StatusCode      int    `json:"statusCode"`
	ExecutedVersion string `json:"executedVersion"`
	FunctionError   string `json:"functionError,omitempty"`
}

// ErrorPayload is the responsePayload of a failed invocation, as
// aws-lambda-go reports a function error.
type ErrorPayload struct {
	ErrorType    string `json:"errorType"`
	ErrorMessage string `json:"errorMessage"`
}

// Message attributes of a function's DeadLetterConfig queue message, whose
// body is the original event (AWS's legacy dead-letter queue,
// https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-retain-records.html#invocation-dlq):
// the request id, the last attempt's status code (a Number) and the error
// message (at most 1024 bytes).
const (
	AttrRequestID    = "RequestID"
	AttrErrorCode    = "ErrorCode"
	AttrErrorMessage = "ErrorMessage"
)
