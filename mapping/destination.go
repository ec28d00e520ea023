package mapping

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/runnel-dev/runnel/queue"
	"github.com/runnel-dev/runnel/stream"
	"github.com/runnel-dev/runnel/wire"
)

// Destination receives on-failure records (wire.OnFailureRecord, as JSON). Send must return only once the
// record is durably stored: the mapping advances its checkpoint past the
// discarded records after Send returns nil, and retries Send until it does.
type Destination interface {
	Send(ctx context.Context, record []byte) error
}

// DestinationResolver turns an ARN into a Destination. It returns (nil,
// nil) for an ARN of a kind it does not handle, and an error naming the
// ARN when the ARN is of its kind but the target does not exist.
type DestinationResolver func(ctx context.Context, arn string) (Destination, error)

// DestinationFunc is a Destination that sends with a function.
type DestinationFunc func(ctx context.Context, record []byte) error

// Send calls f.
func (f DestinationFunc) Send(ctx context.Context, record []byte) error { return f(ctx, record) }

// StreamDestinations resolves Kinesis stream ARNs to runnel streams.
func StreamDestinations(streams *stream.Service) DestinationResolver {
	return func(ctx context.Context, arn string) (Destination, error) {
		name, ok := stream.NameFromARN(arn)
		if !ok {
			return nil, nil
		}
		if _, err := streams.DescribeStream(ctx, name); err != nil {
			return nil, invalid("DestinationConfig.OnFailure.Destination: %s: %v", arn, err)
		}
		// The partition key is fixed, so that one mapping's failure records
		// stay in order in one shard.
		return DestinationFunc(func(ctx context.Context, record []byte) error {
			_, err := streams.PutRecord(ctx, name, stream.PutRecordsRequestEntry{Data: record, PartitionKey: "on-failure"})
			return err
		}), nil
	}
}

// QueueDestinations resolves SQS queue ARNs to runnel queues, for
// DestinationConfig.OnFailure.
func QueueDestinations(queues *queue.Service) DestinationResolver {
	return func(ctx context.Context, arn string) (Destination, error) {
		name, ok := queue.NameFromARN(arn)
		if !ok {
			return nil, nil
		}
		attrs, err := queues.GetQueueAttributes(ctx, name, []string{"FifoQueue", "ContentBasedDeduplication"})
		if err != nil {
			return nil, invalid("DestinationConfig.OnFailure.Destination: %s: %v", arn, err)
		}
		if attrs["FifoQueue"] == "true" {
			// AWS does not take FIFO queues as destinations either.
			return nil, invalid("DestinationConfig.OnFailure.Destination: %s is a FIFO queue; on-failure destinations must be standard queues", arn)
		}
		url := queues.QueueURL(name)
		return DestinationFunc(func(ctx context.Context, record []byte) error {
			_, err := queues.SendMessage(ctx, url, queue.SendMessageInput{MessageBody: string(record)})
			return err
		}), nil
	}
}

// marshal encodes an on-failure record (it always encodes: strings and
// ints only).
func marshal(r *wire.OnFailureRecord) []byte {
	b, err := json.Marshal(r)
	if err != nil {
		panic(fmt.Sprintf("mapping: on-failure record does not encode: %v", err))
	}
	return b
}
