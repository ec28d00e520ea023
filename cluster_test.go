package runnel_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/mapping"
	"github.com/runnel-dev/runnel/queue"
	"github.com/runnel-dev/runnel/stream"
	"github.com/runnel-dev/runnel/table"
)

// Three runnel nodes on one embedded 3-node NATS cluster (replicas 3):
// a queue purged through one node is empty for the node serving it, a
// mapping's shards (a lease each) process every record once, and when the
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

	t.Run("a mapping's shards process each record once wherever they run", func(t *testing.T) {
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

	t.Run("table conditions and counters hold across nodes", func(t *testing.T) {
		if _, err := nodes[2].Tables.CreateTable(ctx, table.CreateTableInput{TableName: "ledger",
			KeySchema:            []table.KeySchemaElement{{AttributeName: "id", KeyType: "HASH"}},
			AttributeDefinitions: []table.AttributeDefinition{{AttributeName: "id", AttributeType: "S"}}}); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var won, lost atomic.Int32
		for i, n := range nodes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := n.Tables.PutItem(ctx, table.PutItemInput{TableName: "ledger", WriteExpr: table.WriteExpr{ConditionExpression: "attribute_not_exists(id)"},
					Item: table.Item{"id": events.NewStringAttribute("leader"), "node": events.NewNumberAttribute(fmt.Sprint(i))}})
				switch {
				case err == nil:
					won.Add(1)
				case errors.Is(err, awserr.ErrConditionalCheckFailed):
					lost.Add(1)
				default:
					t.Error(err)
				}
				for range 10 {
					if _, err := n.Tables.UpdateItem(ctx, table.UpdateItemInput{TableName: "ledger", Key: table.Item{"id": events.NewStringAttribute("count")},
						UpdateExpression: "ADD n :one", WriteExpr: table.WriteExpr{ExpressionAttributeValues: table.Item{":one": events.NewNumberAttribute("1")}}}); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		if won.Load() != 1 || lost.Load() != 2 {
			t.Errorf("attribute_not_exists puts from 3 nodes: %d accepted, %d refused; want 1 and 2", won.Load(), lost.Load())
		}
		got, err := nodes[1].Tables.GetItem(ctx, table.GetItemInput{TableName: "ledger", Key: table.Item{"id": events.NewStringAttribute("count")}, ConsistentRead: true})
		if err != nil {
			t.Fatal(err)
		}
		if n := got.Item["n"].Number(); n != "30" {
			t.Errorf("10 ADDs from each of 3 nodes make %s, want 30", n)
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

	t.Run("the tables survive the crash of a node", func(t *testing.T) {
		testenv.Eventually(t, 60*time.Second, "the ledger read through a surviving node", func() bool {
			got, err := nodes[2].Tables.GetItem(ctx, table.GetItemInput{TableName: "ledger", Key: table.Item{"id": events.NewStringAttribute("count")}, ConsistentRead: true})
			return err == nil && got.Item["n"].Number() == "30"
		})
	})
}
