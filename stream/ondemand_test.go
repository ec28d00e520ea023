package stream_test

import (
	"bytes"
	"math/big"
	"slices"
	"testing"
	"time"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/stream"
)

// putHot writes n records of size bytes each to shard i of an ON_DEMAND
// stream, 500 a call.
func putHot(t testing.TB, rn *runnel.Runnel, name string, i, n, size int) {
	t.Helper()
	d := describe(t, rn, name)
	key := shardByID(t, d, stream.ShardID(i)).HashKeyRange.StartingHashKey
	data := bytes.Repeat([]byte("x"), size)
	for n > 0 {
		var entries []stream.PutRecordsRequestEntry
		for ; n > 0 && len(entries) < stream.MaxPutRecords; n-- {
			entries = append(entries, stream.PutRecordsRequestEntry{PartitionKey: "hot", ExplicitHashKey: key, Data: data})
		}
		if o, err := rn.Streams.PutRecords(t.Context(), name, entries); err != nil || o.FailedRecordCount != 0 {
			t.Fatalf("PutRecords: %v", err)
		}
	}
}

// An ON_DEMAND stream starts with 4 shards and splits a shard whose
// writes over a window (1 minute, engine clock) averaged more than half
// a shard's write limit: 500 records/s or 500 KB/s. A shard at the limit,
// or under it, is left alone; the split child ranges are the halves.
func TestOnDemandSplitsHotShards(t *testing.T) {
	clk := newClock()
	rn := testenv.Start(t, testenv.Options{Clock: clk})
	d, err := rn.Streams.CreateStream(t.Context(), stream.CreateStreamInput{StreamName: "od", StreamModeDetails: &stream.StreamModeDetails{StreamMode: stream.StreamModeOnDemand}})
	if err != nil {
		t.Fatal(err)
	}
	if d.Mode() != stream.StreamModeOnDemand || d.OpenShardCount() != stream.OnDemandInitialShards {
		t.Fatalf("new ON_DEMAND stream: mode %s, %d shards", d.Mode(), d.OpenShardCount())
	}
	window := int(stream.OnDemandWindow / time.Second)
	perRecord := stream.OnDemandSplitBytesPerSecond * window / 3000          // 3000 records make the byte limit
	putHot(t, rn, "od", 0, stream.OnDemandSplitRecordsPerSecond*window+1, 1) // records over
	putHot(t, rn, "od", 1, 3000, perRecord+1)                                // bytes over, 50 records/s
	putHot(t, rn, "od", 2, stream.OnDemandSplitRecordsPerSecond*window, 1)   // records at the limit
	putHot(t, rn, "od", 3, 3000, perRecord-len("hot"))                       // bytes at the limit
	if split, err := rn.Streams.ScaleOnDemand(t.Context()); err != nil || len(split) != 0 {
		t.Fatalf("before a full window: split %v, %v", split, err)
	}
	clk.Advance(stream.OnDemandWindow)
	split, err := rn.Streams.ScaleOnDemand(t.Context())
	if err != nil || !slices.Equal(split, []string{stream.ShardID(0), stream.ShardID(1)}) {
		t.Fatalf("split %v (%v), want shards 0 and 1", split, err)
	}
	d = describe(t, rn, "od")
	open := assertTiling(t, d)
	if len(open) != 6 {
		t.Fatalf("%d open shards after two splits, want 6", len(open))
	}
	for _, parent := range []string{stream.ShardID(0), stream.ShardID(1)} {
		p := shardByID(t, d, parent)
		lo, hi := shardRange(t, p)
		var kids []stream.Shard
		for _, sh := range d.Shards {
			if sh.ParentShardID == parent {
				kids = append(kids, sh)
			}
		}
		a, _ := shardRange(t, kids[0])
		_, b := shardRange(t, kids[1])
		mid, _ := shardRange(t, kids[1])
		half := new(big.Int).Rsh(new(big.Int).Add(lo, hi), 1)
		if len(kids) != 2 || a.Cmp(lo) != 0 || b.Cmp(hi) != 0 || mid.Cmp(new(big.Int).Add(half, big.NewInt(1))) != 0 {
			t.Fatalf("children of %s: %+v, want its two halves", parent, kids)
		}
	}
	// A quiet window splits nothing: each window counts its own writes.
	putHot(t, rn, "od", 2, 1, 1)
	clk.Advance(stream.OnDemandWindow)
	if split, err := rn.Streams.ScaleOnDemand(t.Context()); err != nil || len(split) != 0 {
		t.Fatalf("after a quiet window: split %v, %v", split, err)
	}
}

// ON_DEMAND streams take no reshards; UpdateStreamMode switches the mode
// (shards kept) at most twice per 24 hours.
func TestUpdateStreamMode(t *testing.T) {
	clk := newClock()
	rn := testenv.Start(t, testenv.Options{Clock: clk})
	createStream(t, rn, "s", 2)
	if m := describe(t, rn, "s").Mode(); m != stream.StreamModeProvisioned {
		t.Fatalf("mode %s, want PROVISIONED", m)
	}
	if err := rn.Streams.UpdateStreamMode(t.Context(), "s", stream.StreamModeOnDemand); err != nil {
		t.Fatal(err)
	}
	d := describe(t, rn, "s")
	if d.Mode() != stream.StreamModeOnDemand || d.OpenShardCount() != 2 {
		t.Fatalf("after UpdateStreamMode: %s with %d shards, want ON_DEMAND with 2", d.Mode(), d.OpenShardCount())
	}
	_, err := rn.Streams.SplitShard(t.Context(), "s", stream.ShardID(0), "1000")
	wantErr(t, err, awserr.ErrValidation, "ON_DEMAND")
	_, err = rn.Streams.MergeShards(t.Context(), "s", stream.ShardID(0), stream.ShardID(1))
	wantErr(t, err, awserr.ErrValidation, "ON_DEMAND")
	_, err = rn.Streams.UpdateShardCount(t.Context(), "s", 4, stream.UniformScaling)
	wantErr(t, err, awserr.ErrValidation, "ON_DEMAND")

	clk.Advance(time.Hour)
	if err := rn.Streams.UpdateStreamMode(t.Context(), "s", stream.StreamModeProvisioned); err != nil {
		t.Fatal(err)
	}
	err = rn.Streams.UpdateStreamMode(t.Context(), "s", stream.StreamModeOnDemand)
	wantErr(t, err, awserr.ErrLimitExceeded, "24 hours")
	err = rn.Streams.UpdateStreamMode(t.Context(), "s", "SOMETIMES")
	wantErr(t, err, awserr.ErrInvalidArgument, "StreamMode", "PROVISIONED or ON_DEMAND")
	clk.Advance(23 * time.Hour)
	if err := rn.Streams.UpdateStreamMode(t.Context(), "s", stream.StreamModeOnDemand); err != nil {
		t.Fatalf("24 h after the first switch: %v", err)
	}
}
