package awsapi

// Kinesis: the data plane (JSON 1.1) over package stream. PutRecords and
// GetRecords write their responses by hand (kinesis_wire.go), byte for
// byte as encoding/json would. Records are never encrypted
// (EncryptionType NONE). Enhanced fan-out (SubscribeToShard) is
// kinesis_consumers.go.

import (
	"errors"
	"time"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/stream"
)

// putRecordInput is PutRecord's request.
//
// SequenceNumberForOrdering (pattern 0|([1-9]\d{0,128}), checked by the
// model) asks that the record's sequence number be greater than the given
// one, the number of the same client's previous record of the same
// partition key (API_PutRecord). runnel holds that without reading it:
// a stream's sequence numbers (stream.Numbering: 56 digits, "49", the
// stream's epoch, the shard index, the log position) are all of one
// length, so a later record
// of a key is greater than an earlier one in the same shard (JetStream's
// log position grows) and in a child shard after a split or merge (a
// child's index is greater than its parents'). A number this stream did
// not issue (another stream's, a made-up one) is accepted and not
// compared: it says nothing of this stream's order (docs/semantics.md).
type putRecordInput struct {
	streamRef
	Data                      []byte
	PartitionKey              string
	ExplicitHashKey           string
	SequenceNumberForOrdering string
}

func kinesisPutRecord(rq *request, in *putRecordInput) (any, error) {
	name, err := in.name()
	var r stream.PutRecordsResultEntry
	if err == nil {
		r, err = rq.h.rn.Streams.PutRecord(rq.ctx, name, stream.PutRecordsRequestEntry{Data: in.Data, PartitionKey: in.PartitionKey, ExplicitHashKey: in.ExplicitHashKey})
	}
	switch {
	case err != nil:
		return nil, err
	case r.ErrorCode != "":
		return nil, &awserr.Error{Code: r.ErrorCode, Message: r.ErrorMessage}
	}
	return map[string]any{"ShardId": r.ShardId, "SequenceNumber": r.SequenceNumber, "EncryptionType": "NONE"}, nil
}

// putRecordsInput is PutRecords' request in its own shape, not
// stream.PutRecordsRequestEntry: that has fields (HashKey) a client must
// not set.
type putRecordsInput struct {
	streamRef
	Records []struct {
		Data            []byte
		PartitionKey    string
		ExplicitHashKey string
	}
}

func kinesisPutRecords(rq *request, in *putRecordsInput) (any, error) {
	name, err := in.name()
	if err != nil {
		return nil, err
	}
	entries := make([]stream.PutRecordsRequestEntry, len(in.Records))
	for i, r := range in.Records {
		entries[i] = stream.PutRecordsRequestEntry{Data: r.Data, PartitionKey: r.PartitionKey, ExplicitHashKey: r.ExplicitHashKey}
	}
	o, err := rq.h.rn.Streams.PutRecords(rq.ctx, name, entries)
	if err != nil {
		return nil, err
	}
	buf := newJSONBuf(64 + len(o.Records)*96)
	buf.b = appendPutRecords(buf.b, o)
	return buf, nil
}

type getShardIteratorInput struct {
	streamRef
	ShardId                string
	ShardIteratorType      string
	StartingSequenceNumber string
	Timestamp              *epoch
}

// check refuses a StartingSequenceNumber with TRIM_HORIZON or LATEST,
// and none with AT_ or AFTER_SEQUENCE_NUMBER, in AWS's words (as
// kinesalite, written against AWS, quotes them).
func (in *getShardIteratorInput) check() error {
	const both = "Must either specify (1) AT_SEQUENCE_NUMBER or AFTER_SEQUENCE_NUMBER and StartingSequenceNumber or " +
		"(2) TRIM_HORIZON or LATEST and no StartingSequenceNumber. Request specified %s "
	switch {
	case in.StartingSequenceNumber != "" && (in.ShardIteratorType == stream.TrimHorizon || in.ShardIteratorType == stream.Latest):
		return awserr.New(awserr.ErrInvalidArgument, both+"and also a StartingSequenceNumber.", in.ShardIteratorType)
	case in.StartingSequenceNumber == "" && (in.ShardIteratorType == stream.AtSequenceNumber || in.ShardIteratorType == stream.AfterSequenceNumber):
		return awserr.New(awserr.ErrInvalidArgument, both+"and no StartingSequenceNumber.", in.ShardIteratorType)
	}
	return nil
}

func kinesisGetShardIterator(rq *request, in *getShardIteratorInput) (any, error) {
	name, err := in.name()
	if err != nil {
		return nil, err
	}
	shard, err := kinesisShardID(rq, in.ShardId, name)
	if err != nil {
		return nil, err
	}
	gi := stream.GetShardIteratorInput{StreamName: name, ShardID: shard, ShardIteratorType: in.ShardIteratorType, StartingSequenceNumber: in.StartingSequenceNumber}
	if in.Timestamp != nil {
		gi.Timestamp = time.Time(*in.Timestamp)
		// A timestamp after now (the engine's clock) is refused, as AWS does.
		if now := rq.h.rn.Engine.Clock.Now(); in.ShardIteratorType == stream.AtTimestamp && gi.Timestamp.After(now) {
			return nil, awserr.New(awserr.ErrInvalidArgument, "The timestampInMillis parameter cannot be greater than the currentTimestampInMillis. timestampInMillis: %d, currentTimestampInMillis: %d",
				gi.Timestamp.UnixMilli(), now.UnixMilli())
		}
	}
	it, err := rq.h.rn.Streams.GetShardIterator(rq.ctx, gi)
	if errors.Is(err, awserr.ErrResourceNotFound) {
		// A missing stream too: Kinesis names the shard.
		return nil, awserr.New(awserr.ErrResourceNotFound, "Shard %s in stream %s under account %s does not exist", shard, name, rq.h.rn.Engine.AccountID())
	}
	if err != nil {
		return nil, err
	}
	return map[string]string{"ShardIterator": it}, nil
}

type getRecordsInput struct {
	ShardIterator string
	Limit         int
}

func kinesisGetRecords(rq *request, in *getRecordsInput) (any, error) {
	// The records are written as they are read, after room for the head
	// of the body (MillisBehindLatest and NextShardIterator, known only
	// once the page is read), which then goes just before them.
	buf := newJSONBuf(getRecordsHeadRoom + 64<<10)
	buf.b = append(buf.b[:getRecordsHeadRoom], `,"Records":[`...)
	var enc recordEncoder
	o, err := rq.h.rn.Streams.GetRecordsFunc(rq.ctx, in.ShardIterator, in.Limit, func(r *stream.PageRecord) {
		buf.b = enc.append(buf.b, r)
	})
	if err != nil {
		buf.free()
		return nil, err
	}
	buf.b = append(buf.b, "]}"...)
	buf.prepend(getRecordsHeadRoom, appendGetRecordsHead(make([]byte, 0, 256), o))
	return buf, nil
}
