package awsapi

// Kinesis: the stream control plane (JSON 1.1, X-Amz-Target
// "Kinesis_20131202.<Op>") over package stream. Every stream is
// PROVISIONED with a fixed shard count (no resharding), no enhanced
// monitoring, no encryption.

import (
	"encoding/base64"
	"sort"
	"strings"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/stream"
)

type streamModeDetails struct {
	StreamMode string
}

var provisioned = &streamModeDetails{StreamMode: "PROVISIONED"}

type enhancedMetrics struct {
	ShardLevelMetrics []string
}

var noEnhancedMetrics = []enhancedMetrics{{ShardLevelMetrics: []string{}}}

// streamRef is the StreamName / StreamARN pair most Kinesis calls take.
type streamRef struct {
	StreamName string
	StreamARN  string
}

func (s streamRef) name() (string, error) {
	if s.StreamName != "" {
		return s.StreamName, nil
	}
	if s.StreamARN != "" {
		if n, ok := stream.NameFromARN(s.StreamARN); ok {
			return n, nil
		}
		return "", awserr.New(awserr.ErrInvalidArgument, "StreamARN %q is not a Kinesis stream ARN", s.StreamARN)
	}
	return "", awserr.New(awserr.ErrInvalidArgument, "Either StreamName or StreamARN should be provided.")
}

type shardOut struct {
	ShardId             string
	HashKeyRange        any
	SequenceNumberRange any
}

func shardsOut(in []stream.Shard) []shardOut {
	out := make([]shardOut, 0, len(in))
	for _, s := range in {
		out = append(out, shardOut{ShardId: s.ShardID, HashKeyRange: s.HashKeyRange, SequenceNumberRange: s.SequenceNumberRange})
	}
	return out
}

// page cuts shards after exclusiveStart to at most limit.
func page(shards []stream.Shard, exclusiveStart string, limit int) ([]stream.Shard, bool) {
	if exclusiveStart != "" {
		i := sort.Search(len(shards), func(i int) bool { return shards[i].ShardID > exclusiveStart })
		shards = shards[i:]
	}
	if len(shards) > limit {
		return shards[:limit], true
	}
	return shards, false
}

// describe describes the stream ref names.
func (rq *request) describe(ref streamRef) (*stream.StreamDescription, error) {
	name, err := ref.name()
	if err != nil {
		return nil, err
	}
	return rq.h.rn.Streams.DescribeStream(rq.ctx, name)
}

// limit checks an optional page size against 1..max; def when absent.
func limit(field string, p *int, def, max int, sentinel *awserr.Error) (int, error) {
	if p == nil {
		return def, nil
	}
	if *p < 1 || *p > max {
		return 0, awserr.OutOfRange(sentinel, field, *p, 1, max)
	}
	return *p, nil
}

type createStreamInput struct {
	StreamName        string
	ShardCount        *int
	StreamModeDetails *streamModeDetails
}

func kinesisCreateStream(rq *request, in *createStreamInput) (any, error) {
	ci := stream.CreateStreamInput{StreamName: in.StreamName}
	if in.ShardCount != nil {
		ci.ShardCount = *in.ShardCount
		if ci.ShardCount == 0 {
			return nil, awserr.OutOfRange(awserr.ErrInvalidArgument, "ShardCount", 0, 1, stream.MaxShardCount)
		}
	} else if in.StreamModeDetails != nil && in.StreamModeDetails.StreamMode == "ON_DEMAND" {
		ci.ShardCount = 4 // what an on-demand stream starts with
	}
	_, err := rq.h.rn.Streams.CreateStream(rq.ctx, ci)
	return nil, err
}

func kinesisDeleteStream(rq *request, in *streamRef) (any, error) {
	name, err := in.name()
	if err != nil {
		return nil, err
	}
	return nil, rq.h.rn.Streams.DeleteStream(rq.ctx, name)
}

type describeStreamInput struct {
	streamRef
	Limit                 *int
	ExclusiveStartShardId string
}

func kinesisDescribeStream(rq *request, in *describeStreamInput) (any, error) {
	limit, err := limit("limit", in.Limit, 100, 10000, awserr.ErrInvalidArgument)
	if err != nil {
		return nil, err
	}
	d, err := rq.describe(in.streamRef)
	if err != nil {
		return nil, err
	}
	shards, more := page(d.Shards, in.ExclusiveStartShardId, limit)
	return map[string]any{"StreamDescription": map[string]any{
		"StreamName": d.StreamName, "StreamARN": d.StreamARN, "StreamStatus": d.StreamStatus,
		"StreamModeDetails": provisioned, "Shards": shardsOut(shards), "HasMoreShards": more,
		"RetentionPeriodHours": d.RetentionPeriodHours, "StreamCreationTimestamp": epoch(d.StreamCreationTimestamp),
		"EnhancedMonitoring": noEnhancedMetrics, "EncryptionType": "NONE",
	}}, nil
}

func kinesisDescribeStreamSummary(rq *request, in *streamRef) (any, error) {
	d, err := rq.describe(*in)
	if err != nil {
		return nil, err
	}
	return map[string]any{"StreamDescriptionSummary": map[string]any{
		"StreamName": d.StreamName, "StreamARN": d.StreamARN, "StreamStatus": d.StreamStatus,
		"StreamModeDetails": provisioned, "RetentionPeriodHours": d.RetentionPeriodHours,
		"StreamCreationTimestamp": epoch(d.StreamCreationTimestamp), "EnhancedMonitoring": noEnhancedMetrics,
		"EncryptionType": "NONE", "OpenShardCount": len(d.Shards), "ConsumerCount": 0,
	}}, nil
}

type listStreamsInput struct {
	Limit                               *int
	ExclusiveStartStreamName, NextToken string
}

func kinesisListStreams(rq *request, in *listStreamsInput) (any, error) {
	limit, err := limit("limit", in.Limit, 100, 10000, awserr.ErrInvalidArgument)
	if err != nil {
		return nil, err
	}
	start := in.ExclusiveStartStreamName
	if in.NextToken != "" {
		b, err := base64.RawURLEncoding.DecodeString(in.NextToken)
		if err != nil {
			return nil, awserr.New(awserr.ErrInvalidArgument, "NextToken is not valid")
		}
		start = string(b)
	}
	names, err := rq.h.rn.Streams.ListStreams(rq.ctx)
	if err != nil {
		return nil, err
	}
	if start != "" {
		names = names[sort.SearchStrings(names, start+"\x00"):]
	}
	more := len(names) > limit
	if more {
		names = names[:limit]
	}
	summaries := []map[string]any{}
	for _, n := range names {
		d, err := rq.h.rn.Streams.DescribeStream(rq.ctx, n)
		if err != nil {
			continue // deleted meanwhile
		}
		summaries = append(summaries, map[string]any{
			"StreamName": d.StreamName, "StreamARN": d.StreamARN, "StreamStatus": d.StreamStatus,
			"StreamModeDetails": provisioned, "StreamCreationTimestamp": epoch(d.StreamCreationTimestamp),
		})
	}
	if names == nil {
		names = []string{}
	}
	out := map[string]any{"StreamNames": names, "HasMoreStreams": more, "StreamSummaries": summaries}
	if more {
		out["NextToken"] = base64.RawURLEncoding.EncodeToString([]byte(names[len(names)-1]))
	}
	return out, nil
}

type listShardsInput struct {
	streamRef
	NextToken, ExclusiveStartShardId string
	MaxResults                       *int
}

func kinesisListShards(rq *request, in *listShardsInput) (any, error) {
	limit, err := limit("maxResults", in.MaxResults, 1000, 10000, awserr.ErrInvalidArgument)
	if err != nil {
		return nil, err
	}
	start := in.ExclusiveStartShardId
	if in.NextToken != "" {
		if in.StreamName != "" || in.StreamARN != "" {
			return nil, awserr.New(awserr.ErrInvalidArgument, "NextToken and StreamName cannot be provided together.")
		}
		b, err := base64.RawURLEncoding.DecodeString(in.NextToken)
		name, shard, ok := strings.Cut(string(b), "\x00")
		if err != nil || !ok {
			return nil, awserr.New(awserr.ErrInvalidArgument, "NextToken is not valid")
		}
		in.StreamName, start = name, shard
	}
	d, err := rq.describe(in.streamRef)
	if err != nil {
		return nil, err
	}
	shards, more := page(d.Shards, start, limit)
	out := map[string]any{"Shards": shardsOut(shards)}
	if more {
		out["NextToken"] = base64.RawURLEncoding.EncodeToString([]byte(d.StreamName + "\x00" + shards[len(shards)-1].ShardID))
	}
	return out, nil
}

type retentionInput struct {
	streamRef
	RetentionPeriodHours int
}

func kinesisIncreaseStreamRetentionPeriod(rq *request, in *retentionInput) (any, error) {
	return rq.setRetention(in, +1)
}

func kinesisDecreaseStreamRetentionPeriod(rq *request, in *retentionInput) (any, error) {
	return rq.setRetention(in, -1)
}

// setRetention changes the stream's retention in direction dir (+1 up,
// -1 down), refusing a change the other way as Kinesis does.
func (rq *request) setRetention(in *retentionInput, dir int) (any, error) {
	d, err := rq.describe(in.streamRef)
	if err != nil {
		return nil, err
	}
	h := in.RetentionPeriodHours
	if dir > 0 && h < d.RetentionPeriodHours {
		return nil, awserr.New(awserr.ErrInvalidArgument, "Requested retention period (%d hours) for stream %s can not be shorter than existing retention period (%d hours). Use DecreaseRetentionPeriod API.", h, d.StreamName, d.RetentionPeriodHours)
	}
	if dir < 0 && h > d.RetentionPeriodHours {
		return nil, awserr.New(awserr.ErrInvalidArgument, "Requested retention period (%d hours) for stream %s can not be longer than existing retention period (%d hours). Use IncreaseRetentionPeriod API.", h, d.StreamName, d.RetentionPeriodHours)
	}
	if h != d.RetentionPeriodHours {
		return nil, rq.h.rn.Streams.UpdateRetentionPeriod(rq.ctx, d.StreamName, h)
	}
	return nil, nil
}
