package recovery_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/backoff"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/mapping"
	"github.com/runnel-dev/runnel/queue"
	"github.com/runnel-dev/runnel/recovery"
	"github.com/runnel-dev/runnel/stream"
)

// business is the flows' record handler: "poison" always fails, "flaky"
// fails its first two attempts, everything else succeeds. It counts what
// it processed.
//
// It is idempotent the way the whitepaper asks (an idempotency key per
// record, here the eventID: shard and sequence number), so records that
// bisect or a redelivery hand it again are not processed twice.
type business struct {
	mu        sync.Mutex
	done      map[string]int
	keys      map[string]bool
	attempts  map[string]int
	flakyFail int
	// blockOn, when set, makes the first attempt of that record signal
	// blocked and wait for its context to end (the process dying).
	blockOn string
	blocked chan struct{}
}

func newBusiness() *business {
	return &business{done: map[string]int{}, keys: map[string]bool{}, attempts: map[string]int{}, flakyFail: 2}
}

func (b *business) handle(ctx context.Context, rec events.KinesisEventRecord, attempt int) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.keys[rec.EventID] {
		return nil // already processed: the idempotency key says so
	}
	d := string(rec.Kinesis.Data)
	b.attempts[d]++
	if d == b.blockOn && b.attempts[d] == 1 {
		close(b.blocked)
		b.mu.Unlock()
		<-ctx.Done()
		b.mu.Lock()
		return ctx.Err()
	}
	switch {
	case strings.HasPrefix(d, "poison"):
		return fmt.Errorf("poison record")
	case d == "flaky" && b.attempts[d] <= b.flakyFail:
		return fmt.Errorf("flaky, attempt %d", b.attempts[d])
	}
	b.done[d]++
	b.keys[rec.EventID] = true
	return nil
}

func (b *business) processed(d string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.done[d]
}

type setup struct {
	rn                  *runnel.Runnel
	clock               *clockwork.FakeClock
	retryDLQ, unrecover string
	streamARN           string
}

// twoTier makes a stream, a Retry-DLQ (VisibilityTimeout 60, RedrivePolicy
// to the Unrecoverable-DLQ after 5 receives) and the Unrecoverable-DLQ.
func twoTier(t *testing.T, dir string) *setup {
	t.Helper()
	clock := clockwork.NewFakeClockAt(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rn := testenv.Start(t, testenv.Options{Clock: clock, Dir: dir})
	ctx := context.Background()
	s := &setup{rn: rn, clock: clock}
	d, err := rn.Streams.CreateStream(ctx, stream.CreateStreamInput{StreamName: "orders", ShardCount: 1})
	if err != nil {
		t.Fatal(err)
	}
	s.streamARN = d.StreamARN
	if s.unrecover, err = rn.Queues.CreateQueue(ctx, "unrecoverable-dlq", nil); err != nil {
		t.Fatal(err)
	}
	redrive := fmt.Sprintf(`{"deadLetterTargetArn":"%s","maxReceiveCount":"5"}`, rn.Queues.ARN("unrecoverable-dlq"))
	if s.retryDLQ, err = rn.Queues.CreateQueue(ctx, "retry-dlq", map[string]string{"VisibilityTimeout": "60", "RedrivePolicy": redrive}); err != nil {
		t.Fatal(err)
	}
	return s
}

// drain advances the fake clock until cond holds (the retry delays are
// visibility timeouts on the engine clock). It does not advance it while
// the function "proc" runs: 2 s a step every 5 ms passed a Retry-DLQ
// message's 60 s visibility timeout within a slow invocation on a loaded
// machine, and the message was received again beside it.
func (s *setup) drain(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		if f, err := s.rn.Functions.GetFunction("proc"); err != nil || f.Stats().ConcurrentExecutions == 0 {
			s.clock.Advance(2 * time.Second)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// messages returns the bodies in a queue without consuming them for good
// (visibility 0 after the read).
func messages(t *testing.T, rn *runnel.Runnel, url string) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	var handles []string
	for {
		vt, wait := 600, 0
		ms, err := rn.Queues.ReceiveMessage(ctx, url, queue.ReceiveMessageInput{MaxNumberOfMessages: 10, VisibilityTimeout: &vt, WaitTimeSeconds: &wait})
		if err != nil {
			t.Fatal(err)
		}
		if len(ms) == 0 {
			break
		}
		for _, m := range ms {
			out = append(out, m.Body)
			handles = append(handles, m.ReceiptHandle)
		}
	}
	for _, h := range handles {
		rn.Queues.ChangeMessageVisibility(ctx, url, h, 0)
	}
	return out
}

func count(t *testing.T, rn *runnel.Runnel, url string) int {
	t.Helper()
	a, err := rn.Queues.GetQueueAttributes(context.Background(), url, []string{"All"})
	if err != nil {
		t.Fatal(err)
	}
	v, _ := strconv.Atoi(a["ApproximateNumberOfMessages"])
	nv, _ := strconv.Atoi(a["ApproximateNumberOfMessagesNotVisible"])
	d, _ := strconv.Atoi(a["ApproximateNumberOfMessagesDelayed"])
	return v + nv + d
}

var policy = &backoff.Policy{BaseDelaySeconds: 1, MaxDelaySeconds: 4, MaxAttempts: 4, MaximumAgeInSeconds: 3600}

func TestIdempotentSupportedFlow(t *testing.T) {
	s := twoTier(t, "")
	rn, ctx := s.rn, context.Background()
	b := newBusiness()
	function.Register("flow-supported", &recovery.IdempotentSupported{Streams: rn.Streams, Handle: b.handle})
	if _, err := rn.Functions.CreateFunction(ctx, function.Config{FunctionName: "proc", Handler: "flow-supported", Timeout: 30}); err != nil {
		t.Fatal(err)
	}
	if _, err := rn.Streams.PutRecords(ctx, "orders", []stream.PutRecordsRequestEntry{
		{PartitionKey: "k", Data: []byte("a")}, {PartitionKey: "k", Data: []byte("flaky")}, {PartitionKey: "k", Data: []byte("b")},
		{PartitionKey: "k", Data: []byte("poison")}, {PartitionKey: "k", Data: []byte("c")},
	}); err != nil {
		t.Fatal(err)
	}
	zero := 0
	if _, err := rn.Mappings.CreateEventSourceMapping(ctx, mapping.Config{EventSourceArn: s.streamARN, FunctionName: "proc",
		StartingPosition: mapping.TrimHorizon, BatchSize: 5, MaximumBatchingWindowInSeconds: 1, BisectBatchOnFunctionError: true, MaximumRetryAttempts: &zero,
		DestinationConfig: &mapping.DestinationConfig{OnFailure: &mapping.OnFailure{Destination: rn.Queues.ARN("retry-dlq")}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := rn.Mappings.CreateEventSourceMapping(ctx, mapping.Config{EventSourceArn: rn.Queues.ARN("retry-dlq"), FunctionName: "proc",
		BatchSize: 10, FunctionResponseTypes: []string{mapping.ReportBatchItemFailures}, RetryPolicy: policy}); err != nil {
		t.Fatal(err)
	}
	s.drain(t, "flaky recovered and poison unrecoverable", func() bool {
		return b.processed("flaky") == 1 && count(t, rn, s.unrecover) == 1 && count(t, rn, s.retryDLQ) == 0
	})
	for _, d := range []string{"a", "b", "c"} {
		if b.processed(d) != 1 {
			t.Fatalf("%s processed %d times", d, b.processed(d))
		}
	}
	bodies := messages(t, rn, s.unrecover)
	res, err := recovery.Resolve(ctx, rn.Streams, []byte(bodies[0]))
	if err != nil || res.Kind != recovery.KindStreamBatch || len(res.Records) != 1 || string(res.Records[0].Kinesis.Data) != "poison" {
		t.Fatalf("unrecoverable message resolves to %+v, %v", res, err)
	}
}

// restartable is the registered handler of a test that restarts the
// process: the restarted runnel resumes its mappings as it starts, before
// the test can hand the function the new process's services, so an
// invocation made in between waits for them (a real restart starts the
// function with its services).
type restartable struct {
	fn    atomic.Pointer[recovery.IdempotentUnsupported]
	ready chan struct{}
}

func (r *restartable) current(ctx context.Context) (*recovery.IdempotentUnsupported, error) {
	if fn := r.fn.Load(); fn != nil {
		return fn, nil
	}
	select {
	case <-r.ready:
		return r.fn.Load(), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (r *restartable) HandleKinesis(ctx context.Context, ev events.KinesisEvent) (events.KinesisEventResponse, error) {
	fn, err := r.current(ctx)
	if err != nil {
		return events.KinesisEventResponse{}, err
	}
	return fn.HandleKinesis(ctx, ev)
}

func (r *restartable) HandleSQS(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	fn, err := r.current(ctx)
	if err != nil {
		return events.SQSEventResponse{}, err
	}
	return fn.HandleSQS(ctx, ev)
}

func TestIdempotentUnsupportedFlowSurvivesACrashBetweenInsertAndCheckpoint(t *testing.T) {
	dir := t.TempDir()
	s := twoTier(t, dir)
	rn, ctx := s.rn, context.Background()
	b := newBusiness()
	b.blockOn, b.blocked = "b", make(chan struct{})
	fn := &recovery.IdempotentUnsupported{Streams: rn.Streams, Queues: rn.Queues, RetryDLQ: s.retryDLQ, Handle: b.handle, Clock: s.clock}
	restart := &restartable{ready: make(chan struct{})}
	restart.fn.Store(fn)
	function.Register("flow-unsupported", restart)
	if _, err := rn.Functions.CreateFunction(ctx, function.Config{FunctionName: "proc", Handler: "flow-unsupported", Timeout: 30}); err != nil {
		t.Fatal(err)
	}
	if _, err := rn.Streams.PutRecords(ctx, "orders", []stream.PutRecordsRequestEntry{
		{PartitionKey: "k", Data: []byte("a")}, {PartitionKey: "k", Data: []byte("poison")}, {PartitionKey: "k", Data: []byte("b")},
	}); err != nil {
		t.Fatal(err)
	}
	zero := 0
	streamMapping, err := rn.Mappings.CreateEventSourceMapping(ctx, mapping.Config{EventSourceArn: s.streamARN, FunctionName: "proc",
		StartingPosition: mapping.TrimHorizon, BatchSize: 3, MaximumBatchingWindowInSeconds: 1, MaximumRetryAttempts: &zero,
		FunctionResponseTypes: []string{mapping.ReportBatchItemFailures}})
	if err != nil {
		t.Fatal(err)
	}
	// The batch [a poison b]: a is processed, poison is inserted into the
	// Retry-DLQ, then b blocks. Kill the process there: after the insert,
	// before the checkpoint.
	<-b.blocked
	if count(t, rn, s.retryDLQ) != 1 {
		t.Fatal("the poison record is not in the Retry-DLQ before the crash")
	}
	restart.fn.Store(nil) // the restarted process's handler waits for its services
	rn.Crash()

	rn2 := testenv.Start(t, testenv.Options{Clock: s.clock, Dir: dir})
	restart.fn.Store(&recovery.IdempotentUnsupported{Streams: rn2.Streams, Queues: rn2.Queues, RetryDLQ: s.retryDLQ, Handle: b.handle, Clock: s.clock})
	close(restart.ready)
	if _, err := rn2.Mappings.CreateEventSourceMapping(ctx, mapping.Config{EventSourceArn: rn2.Queues.ARN("retry-dlq"), FunctionName: "proc",
		BatchSize: 10, FunctionResponseTypes: []string{mapping.ReportBatchItemFailures}, RetryPolicy: policy}); err != nil {
		t.Fatal(err)
	}
	s.rn = rn2
	s.drain(t, "every record processed or in a DLQ", func() bool {
		st, _ := rn2.Mappings.Status(streamMapping.UUID)
		_, last, _ := rn2.Streams.ShardBounds(ctx, "orders", "shardId-000000000000")
		end, _ := rn2.Streams.SequenceNumber(ctx, "orders", "shardId-000000000000", last+1)
		caughtUp := len(st.Shards) == 1 && st.Shards[0].Checkpoint == end
		return caughtUp && b.processed("b") >= 1 && count(t, rn2, s.retryDLQ) == 0 && count(t, rn2, s.unrecover) >= 2
	})
	// Nothing lost: a and b processed (a once: its idempotency key); the
	// poison record was inserted twice (before the crash, and when the
	// batch was delivered again) and both copies end in the
	// Unrecoverable-DLQ: a duplicate, never a loss.
	bodies := messages(t, rn2, s.unrecover)
	if b.processed("a") != 1 || b.processed("b") != 1 || len(bodies) != 2 {
		t.Fatalf("a processed %d, b processed %d, %d poison copies in the Unrecoverable-DLQ; want 1, 1, 2", b.processed("a"), b.processed("b"), len(bodies))
	}
	for _, body := range bodies {
		res, err := recovery.Resolve(ctx, rn2.Streams, []byte(body))
		if err != nil || res.Kind != recovery.KindInserted || string(res.Records[0].Kinesis.Data) != "poison" {
			t.Fatalf("unrecoverable message %s resolves to %+v, %v", body, res, err)
		}
	}
	t.Logf("a processed %d, b processed %d, poison in the Unrecoverable-DLQ %d time(s)", b.processed("a"), b.processed("b"), len(bodies))
}

// TestARecordTheRetryDLQCannotTakeSendsTheRestOfItsBatchThroughTheOnFailurePointer:
// a failed record that cannot be inserted into the Retry-DLQ (here too
// large for a retry envelope in a 256 KB queue message) stops the batch;
// the mapping (MaximumRetryAttempts 0) discards it and the rest of the
// batch to its OnFailure destination, the Retry-DLQ, as one pointer
// record, which HandleSQS resolves from the stream. Before, the flow's
// documentation left that destination out (its test too), and the
// records after the failed one were lost with a log line. CheckMapping
// now says so.
func TestARecordTheRetryDLQCannotTakeSendsTheRestOfItsBatchThroughTheOnFailurePointer(t *testing.T) {
	s := twoTier(t, "")
	rn, ctx := s.rn, context.Background()
	b := newBusiness()
	fn := &recovery.IdempotentUnsupported{Streams: rn.Streams, Queues: rn.Queues, RetryDLQ: s.retryDLQ, Handle: b.handle, Clock: s.clock}
	function.Register("flow-unsupported-large", fn)
	if _, err := rn.Functions.CreateFunction(ctx, function.Config{FunctionName: "proc", Handler: "flow-unsupported-large", Timeout: 30}); err != nil {
		t.Fatal(err)
	}
	big := "poison" + strings.Repeat("x", 300_000)
	if _, err := rn.Streams.PutRecords(ctx, "orders", []stream.PutRecordsRequestEntry{
		{PartitionKey: "k", Data: []byte("a")}, {PartitionKey: "k", Data: []byte(big)}, {PartitionKey: "k", Data: []byte("b")}, {PartitionKey: "k", Data: []byte("c")},
	}); err != nil {
		t.Fatal(err)
	}
	zero := 0
	cfg := mapping.Config{EventSourceArn: s.streamARN, FunctionName: "proc",
		StartingPosition: mapping.TrimHorizon, BatchSize: 4, MaximumBatchingWindowInSeconds: 1, MaximumRetryAttempts: &zero,
		FunctionResponseTypes: []string{mapping.ReportBatchItemFailures}}
	if err := fn.CheckMapping(cfg); err == nil || !strings.Contains(err.Error(), "OnFailure") {
		t.Fatalf("CheckMapping without the Retry-DLQ as OnFailure: %v", err)
	}
	cfg.DestinationConfig = &mapping.DestinationConfig{OnFailure: &mapping.OnFailure{Destination: rn.Queues.ARN("retry-dlq")}}
	if err := fn.CheckMapping(cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := rn.Mappings.CreateEventSourceMapping(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := rn.Mappings.CreateEventSourceMapping(ctx, mapping.Config{EventSourceArn: rn.Queues.ARN("retry-dlq"), FunctionName: "proc",
		BatchSize: 10, FunctionResponseTypes: []string{mapping.ReportBatchItemFailures}, RetryPolicy: policy}); err != nil {
		t.Fatal(err)
	}
	s.drain(t, "the pointer record unrecoverable", func() bool {
		return count(t, rn, s.unrecover) == 1 && count(t, rn, s.retryDLQ) == 0
	})
	// HandleSQS splits the pointer into one message per record (b and c
	// in retry envelopes, the large record in a one-record pointer): b and
	// c are processed once, the poison record alone reaches the
	// Unrecoverable-DLQ. (Before the split, b and c stayed behind it,
	// unprocessed, and reached the Unrecoverable-DLQ with it.) Nothing
	// lost, nothing processed twice.
	if b.processed("a") != 1 || b.processed("b") != 1 || b.processed("c") != 1 {
		t.Fatalf("a, b, c processed %d, %d, %d times; want 1, 1, 1", b.processed("a"), b.processed("b"), b.processed("c"))
	}
	res, err := recovery.Resolve(ctx, rn.Streams, []byte(messages(t, rn, s.unrecover)[0]))
	if err != nil || res.Kind != recovery.KindStreamBatch || len(res.Records) != 1 || string(res.Records[0].Kinesis.Data) != big {
		t.Fatalf("the unrecoverable message resolves to %s with %d records, %v; want the large record alone", res.Kind, len(res.Records), err)
	}
}
