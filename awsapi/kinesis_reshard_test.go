package awsapi_test

import (
	"context"
	"fmt"
	"math/big"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	ktypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/runnel-dev/runnel/awsapi"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/mapping"
)

// TestKinesisReshardUnderLoadThroughSDK drives SplitShard, MergeShards and
// UpdateShardCount through aws-sdk-go-v2 while producers put through it
// and a mapping reads the stream: every acknowledged record is processed
// by exactly one successful invocation, each key in order; the shapes
// (ParentShardId, EndingSequenceNumber, ChildShards, ShardFilter, tags)
// are what the SDK reads.
func TestKinesisReshardUnderLoadThroughSDK(t *testing.T) {
	e := start(t, awsapi.Options{})
	ctx := t.Context()
	kc := e.kinesis()
	must(kc.CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: aws.String("rs"), ShardCount: aws.Int32(2), Tags: map[string]string{"team": "data"}}))

	// The function checks each key's order on every successful invocation;
	// every fifth invocation fails (and is retried).
	var mu sync.Mutex
	last, processed := map[string]int{}, map[string]int{}
	var orderErrs []string
	var calls atomic.Int64
	handler := fmt.Sprintf("rs-%d", time.Now().UnixNano())
	function.Register(handler, function.KinesisHandler(func(ctx context.Context, ev events.KinesisEvent) (events.KinesisEventResponse, error) {
		if calls.Add(1)%5 == 0 {
			return events.KinesisEventResponse{}, fmt.Errorf("injected failure")
		}
		mu.Lock()
		defer mu.Unlock()
		for _, r := range ev.Records {
			key, n, _ := strings.Cut(string(r.Kinesis.Data), "/")
			var c int
			fmt.Sscan(n, &c)
			if p, ok := last[key]; ok && c <= p {
				orderErrs = append(orderErrs, fmt.Sprintf("%s: %d after %d", key, c, p))
			}
			last[key] = c
			processed[string(r.Kinesis.Data)]++
		}
		return events.KinesisEventResponse{}, nil
	}))
	must(e.rn.Functions.CreateFunction(ctx, function.Config{FunctionName: "rs-fn", Handler: handler}))
	must(e.rn.Mappings.CreateEventSourceMapping(ctx, mapping.Config{EventSourceArn: e.rn.Streams.ARN("rs"), FunctionName: "rs-fn",
		StartingPosition: mapping.TrimHorizon, BatchSize: 25, ParallelizationFactor: 2}))
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(processed)
	}

	var acked sync.Map
	var nAcked atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for p := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 1; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				var recs []ktypes.PutRecordsRequestEntry
				for k := range 5 {
					key := fmt.Sprintf("p%d-k%d", p, k)
					recs = append(recs, ktypes.PutRecordsRequestEntry{PartitionKey: aws.String(key), Data: []byte(fmt.Sprintf("%s/%d", key, n))})
				}
				out, err := kc.PutRecords(ctx, &kinesis.PutRecordsInput{StreamName: aws.String("rs"), Records: recs})
				if err != nil || aws.ToInt32(out.FailedRecordCount) != 0 {
					t.Errorf("PutRecords: %v %+v", err, out)
					return
				}
				for i := range recs {
					acked.Store(string(recs[i].Data), true)
					nAcked.Add(1)
				}
			}
		}()
	}
	progress := func() {
		n := count()
		testenv.Eventually(t, 20*time.Second, "the mapping to make progress", func() bool { return count() > n+50 })
	}
	open := func() []ktypes.Shard {
		return must(kc.ListShards(ctx, &kinesis.ListShardsInput{StreamName: aws.String("rs"), ShardFilter: &ktypes.ShardFilter{Type: ktypes.ShardFilterTypeAtLatest}})).Shards
	}

	progress()
	sh := open()[0]
	lo, _ := new(big.Int).SetString(aws.ToString(sh.HashKeyRange.StartingHashKey), 10)
	hi, _ := new(big.Int).SetString(aws.ToString(sh.HashKeyRange.EndingHashKey), 10)
	_, err := kc.SplitShard(ctx, &kinesis.SplitShardInput{StreamName: aws.String("rs"), ShardToSplit: sh.ShardId, NewStartingHashKey: aws.String(lo.String())})
	if errCode(err) != "InvalidArgumentException" || !strings.Contains(err.Error(), "greater than one plus the shard's StartingHashKey") {
		t.Errorf("SplitShard at the start: %v", err)
	}
	mid := new(big.Int).Add(lo, new(big.Int).Rsh(new(big.Int).Sub(hi, lo), 1))
	must(kc.SplitShard(ctx, &kinesis.SplitShardInput{StreamName: aws.String("rs"), ShardToSplit: sh.ShardId, NewStartingHashKey: aws.String(mid.String())}))
	progress()
	o := open()
	if len(o) != 3 {
		t.Fatalf("open shards after the split: %d", len(o))
	}
	_, err = kc.MergeShards(ctx, &kinesis.MergeShardsInput{StreamName: aws.String("rs"), ShardToMerge: o[0].ShardId, AdjacentShardToMerge: o[0].ShardId})
	if errCode(err) != "InvalidArgumentException" {
		t.Errorf("MergeShards of a shard with itself: %v", err)
	}
	must(kc.MergeShards(ctx, &kinesis.MergeShardsInput{StreamARN: aws.String(e.rn.Streams.ARN("rs")), ShardToMerge: aws.String("shardId-000000000003"), AdjacentShardToMerge: aws.String("shardId-000000000001")}))
	progress()
	_, err = kc.UpdateShardCount(ctx, &kinesis.UpdateShardCountInput{StreamName: aws.String("rs"), TargetShardCount: aws.Int32(9), ScalingType: ktypes.ScalingTypeUniformScaling})
	if errCode(err) != "LimitExceededException" {
		t.Errorf("UpdateShardCount beyond double: %v", err)
	}
	u := must(kc.UpdateShardCount(ctx, &kinesis.UpdateShardCountInput{StreamName: aws.String("rs"), TargetShardCount: aws.Int32(4), ScalingType: ktypes.ScalingTypeUniformScaling}))
	if aws.ToInt32(u.CurrentShardCount) != 2 || aws.ToInt32(u.TargetShardCount) != 4 || aws.ToString(u.StreamName) != "rs" || u.StreamARN == nil {
		t.Errorf("UpdateShardCount output %+v", u)
	}
	progress()
	must(kc.UpdateShardCount(ctx, &kinesis.UpdateShardCountInput{StreamName: aws.String("rs"), TargetShardCount: aws.Int32(2), ScalingType: ktypes.ScalingTypeUniformScaling}))
	progress()
	close(stop)
	wg.Wait()

	total := int(nAcked.Load())
	testenv.Eventually(t, 60*time.Second, "every acknowledged record processed", func() bool { return count() >= total })
	mu.Lock()
	for _, e := range orderErrs {
		t.Error(e)
	}
	acked.Range(func(k, _ any) bool {
		if processed[k.(string)] != 1 {
			t.Errorf("%s processed %d times", k, processed[k.(string)])
		}
		return true
	})
	if len(processed) != total {
		t.Errorf("processed %d, acknowledged %d", len(processed), total)
	}
	mu.Unlock()

	// The shapes the SDK reads.
	sum := must(kc.DescribeStreamSummary(ctx, &kinesis.DescribeStreamSummaryInput{StreamName: aws.String("rs")})).StreamDescriptionSummary
	if aws.ToInt32(sum.OpenShardCount) != 2 || sum.StreamStatus != ktypes.StreamStatusActive {
		t.Errorf("summary: open %d, %s", aws.ToInt32(sum.OpenShardCount), sum.StreamStatus)
	}
	all := must(kc.ListShards(ctx, &kinesis.ListShardsInput{StreamName: aws.String("rs")})).Shards
	desc := must(kc.DescribeStream(ctx, &kinesis.DescribeStreamInput{StreamName: aws.String("rs"), Limit: aws.Int32(100)})).StreamDescription
	if len(desc.Shards) != len(all) || len(all) < 10 {
		t.Errorf("DescribeStream lists %d shards, ListShards %d", len(desc.Shards), len(all))
	}
	closed := 0
	for _, s := range all {
		if s.SequenceNumberRange.EndingSequenceNumber != nil {
			closed++
		}
	}
	if closed != len(all)-2 {
		t.Errorf("%d closed of %d", closed, len(all))
	}
	c := all[len(all)-1]
	if c.ParentShardId == nil || c.AdjacentParentShardId == nil || c.SequenceNumberRange.EndingSequenceNumber != nil {
		t.Errorf("last child of the merges: %+v", c)
	}
	it := must(kc.GetShardIterator(ctx, &kinesis.GetShardIteratorInput{StreamName: aws.String("rs"), ShardId: aws.String("shardId-000000000000"), ShardIteratorType: ktypes.ShardIteratorTypeTrimHorizon})).ShardIterator
	var n int
	for it != nil {
		gr := must(kc.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: it}))
		n += len(gr.Records)
		if gr.NextShardIterator == nil {
			if len(gr.ChildShards) != 2 || gr.ChildShards[0].ParentShards[0] != "shardId-000000000000" || gr.ChildShards[1].HashKeyRange == nil {
				t.Errorf("ChildShards %+v", gr.ChildShards)
			}
		} else if len(gr.Records) == 0 && n == 0 {
			t.Fatal("no records in the first shard")
		}
		it = gr.NextShardIterator
	}
	after := must(kc.ListShards(ctx, &kinesis.ListShardsInput{StreamName: aws.String("rs"), ShardFilter: &ktypes.ShardFilter{Type: ktypes.ShardFilterTypeAfterShardId, ShardId: aws.String("shardId-000000000002")}, MaxResults: aws.Int32(3)}))
	if len(after.Shards) != 3 || aws.ToString(after.Shards[0].ShardId) != "shardId-000000000003" || after.NextToken == nil {
		t.Errorf("AFTER_SHARD_ID page: %+v", after)
	}
	next := must(kc.ListShards(ctx, &kinesis.ListShardsInput{NextToken: after.NextToken}))
	if len(next.Shards) == 0 || aws.ToString(next.Shards[0].ShardId) != "shardId-000000000006" {
		t.Errorf("next page: %+v", next.Shards)
	}
	tags := must(kc.ListTagsForStream(ctx, &kinesis.ListTagsForStreamInput{StreamName: aws.String("rs")}))
	if len(tags.Tags) != 1 || aws.ToString(tags.Tags[0].Key) != "team" || aws.ToBool(tags.HasMoreTags) {
		t.Errorf("tags %+v", tags)
	}
	must(kc.AddTagsToStream(ctx, &kinesis.AddTagsToStreamInput{StreamName: aws.String("rs"), Tags: map[string]string{"env": "dev"}}))
	must(kc.RemoveTagsFromStream(ctx, &kinesis.RemoveTagsFromStreamInput{StreamName: aws.String("rs"), TagKeys: []string{"team"}}))
	tags = must(kc.ListTagsForStream(ctx, &kinesis.ListTagsForStreamInput{StreamName: aws.String("rs"), Limit: aws.Int32(1)}))
	if len(tags.Tags) != 1 || aws.ToString(tags.Tags[0].Key) != "env" || aws.ToString(tags.Tags[0].Value) != "dev" {
		t.Errorf("tags after add and remove %+v", tags)
	}
}
