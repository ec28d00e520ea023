package awsapi

// Kinesis: enhanced fan-out consumers and SubscribeToShard (JSON 1.1 and
// CBOR) over package stream (consumers.go, subscribe.go). A consumer's
// tags (RegisterStreamConsumer's Tags) are kept with it; TagResource,
// UntagResource and ListTagsForResource take its ARN
// (kinesis_settings.go).
//
// SubscribeToShard answers with an event stream
// (application/vnd.amazon.eventstream): the frames of
// github.com/aws/smithy-go/eventstream (prelude, headers, payload, CRC32),
// first the "initial-response" event aws-sdk-go-v2 waits for, then one
// SubscribeToShardEvent per stream.SubscribeToShardEvent, flushed at once;
// a subscription lost to another one or to DeregisterStreamConsumer ends
// with an exception message (ResourceInUseException,
// ResourceNotFoundException). Payloads are JSON, or CBOR for a CBOR
// request. AWS serves it over HTTP/2; runnel serves it on the endpoint's
// HTTP/1.1 (chunked) and h2c alike (Protocols), and aws-sdk-go-v2 reads
// it over either.

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/aws/smithy-go/eventstream"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/stream"
)

// consumerOut is API_Consumer, or with the StreamARN
// API_ConsumerDescription.
func consumerOut(c *stream.Consumer, withStream bool) map[string]any {
	out := map[string]any{"ConsumerName": c.ConsumerName, "ConsumerARN": c.ConsumerARN, "ConsumerStatus": c.ConsumerStatus,
		"ConsumerCreationTimestamp": epoch(c.ConsumerCreationTimestamp)}
	if withStream {
		out["StreamARN"] = c.StreamARN
	}
	return out
}

// streamOfARN returns the name of the stream a StreamARN names.
func streamOfARN(arn string) (string, error) {
	if n, ok := stream.NameFromARN(arn); ok {
		return n, nil
	}
	return "", awserr.New(awserr.ErrInvalidArgument, "StreamARN: %q is not a Kinesis stream ARN", arn)
}

type registerStreamConsumerInput struct {
	StreamARN    string
	ConsumerName string
	Tags         map[string]string
}

func kinesisRegisterStreamConsumer(rq *request, in *registerStreamConsumerInput) (any, error) {
	name, err := streamOfARN(in.StreamARN)
	if err != nil {
		return nil, err
	}
	c, err := rq.h.rn.Streams.RegisterStreamConsumer(rq.ctx, name, in.ConsumerName, in.Tags)
	if err != nil {
		return nil, err
	}
	return map[string]any{"Consumer": consumerOut(c, false)}, nil
}

// consumerRefInput names a consumer by ConsumerARN, or StreamARN and
// ConsumerName (DescribeStreamConsumer, DeregisterStreamConsumer).
type consumerRefInput struct {
	StreamARN, ConsumerName, ConsumerARN string
}

func (in *consumerRefInput) ref() (stream.ConsumerRef, error) {
	ref := stream.ConsumerRef{ConsumerARN: in.ConsumerARN, ConsumerName: in.ConsumerName}
	if in.ConsumerARN == "" && in.StreamARN != "" {
		var err error
		if ref.StreamName, err = streamOfARN(in.StreamARN); err != nil {
			return ref, err
		}
	}
	return ref, nil
}

func kinesisDescribeStreamConsumer(rq *request, in *consumerRefInput) (any, error) {
	ref, err := in.ref()
	if err != nil {
		return nil, err
	}
	c, err := rq.h.rn.Streams.DescribeStreamConsumer(rq.ctx, ref)
	if err != nil {
		return nil, err
	}
	return map[string]any{"ConsumerDescription": consumerOut(c, true)}, nil
}

func kinesisDeregisterStreamConsumer(rq *request, in *consumerRefInput) (any, error) {
	ref, err := in.ref()
	if err != nil {
		return nil, err
	}
	return nil, rq.h.rn.Streams.DeregisterStreamConsumer(rq.ctx, ref)
}

type listStreamConsumersInput struct {
	StreamARN               string
	NextToken               string
	MaxResults              *int
	StreamCreationTimestamp *epoch
}

func kinesisListStreamConsumers(rq *request, in *listStreamConsumersInput) (any, error) {
	name, err := streamOfARN(in.StreamARN)
	if err != nil {
		return nil, err
	}
	maxResults, err := limit("MaxResults", in.MaxResults, stream.DefaultListConsumersResults, stream.MaxListConsumersResults, awserr.ErrInvalidArgument)
	if err != nil {
		return nil, err
	}
	var created time.Time
	if in.StreamCreationTimestamp != nil {
		created = time.Time(*in.StreamCreationTimestamp)
	}
	o, err := rq.h.rn.Streams.ListStreamConsumers(rq.ctx, name, in.NextToken, maxResults, created)
	if err != nil {
		return nil, err
	}
	cs := make([]map[string]any, len(o.Consumers))
	for i := range o.Consumers {
		cs[i] = consumerOut(&o.Consumers[i], false)
	}
	out := map[string]any{"Consumers": cs}
	if o.NextToken != "" {
		out["NextToken"] = o.NextToken
	}
	return out, nil
}

type subscribeToShardInput struct {
	ConsumerARN      string
	ShardId          string
	StartingPosition struct {
		Type           string
		SequenceNumber string
		Timestamp      *epoch
	}
}

func kinesisSubscribeToShard(rq *request, in *subscribeToShardInput) (any, error) {
	pos := stream.StartingPosition{Type: in.StartingPosition.Type, SequenceNumber: in.StartingPosition.SequenceNumber}
	if in.StartingPosition.Timestamp != nil {
		pos.Timestamp = time.Time(*in.StartingPosition.Timestamp)
	}
	sub, err := rq.h.rn.Streams.SubscribeToShard(rq.ctx, in.ConsumerARN, in.ShardId, pos)
	if err != nil {
		return nil, err
	}
	return eventStream{sub}, nil
}

// eventStream writes a subscription as an event stream.
type eventStream struct{ sub *stream.Subscription }

func (es eventStream) writeReply(rq *request) {
	defer es.sub.Close()
	h := rq.w.Header()
	h.Set("Content-Type", "application/vnd.amazon.eventstream")
	h.Set("x-amzn-RequestId", rq.reqID)
	rq.w.WriteHeader(http.StatusOK)
	enc, rc := eventstream.NewEncoder(), http.NewResponseController(rq.w)
	write := func(headers eventstream.Headers, payload []byte) bool {
		if rq.proto == protoKinesisCBOR {
			var err error
			if payload, err = jsonToCBOR(payload); err != nil {
				return false
			}
			headers.Set(eventstream.ContentTypeHeader, eventstream.StringValue(cborContentType))
		} else {
			headers.Set(eventstream.ContentTypeHeader, eventstream.StringValue("application/json"))
		}
		if err := enc.Encode(rq.w, eventstream.Message{Headers: headers, Payload: payload}); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	event := func(eventType string) eventstream.Headers {
		var hs eventstream.Headers
		hs.Set(eventstream.EventTypeHeader, eventstream.StringValue(eventType))
		hs.Set(eventstream.MessageTypeHeader, eventstream.StringValue(eventstream.EventMessageType))
		return hs
	}
	if !write(event("initial-response"), []byte("{}")) {
		return
	}
	for ev := range es.sub.Events() {
		if !write(event("SubscribeToShardEvent"), appendSubscribeEvent(nil, &ev)) {
			return
		}
	}
	if err := es.sub.Err(); err != nil {
		we := rq.toWire(err)
		var hs eventstream.Headers
		hs.Set(eventstream.ExceptionTypeHeader, eventstream.StringValue(we.shape))
		hs.Set(eventstream.MessageTypeHeader, eventstream.StringValue(eventstream.ExceptionMessageType))
		body, _ := json.Marshal(map[string]string{"message": we.e.Message})
		write(hs, body)
	}
}

// appendSubscribeEvent appends a SubscribeToShardEvent's JSON payload.
func appendSubscribeEvent(b []byte, ev *stream.SubscribeToShardEvent) []byte {
	b = append(b, `{"Records":`...)
	b = appendRecords(b, ev.Records)
	if ev.ContinuationSequenceNumber != "" {
		b = append(b, `,"ContinuationSequenceNumber":`...)
		b = appendJSONString(b, ev.ContinuationSequenceNumber)
	}
	b = append(b, `,"MillisBehindLatest":`...)
	b = strconv.AppendInt(b, ev.MillisBehindLatest, 10)
	if len(ev.ChildShards) > 0 {
		c, _ := json.Marshal(ev.ChildShards)
		b = append(b, `,"ChildShards":`...)
		b = append(b, c...)
	}
	return append(b, '}')
}
