package mapping_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/mapping"
)

// TestADeletedMappingLeavesNoKeyInTheCheckpointStore:
// DeleteEventSourceMapping removes the mapping; what runnel kept for it
// (its shards' checkpoints, its lanes' batch records, its windows) goes
// with it. The purge named the current shards' checkpoints and windows
// only: lane batch records, retired windows and the keys of an earlier
// ParallelizationFactor stayed in runnel_checkpoints for good. Now every
// key under the mapping's UUID is purged.
func TestADeletedMappingLeavesNoKeyInTheCheckpointStore(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	ctx := context.Background()
	rec := newRecorder(t, rn, function.Config{}, nil)
	arn := createStream(t, rn, "keys", 2)
	m := createMapping(t, rn, mapping.Config{EventSourceArn: arn, FunctionName: rec.name, BatchSize: 2, ParallelizationFactor: 2})
	for i, pk := range []string{"a", "b", "c", "d", "e", "f"} {
		put(t, rn, "keys", pk, strings.Repeat("x", i+1))
	}
	testenv.Eventually(t, 20*time.Second, "the records processed", func() bool { return rec.processed() >= 6 })
	ck, err := rn.Engine.Bucket(ctx, "runnel_checkpoints")
	if err != nil {
		t.Fatal(err)
	}
	keys := func() []string {
		l, err := ck.ListKeysFiltered(ctx, m.UUID+".>")
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for k := range l.Keys() {
			out = append(out, k)
		}
		return out
	}
	testenv.Eventually(t, 10*time.Second, "lane keys stored", func() bool {
		for _, k := range keys() {
			if strings.Contains(k, ".lane") || strings.Count(k, ".") > 1 {
				return true
			}
		}
		return false
	})
	if err := rn.Mappings.DeleteEventSourceMapping(ctx, m.UUID); err != nil {
		t.Fatal(err)
	}
	if left := keys(); len(left) > 0 {
		t.Fatalf("after DeleteEventSourceMapping the checkpoint store keeps %v", left)
	}
	_, err = ck.Get(ctx, m.UUID+".shardId-000000000000")
	if !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("the shard's checkpoint: %v; want it gone", err)
	}
}
