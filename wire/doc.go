// Package wire holds the failure-record formats that several runnel
// packages write and read, in one place, as franz-go's pkg/kmsg holds the
// Kafka messages for its client, fake cluster and admin alike:
//
//   - OnFailureRecord: what a stream or DynamoDB-stream event source
//     mapping sends to its on-failure destination (written by mapping,
//     read by recovery).
//   - InvocationRecord: what asynchronous invocation sends to its
//     OnSuccess/OnFailure destinations and built-in dead-letter store
//     (written by function/async, read by recovery).
//   - RetryEnvelope: a payload wrapped with its attempt count, for the
//     Retry-DLQ flow (written by recovery, read by recovery and mapping).
//   - the message attributes of a function's DeadLetterConfig queue
//     (AttrRequestID, AttrErrorCode, AttrErrorMessage).
//
// The package imports only the standard library, so any package may import
// it without import cycles. The JSON of every type is byte-compatible with
// AWS's (field names, order and omissions): change a tag here and every
// writer and reader changes together.
package wire

import "time"

// RequestContext of an OnFailureRecord or an InvocationRecord: the last
// invocation and why the record was written.
//
//	{"requestId":"c9b8fa9f-...","functionArn":"arn:aws:lambda:...:function:f","condition":"RetryAttemptsExhausted","approximateInvokeCount":3}
//
// Condition is one of RetryAttemptsExhausted, RecordAgeExceeded (stream
// mappings), RetriesExhausted, EventAgeExceeded (async invocation), or
// Success (an OnSuccess record). RequestID is empty when no invocation ran.
type RequestContext struct {
	RequestID              string `json:"requestId"`
	FunctionArn            string `json:"functionArn"`
	Condition              string `json:"condition"`
	ApproximateInvokeCount int    `json:"approximateInvokeCount"`
}

// Timestamp formats t as these records do, in UTC with milliseconds:
// 2019-11-14T00:38:06.021Z.
func Timestamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// TimestampSeconds formats t in UTC without milliseconds, as DynamoDB
// stream on-failure records give arrival times: 2019-11-14T00:38:06Z.
func TimestampSeconds(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05Z") }

// Versions both records carry.
const (
	// RecordVersion is the "version" field of both records.
	RecordVersion = "1.0"
	// ExecutedVersion is the version a record names when it does not know
	// the version that ran (none ran: a throttle, a missing function).
	// Records of an invocation name the version that ran.
	ExecutedVersion = "$LATEST"
)
