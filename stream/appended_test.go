package stream_test

import (
	"strings"
	"testing"

	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/stream"
)

// ShardAppended grows with the bytes put into that shard only, and a
// message removed from the shard (as retention trims old ones) does not
// lower it: two readings apart in time give the shard's incoming rate.
func TestShardAppendedCountsTheBytesPutIntoAShard(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	ctx := t.Context()
	if _, err := rn.Streams.CreateStream(ctx, stream.CreateStreamInput{StreamName: "load", ShardCount: 2}); err != nil {
		t.Fatal(err)
	}
	appended := func(shard int) uint64 {
		t.Helper()
		b, err := rn.Streams.ShardAppended(ctx, "load", stream.ShardID(shard))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if a0, a1 := appended(0), appended(1); a0 != 0 || a1 != 0 {
		t.Fatalf("empty shards appended %d and %d bytes", a0, a1)
	}
	big := strings.Repeat("x", 1000)
	putBatch(t, rn, "load", 0, big, big, big)
	first := appended(0)
	if first < 3000 || appended(1) != 0 {
		t.Fatalf("after 3 records of 1000 bytes into shard 0: %d and %d bytes; want at least 3000 and 0", first, appended(1))
	}
	putBatch(t, rn, "load", 0, big, big, big)
	second := appended(0)
	if second < first+3000 {
		t.Fatalf("after 3 more: %d bytes, want at least %d", second, first+3000)
	}
	// Remove the shard's first message, as retention would.
	var name string
	for n := range rn.Engine.JS.StreamNames(ctx).Name() {
		if strings.HasPrefix(n, "KDS_") {
			if js, err := rn.Engine.JS.Stream(ctx, n); err == nil {
				if info, err := js.Info(ctx); err == nil && info.State.Msgs == 2 {
					name = n
				}
			}
		}
	}
	js, err := rn.Engine.JS.Stream(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteMsg(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if after := appended(0); after < second {
		t.Errorf("after the first message was removed: %d bytes, down from %d", after, second)
	}
}
