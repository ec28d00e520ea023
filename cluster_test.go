package runnel_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/mapping"
	"github.com/runnel-dev/runnel/queue"
	"github.com/runnel-dev/runnel/stream"
)

// Three runnel nodes on one embedded 3-node NATS cluster (replicas 3):
// a queue purged through one node is empty for the node serving it, a
// mapping runs on one node and processes every record once, and when the
// node serving the queues crashes another takes them over with every
// message.
func TestThreeNodeCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster")
	}
	nodes := testenv.Cluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	t.Run("a purge through any node empties the queue every node sees", func(t *testing.T) {
		url, err := nodes[0].Queues.CreateQueue(ctx, "jobs-dlq", nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 5 {
			if _, err := nodes[i%3].Queues.SendMessage(ctx, url, queue.SendMessageInput{MessageBody: fmt.Sprint(i)}); err != nil {
				t.Fatal(err)
			}
		}
		if err := nodes[2].Queues.PurgeQueue(ctx, url); err != nil {
			t.Fatal(err)
		}
		for i, n := range nodes {
			a, err := n.Queues.GetQueueAttributes(ctx, url, []string{queue.AttrAll})
			if err != nil {
				t.Fatal(err)
			}
			if a["ApproximateNumberOfMessages"] != "0" {
				t.Errorf("node %d counts %s messages after the purge", i, a["ApproximateNumberOfMessages"])
			}
		}
	})

	t.Run("a mapping runs on one node and processes each record once", func(t *testing.T) {
		var mu sync.Mutex
		seen := map[string]int{}
		function.Register("cluster-count", function.KinesisHandler(func(ctx context.Context, ev events.KinesisEvent) (events.KinesisEventResponse, error) {
			mu.Lock()
			defer mu.Unlock()
			for _, r := range ev.Records {
				seen[string(r.Kinesis.Data)]++
			}
			return events.KinesisEventResponse{}, nil
		}))
		if _, err := nodes[1].Streams.CreateStream(ctx, stream.CreateStreamInput{StreamName: "orders", ShardCount: 2}); err != nil {
			t.Fatal(err)
		}
		if _, err := nodes[1].Functions.CreateFunction(ctx, function.Config{FunctionName: "count", Handler: "cluster-count"}); err != nil {
			t.Fatal(err)
		}
		if _, err := nodes[2].Mappings.CreateEventSourceMapping(ctx, mapping.Config{EventSourceArn: nodes[2].Streams.ARN("orders"),
			FunctionName: "count", StartingPosition: "TRIM_HORIZON", BatchSize: 20}); err != nil {
			t.Fatal(err)
		}
		for i := range 200 {
			if _, err := nodes[i%3].Streams.PutRecord(ctx, "orders", stream.PutRecordsRequestEntry{PartitionKey: fmt.Sprint(i), Data: []byte(fmt.Sprint(i))}); err != nil {
				t.Fatal(err)
			}
		}
		testenv.Eventually(t, 30*time.Second, "every record processed", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(seen) == 200
		})
		mu.Lock()
		defer mu.Unlock()
		for d, n := range seen {
			if n != 1 {
				t.Fatalf("record %s processed %d times", d, n)
			}
		}
	})

	t.Run("the queues survive the crash of the node serving them", func(t *testing.T) {
		url, err := nodes[1].Queues.CreateQueue(ctx, "work", nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 10 {
			if _, err := nodes[1].Queues.SendMessage(ctx, url, queue.SendMessageInput{MessageBody: fmt.Sprint(i)}); err != nil {
				t.Fatal(err)
			}
		}
		// Node 0 served the queues from the first call on.
		nodes[0].Crash()
		got := map[string]bool{}
		testenv.Eventually(t, 60*time.Second, "every message received through a surviving node", func() bool {
			ms, err := nodes[2].Queues.ReceiveMessage(ctx, url, queue.ReceiveMessageInput{MaxNumberOfMessages: 10, WaitTimeSeconds: new(int)})
			if err != nil {
				return false // the queues are moving to another node
			}
			for _, m := range ms {
				got[m.Body] = true
			}
			return len(got) == 10
		})
	})
}
