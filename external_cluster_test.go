package runnel_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
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

// One runnel on an external 3-server NATS cluster (replicas 3) rides
// through the loss of each server in turn, while a producer puts records,
// sends messages and writes items, a mapping processes the records and a
// consumer receives and deletes the messages. Every failed call must be a
// retryable AWS error (the producer then retries it, as an AWS SDK does);
// the runnel never aborts. At the end every acknowledged record is
// processed, every acknowledged message received and deleted, and every
// acknowledged item present.
func TestOneRunnelRidesThroughTheLossOfEachNATSServer(t *testing.T) {
	if testing.Short() || os.Getenv("RUNNEL_CLUSTER_TESTS") == "" {
		t.Skip("a fault test (20 s to 2 min): starts a 3-server NATS cluster and stops each server in turn; run with RUNNEL_CLUSTER_TESTS=1")
	}
	cluster := testenv.StartNATSCluster(t, 3)
	rn := testenv.Start(t, testenv.Options{NATSURL: cluster.URL(), Replicas: 3})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	var mu sync.Mutex
	processed := map[string]bool{}
	function.Register("nats-loss-count", function.KinesisHandler(func(ctx context.Context, ev events.KinesisEvent) (events.KinesisEventResponse, error) {
		mu.Lock()
		defer mu.Unlock()
		for _, r := range ev.Records {
			processed[string(r.Kinesis.Data)] = true
		}
		return events.KinesisEventResponse{}, nil
	}))
	retry(t, ctx, "create stream", func() error {
		_, err := rn.Streams.CreateStream(ctx, stream.CreateStreamInput{StreamName: "loss", ShardCount: 2})
		return err
	})
	retry(t, ctx, "create function", func() error {
		_, err := rn.Functions.CreateFunction(ctx, function.Config{FunctionName: "loss-count", Handler: "nats-loss-count"})
		return err
	})
	retry(t, ctx, "create mapping", func() error {
		_, err := rn.Mappings.CreateEventSourceMapping(ctx, mapping.Config{EventSourceArn: rn.Streams.ARN("loss"),
			FunctionName: "loss-count", StartingPosition: "TRIM_HORIZON", BatchSize: 50})
		return err
	})
	var url string
	retry(t, ctx, "create queue", func() (err error) {
		url, err = rn.Queues.CreateQueue(ctx, "loss-jobs", map[string]string{queue.AttrVisibilityTimeout: "5"})
		return err
	})
	retry(t, ctx, "create table", func() error {
		_, err := rn.Tables.CreateTable(ctx, table.CreateTableInput{TableName: "loss-items",
			KeySchema:            []table.KeySchemaElement{{AttributeName: "id", KeyType: "HASH"}},
			AttributeDefinitions: []table.AttributeDefinition{{AttributeName: "id", AttributeType: "S"}}})
		return err
	})

	// The producer: each step puts a record, sends a message and writes an
	// item, retrying each until it is acknowledged.
	var acked atomic.Int64
	stop := make(chan struct{})
	produced := make(chan int, 1)
	go func() {
		i := 0
		defer func() { produced <- i }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			id := fmt.Sprint(i)
			retry(t, ctx, "put record "+id, func() error {
				_, err := rn.Streams.PutRecord(ctx, "loss", stream.PutRecordsRequestEntry{PartitionKey: id, Data: []byte(id)})
				return err
			})
			retry(t, ctx, "send message "+id, func() error {
				_, err := rn.Queues.SendMessage(ctx, url, queue.SendMessageInput{MessageBody: id})
				return err
			})
			retry(t, ctx, "put item "+id, func() error {
				_, err := rn.Tables.PutItem(ctx, table.PutItemInput{TableName: "loss-items", Item: table.Item{"id": events.NewStringAttribute(id)}})
				return err
			})
			if ctx.Err() != nil {
				return
			}
			i++
			acked.Store(int64(i))
		}
	}()
	// The consumer: receives and deletes.
	deleted := map[string]bool{}
	var dmu sync.Mutex
	consumerDone := make(chan struct{})
	go func() {
		defer close(consumerDone)
		for ctx.Err() == nil {
			ms, err := rn.Queues.ReceiveMessage(ctx, url, queue.ReceiveMessageInput{MaxNumberOfMessages: 10, WaitTimeSeconds: new(int)})
			if err != nil {
				if !awserr.IsRetryable(err) && ctx.Err() == nil {
					t.Errorf("receive: a non-retryable error: %v", err)
				}
				continue
			}
			if len(ms) == 0 {
				time.Sleep(20 * time.Millisecond) // an empty queue: poll again
			}
			for _, m := range ms {
				// A failed delete is retried with the same handle, as an SDK
				// retries it (it may have taken effect: deleting again is
				// then a success, as in SQS).
				retry(t, ctx, "delete message "+m.Body, func() error {
					return rn.Queues.DeleteMessage(ctx, url, m.ReceiptHandle)
				})
				if ctx.Err() == nil {
					dmu.Lock()
					deleted[m.Body] = true
					dmu.Unlock()
				}
			}
		}
	}()

	progress := func(what string, n int64) {
		t.Helper()
		from := acked.Load()
		testenv.Eventually(t, 2*time.Minute, what, func() bool { return acked.Load() >= from+n })
	}
	progress("the first writes", 50)
	for i := range 3 {
		cluster.Stop(i)
		progress(fmt.Sprintf("writes while NATS server %d is down", i), 30)
		cluster.Restart(i)
		progress(fmt.Sprintf("writes after NATS server %d is back", i), 30)
	}
	close(stop)
	n := <-produced
	t.Logf("%d steps acknowledged through 3 server losses", n)

	var p, d int
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		mu.Lock()
		p = len(processed)
		mu.Unlock()
		dmu.Lock()
		d = len(deleted)
		dmu.Unlock()
		if p >= n && d >= n {
			break
		}
	}
	if p < n || d < n {
		var sts []any
		for _, c := range rn.Mappings.ListEventSourceMappings() {
			st, err := rn.Mappings.Status(c.UUID)
			sts = append(sts, st, err)
		}
		a, err := rn.Queues.GetQueueAttributes(ctx, url, []string{queue.AttrAll})
		sts = append(sts, a, err)
		b, _ := json.Marshal(sts)
		t.Logf("after 2 minutes: %d of %d records processed, %d of %d messages deleted; mappings %s", p, n, d, n, b)
	}
	cancel()
	<-consumerDone
	mu.Lock()
	defer mu.Unlock()
	missing := 0
	for i := range n {
		id := fmt.Sprint(i)
		if !processed[id] {
			t.Errorf("record %s acknowledged, never processed", id)
			missing++
		}
		if !deleted[id] {
			t.Errorf("message %s acknowledged, never received and deleted", id)
			missing++
		}
		if missing > 10 {
			break
		}
	}
	ictx, icancel := context.WithTimeout(context.Background(), time.Minute)
	defer icancel()
	var items int
	retry(t, ictx, "scan", func() error {
		items = 0
		var start table.Item
		for {
			out, err := rn.Tables.Scan(ictx, table.ScanInput{ReadInput: table.ReadInput{TableName: "loss-items", ExclusiveStartKey: start}})
			if err != nil {
				return err
			}
			items += len(out.Items)
			if out.LastEvaluatedKey == nil {
				return nil
			}
			start = out.LastEvaluatedKey
		}
	})
	if items != n {
		t.Errorf("the table holds %d items, %d were acknowledged", items, n)
	}
}

// retry calls f until it succeeds, as an AWS SDK retries: a retryable
// error is retried after a short wait; any other error fails the test.
func retry(t *testing.T, ctx context.Context, what string, f func() error) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		err := f()
		if err == nil {
			return
		}
		if attempt == 1 || attempt%20 == 0 {
			t.Logf("%s: still failing after %d attempts: %v", what, attempt, err)
		}
		if ctx.Err() != nil {
			return
		}
		if !awserr.IsRetryable(err) {
			t.Errorf("%s: a non-retryable error: %v", what, err)
			return
		}
		time.Sleep(50 * time.Millisecond) // an SDK's backoff
	}
}
