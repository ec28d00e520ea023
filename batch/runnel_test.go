package batch_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/batch"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/idempotency"
	"github.com/runnel-dev/runnel/idempotency/tablestore"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/mapping"
	"github.com/runnel-dev/runnel/queue"
	"github.com/runnel-dev/runnel/stream"
)

// attempts counts the handler's calls per record (by body or data).
type attempts struct {
	mu sync.Mutex
	n  map[string]int
}

func (a *attempts) add(k string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.n == nil {
		a.n = map[string]int{}
	}
	a.n[k]++
	return a.n[k]
}

func (a *attempts) get() map[string]int {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := map[string]int{}
	for k, v := range a.n {
		out[k] = v
	}
	return out
}

// register registers h and creates the function name with a 1 s timeout
// (a queue's visibility timeout may not be shorter).
func register(t *testing.T, rn *runnel.Runnel, name string, h any) {
	t.Helper()
	function.Register(name, h)
	if _, err := rn.Functions.CreateFunction(context.Background(), function.Config{FunctionName: name, Handler: name, Timeout: 1}); err != nil {
		t.Fatal(err)
	}
}

// wantAttempts waits until the mapping has resolved every record or
// message (done: after it, nothing can be delivered again), then checks
// the attempts. No sleep: "nothing more comes" follows from done.
func wantAttempts(t *testing.T, a *attempts, want map[string]int, done func() bool) {
	t.Helper()
	testenv.Eventually(t, 20*time.Second, fmt.Sprintf("every record resolved (attempts so far %v, want %v)", a.get(), want), done)
	if got := a.get(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("attempts %v, want %v", got, want)
	}
}

// queueEmpty reports whether a queue holds no message, visible, in flight
// or delayed: the mapping deleted every one.
func queueEmpty(t *testing.T, rn *runnel.Runnel, name string) func() bool {
	return func() bool {
		attrs, err := rn.Queues.GetQueueAttributes(context.Background(), name, []string{"All"})
		if err != nil {
			t.Fatal(err)
		}
		return attrs["ApproximateNumberOfMessages"] == "0" && attrs["ApproximateNumberOfMessagesNotVisible"] == "0" && attrs["ApproximateNumberOfMessagesDelayed"] == "0"
	}
}

// Through a real queue mapping with ReportBatchItemFailures, the messages
// the processor reports come back and the others are deleted.
func TestRunnelQueueMappingRetriesOnlyFailedMessages(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	ctx := context.Background()
	if _, err := rn.Queues.CreateQueue(ctx, "orders", map[string]string{"VisibilityTimeout": "1"}); err != nil {
		t.Fatal(err)
	}
	var entries []queue.SendMessageBatchRequestEntry
	for i, b := range []string{"a", "b", "c", "d", "e"} {
		entries = append(entries, queue.SendMessageBatchRequestEntry{Id: fmt.Sprint(i), SendMessageInput: queue.SendMessageInput{MessageBody: b}})
	}
	if _, err := rn.Queues.SendMessageBatch(ctx, "orders", entries); err != nil {
		t.Fatal(err)
	}
	var a attempts
	register(t, rn, "batch-sqs", batch.SQSHandler(func(ctx context.Context, m events.SQSMessage) error {
		if n := a.add(m.Body); (m.Body == "b" || m.Body == "d") && n == 1 {
			return fmt.Errorf("%s fails once", m.Body)
		}
		return nil
	}))
	if _, err := rn.Mappings.CreateEventSourceMapping(ctx, mapping.Config{EventSourceArn: rn.Queues.ARN("orders"), FunctionName: "batch-sqs",
		FunctionResponseTypes: []string{mapping.ReportBatchItemFailures}}); err != nil {
		t.Fatal(err)
	}
	wantAttempts(t, &a, map[string]int{"a": 1, "b": 2, "c": 1, "d": 2, "e": 1}, queueEmpty(t, rn, "orders"))
}

// Through a real stream mapping: StopOnFirstFailure reports the failed
// record and the rest; Lambda's rule (retry from the lowest reported
// sequence number) then delivers exactly those again, and the records
// before the failure are not redelivered.
func TestRunnelStreamMappingStopOnFirstFailure(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	arn := putStream(t, rn, "trades")
	var a attempts
	register(t, rn, "batch-kinesis", batch.KinesisHandler(func(ctx context.Context, r events.KinesisEventRecord) error {
		d := string(r.Kinesis.Data)
		if n := a.add(d); d == "c" && n == 1 {
			return fmt.Errorf("c fails once")
		}
		return nil
	}, batch.StopOnFirstFailure()))
	done := createStreamMapping(t, rn, arn, "batch-kinesis")
	wantAttempts(t, &a, map[string]int{"a": 1, "b": 1, "c": 2, "d": 1, "e": 1}, done)
}

// Without StopOnFirstFailure the records after the failure run, are
// redelivered with the retry, and idempotency.Do keeps their work from
// running twice.
func TestRunnelStreamMappingWithIdempotentRecords(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	arn := putStream(t, rn, "trades")
	store, err := tablestore.CreateTable(context.Background(), rn.Tables, "idempotency")
	if err != nil {
		t.Fatal(err)
	}
	cfg := idempotency.KinesisSequenceConfig(idempotency.Config{Name: "trade", ExpiresAfter: 48 * time.Hour}, 24*time.Hour, 0)
	var delivered, worked attempts
	register(t, rn, "batch-idem", batch.KinesisHandler(func(ctx context.Context, r events.KinesisEventRecord) error {
		d := string(r.Kinesis.Data)
		delivered.add(d)
		_, err := idempotency.Do(ctx, store, cfg, r, func(ctx context.Context) (string, error) {
			if n := worked.add(d); d == "c" && n == 1 {
				return "", fmt.Errorf("c fails once")
			}
			return "done " + d, nil
		})
		return err
	}))
	done := createStreamMapping(t, rn, arn, "batch-idem")
	wantAttempts(t, &delivered, map[string]int{"a": 1, "b": 1, "c": 2, "d": 2, "e": 2}, done)
	if got := worked.get(); fmt.Sprint(got) != fmt.Sprint(map[string]int{"a": 1, "b": 1, "c": 2, "d": 1, "e": 1}) {
		t.Fatalf("work ran %v; want once per record (c: a failure, then the success)", got)
	}
}

func putStream(t *testing.T, rn *runnel.Runnel, name string) string {
	t.Helper()
	ctx := context.Background()
	d, err := rn.Streams.CreateStream(ctx, stream.CreateStreamInput{StreamName: name, ShardCount: 1})
	if err != nil {
		t.Fatal(err)
	}
	var entries []stream.PutRecordsRequestEntry
	for _, s := range []string{"a", "b", "c", "d", "e"} {
		entries = append(entries, stream.PutRecordsRequestEntry{Data: []byte(s), PartitionKey: "k"})
	}
	if out, err := rn.Streams.PutRecords(ctx, name, entries); err != nil || out.FailedRecordCount != 0 {
		t.Fatalf("put: %+v, %v", out, err)
	}
	return d.StreamARN
}

// createStreamMapping creates the mapping and returns a condition true
// once its checkpoint is past the last record of the stream (one shard):
// every record resolved.
func createStreamMapping(t *testing.T, rn *runnel.Runnel, arn, fn string) func() bool {
	t.Helper()
	ctx := context.Background()
	m, err := rn.Mappings.CreateEventSourceMapping(ctx, mapping.Config{EventSourceArn: arn, FunctionName: fn,
		StartingPosition: mapping.TrimHorizon, BatchSize: 5, MaximumBatchingWindowInSeconds: 1,
		FunctionResponseTypes: []string{mapping.ReportBatchItemFailures}})
	if err != nil {
		t.Fatal(err)
	}
	name := arn[strings.LastIndex(arn, "/")+1:]
	return func() bool {
		st, err := rn.Mappings.Status(m.UUID)
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Shards) != 1 {
			return false
		}
		sh := st.Shards[0]
		_, last, err := rn.Streams.ShardBounds(ctx, name, sh.ShardID)
		if err != nil {
			t.Fatal(err)
		}
		end, err := rn.Streams.SequenceNumber(ctx, name, sh.ShardID, last+1)
		return err == nil && sh.Checkpoint == end
	}
}
