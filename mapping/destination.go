package mapping

import (
	"context"
	"encoding/json"
	"fmt"

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

// streamDestination writes on-failure records to a runnel stream, with the
// source shard id as partition key so one shard's failures stay in order.
type streamDestination struct {
	streams *stream.Service
	name    string
	key     string
}

func (d *streamDestination) Send(ctx context.Context, record []byte) error {
	_, err := d.streams.PutRecord(ctx, d.name, stream.PutRecordsRequestEntry{Data: record, PartitionKey: d.key})
	return err
}

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
		return &streamDestination{streams: streams, name: name, key: "on-failure"}, nil
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
