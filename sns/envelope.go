package sns

// The SNS envelope (https://docs.aws.amazon.com/sns/latest/dg/sns-message-and-json-formats.html)
// and its signature (https://docs.aws.amazon.com/sns/latest/dg/sns-verify-signature-of-message.html),
// and the Lambda event (events.SNSEvent).

import (
	"crypto"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"maps"
	"net/url"

	"github.com/runnel-dev/runnel/wire"
)

// Message types of the envelope (and of the x-amz-sns-message-type header).
const (
	TypeNotification             = "Notification"
	TypeSubscriptionConfirmation = "SubscriptionConfirmation"
	TypeUnsubscribeConfirmation  = "UnsubscribeConfirmation"
)

// Envelope is the JSON document SNS delivers to SQS and HTTP endpoints
// (not raw); its shape is wire.SNSEnvelope, which recovery reads back.
type Envelope = wire.SNSEnvelope

// EnvelopeValue is a message attribute in the envelope: Binary values in
// base64.
type EnvelopeValue = wire.SNSMessageAttribute

// sign fills the signature fields of e: the string of "name\nvalue\n"
// for Message, MessageId, Subject (if any), [SubscribeURL,] Timestamp,
// [Token,] TopicArn and Type, signed SHA1withRSA (version 1) or
// SHA256withRSA (version 2).
func (s *Service) sign(e *Envelope, version string) {
	if version == "" {
		version = "1"
	}
	var b []byte
	add := func(k, v string) { b = append(append(append(append(b, k...), '\n'), v...), '\n') }
	add("Message", e.Message)
	add("MessageId", e.MessageId)
	if e.Type == TypeNotification {
		if e.Subject != "" {
			add("Subject", e.Subject)
		}
	} else {
		add("SubscribeURL", e.SubscribeURL)
	}
	add("Timestamp", e.Timestamp)
	if e.Type != TypeNotification {
		add("Token", e.Token)
	}
	add("TopicArn", e.TopicArn)
	add("Type", e.Type)
	sg, err := s.signer()
	if err != nil {
		s.log.Error("sns: no signing key; the envelope goes unsigned", "messageId", e.MessageId, "err", err)
		return
	}
	var sig []byte
	if version == "2" {
		h := sha256.Sum256(b)
		sig, _ = rsa.SignPKCS1v15(nil, sg.key, crypto.SHA256, h[:])
	} else {
		h := sha1.Sum(b)
		sig, _ = rsa.SignPKCS1v15(nil, sg.key, crypto.SHA1, h[:])
	}
	e.SignatureVersion, e.Signature = version, base64.StdEncoding.EncodeToString(sig)
	e.SigningCertURL = s.opts.BaseURL + sg.path
}

// unsubscribeURL is the link that unsubscribes subArn.
func (s *Service) unsubscribeURL(subArn string) string {
	return s.opts.BaseURL + "/?Action=Unsubscribe&SubscriptionArn=" + url.QueryEscape(subArn)
}

// envelope builds the notification of r for sub (signed unless FIFO).
// It is not safe for concurrent use on one r (it caches r's signature).
func (s *Service) envelope(t *topicMeta, sub *subscription, r *record) *Envelope {
	e := &Envelope{Type: TypeNotification, MessageId: r.MessageId, TopicArn: s.TopicARN(t.Name),
		Subject: r.Subject, Message: r.messageFor(sub.meta.Protocol), Timestamp: r.timestamp(),
		UnsubscribeURL: s.unsubscribeURL(sub.arn(s))}
	if r.MessageStructure != "json" {
		e.MessageAttributes = envelopeAttributes(r.Attributes, false)
	}
	if t.FIFO {
		e.SequenceNumber = r.SequenceNumber
		return e
	}
	// The signed string names neither the subscription nor its endpoint,
	// so every subscription of r with the same message text shares one
	// signature (as on AWS): an RSA-2048 signature costs about 1 ms of CPU.
	key := t.Attributes[AttrSignatureVersion] + "\x00" + e.Message
	if sig, ok := r.sigs[key]; ok {
		e.SignatureVersion, e.Signature, e.SigningCertURL = sig[0], sig[1], sig[2]
		return e
	}
	s.sign(e, t.Attributes[AttrSignatureVersion])
	if e.Signature != "" {
		if r.sigs == nil {
			r.sigs = map[string][3]string{}
		}
		r.sigs[key] = [3]string{e.SignatureVersion, e.Signature, e.SigningCertURL}
	}
	return e
}

// envelopeAttributes writes attributes as the envelope holds them; for
// Lambda (lambda true), String.Array and Number are Type "String".
func envelopeAttributes(attrs map[string]Attribute, lambda bool) map[string]EnvelopeValue {
	if len(attrs) == 0 {
		return nil
	}
	out := make(map[string]EnvelopeValue, len(attrs))
	for k, a := range attrs {
		v := EnvelopeValue{Type: a.DataType, Value: a.StringValue}
		if baseType(a.DataType) == "Binary" {
			v.Type, v.Value = "Binary", base64.StdEncoding.EncodeToString(a.BinaryValue)
		} else if lambda {
			v.Type = "String"
		}
		out[k] = v
	}
	return out
}

// lambdaEvent is the events.SNSEvent a function subscribed to the topic
// receives: one record, in AWS's JSON (lambdaSNSEvent), which Go
// handlers taking events.SNSEvent decode.
func (s *Service) lambdaEvent(t *topicMeta, sub *subscription, r *record) []byte {
	e := s.envelope(t, sub, r)
	attrs := map[string]EnvelopeValue{}
	if r.MessageStructure != "json" { // "sent only when the message structure is String, not JSON"
		maps.Copy(attrs, envelopeAttributes(r.Attributes, true))
	}
	var subject *string
	if e.Subject != "" {
		subject = &e.Subject
	}
	ev := lambdaSNSEvent{Records: []lambdaSNSRecord{{EventVersion: "1.0", EventSubscriptionArn: sub.arn(s), EventSource: "aws:sns",
		SNS: lambdaSNSEntity{SignatureVersion: e.SignatureVersion, Timestamp: e.Timestamp, Signature: e.Signature,
			SigningCertURL: e.SigningCertURL, MessageID: e.MessageId, Message: e.Message, MessageAttributes: attrs,
			Type: e.Type, UnsubscribeURL: e.UnsubscribeURL, TopicArn: e.TopicArn, Subject: subject}}}}
	return marshalJSON(ev)
}

// lambdaSNSEvent is events.SNSEvent as AWS writes it: Timestamp with
// its three digits of milliseconds always (2026-01-01T00:00:00.000Z, as
// the envelope's), where events.SNSEntity's time.Time wrote RFC 3339
// without trailing zeros (.100Z as .1Z, .000Z as nothing); and Subject
// null when the message has none, where events.SNSEntity's string wrote
// "". AWS's sample event (Lambda's with-sns.html) has both.
type lambdaSNSEvent struct {
	Records []lambdaSNSRecord `json:"Records"`
}

type lambdaSNSRecord struct {
	EventVersion         string          `json:"EventVersion"`
	EventSubscriptionArn string          `json:"EventSubscriptionArn"`
	EventSource          string          `json:"EventSource"`
	SNS                  lambdaSNSEntity `json:"Sns"`
}

type lambdaSNSEntity struct {
	SignatureVersion  string                   `json:"SignatureVersion"`
	Timestamp         string                   `json:"Timestamp"`
	Signature         string                   `json:"Signature"`
	SigningCertURL    string                   `json:"SigningCertUrl"`
	MessageID         string                   `json:"MessageId"`
	Message           string                   `json:"Message"`
	MessageAttributes map[string]EnvelopeValue `json:"MessageAttributes"`
	Type              string                   `json:"Type"`
	UnsubscribeURL    string                   `json:"UnsubscribeUrl"`
	TopicArn          string                   `json:"TopicArn"`
	Subject           *string                  `json:"Subject"`
}
