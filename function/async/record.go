package async

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/queue"
	"github.com/runnel-dev/runnel/stream"
	"github.com/runnel-dev/runnel/wire"
)

// record builds the destination record of an event.
func (p *poller) record(m meta, condition string, o outcome, payload string) []byte {
	qualifier := m.qualifier
	if qualifier == "" {
		qualifier = wire.ExecutedVersion
	}
	r := wire.InvocationRecord{Version: wire.RecordVersion, Timestamp: wire.Timestamp(p.s.eng.Clock.Now()),
		RequestContext: wire.RequestContext{RequestID: m.requestID, FunctionArn: p.s.fns.QualifiedARN(p.name, qualifier),
			Condition: condition, ApproximateInvokeCount: m.invokeCount},
		RequestPayload:  json.RawMessage(payload),
		ResponseContext: wire.InvocationResponseContext{StatusCode: o.status, ExecutedVersion: cmp.Or(o.executed, wire.ExecutedVersion), FunctionError: o.funcError},
	}
	switch {
	case len(o.response) > 0 && json.Valid(o.response):
		r.ResponsePayload = o.response
	case len(o.response) > 0: // not JSON: keep it as a string
		r.ResponsePayload, _ = json.Marshal(string(o.response))
	case o.status == 200:
		r.ResponsePayload = json.RawMessage("null")
	}
	if !json.Valid(r.RequestPayload) {
		r.RequestPayload, _ = json.Marshal(payload)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // keep the payloads' bytes as they were
	if err := enc.Encode(r); err != nil {
		panic(fmt.Sprintf("async: record does not encode: %v", err))
	}
	return sanitizeJSON(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}

// fail sends a failed event's record to the OnFailure destination and its
// payload to the DeadLetterConfig queue (both when both are set; the
// built-in store when neither is, or when a delivery fails), then deletes
// the event.
func (p *poller) fail(ctx context.Context, msg *queue.Message, m meta, condition string, o outcome) bool {
	cfg := p.s.configRan(configKey(p.name, m.qualifier), o.executed) // the dead-letter queue of the version that ran
	rec := p.record(m, condition, o, msg.Body)
	ok := true
	if cfg.onFailure == "" && cfg.dlq == "" {
		ok = p.keep(ctx, rec, msg.Body, m, condition, "no OnFailure destination and no DeadLetterConfig (AWS would drop the event)")
	}
	if cfg.onFailure != "" {
		ok = p.deliver(ctx, cfg.onFailure, rec, msg.Body, m, condition) && ok
	}
	if cfg.dlq != "" {
		ok = p.deadLetter(ctx, cfg.dlq, rec, msg.Body, m, condition, o) && ok
	}
	if !ok {
		return false
	}
	p.log.Info("async: event failed", "requestId", m.requestID, "condition", condition, "attempts", m.invokeCount,
		"failedEventsGoTo", p.s.FailedEventsGoTo(p.name))
	return p.delete(ctx, msg)
}

// deliver sends a record to a destination; a record the destination does
// not take is kept in the built-in store. It reports false only when the
// record is stored nowhere.
func (p *poller) deliver(ctx context.Context, arn string, rec []byte, payload string, m meta, condition string) bool {
	err := p.s.sendRecord(ctx, arn, rec, m.requestID, condition == ConditionSuccess)
	if err == nil {
		p.c.deliveries.Add(1)
		return true
	}
	p.c.deliveryFailures.Add(1)
	p.log.Warn("async: destination delivery failed; the record goes to the built-in dead-letter store",
		"requestId", m.requestID, "destination", arn, "condition", condition, "err", err)
	return p.keep(ctx, rec, payload, m, condition, "delivery to "+arn+" failed: "+err.Error())
}

// sendRecord delivers a record to a queue, a stream, a function, a topic
// or an event bus.
func (s *Service) sendRecord(ctx context.Context, arn string, rec []byte, requestID string, success bool) error {
	switch {
	case strings.HasPrefix(arn, "arn:aws:sns:"), strings.HasPrefix(arn, "arn:aws:events:"):
		var r struct {
			RequestContext struct{ FunctionArn string } `json:"requestContext"`
		}
		json.Unmarshal(rec, &r)
		return s.sendFanout(ctx, arn, rec, r.RequestContext.FunctionArn, success)
	case strings.HasPrefix(arn, "arn:aws:sqs:"):
		_, err := s.queues.SendMessage(ctx, arn, queue.SendMessageInput{MessageBody: string(rec)})
		return err
	case strings.HasPrefix(arn, "arn:aws:kinesis:"):
		name, ok := stream.NameFromARN(arn)
		if !ok {
			return fmt.Errorf("%s is not a stream ARN", arn)
		}
		_, err := s.streams.PutRecord(ctx, name, stream.PutRecordsRequestEntry{Data: rec, PartitionKey: requestID})
		return err
	case strings.HasPrefix(arn, "arn:aws:lambda:"):
		name, q, err := function.ParseRef(arn)
		if err != nil {
			return fmt.Errorf("%s is not a function ARN", arn)
		}
		ref := name
		if q != "" && q != function.Latest {
			ref = name + ":" + q // the version or alias named
		}
		_, err = s.Invoke(ctx, ref, Event, rec)
		return err
	}
	return fmt.Errorf("%s: unsupported destination", arn)
}

// deadLetter sends the raw event to the DeadLetterConfig queue, with the
// attributes RequestID, ErrorCode and ErrorMessage.
func (p *poller) deadLetter(ctx context.Context, arn string, rec []byte, payload string, m meta, condition string, o outcome) bool {
	msg := o.errMsg
	if msg == "" {
		msg = condition
	}
	attrs := map[string]queue.MessageAttributeValue{
		wire.AttrRequestID:    {DataType: "String", StringValue: str(m.requestID)},
		wire.AttrErrorCode:    {DataType: "Number", StringValue: str(strconv.Itoa(o.status))},
		wire.AttrErrorMessage: {DataType: "String", StringValue: str(truncate(sanitizeText(msg), 1024))},
	}
	_, err := p.s.queues.SendMessage(ctx, arn, queue.SendMessageInput{MessageBody: payload, MessageAttributes: attrs})
	if err == nil {
		return true
	}
	p.c.deadLetterErrors.Add(1)
	p.log.Warn("async: dead-letter queue send failed; the record goes to the built-in dead-letter store",
		"requestId", m.requestID, "deadLetterQueue", arn, "err", err)
	return p.keep(ctx, rec, payload, m, condition, "dead-letter queue "+arn+" failed: "+err.Error())
}

// keep stores a record in the built-in dead-letter store, or, when it is
// too large for a message, the raw event with the record's main fields as
// attributes. It reports false when neither could be stored.
func (p *poller) keep(ctx context.Context, rec []byte, payload string, m meta, condition, reason string) bool {
	s := p.s
	s.queueMu.Lock()
	_, err := s.queues.EnsureQueue(ctx, DeadLetterStore, internalQueueAttrs)
	s.queueMu.Unlock()
	if err != nil {
		p.log.Error("async: cannot create the built-in dead-letter store; the event stays in its queue and will be processed again",
			"requestId", m.requestID, "err", err)
		return false
	}
	attrs := map[string]queue.MessageAttributeValue{
		"FunctionName": {DataType: "String", StringValue: str(p.name)},
		"Condition":    {DataType: "String", StringValue: str(condition)},
		"RequestId":    {DataType: "String", StringValue: str(m.requestID)},
		"Reason":       {DataType: "String", StringValue: str(truncate(sanitizeText(reason), 1024))},
	}
	_, err = s.queues.SendMessage(ctx, DeadLetterStore, queue.SendMessageInput{MessageBody: string(rec), MessageAttributes: attrs})
	if err != nil {
		attrs["Body"] = queue.MessageAttributeValue{DataType: "String", StringValue: str("requestPayload")}
		attrs["ApproximateInvokeCount"] = queue.MessageAttributeValue{DataType: "Number", StringValue: str(strconv.Itoa(m.invokeCount))}
		_, err = s.queues.SendMessage(ctx, DeadLetterStore, queue.SendMessageInput{MessageBody: payload, MessageAttributes: attrs})
	}
	if err != nil {
		p.log.Error("async: cannot store the event in the built-in dead-letter store; it stays in its queue and will be processed again",
			"requestId", m.requestID, "err", err)
		return false
	}
	p.c.kept.Add(1)
	p.log.Warn("async: event kept in the built-in dead-letter store", "requestId", m.requestID, "condition", condition,
		"queue", DeadLetterStore, "reason", reason)
	return true
}
