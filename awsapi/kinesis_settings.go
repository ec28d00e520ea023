package awsapi

// Kinesis: tags by resource ARN, account limits, enhanced monitoring and
// server-side encryption. Tags are the stream's (stream/tags.go), or
// with a consumer ARN the consumer's (stream/consumers.go). Enhanced
// monitoring and encryption are stored and reported by DescribeStream and
// DescribeStreamSummary, not acted on: runnel publishes no CloudWatch
// metrics and encrypts nothing (stream/settings.go). DescribeLimits
// reports AWS's default ShardLimit, which runnel does not enforce.

import (
	"context"
	"strings"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/stream"
)

// Account limits DescribeLimits reports: AWS's defaults
// (https://docs.aws.amazon.com/streams/latest/dev/service-sizes-and-limits.html).
const (
	defaultShardLimit               = 500
	defaultOnDemandStreamCountLimit = 50
)

// resourceRef is the ResourceARN of the tagging operations.
type resourceRef struct {
	ResourceARN string
}

// on runs consumer with the ARN when it is a consumer ARN, else stream
// with the name of the stream it names (an error when it names none).
func (r resourceRef) on(consumer, stream func(string) error) error {
	if strings.Contains(r.ResourceARN, "/consumer/") {
		return consumer(r.ResourceARN)
	}
	name, err := r.streamName()
	if err != nil {
		return err
	}
	return stream(name)
}

// streamName returns the name of the stream the ARN names.
func (r resourceRef) streamName() (string, error) {
	if r.ResourceARN == "" {
		return "", awserr.New(awserr.ErrInvalidArgument, "ResourceARN: required")
	}
	if n, ok := stream.NameFromARN(r.ResourceARN); ok {
		return n, nil
	}
	return "", awserr.New(awserr.ErrInvalidArgument, "ResourceARN %q is not a Kinesis stream or consumer ARN", r.ResourceARN)
}

type tagResourceInput struct {
	resourceRef
	Tags map[string]string
}

func kinesisTagResource(rq *request, in *tagResourceInput) (any, error) {
	return nil, in.on(
		func(arn string) error { return rq.h.rn.Streams.TagConsumer(rq.ctx, arn, in.Tags) },
		func(name string) error { return rq.h.rn.Streams.AddTagsToStream(rq.ctx, name, in.Tags) })
}

type untagResourceInput struct {
	resourceRef
	TagKeys []string
}

func kinesisUntagResource(rq *request, in *untagResourceInput) (any, error) {
	return nil, in.on(
		func(arn string) error { return rq.h.rn.Streams.UntagConsumer(rq.ctx, arn, in.TagKeys) },
		func(name string) error { return rq.h.rn.Streams.RemoveTagsFromStream(rq.ctx, name, in.TagKeys) })
}

func kinesisListTagsForResource(rq *request, in *resourceRef) (any, error) {
	var tags []stream.Tag
	err := in.on(
		func(arn string) (err error) {
			tags, err = rq.h.rn.Streams.ConsumerTags(rq.ctx, arn)
			return err
		},
		func(name string) (err error) {
			tags, _, err = rq.h.rn.Streams.ListTagsForStream(rq.ctx, name, "", stream.MaxTagsPerStream)
			return err
		})
	if err != nil {
		return nil, err
	}
	return map[string]any{"Tags": tags}, nil
}

func kinesisDescribeLimits(rq *request, _ *noInput) (any, error) {
	names, err := rq.h.rn.Streams.ListStreams(rq.ctx)
	if err != nil {
		return nil, err
	}
	open, onDemand := 0, 0
	for _, n := range names {
		d, err := rq.h.rn.Streams.DescribeStream(rq.ctx, n)
		switch {
		case err != nil:
		case d.Mode() == stream.StreamModeOnDemand:
			onDemand++
		default:
			open += d.OpenShardCount() // the shard limit is the provisioned streams'
		}
	}
	return map[string]any{"ShardLimit": defaultShardLimit, "OpenShardCount": open,
		"OnDemandStreamCount": onDemand, "OnDemandStreamCountLimit": defaultOnDemandStreamCountLimit}, nil
}

type monitoringInput struct {
	streamRef
	ShardLevelMetrics []string
}

func kinesisEnableEnhancedMonitoring(rq *request, in *monitoringInput) (any, error) {
	return setMonitoring(rq, in, rq.h.rn.Streams.EnableEnhancedMonitoring)
}

func kinesisDisableEnhancedMonitoring(rq *request, in *monitoringInput) (any, error) {
	return setMonitoring(rq, in, rq.h.rn.Streams.DisableEnhancedMonitoring)
}

func setMonitoring(rq *request, in *monitoringInput, set func(ctx context.Context, name string, metrics []string) (*stream.MonitoringOutput, error)) (any, error) {
	name, err := in.name()
	if err != nil {
		return nil, err
	}
	out, err := set(rq.ctx, name, in.ShardLevelMetrics)
	if err != nil {
		return nil, err
	}
	return map[string]any{"StreamName": name, "StreamARN": rq.h.rn.Streams.ARN(name),
		"CurrentShardLevelMetrics": out.CurrentShardLevelMetrics, "DesiredShardLevelMetrics": out.DesiredShardLevelMetrics}, nil
}

type encryptionInput struct {
	streamRef
	EncryptionType, KeyId string
}

func kinesisStartStreamEncryption(rq *request, in *encryptionInput) (any, error) {
	return in.with(func(name string) (any, error) {
		return nil, rq.h.rn.Streams.StartStreamEncryption(rq.ctx, name, in.EncryptionType, in.KeyId)
	})
}

func kinesisStopStreamEncryption(rq *request, in *encryptionInput) (any, error) {
	return in.with(func(name string) (any, error) {
		return nil, rq.h.rn.Streams.StopStreamEncryption(rq.ctx, name, in.EncryptionType, in.KeyId)
	})
}

// monitoringOut is a stream's EnhancedMonitoring in DescribeStream and
// DescribeStreamSummary.
func monitoringOut(d *stream.StreamDescription) []enhancedMetrics {
	return []enhancedMetrics{{ShardLevelMetrics: append([]string{}, d.ShardLevelMetrics...)}}
}

// encryptionOut adds a stream's EncryptionType (and KeyId when KMS) to a
// description.
func encryptionOut(d *stream.StreamDescription, out map[string]any) map[string]any {
	t, key := d.Encryption()
	out["EncryptionType"] = t
	if key != "" {
		out["KeyId"] = key
	}
	return out
}
