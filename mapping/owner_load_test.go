package mapping_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/lease"
	"github.com/runnel-dev/runnel/mapping"
	"github.com/runnel-dev/runnel/stream"
)

// putIntoShard puts n records "<prefix><i>" into shard shardID of stream
// "src", by its starting hash key.
func putIntoShard(t *testing.T, rn *runnel.Runnel, shardID, prefix string, n int) {
	t.Helper()
	ctx := context.Background()
	d, err := rn.Streams.DescribeStream(ctx, "src")
	if err != nil {
		t.Fatal(err)
	}
	hash := ""
	for _, sh := range d.Shards {
		if sh.ShardID == shardID {
			hash = sh.HashKeyRange.StartingHashKey
		}
	}
	for i := 0; i < n; i += 100 {
		var entries []stream.PutRecordsRequestEntry
		for j := i; j < min(n, i+100); j++ {
			entries = append(entries, stream.PutRecordsRequestEntry{Data: []byte(fmt.Sprintf("%s%d", prefix, j)), PartitionKey: "k", ExplicitHashKey: hash})
		}
		out, err := rn.Streams.PutRecords(ctx, "src", entries)
		if err != nil || out.FailedRecordCount != 0 {
			t.Fatalf("put into %s: %v %+v", shardID, err, out)
		}
	}
}

// Shard leases are balanced by load once the shards have some (a
// difference from the Kinesis Client Library, which counts them): with
// two processes holding two of four shards each, a burst into shard 0
// alone leaves shard 0 alone on its process and the three idle shards on
// the other, and every record is processed exactly once across the
// hand-over (the old holder stored its final checkpoint before it
// released the lease).
func TestShardLeasesFollowTheShardsLoad(t *testing.T) {
	a, b, r, m := twoNodesOnFourShards(t)
	hot := "shardId-000000000000"
	putIntoShard(t, b, hot, "hot", 600)
	for i, sh := range []string{"shardId-000000000001", "shardId-000000000002", "shardId-000000000003"} {
		putIntoShard(t, a, sh, fmt.Sprintf("cold%d-", i), 5)
	}
	testenv.Eventually(t, 10*balanceWait, "the hot shard alone on one process, the three others on the other", func() bool {
		h := unitHolders(t, a, m.UUID)
		for _, n := range []string{node(t, a), node(t, b)} {
			if len(h[n]) == 1 && h[n][0] == hot {
				other := node(t, a)
				if n == other {
					other = node(t, b)
				}
				return len(h[other]) == 3
			}
		}
		return false
	})
	testenv.Eventually(t, wait, "every record processed", func() bool { return r.processed() == 600+15 })
	processedOnce(t, r, 600, "hot")
	processedOnce(t, r, 5, "cold0-", "cold1-", "cold2-")
}

// A shard's load reading is a JetStream request that a stream with no
// leader (a node just died) leaves unanswered until the client's timeout
// (30 s in a cluster). Such a reading holds neither the mapping service
// nor its balance for longer than its own timeout (1 s): while every
// reading stalls, ListEventSourceMappings answers, and a crashed
// process's shards are taken over after their lease TTL as without any
// stall (`runnel demo --nodes 3`: the survivors
// ran none of the dead node's shards until it was back, ~30 s).
func TestAStalledLoadReadingHoldsNeitherTheServiceNorTheBalance(t *testing.T) {
	a, b, r, m := twoNodesOnFourShards(t)
	putKeys(t, a, "x", 100)
	testenv.Eventually(t, wait, "first records processed", func() bool { return r.processed() == 100 })
	stalled := stallRequests(t, "load", -1)
	testenv.Eventually(t, wait, "a load reading stalled", func() bool { return stalled.Load() > 0 })
	listed := make(chan []mapping.Config, 1)
	go func() { listed <- a.Mappings.ListEventSourceMappings() }()
	testenv.Eventually(t, wait, "ListEventSourceMappings answered while a load reading stalls", func() bool { return len(listed) == 1 })
	stopB(t, a, b, m, b.Crash, 2, 3*lease.DefaultTTL)
	putKeys(t, a, "y", 100)
	testenv.Eventually(t, wait, "records processed after the takeover", func() bool { return r.processed() == 200 })
}

// A checkpoint write sent while the bucket's stream has no leader is
// never acknowledged; it ends at its timeout and is tried again, instead
// of holding its shard's lane for the client's 30 s cluster timeout
// (`runnel demo --nodes 3`: a surviving node's own shards stood still
// until the killed node was back).
func TestAStalledCheckpointWriteIsTriedAgain(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	arn := createStream(t, rn, "src", 1)
	r := newRecorder(t, rn, function.Config{}, nil)
	createMapping(t, rn, mapping.Config{EventSourceArn: arn, FunctionName: r.name, BatchSize: 10, StartingPosition: "TRIM_HORIZON"})
	stalled := stallRequests(t, "checkpoint", 1)
	putKeys(t, rn, "x", 20)
	testenv.Eventually(t, wait, "every record processed after the stalled checkpoint write", func() bool { return r.processed() == 20 })
	if stalled.Load() == 0 {
		t.Fatal("no checkpoint write stalled")
	}
}

// stallRequests makes the first n mapping requests of kind ("load",
// "checkpoint"; n < 0: all of them) wait until their context ends, as
// an unanswered JetStream request does, until t ends, and counts them.
func stallRequests(t *testing.T, kind string, n int64) *atomic.Int64 {
	t.Helper()
	var stalled atomic.Int64
	over := make(chan struct{})
	mapping.SetRequestStalls(func(ctx context.Context, k string) error {
		if k != kind || (n >= 0 && stalled.Load() >= n) {
			return nil
		}
		stalled.Add(1)
		select {
		case <-ctx.Done(): // its deadline, if it has one
			return ctx.Err()
		case <-over:
			return context.Canceled
		}
	})
	t.Cleanup(func() { mapping.SetRequestStalls(nil); close(over) })
	return &stalled
}
