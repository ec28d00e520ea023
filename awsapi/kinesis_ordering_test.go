package awsapi_test

import (
	"context"
	"math/big"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	ktypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/runnel-dev/runnel/awsapi"
)

// SequenceNumberForOrdering (API_PutRecord): a client that passes each
// record the sequence number of its previous record of the same key gets
// strictly increasing sequence numbers, in one shard and across a split
// and a merge that move the key to a child shard; a value outside the
// model's pattern is a ValidationException. The numbers have AWS's 56
// digits.
func TestKinesisSequenceNumberForOrdering(t *testing.T) {
	e := start(t, awsapi.Options{})
	kc := e.kinesis()
	ctx := context.Background()
	must(kc.CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: aws.String("ord"), ShardCount: aws.Int32(2)}))
	prev := ""
	put := func(step string) {
		t.Helper()
		in := &kinesis.PutRecordInput{StreamName: aws.String("ord"), PartitionKey: aws.String("key"), Data: []byte(step)}
		if prev != "" {
			in.SequenceNumberForOrdering = aws.String(prev)
		}
		seq := aws.ToString(must(kc.PutRecord(ctx, in)).SequenceNumber)
		a, _ := new(big.Int).SetString(prev, 10)
		b, ok := new(big.Int).SetString(seq, 10)
		if !ok || (a != nil && b.Cmp(a) <= 0) {
			t.Fatalf("%s: sequence number %s not greater than the previous %s", step, seq, prev)
		}
		if len(seq) != 56 || seq[:2] != "49" {
			t.Fatalf("%s: sequence number %s has %d digits, want AWS's 56 beginning 49", step, seq, len(seq))
		}
		prev = seq
	}
	for range 3 {
		put("same shard")
	}
	open := func() []ktypes.Shard {
		return must(kc.ListShards(ctx, &kinesis.ListShardsInput{StreamName: aws.String("ord"), ShardFilter: &ktypes.ShardFilter{Type: ktypes.ShardFilterTypeAtLatest}})).Shards
	}
	for _, sh := range open() {
		lo, _ := new(big.Int).SetString(aws.ToString(sh.HashKeyRange.StartingHashKey), 10)
		hi, _ := new(big.Int).SetString(aws.ToString(sh.HashKeyRange.EndingHashKey), 10)
		mid := new(big.Int).Add(lo, new(big.Int).Rsh(new(big.Int).Sub(hi, lo), 1))
		must(kc.SplitShard(ctx, &kinesis.SplitShardInput{StreamName: aws.String("ord"), ShardToSplit: sh.ShardId, NewStartingHashKey: aws.String(mid.String())}))
	}
	put("after the splits")
	o := open()
	must(kc.MergeShards(ctx, &kinesis.MergeShardsInput{StreamName: aws.String("ord"), ShardToMerge: o[0].ShardId, AdjacentShardToMerge: o[1].ShardId}))
	must(kc.MergeShards(ctx, &kinesis.MergeShardsInput{StreamName: aws.String("ord"), ShardToMerge: o[2].ShardId, AdjacentShardToMerge: o[3].ShardId}))
	put("after the merges")

	_, err := kc.PutRecord(ctx, &kinesis.PutRecordInput{StreamName: aws.String("ord"), PartitionKey: aws.String("key"), Data: []byte("x"), SequenceNumberForOrdering: aws.String("01")})
	if errCode(err) != "ValidationException" {
		t.Errorf("SequenceNumberForOrdering 01: %v, want ValidationException", err)
	}
}
