package wire

import (
	"encoding/json"
	"time"
)

// RetryEnvelope is the retry envelope of the Retry-DLQ flow: the original
// payload wrapped with the attempt count and the time of the first
// attempt, so a retry handler knows the backoff to apply and when to give
// up (the shape of "Async Lambda Function Retries with Backoff and
// Jitter", Bite-Sized Serverless):
//
//	{"_retry_metadata":{"attempt":2,"initial_timestamp":1643667670},"_original_payload":{...}}
//
// initial_timestamp is in Unix seconds; attempt is 1-based (2 is the first
// retry).
type RetryEnvelope struct {
	Metadata        RetryMetadata   `json:"_retry_metadata"`
	OriginalPayload json.RawMessage `json:"_original_payload"`
}

// RetryMetadata of a retry envelope.
type RetryMetadata struct {
	Attempt          int   `json:"attempt"`
	InitialTimestamp int64 `json:"initial_timestamp"`
}

// WrapRetry returns the envelope of payload for its next attempt: attempt
// 2 and initial time now for a payload that is not yet an envelope, else
// the envelope with its attempt incremented. payload should be JSON (a
// non-JSON payload is wrapped as a JSON string).
func WrapRetry(payload []byte, now time.Time) ([]byte, error) {
	if env, ok := UnwrapRetry(payload); ok {
		env.Metadata.Attempt++
		return json.Marshal(env)
	}
	orig := json.RawMessage(payload)
	if !json.Valid(payload) {
		b, _ := json.Marshal(string(payload))
		orig = b
	}
	return json.Marshal(RetryEnvelope{Metadata: RetryMetadata{Attempt: 2, InitialTimestamp: now.Unix()}, OriginalPayload: orig})
}

// UnwrapRetry returns the envelope in payload, or false if payload is not
// one (not a JSON object with "_retry_metadata", or an attempt below 1).
func UnwrapRetry(payload []byte) (*RetryEnvelope, bool) {
	var probe map[string]json.RawMessage
	if json.Unmarshal(payload, &probe) != nil {
		return nil, false
	}
	if _, ok := probe["_retry_metadata"]; !ok {
		return nil, false
	}
	var env RetryEnvelope
	if json.Unmarshal(payload, &env) != nil || env.Metadata.Attempt < 1 {
		return nil, false
	}
	return &env, true
}
