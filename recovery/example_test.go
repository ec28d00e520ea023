package recovery_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/backoff"
	"github.com/runnel-dev/runnel/engine"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/mapping"
	"github.com/runnel-dev/runnel/recovery"
	"github.com/runnel-dev/runnel/stream"
)

// The whitepaper's first flow, for records that are safe to process twice:
// the stream mapping bisects and sends what still fails to a Retry-DLQ;
// the same function consumes the Retry-DLQ with backoff; what never
// succeeds ends in the Unrecoverable-DLQ.
func ExampleIdempotentSupported() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "runnel-example")
	defer os.RemoveAll(dir)
	rn, _ := runnel.Open(ctx, runnel.Config{Engine: engine.Config{DataDir: dir}})
	defer rn.Close()

	// The business logic: idempotent (it remembers the records it has
	// processed by eventID), fails "flaky" once and "poison" always.
	var mu sync.Mutex
	seen, tries := map[string]bool{}, map[string]int{}
	handle := func(ctx context.Context, r events.KinesisEventRecord, attempt int) error {
		mu.Lock()
		defer mu.Unlock()
		d := string(r.Kinesis.Data)
		if seen[r.EventID] {
			return nil
		}
		tries[d]++
		if d == "poison" || (d == "flaky" && tries[d] == 1) {
			return fmt.Errorf("cannot process %s", d)
		}
		seen[r.EventID] = true
		return nil
	}

	rn.Streams.CreateStream(ctx, stream.CreateStreamInput{StreamName: "orders", ShardCount: 1})
	rn.Queues.CreateQueue(ctx, "unrecoverable-dlq", nil)
	rn.Queues.CreateQueue(ctx, "retry-dlq", map[string]string{"VisibilityTimeout": "30",
		"RedrivePolicy": `{"deadLetterTargetArn":"` + rn.Queues.ARN("unrecoverable-dlq") + `","maxReceiveCount":"10"}`})
	function.Register("orders-handler", &recovery.IdempotentSupported{Streams: rn.Streams, Handle: handle})
	rn.Functions.CreateFunction(ctx, function.Config{FunctionName: "process-orders", Handler: "orders-handler", Timeout: 30})

	zero := 0
	rn.Mappings.CreateEventSourceMapping(ctx, mapping.Config{ // the stream
		EventSourceArn: rn.Streams.ARN("orders"), FunctionName: "process-orders", StartingPosition: mapping.TrimHorizon,
		BatchSize: 4, MaximumBatchingWindowInSeconds: 1, BisectBatchOnFunctionError: true, MaximumRetryAttempts: &zero,
		DestinationConfig: &mapping.DestinationConfig{OnFailure: &mapping.OnFailure{Destination: rn.Queues.ARN("retry-dlq")}},
	})
	rn.Mappings.CreateEventSourceMapping(ctx, mapping.Config{ // the Retry-DLQ
		EventSourceArn: rn.Queues.ARN("retry-dlq"), FunctionName: "process-orders",
		FunctionResponseTypes: []string{mapping.ReportBatchItemFailures},
		RetryPolicy:           &backoff.Policy{BaseDelaySeconds: 1, MaxDelaySeconds: 1, MaxAttempts: 2, MaximumAgeInSeconds: 3600},
	})

	var entries []stream.PutRecordsRequestEntry
	for _, d := range []string{"a", "flaky", "b", "poison"} {
		entries = append(entries, stream.PutRecordsRequestEntry{PartitionKey: "k", Data: []byte(d)})
	}
	rn.Streams.PutRecords(ctx, "orders", entries)

	depth := func(q string) int {
		a, _ := rn.Queues.GetQueueAttributes(ctx, q, []string{"All"})
		n, _ := strconv.Atoi(a["ApproximateNumberOfMessages"])
		m, _ := strconv.Atoi(a["ApproximateNumberOfMessagesNotVisible"])
		return n + m
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		mu.Lock()
		n := len(seen)
		mu.Unlock()
		if n == 3 && depth("retry-dlq") == 0 && depth("unrecoverable-dlq") == 1 {
			break
		}
	}
	mu.Lock()
	fmt.Println("processed:", len(seen), "records; flaky tried", tries["flaky"], "times")
	mu.Unlock()
	fmt.Println("Retry-DLQ:", depth("retry-dlq"), "Unrecoverable-DLQ:", depth("unrecoverable-dlq"))
	// Output:
	// processed: 3 records; flaky tried 2 times
	// Retry-DLQ: 0 Unrecoverable-DLQ: 1
}

// The whitepaper's second flow, for records that must not be processed
// twice: no retries and no bisect on the stream; the handler puts each
// failing record into the Retry-DLQ itself (InsertRetry, before the batch
// returns) and reports the batch done; the Retry-DLQ is retried with
// backoff by the same function; what never succeeds ends in the
// Unrecoverable-DLQ.
func ExampleIdempotentUnsupported() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "runnel-example")
	defer os.RemoveAll(dir)
	rn, _ := runnel.Open(ctx, runnel.Config{Engine: engine.Config{DataDir: dir}})
	defer rn.Close()

	var mu sync.Mutex
	processed, tries := map[string]int{}, map[string]int{}
	handle := func(ctx context.Context, r events.KinesisEventRecord, attempt int) error {
		mu.Lock()
		defer mu.Unlock()
		d := string(r.Kinesis.Data)
		tries[d]++
		if d == "poison" || (d == "flaky" && tries[d] == 1) {
			return fmt.Errorf("cannot process %s", d)
		}
		processed[d]++
		return nil
	}

	rn.Streams.CreateStream(ctx, stream.CreateStreamInput{StreamName: "payments", ShardCount: 1})
	rn.Queues.CreateQueue(ctx, "payments-unrecoverable", nil)
	retryURL, _ := rn.Queues.CreateQueue(ctx, "payments-retry", map[string]string{"VisibilityTimeout": "30",
		"RedrivePolicy": `{"deadLetterTargetArn":"` + rn.Queues.ARN("payments-unrecoverable") + `","maxReceiveCount":"10"}`})
	function.Register("payments-handler", &recovery.IdempotentUnsupported{Streams: rn.Streams, Queues: rn.Queues, RetryDLQ: retryURL, Handle: handle})
	rn.Functions.CreateFunction(ctx, function.Config{FunctionName: "pay", Handler: "payments-handler", Timeout: 30})

	zero := 0
	rn.Mappings.CreateEventSourceMapping(ctx, mapping.Config{ // the stream: no retries, no bisect
		EventSourceArn: rn.Streams.ARN("payments"), FunctionName: "pay", StartingPosition: mapping.TrimHorizon,
		BatchSize: 4, MaximumBatchingWindowInSeconds: 1, MaximumRetryAttempts: &zero,
		FunctionResponseTypes: []string{mapping.ReportBatchItemFailures},
	})
	rn.Mappings.CreateEventSourceMapping(ctx, mapping.Config{ // the Retry-DLQ
		EventSourceArn: rn.Queues.ARN("payments-retry"), FunctionName: "pay",
		FunctionResponseTypes: []string{mapping.ReportBatchItemFailures},
		RetryPolicy:           &backoff.Policy{BaseDelaySeconds: 1, MaxDelaySeconds: 1, MaxAttempts: 3, MaximumAgeInSeconds: 3600},
	})

	var entries []stream.PutRecordsRequestEntry
	for _, d := range []string{"a", "flaky", "b", "poison"} {
		entries = append(entries, stream.PutRecordsRequestEntry{PartitionKey: "k", Data: []byte(d)})
	}
	rn.Streams.PutRecords(ctx, "payments", entries)

	depth := func(q string) int {
		a, _ := rn.Queues.GetQueueAttributes(ctx, q, []string{"All"})
		n, _ := strconv.Atoi(a["ApproximateNumberOfMessages"])
		m, _ := strconv.Atoi(a["ApproximateNumberOfMessagesNotVisible"])
		return n + m
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		mu.Lock()
		n := len(processed)
		mu.Unlock()
		if n == 3 && depth("payments-retry") == 0 && depth("payments-unrecoverable") == 1 {
			break
		}
	}
	mu.Lock()
	fmt.Println("processed once each:", processed["a"] == 1 && processed["b"] == 1 && processed["flaky"] == 1)
	mu.Unlock()
	fmt.Println("Retry-DLQ:", depth("payments-retry"), "Unrecoverable-DLQ:", depth("payments-unrecoverable"))
	// Output:
	// processed once each: true
	// Retry-DLQ: 0 Unrecoverable-DLQ: 1
}
