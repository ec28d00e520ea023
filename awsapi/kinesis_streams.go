package awsapi

// Kinesis: the stream control plane (JSON 1.1, X-Amz-Target
// "Kinesis_20131202.<Op>") over package stream. A PROVISIONED stream's
// shard count changes by resharding (kinesis_reshard.go), an ON_DEMAND
// stream's by runnel's scaling (stream/ondemand.go); enhanced monitoring
// and encryption are stored and reported, not acted on
// (kinesis_settings.go).

import (
	"encoding/base64"
	"sort"
	"time"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/stream"
)

// modeOut is a stream's StreamModeDetails.
func modeOut(d *stream.StreamDescription) stream.StreamModeDetails {
	return stream.StreamModeDetails{StreamMode: d.Mode()}
}

type enhancedMetrics struct {
	ShardLevelMetrics []string
}

// streamRef is the StreamName / StreamARN pair most Kinesis calls take.
type streamRef struct {
	StreamName string
	StreamARN  string
}

// with calls fn with the stream's name, or fails as name does.
func (s streamRef) with(fn func(name string) (any, error)) (any, error) {
	name, err := s.name()
	if err != nil {
		return nil, err
	}
	return fn(name)
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

// shardOut is API_Shard: a child of a reshard names its parents, a
// closed shard has an EndingSequenceNumber.
type shardOut struct {
	ShardId               string
	ParentShardId         string `json:",omitempty"`
	AdjacentParentShardId string `json:",omitempty"`
	HashKeyRange          any
	SequenceNumberRange   any
}

func shardsOut(in []stream.Shard) []shardOut {
	out := make([]shardOut, 0, len(in))
	for _, s := range in {
		out = append(out, shardOut{ShardId: s.ShardID, ParentShardId: s.ParentShardID, AdjacentParentShardId: s.AdjacentParentShardID,
			HashKeyRange: s.HashKeyRange, SequenceNumberRange: s.SequenceNumberRange})
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
	StreamModeDetails *stream.StreamModeDetails
	Tags              map[string]string
}

func kinesisCreateStream(rq *request, in *createStreamInput) (any, error) {
	ci := stream.CreateStreamInput{StreamName: in.StreamName, Tags: in.Tags, StreamModeDetails: in.StreamModeDetails}
	if in.ShardCount != nil {
		ci.ShardCount = *in.ShardCount
		if ci.ShardCount == 0 {
			return nil, awserr.OutOfRange(awserr.ErrInvalidArgument, "ShardCount", 0, 1, stream.MaxShardCount)
		}
	}
	_, err := rq.h.rn.Streams.CreateStream(rq.ctx, ci)
	return nil, err
}

type deleteStreamInput struct {
	streamRef
	EnforceConsumerDeletion bool
}

func kinesisDeleteStream(rq *request, in *deleteStreamInput) (any, error) {
	return in.with(func(name string) (any, error) {
		return nil, rq.h.rn.Streams.DeleteStreamEnforce(rq.ctx, name, in.EnforceConsumerDeletion)
	})
}

type describeStreamInput struct {
	streamRef
	Limit                 *int
	ExclusiveStartShardId string
}

// maxDescribeResults is the most shards DescribeStream, and streams
// ListStreams, return in one call: "If you specify a value greater than
// 100, at most 100 results are returned" (DescribeStreamInput.Limit,
// ListStreamsInput.Limit). Limit itself may be up to 10,000.
const maxDescribeResults = 100

func kinesisDescribeStream(rq *request, in *describeStreamInput) (any, error) {
	limit, err := limit("limit", in.Limit, 100, 10000, awserr.ErrInvalidArgument)
	if err != nil {
		return nil, err
	}
	limit = min(limit, maxDescribeResults)
	d, err := rq.describe(in.streamRef)
	if err != nil {
		return nil, err
	}
	// The shards ListShards lists by default: expired ones left out.
	shards, more := page(stream.FilterShards(d, nil, rq.h.rn.Engine.Clock.Now()), in.ExclusiveStartShardId, limit)
	return map[string]any{"StreamDescription": encryptionOut(d, map[string]any{
		"StreamName": d.StreamName, "StreamARN": d.StreamARN, "StreamStatus": d.StreamStatus,
		"StreamModeDetails": modeOut(d), "Shards": shardsOut(shards), "HasMoreShards": more,
		"RetentionPeriodHours": d.RetentionPeriodHours, "StreamCreationTimestamp": epoch(d.StreamCreationTimestamp),
		"EnhancedMonitoring": monitoringOut(d),
	})}, nil
}

func kinesisDescribeStreamSummary(rq *request, in *streamRef) (any, error) {
	d, err := rq.describe(*in)
	if err != nil {
		return nil, err
	}
	consumers, err := rq.h.rn.Streams.ConsumerCount(rq.ctx, d)
	if err != nil {
		return nil, err
	}
	return map[string]any{"StreamDescriptionSummary": encryptionOut(d, map[string]any{
		"StreamName": d.StreamName, "StreamARN": d.StreamARN, "StreamStatus": d.StreamStatus,
		"StreamModeDetails": modeOut(d), "RetentionPeriodHours": d.RetentionPeriodHours,
		"StreamCreationTimestamp": epoch(d.StreamCreationTimestamp), "EnhancedMonitoring": monitoringOut(d),
		"OpenShardCount": d.OpenShardCount(), "ConsumerCount": consumers,
	})}, nil
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
	limit = min(limit, maxDescribeResults)
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
			"StreamModeDetails": modeOut(d), "StreamCreationTimestamp": epoch(d.StreamCreationTimestamp),
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
	StreamCreationTimestamp          *epoch
	ShardFilter                      *struct {
		Type      string
		ShardId   string
		Timestamp *epoch
	}
}

func kinesisListShards(rq *request, in *listShardsInput) (any, error) {
	li := stream.ListShardsInput{NextToken: in.NextToken, ExclusiveStartShardID: in.ExclusiveStartShardId}
	if in.MaxResults != nil {
		if li.MaxResults = *in.MaxResults; li.MaxResults == 0 {
			return nil, awserr.OutOfRange(awserr.ErrInvalidArgument, "MaxResults", 0, 1, stream.MaxListShardsResults)
		}
	}
	if in.NextToken != "" && in.StreamARN != "" && in.StreamName == "" {
		// Kinesis names the parameter given (aws-cli#9635); the stream
		// package sees a name once the ARN is resolved.
		return nil, awserr.New(awserr.ErrInvalidArgument, "NextToken and StreamARN cannot be provided together.")
	}
	if in.StreamName != "" || in.StreamARN != "" {
		name, err := in.name()
		if err != nil {
			return nil, err
		}
		li.StreamName = name
	}
	if in.StreamCreationTimestamp != nil {
		li.StreamCreationTimestamp = time.Time(*in.StreamCreationTimestamp)
	}
	if f := in.ShardFilter; f != nil {
		li.ShardFilter = &stream.ShardFilter{Type: f.Type, ShardID: f.ShardId}
		if f.Timestamp != nil {
			li.ShardFilter.Timestamp = time.Time(*f.Timestamp)
		}
	}
	o, err := rq.h.rn.Streams.ListShardsPage(rq.ctx, li)
	if err != nil {
		return nil, err
	}
	out := map[string]any{"Shards": shardsOut(o.Shards)}
	if o.NextToken != "" {
		out["NextToken"] = o.NextToken
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
	switch {
	case h < stream.MinRetentionPeriodHours:
		return nil, awserr.New(awserr.ErrInvalidArgument, "Minimum allowed retention period is %d hours. Requested retention period (%d hours) is too short.", stream.MinRetentionPeriodHours, h)
	case h > stream.MaxRetentionPeriodHours:
		return nil, awserr.New(awserr.ErrInvalidArgument, "Maximum allowed retention period is %d hours. Requested retention period (%d hours) is too long.", stream.MaxRetentionPeriodHours, h)
	}
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

type updateStreamModeInput struct {
	StreamARN         string
	StreamModeDetails stream.StreamModeDetails
}

func kinesisUpdateStreamMode(rq *request, in *updateStreamModeInput) (any, error) {
	name, err := streamOfARN(in.StreamARN)
	if err != nil {
		return nil, err
	}
	return nil, rq.h.rn.Streams.UpdateStreamMode(rq.ctx, name, in.StreamModeDetails.StreamMode)
}
