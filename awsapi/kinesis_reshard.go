package awsapi

// Kinesis: resharding and tags over package stream. SplitShard,
// MergeShards and UpdateShardCount (UNIFORM_SCALING) return once the
// reshard is done and the stream ACTIVE again (AWS returns at once and
// finishes asynchronously); the account shard quota and the 5 TPS rate
// of SplitShard and MergeShards are not modelled. Tags are the stream's
// (AddTagsToStream, RemoveTagsFromStream, ListTagsForStream); the
// resource-level TagResource family is not served.

import (
	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/stream"
)

type splitShardInput struct {
	streamRef
	ShardToSplit       string
	NewStartingHashKey string
}

func kinesisSplitShard(rq *request, in *splitShardInput) (any, error) {
	return in.with(func(name string) (any, error) {
		shard, err := kinesisShardID(rq, in.ShardToSplit, name)
		if err != nil {
			return nil, err
		}
		_, err = rq.h.rn.Streams.SplitShard(rq.ctx, name, shard, in.NewStartingHashKey)
		return nil, err
	})
}

type mergeShardsInput struct {
	streamRef
	ShardToMerge         string
	AdjacentShardToMerge string
}

func kinesisMergeShards(rq *request, in *mergeShardsInput) (any, error) {
	return in.with(func(name string) (any, error) {
		shard, err := kinesisShardID(rq, in.ShardToMerge, name)
		if err != nil {
			return nil, err
		}
		adjacent, err := kinesisShardID(rq, in.AdjacentShardToMerge, name)
		if err != nil {
			return nil, err
		}
		_, err = rq.h.rn.Streams.MergeShards(rq.ctx, name, shard, adjacent)
		return nil, err
	})
}

type updateShardCountInput struct {
	streamRef
	TargetShardCount *int
	ScalingType      string
}

func (in *updateShardCountInput) check() error {
	if in.TargetShardCount == nil {
		return awserr.New(awserr.ErrInvalidArgument, "TargetShardCount is required")
	}
	if in.ScalingType == "" {
		return awserr.New(awserr.ErrInvalidArgument, "ScalingType is required (UNIFORM_SCALING)")
	}
	return nil
}

func kinesisUpdateShardCount(rq *request, in *updateShardCountInput) (any, error) {
	return in.with(func(name string) (any, error) {
		return rq.h.rn.Streams.UpdateShardCount(rq.ctx, name, *in.TargetShardCount, in.ScalingType)
	})
}

type addTagsToStreamInput struct {
	streamRef
	Tags map[string]string
}

func kinesisAddTagsToStream(rq *request, in *addTagsToStreamInput) (any, error) {
	return in.with(func(name string) (any, error) { return nil, rq.h.rn.Streams.AddTagsToStream(rq.ctx, name, in.Tags) })
}

type removeTagsFromStreamInput struct {
	streamRef
	TagKeys []string
}

func kinesisRemoveTagsFromStream(rq *request, in *removeTagsFromStreamInput) (any, error) {
	return in.with(func(name string) (any, error) {
		// The stream is looked up before the keys are checked.
		if _, err := rq.h.rn.Streams.DescribeStream(rq.ctx, name); err != nil {
			return nil, err
		}
		if err := kinesisTagKeys(rq, name, in.TagKeys); err != nil {
			return nil, err
		}
		return nil, rq.h.rn.Streams.RemoveTagsFromStream(rq.ctx, name, in.TagKeys)
	})
}

type listTagsForStreamInput struct {
	streamRef
	ExclusiveStartTagKey string
	Limit                *int
}

func kinesisListTagsForStream(rq *request, in *listTagsForStreamInput) (any, error) {
	name, err := in.name()
	if err != nil {
		return nil, err
	}
	limit := 0
	if in.Limit != nil {
		if limit = *in.Limit; limit == 0 {
			return nil, awserr.OutOfRange(awserr.ErrInvalidArgument, "Limit", 0, 1, stream.MaxListTagsResults)
		}
	}
	tags, more, err := rq.h.rn.Streams.ListTagsForStream(rq.ctx, name, in.ExclusiveStartTagKey, limit)
	if err != nil {
		return nil, err
	}
	return map[string]any{"Tags": tags, "HasMoreTags": more}, nil
}
