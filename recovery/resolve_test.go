package recovery_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/runnel-dev/runnel/recovery"
	"github.com/runnel-dev/runnel/stream"
	"github.com/runnel-dev/runnel/wire"
)

func TestResolveHandlesBothFailureFormats(t *testing.T) {
	rn, clock, d := startWithStream(t)
	ctx := context.Background()
	out, err := rn.Streams.PutRecords(ctx, "s", []stream.PutRecordsRequestEntry{{PartitionKey: "k", Data: []byte("x")}, {PartitionKey: "k", Data: []byte("y")}})
	if err != nil {
		t.Fatal(err)
	}
	pointer, _ := json.Marshal(wire.OnFailureRecord{
		RequestContext: wire.RequestContext{Condition: "RetryAttemptsExhausted"}, Version: "1.0",
		KinesisBatchInfo: &wire.KinesisBatchInfo{ShardID: "shardId-000000000000", StartSequenceNumber: out.Records[0].SequenceNumber,
			EndSequenceNumber: out.Records[1].SequenceNumber, BatchSize: 2, StreamArn: d.StreamARN},
	})

	t.Run("a stream on-failure record resolves to the records of its range", func(t *testing.T) {
		res, err := recovery.Resolve(ctx, rn.Streams, pointer)
		if err != nil || res.Kind != recovery.KindStreamBatch || len(res.Records) != 2 ||
			string(res.Records[0].Kinesis.Data) != "x" || res.Records[1].Kinesis.SequenceNumber != out.Records[1].SequenceNumber || res.Condition != "RetryAttemptsExhausted" {
			t.Fatalf("Resolve = %+v, %v", res, err)
		}
	})
	t.Run("an async failure record resolves to its requestPayload", func(t *testing.T) {
		body := []byte(`{"version":"1.0","timestamp":"2019-11-14T18:16:05.568Z","requestContext":{"requestId":"e4b46cbf","functionArn":"arn:aws:lambda:us-east-2:123456789012:function:my-function:$LATEST","condition":"RetriesExhausted","approximateInvokeCount":3},"requestPayload":{"order":42},"responseContext":{"statusCode":200,"executedVersion":"$LATEST","functionError":"Unhandled"},"responsePayload":{"errorMessage":"boom"}}`)
		res, err := recovery.Resolve(ctx, rn.Streams, body)
		if err != nil || res.Kind != recovery.KindAsync || string(res.Payload) != `{"order":42}` || res.Condition != "RetriesExhausted" {
			t.Fatalf("Resolve = %+v, %v", res, err)
		}
	})
	t.Run("an inserted record resolves from its retry envelope", func(t *testing.T) {
		rec, _ := json.Marshal(events.KinesisEventRecord{EventSource: "aws:kinesis", EventID: "shardId-000000000000:1", Kinesis: events.KinesisRecord{Data: []byte("z")}})
		body, _ := wire.WrapRetry(rec, clock.Now())
		res, err := recovery.Resolve(ctx, rn.Streams, body)
		if err != nil || res.Kind != recovery.KindInserted || string(res.Records[0].Kinesis.Data) != "z" || res.Attempt != 2 {
			t.Fatalf("Resolve = %+v, %v", res, err)
		}
	})
	t.Run("something else is an unknown format", func(t *testing.T) {
		if _, err := recovery.Resolve(ctx, rn.Streams, []byte(`{"hello":1}`)); !errors.Is(err, recovery.ErrUnknownFormat) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("a range past retention is reported, and the Retry-DLQ consumer keeps the message", func(t *testing.T) {
		clock.Advance(25 * time.Hour)
		if _, err := rn.Streams.TrimExpired(ctx); err != nil {
			t.Fatal(err)
		}
		res, err := recovery.Resolve(ctx, rn.Streams, pointer)
		if !errors.Is(err, recovery.ErrPastRetention) || res.Missing != 2 {
			t.Fatalf("Resolve after retention = %+v, %v", res, err)
		}
		f := &recovery.IdempotentSupported{Streams: rn.Streams, Handle: func(context.Context, events.KinesisEventRecord, int) error { return nil }}
		resp, err := f.HandleSQS(ctx, events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m1", Body: string(pointer), Attributes: map[string]string{"ApproximateReceiveCount": "1"}}}})
		if err != nil || len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "m1" {
			t.Fatalf("HandleSQS = %+v, %v: the pointer message must stay in the DLQ", resp, err)
		}
	})
}
