package mapping

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/runnel-dev/runnel/stream"
)

// OnFailureRecord is what a stream mapping sends to its on-failure
// destination when it discards records: pointers to the records, not the
// records (https://docs.aws.amazon.com/lambda/latest/dg/kinesis-on-failure-destination.html).
// Its JSON is exactly AWS's:
//
//	{"requestContext":{"requestId":"...","functionArn":"...","condition":"RetryAttemptsExhausted","approximateInvokeCount":1},
//	 "responseContext":{"statusCode":200,"executedVersion":"$LATEST","functionError":"Unhandled"},
//	 "version":"1.0","timestamp":"2019-11-14T00:38:06.021Z",
//	 "KinesisBatchInfo":{"shardId":"shardId-000000000001","startSequenceNumber":"...","endSequenceNumber":"...",
//	   "approximateArrivalOfFirstRecord":"...","approximateArrivalOfLastRecord":"...","batchSize":500,"streamArn":"..."}}
//
// With ParallelizationFactor > 1 a batch holds only some partition keys of
// its shard, so the sequence range may also cover records of other batch
// lanes that were processed; batchSize counts the discarded ones.
type OnFailureRecord struct {
	RequestContext   RequestContext    `json:"requestContext"`
	ResponseContext  ResponseContext   `json:"responseContext"`
	Version          string            `json:"version"`
	Timestamp        string            `json:"timestamp"`
	KinesisBatchInfo *KinesisBatchInfo `json:"KinesisBatchInfo,omitempty"`
	// DDBStreamBatchInfo replaces KinesisBatchInfo when the source is a
	// DynamoDB stream (same seven fields; arrival times without
	// milliseconds, as AWS writes them).
	DDBStreamBatchInfo *KinesisBatchInfo `json:"DDBStreamBatchInfo,omitempty"`
}

// RequestContext of an on-failure record.
type RequestContext struct {
	RequestID              string `json:"requestId"`
	FunctionArn            string `json:"functionArn"`
	Condition              string `json:"condition"`
	ApproximateInvokeCount int    `json:"approximateInvokeCount"`
}

// ResponseContext of an on-failure record: the last invocation's outcome.
// For records discarded by age before any invocation, StatusCode is 0 and
// FunctionError empty.
type ResponseContext struct {
	StatusCode      int    `json:"statusCode"`
	ExecutedVersion string `json:"executedVersion"`
	FunctionError   string `json:"functionError"`
}

// KinesisBatchInfo points at the discarded records of one shard.
type KinesisBatchInfo struct {
	ShardID                         string `json:"shardId"`
	StartSequenceNumber             string `json:"startSequenceNumber"`
	EndSequenceNumber               string `json:"endSequenceNumber"`
	ApproximateArrivalOfFirstRecord string `json:"approximateArrivalOfFirstRecord"`
	ApproximateArrivalOfLastRecord  string `json:"approximateArrivalOfLastRecord"`
	BatchSize                       int    `json:"batchSize"`
	StreamArn                       string `json:"streamArn"`
}

// awsTime formats a time as AWS does in these records:
// 2019-11-14T00:38:06.021Z.
func awsTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// Destination receives on-failure records. Send must return only once the
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

func (r *OnFailureRecord) marshal() []byte {
	b, err := json.Marshal(r)
	if err != nil {
		panic(fmt.Sprintf("mapping: on-failure record does not encode: %v", err))
	}
	return b
}
