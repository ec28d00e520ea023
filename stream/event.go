package stream

import "github.com/aws/aws-lambda-go/events"

// KinesisEventRecord is r in the shape a Lambda Kinesis event carries it
// (aws-lambda-go's events.KinesisEventRecord; eventID "<shardId>:<sequence
// number>", eventName "aws:kinesis:record", versions "1.0"), from the
// stream streamARN. AwsRegion and InvokeIdentityArn are left empty: an
// event source mapping fills them.
func (r *Record) KinesisEventRecord(streamARN string) events.KinesisEventRecord {
	return events.KinesisEventRecord{
		EventID:        r.ShardID + ":" + r.SequenceNumber,
		EventName:      "aws:kinesis:record",
		EventSource:    "aws:kinesis",
		EventSourceArn: streamARN,
		EventVersion:   "1.0",
		Kinesis: events.KinesisRecord{
			ApproximateArrivalTimestamp: events.SecondsEpochTime{Time: r.ApproximateArrivalTimestamp},
			Data:                        r.Data,
			PartitionKey:                r.PartitionKey,
			SequenceNumber:              r.SequenceNumber,
			KinesisSchemaVersion:        "1.0",
		},
	}
}
