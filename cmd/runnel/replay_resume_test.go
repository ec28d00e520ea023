package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/queue"
	"github.com/runnel-dev/runnel/stream"
)

// queueCount opens the data directory and returns the messages of queue
// name.
func queueCount(t *testing.T, dir, name string) int {
	t.Helper()
	rn := testenv.Start(t, testenv.Options{Dir: dir})
	defer rn.Close()
	ctx := context.Background()
	url, err := rn.Queues.GetQueueURL(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	attrs, err := rn.Queues.GetQueueAttributes(ctx, url, []string{queue.AttrApproximateNumberOfMessages})
	if err != nil {
		t.Fatal(err)
	}
	var n int
	fmt.Sscan(attrs[queue.AttrApproximateNumberOfMessages], &n)
	return n
}

// TestReplayPrintsACommandForEveryShardLeft: replay's help says it "stops
// at the first batch the target rejects and says where to resume". Before,
// a time range over every shard that stopped in shard 0 printed "resume
// with --from-seq X (shard)": one shard, and a --from-seq that needs a
// --to-seq; shard 1 was never replayed. Now it prints, per shard, done or
// the replay command (--from-seq/--to-seq, same target) for what is left;
// run once the cause is fixed, they put every record not replayed through
// the target, each once.
func TestReplayPrintsACommandForEveryShardLeft(t *testing.T) {
	dir := t.TempDir()
	rn := testenv.Start(t, testenv.Options{Dir: dir})
	ctx := context.Background()
	if _, err := rn.Streams.CreateStream(ctx, stream.CreateStreamInput{StreamName: "multi", ShardCount: 2}); err != nil {
		t.Fatal(err)
	}
	url, err := rn.Queues.CreateQueue(ctx, "small-q", map[string]string{queue.AttrMaximumMessageSize: "1024"})
	if err != nil {
		t.Fatal(err)
	}
	from := time.Now().Add(-time.Minute)
	perShard := map[string]int{}
	total, big := 0, false
	for i := 0; perShard["shardId-000000000000"] < 12 || perShard["shardId-000000000001"] < 12; i++ {
		k := fmt.Sprintf("pk%d", i)
		data := "ok-" + k
		r, err := rn.Streams.PutRecord(ctx, "multi", stream.PutRecordsRequestEntry{PartitionKey: k, Data: []byte(data)})
		if err != nil {
			t.Fatal(err)
		}
		perShard[r.ShardId]++
		total++
		if !big && r.ShardId == "shardId-000000000000" && perShard[r.ShardId] == 3 {
			// Over the queue's MaximumMessageSize as a message.
			if _, err := rn.Streams.PutRecord(ctx, "multi", stream.PutRecordsRequestEntry{PartitionKey: k, Data: []byte(strings.Repeat("b", 2000))}); err != nil {
				t.Fatal(err)
			}
			perShard[r.ShardId]++
			total++
			big = true
		}
	}
	rn.Close()
	to := time.Now().Add(time.Minute)

	out, errOut, err := runCLI(t, "", "--data-dir", dir, "replay", "--stream", "multi", "--from-time", from.Format(time.RFC3339Nano),
		"--to-time", to.Format(time.RFC3339Nano), "--to-queue", "small-q", "--yes")
	if err == nil || !strings.Contains(out, "stopped:") {
		t.Fatalf("replay: %v; want it stopped at the large record\n%s%s", err, errOut, out)
	}
	var cmds [][]string
	for _, line := range strings.Split(out, "\n") {
		if _, c, ok := strings.Cut(line, ": runnel replay "); ok {
			cmds = append(cmds, strings.Fields(c))
		}
	}
	if len(cmds) != 2 || !strings.Contains(out, "shardId-000000000000 stopped: ") || !strings.Contains(out, "shardId-000000000001 not read: ") {
		t.Fatalf("replay printed %d commands; want one per shard (stopped, not read):\n%s", len(cmds), out)
	}
	sent := queueCount(t, dir, "small-q")

	// The cause fixed: the queue takes the large record.
	rn = testenv.Start(t, testenv.Options{Dir: dir})
	if err := rn.Queues.SetQueueAttributes(ctx, url, map[string]string{queue.AttrMaximumMessageSize: "262144"}); err != nil {
		t.Fatal(err)
	}
	rn.Close()
	for _, c := range cmds {
		if !strings.Contains(strings.Join(c, " "), "--to-seq") || !strings.Contains(strings.Join(c, " "), "--to-queue small-q") {
			t.Errorf("printed command %v: want --from-seq, --to-seq and the same target", c)
		}
		args := append([]string{"--data-dir", dir, "replay"}, c...)
		if o, e, err := runCLI(t, "", append(args, "--yes")...); err != nil {
			t.Fatalf("printed command %v: %v\n%s%s", c, err, e, o)
		}
	}
	if got := queueCount(t, dir, "small-q"); got != total {
		t.Errorf("after the printed commands the queue holds %d messages (%d from the first replay); want every record once, %d", got, sent, total)
	}
}
