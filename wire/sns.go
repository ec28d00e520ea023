package wire

import (
	"encoding/json"
	"strings"
)

// SNSEnvelope is the JSON document SNS delivers to SQS queues and HTTP
// endpoints (not raw), and so what a subscription's dead-letter queue
// holds (https://docs.aws.amazon.com/sns/latest/dg/sns-message-and-json-formats.html).
// Written by sns, read by recovery. Fields in AWS's order; FIFO topics
// leave out the signature fields and add SequenceNumber; confirmations
// add Token and SubscribeURL and have no UnsubscribeURL.
//
//	{"Type":"Notification","MessageId":"22b80b92-...","TopicArn":"arn:aws:sns:us-east-1:123456789012:t",
//	 "Subject":"S","Message":"Hello","Timestamp":"2012-05-02T00:54:06.655Z","SignatureVersion":"1",
//	 "Signature":"...","SigningCertURL":"...","UnsubscribeURL":"...",
//	 "MessageAttributes":{"store":{"Type":"String","Value":"x"},"b":{"Type":"Binary","Value":"AgME"}}}
type SNSEnvelope struct {
	Type              string                         `json:"Type"`
	MessageId         string                         `json:"MessageId"`
	SequenceNumber    string                         `json:"SequenceNumber,omitempty"`
	Token             string                         `json:"Token,omitempty"`
	TopicArn          string                         `json:"TopicArn"`
	Subject           string                         `json:"Subject,omitempty"`
	Message           string                         `json:"Message"`
	SubscribeURL      string                         `json:"SubscribeURL,omitempty"`
	Timestamp         string                         `json:"Timestamp"`
	SignatureVersion  string                         `json:"SignatureVersion,omitempty"`
	Signature         string                         `json:"Signature,omitempty"`
	SigningCertURL    string                         `json:"SigningCertURL,omitempty"`
	UnsubscribeURL    string                         `json:"UnsubscribeURL,omitempty"`
	MessageAttributes map[string]SNSMessageAttribute `json:"MessageAttributes,omitempty"`
}

// SNSMessageAttribute is a message attribute in the envelope: Binary
// values in base64.
type SNSMessageAttribute struct {
	Type  string `json:"Type"`
	Value string `json:"Value"`
}

// UnwrapSNS returns the SNS notification body is, or false: a JSON object
// of Type "Notification" with a MessageId and an SNS TopicArn.
func UnwrapSNS(body []byte) (*SNSEnvelope, bool) {
	var e SNSEnvelope
	if json.Unmarshal(body, &e) != nil || e.Type != "Notification" || e.MessageId == "" || !strings.HasPrefix(e.TopicArn, "arn:aws:sns:") {
		return nil, false
	}
	return &e, true
}
