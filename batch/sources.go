package batch

import (
	"context"
	"strings"

	"github.com/aws/aws-lambda-go/events"
)

// ProcessKinesis runs fn over the records of a Kinesis event and returns
// the response naming the failed ones by kinesis.sequenceNumber. See the
// package doc for the rules and the error.
func ProcessKinesis(ctx context.Context, ev events.KinesisEvent, fn func(context.Context, events.KinesisEventRecord) error, opts ...Option) (events.KinesisEventResponse, error) {
	recs := records(ev.Records, func(r events.KinesisEventRecord) string { return r.Kinesis.SequenceNumber })
	failed, err := process(ctx, recs, fn, newOptions(opts), false)
	return events.KinesisEventResponse{BatchItemFailures: itemFailures(failed, kinesisFailure)}, err
}

// ProcessSQS runs fn over the messages of an SQS event and returns the
// response naming the failed ones by messageId. A batch from a FIFO queue
// (event source ARN ending in ".fifo") stops at the first failure, or
// with SkipGroupOnError skips the failed message's group.
func ProcessSQS(ctx context.Context, ev events.SQSEvent, fn func(context.Context, events.SQSMessage) error, opts ...Option) (events.SQSEventResponse, error) {
	recs := make([]record[events.SQSMessage], len(ev.Records))
	fifo := false
	for i, m := range ev.Records {
		recs[i] = record[events.SQSMessage]{rec: m, id: m.MessageId, group: m.Attributes["MessageGroupId"]}
		if strings.HasSuffix(m.EventSourceARN, ".fifo") {
			fifo = true
		}
	}
	o := newOptions(opts)
	o.stopOnFirstFailure = false // a standard queue has no order to keep
	failed, err := process(ctx, recs, fn, o, fifo)
	return events.SQSEventResponse{BatchItemFailures: itemFailures(failed, sqsFailure)}, err
}

// ProcessDynamoDB runs fn over the records of a DynamoDB Streams event and
// returns the response naming the failed ones by dynamodb.SequenceNumber.
func ProcessDynamoDB(ctx context.Context, ev events.DynamoDBEvent, fn func(context.Context, events.DynamoDBEventRecord) error, opts ...Option) (events.DynamoDBEventResponse, error) {
	recs := records(ev.Records, func(r events.DynamoDBEventRecord) string { return r.Change.SequenceNumber })
	failed, err := process(ctx, recs, fn, newOptions(opts), false)
	return events.DynamoDBEventResponse{BatchItemFailures: itemFailures(failed, dynamoDBFailure)}, err
}

// KinesisHandler returns a Lambda handler that runs ProcessKinesis with
// fn: for lambda.Start or function.Register.
func KinesisHandler(fn func(context.Context, events.KinesisEventRecord) error, opts ...Option) func(context.Context, events.KinesisEvent) (events.KinesisEventResponse, error) {
	return func(ctx context.Context, ev events.KinesisEvent) (events.KinesisEventResponse, error) {
		return ProcessKinesis(ctx, ev, fn, opts...)
	}
}

// SQSHandler returns a Lambda handler that runs ProcessSQS with fn.
func SQSHandler(fn func(context.Context, events.SQSMessage) error, opts ...Option) func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
	return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		return ProcessSQS(ctx, ev, fn, opts...)
	}
}

// DynamoDBHandler returns a Lambda handler that runs ProcessDynamoDB with
// fn.
func DynamoDBHandler(fn func(context.Context, events.DynamoDBEventRecord) error, opts ...Option) func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	return func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		return ProcessDynamoDB(ctx, ev, fn, opts...)
	}
}

// records are an event's records with their identifiers, in order.
func records[T any](in []T, id func(T) string) []record[T] {
	out := make([]record[T], len(in))
	for i, r := range in {
		out[i] = record[T]{rec: r, id: id(r)}
	}
	return out
}

// itemFailures is the response's list of failed records, one per id.
func itemFailures[F any](ids []string, failure func(id string) F) []F {
	out := make([]F, len(ids))
	for i, id := range ids {
		out[i] = failure(id)
	}
	return out
}

// The batch item failures of each event source, naming one record.

func kinesisFailure(id string) events.KinesisBatchItemFailure {
	return events.KinesisBatchItemFailure{ItemIdentifier: id}
}

func sqsFailure(id string) events.SQSBatchItemFailure {
	return events.SQSBatchItemFailure{ItemIdentifier: id}
}

func dynamoDBFailure(id string) events.DynamoDBBatchItemFailure {
	return events.DynamoDBBatchItemFailure{ItemIdentifier: id}
}
