package sns

// Delivery to each kind of endpoint: an SQS queue (SendMessage), a
// Lambda function (an asynchronous invocation with events.SNSEvent), an
// http/https URL (a POST with SNS's headers).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/runnel-dev/runnel/engine"
	"github.com/runnel-dev/runnel/function/async"
	"github.com/runnel-dev/runnel/queue"
)

// HTTPTimeout bounds one http/https delivery: AWS waits 15 s.
const HTTPTimeout = 15 * time.Second

// maxRawAttributes is the most message attributes a raw delivery to SQS
// carries (SQS's limit).
const maxRawAttributes = 10

var httpClient = &http.Client{Timeout: HTTPTimeout}

// deliver makes one delivery attempt of r to sub; a *clientError is not
// to be retried.
func (s *Service) deliver(ctx context.Context, t *topicMeta, sub *subscription, r *record) error {
	switch sub.meta.Protocol {
	case ProtocolSQS:
		if err := rawAttributesError(sub, r); err != nil {
			return err
		}
		name, _ := queue.NameFromARN(sub.meta.Endpoint)
		_, err := s.queues.SendMessage(ctx, name, s.sqsMessage(t, sub, r, name))
		return classify(err)
	case ProtocolLambda:
		// name:qualifier: a version's or an alias's subscription invokes
		// it; one that does not exist fails the delivery (a client
		// error, as a deleted function: to the dead-letter queue).
		fn, _ := functionRef(sub.meta.Endpoint)
		_, err := s.async.Invoke(ctx, fn, async.Event, s.lambdaEvent(t, sub, r))
		return classify(err)
	case ProtocolHTTP, ProtocolHTTPS:
		if rate := maxReceives(t.Attributes[AttrDeliveryPolicy], sub); rate > 0 {
			th, _ := s.throttles.LoadOrStore(sub.meta.ID, &throttle{})
			if err := th.(*throttle).wait(ctx, s.eng.Clock, rate); err != nil {
				return err
			}
		}
		return s.post(ctx, sub, TypeNotification, r.MessageId, s.httpBody(t, sub, r), sub.raw(), contentType(t.Attributes[AttrDeliveryPolicy], sub))
	}
	return &clientError{fmt.Errorf("runnel does not deliver to %s endpoints", sub.meta.Protocol)}
}

// sqsMessage is what SQS queue target (an endpoint or a dead-letter
// queue) receives of r: the envelope, or with RawMessageDelivery the
// message with its attributes (at most 10); the group and deduplication
// ids to a FIFO queue, the group id alone to a standard one (deadLetter
// makes a dead letter's deduplication id its subscription's own).
func (s *Service) sqsMessage(t *topicMeta, sub *subscription, r *record, target string) queue.SendMessageInput {
	var in queue.SendMessageInput
	if sub.raw() {
		in.MessageBody = r.messageFor(sub.meta.Protocol)
		if r.MessageStructure != "json" {
			in.MessageAttributes = sqsAttributes(r.Attributes)
		}
	} else {
		in.MessageBody = s.envelopeJSON(t, sub, r)
	}
	if strings.HasSuffix(target, ".fifo") {
		in.MessageGroupId, in.MessageDeduplicationId = r.GroupId, r.DedupId
		if in.MessageGroupId == "" { // a standard topic's message to a FIFO dead-letter queue (one set before checkSubAttrs refused them)
			in.MessageGroupId, in.MessageDeduplicationId = sub.meta.ID, r.MessageId
		}
	} else {
		in.MessageGroupId = r.GroupId
	}
	return in
}

func (s *Service) envelopeJSON(t *topicMeta, sub *subscription, r *record) string {
	return string(marshalJSON(s.envelope(t, sub, r)))
}

// rawAttributesError is the client error of a raw delivery to SQS of a
// message with more than 10 attributes: "Messages with more than 10
// message attributes directed towards Raw Message Delivery enabled Amazon
// SQS subscriptions will be discarded as client side errors"
// (sns-message-attributes.html). Not retried: to the dead-letter queue,
// or logged and counted failed.
func rawAttributesError(sub *subscription, r *record) error {
	if !sub.raw() || r.MessageStructure == "json" || len(r.Attributes) <= maxRawAttributes {
		return nil
	}
	return &clientError{fmt.Errorf("the message has %d message attributes; a raw delivery to SQS takes at most %d", len(r.Attributes), maxRawAttributes)}
}

// sqsAttributes are SNS attributes as SQS message attributes; beyond 10
// (a dead letter of a message rawAttributesError refused), the first 10
// by name: SQS takes no more.
func sqsAttributes(attrs map[string]Attribute) map[string]queue.MessageAttributeValue {
	if len(attrs) == 0 {
		return nil
	}
	out := map[string]queue.MessageAttributeValue{}
	for _, k := range sortedKeys(attrs) {
		if len(out) == maxRawAttributes {
			break
		}
		a := attrs[k]
		v := queue.MessageAttributeValue{DataType: a.DataType, BinaryValue: a.BinaryValue}
		if baseType(a.DataType) != "Binary" {
			sv := a.StringValue
			v.StringValue = &sv
		}
		out[k] = v
	}
	return out
}

// httpBody is the POST body of a notification: the envelope, or the
// message alone when raw.
func (s *Service) httpBody(t *topicMeta, sub *subscription, r *record) []byte {
	if sub.raw() {
		return []byte(r.messageFor(sub.meta.Protocol))
	}
	return []byte(s.envelopeJSON(t, sub, r))
}

// post sends one http/https request as SNS does; a status of 500 or more,
// or no answer within 15 s, is a failure to retry.
func (s *Service) post(ctx context.Context, sub *subscription, typ, msgID string, body []byte, raw bool, ct string) error {
	ctx, cancel := context.WithTimeout(ctx, HTTPTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, sub.meta.Endpoint, bytes.NewReader(body))
	if err != nil {
		return &clientError{err}
	}
	h := req.Header
	h.Set("Content-Type", ct)
	h.Set("User-Agent", "Amazon Simple Notification Service Agent")
	h.Set("x-amz-sns-message-type", typ)
	h.Set("x-amz-sns-message-id", msgID)
	h.Set("x-amz-sns-topic-arn", s.TopicARN(sub.meta.TopicName))
	if typ != TypeSubscriptionConfirmation {
		h.Set("x-amz-sns-subscription-arn", sub.arn(s))
	}
	if raw {
		h.Set("x-amz-sns-rawdelivery", "true")
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode >= 500 || resp.StatusCode < 200 {
		return fmt.Errorf("%s answered HTTP %d", sub.meta.Endpoint, resp.StatusCode)
	}
	return nil
}

// sendConfirmation posts the SubscriptionConfirmation of a new http/https
// subscription, retrying as the subscription's delivery policy says, in
// the background.
func (s *Service) sendConfirmation(t topicMeta, sub *subscription) {
	topicArn := s.TopicARN(t.Name)
	e := &Envelope{Type: TypeSubscriptionConfirmation, MessageId: sub.meta.ID, Token: sub.meta.Token, TopicArn: topicArn,
		Message:      "You have chosen to subscribe to the topic " + topicArn + ".\nTo confirm the subscription, visit the SubscribeURL included in this message.",
		SubscribeURL: s.opts.BaseURL + "/?Action=ConfirmSubscription&TopicArn=" + url.QueryEscape(topicArn) + "&Token=" + sub.meta.Token,
		Timestamp:    s.eng.Clock.Now().UTC().Format("2006-01-02T15:04:05.000Z")}
	s.sign(e, t.Attributes[AttrSignatureVersion])
	body := marshalJSON(e)
	policy := httpPolicy(t.Attributes[AttrDeliveryPolicy], sub)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for retry := 0; ; retry++ {
			err := s.post(s.bg, sub, TypeSubscriptionConfirmation, e.MessageId, body, false, "text/plain; charset=UTF-8")
			if err == nil || isClientError(err) || errors.Is(err, context.Canceled) {
				return
			}
			d, ok := policy.delay(retry + 1)
			if !ok {
				s.log.Warn("sns: the subscription confirmation was not delivered; the subscription stays pending", "subscription", sub.meta.ID, "endpoint", sub.meta.Endpoint, "err", err)
				return
			}
			if engine.Sleep(s.bg, s.eng.Clock, d) != nil {
				return
			}
		}
	}()
}

// sendUnsubscribeConfirmation posts the UnsubscribeConfirmation of an
// http/https subscription just unsubscribed, shaped as AWS's
// (http-unsubscribe-confirmation-json.html: "After an HTTP/HTTPS
// endpoint is unsubscribed from a topic, Amazon SNS sends an unsubscribe
// confirmation message to the endpoint"): Type UnsubscribeConfirmation,
// a new MessageId, the subscription's Token, TopicArn, Message "You have
// chosen to deactivate subscription <arn>.\nTo cancel this operation
// ...", SubscribeURL, Timestamp and the signature fields (signed as a
// SubscriptionConfirmation is). Once, in the background, best effort: a
// failure is logged at WARN, not retried.
func (s *Service) sendUnsubscribeConfirmation(t topicMeta, sub *subscription) {
	topicArn, subArn := s.TopicARN(t.Name), sub.arn(s)
	e := &Envelope{Type: TypeUnsubscribeConfirmation, MessageId: uuid.NewString(), Token: sub.meta.Token, TopicArn: topicArn,
		Message:      "You have chosen to deactivate subscription " + subArn + ".\nTo cancel this operation and restore the subscription, visit the SubscribeURL included in this message.",
		SubscribeURL: s.opts.BaseURL + "/?Action=ConfirmSubscription&TopicArn=" + url.QueryEscape(topicArn) + "&Token=" + sub.meta.Token,
		Timestamp:    s.eng.Clock.Now().UTC().Format("2006-01-02T15:04:05.000Z")}
	s.sign(e, t.Attributes[AttrSignatureVersion])
	body := marshalJSON(e)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := s.post(s.bg, sub, TypeUnsubscribeConfirmation, e.MessageId, body, false, "text/plain; charset=UTF-8"); err != nil {
			s.log.Warn("sns: the unsubscribe confirmation was not delivered (not retried)", "subscription", subArn, "endpoint", sub.meta.Endpoint, "err", err)
		}
	}()
}
