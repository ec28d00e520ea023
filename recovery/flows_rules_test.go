package recovery_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/mapping"
	"github.com/runnel-dev/runnel/recovery"
	"github.com/runnel-dev/runnel/stream"
)

// counting is a handler that is NOT idempotent (the IdempotentUnsupported
// flow's kind): it counts every run and every successful run of a record,
// and the attempt numbers it was given. Records whose data starts with
// "poison" always fail, those in failOnce fail their first run, and those
// in panicOnce panic on their first run. Data is keyed by its first 10
// bytes.
type counting struct {
	mu        sync.Mutex
	tries     map[string]int
	done      map[string]int
	attempts  map[string][]int
	failOnce  map[string]bool
	panicOnce map[string]bool
}

func newCounting() *counting {
	return &counting{tries: map[string]int{}, done: map[string]int{}, attempts: map[string][]int{},
		failOnce: map[string]bool{}, panicOnce: map[string]bool{}}
}

func key10(d string) string { return d[:min(len(d), 10)] }

func (c *counting) handle(ctx context.Context, rec events.KinesisEventRecord, attempt int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := key10(string(rec.Kinesis.Data))
	c.tries[d]++
	c.attempts[d] = append(c.attempts[d], attempt)
	switch {
	case strings.HasPrefix(d, "poison"):
		return errString("poison")
	case c.failOnce[d] && c.tries[d] == 1:
		return errString("fails once")
	case c.panicOnce[d] && c.tries[d] == 1:
		panic("panics once")
	}
	c.done[d]++
	return nil
}

type errString string

func (e errString) Error() string { return string(e) }

func (c *counting) get(m map[string]int, d string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return m[d]
}

func (c *counting) attemptsOf(d string) []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.attempts[d])
}

// flow sets up the function "proc" (handler name) on one of the two flows
// with c's handler, a stream mapping (the flow's settings, BatchSize
// batch, the Retry-DLQ as OnFailure) and the Retry-DLQ mapping (policy).
func (s *setup) flow(t *testing.T, name string, unsupported bool, c *counting, batchSize int) {
	t.Helper()
	rn, ctx := s.rn, context.Background()
	zero := 0
	cfg := mapping.Config{EventSourceArn: s.streamARN, FunctionName: "proc",
		StartingPosition: mapping.TrimHorizon, BatchSize: batchSize, MaximumBatchingWindowInSeconds: 1, MaximumRetryAttempts: &zero,
		DestinationConfig: &mapping.DestinationConfig{OnFailure: &mapping.OnFailure{Destination: rn.Queues.ARN("retry-dlq")}}}
	if unsupported {
		fn := &recovery.IdempotentUnsupported{Streams: rn.Streams, Queues: rn.Queues, RetryDLQ: s.retryDLQ, Handle: c.handle, Clock: s.clock}
		cfg.FunctionResponseTypes = []string{mapping.ReportBatchItemFailures}
		if err := fn.CheckMapping(cfg); err != nil {
			t.Fatal(err)
		}
		function.Register(name, fn)
	} else {
		cfg.BisectBatchOnFunctionError = true
		function.Register(name, &recovery.IdempotentSupported{Streams: rn.Streams, Handle: c.handle})
	}
	if _, err := rn.Functions.CreateFunction(ctx, function.Config{FunctionName: "proc", Handler: name, Timeout: 30}); err != nil {
		t.Fatal(err)
	}
	if _, err := rn.Mappings.CreateEventSourceMapping(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := rn.Mappings.CreateEventSourceMapping(ctx, mapping.Config{EventSourceArn: rn.Queues.ARN("retry-dlq"), FunctionName: "proc",
		BatchSize: 10, FunctionResponseTypes: []string{mapping.ReportBatchItemFailures}, RetryPolicy: policy}); err != nil {
		t.Fatal(err)
	}
}

func (s *setup) put(t *testing.T, data ...string) {
	t.Helper()
	var es []stream.PutRecordsRequestEntry
	for _, d := range data {
		es = append(es, stream.PutRecordsRequestEntry{PartitionKey: "k", Data: []byte(d)})
	}
	if _, err := s.rn.Streams.PutRecords(context.Background(), "orders", es); err != nil {
		t.Fatal(err)
	}
}

// TestAPoisonRecordRunsMaxAttemptsTimesInAllInBothFlows: the RetryPolicy's
// MaxAttempts counts every attempt, the stream's first one included, and
// a record reaches the Retry-DLQ as a pointer (IdempotentSupported) or in
// a retry envelope (IdempotentUnsupported). Before, the queue mapping
// counted a pointer message's attempt as its receive count while the
// flow told the handler receive count + 1: with MaxAttempts 4 a poison
// record ran 5 times through a pointer (attempts 1 2 3 4 5) and 4 through
// an envelope (1 2 3 4). Now a message whose body is an on-failure record
// counts the stream's attempt: 4 runs, attempts 1 2 3 4, in both.
func TestAPoisonRecordRunsMaxAttemptsTimesInAllInBothFlows(t *testing.T) {
	for _, unsupported := range []bool{false, true} {
		t.Run(map[bool]string{false: "IdempotentSupported pointer", true: "IdempotentUnsupported envelope"}[unsupported], func(t *testing.T) {
			s := twoTier(t, "")
			c := newCounting()
			s.put(t, "poison")
			s.flow(t, "attempts-"+map[bool]string{false: "s", true: "u"}[unsupported], unsupported, c, 1)
			s.drain(t, "poison unrecoverable", func() bool { return count(t, s.rn, s.unrecover) == 1 && count(t, s.rn, s.retryDLQ) == 0 })
			want := []int{1, 2, 3, 4}
			if got := c.attemptsOf("poison"); !slices.Equal(got, want) || policy.MaxAttempts != len(want) {
				t.Fatalf("MaxAttempts %d: the poison record ran with attempts %v; want %v", policy.MaxAttempts, got, want)
			}
		})
	}
}

// TestIdempotentUnsupportedProcessesEachRecordOfAPointerOnce: in the flow
// for records that must not be processed twice, a pointer record reaches
// the Retry-DLQ when a failed record cannot be inserted (here too large
// for a retry envelope): it points at that record and the rest of its
// batch. Before, HandleSQS ran the pointer's records in order, stopped at
// the first failure, and the whole message was retried: every record
// before the failing one ran again at each retry (stream a, a 300 KB
// record that fails once, b that fails once, c: the large record was
// processed twice). Now the pointer is split on its receive into one
// message per record (b and c in retry envelopes, the large record in a
// one-record pointer): each record is processed once.
func TestIdempotentUnsupportedProcessesEachRecordOfAPointerOnce(t *testing.T) {
	s := twoTier(t, "")
	c := newCounting()
	big := "onceBIG" + strings.Repeat("x", 300_000)
	c.failOnce[key10(big)], c.failOnce["b"] = true, true
	s.put(t, "a", big, "b", "c")
	s.flow(t, "split-pointer", true, c, 4)
	s.drain(t, "c processed and the Retry-DLQ empty", func() bool {
		return c.get(c.done, "c") >= 1 && c.get(c.done, key10(big)) >= 1 && count(t, s.rn, s.retryDLQ) == 0
	})
	s.clock.Advance(time.Minute) // any message left would come back
	time.Sleep(100 * time.Millisecond)
	for _, d := range []string{"a", key10(big), "b", "c"} {
		if n := c.get(c.done, d); n != 1 {
			t.Errorf("%s processed %d times; want 1 (attempts %v)", d, n, c.attemptsOf(d))
		}
	}
	if n := count(t, s.rn, s.unrecover); n != 0 {
		t.Errorf("%d messages in the Unrecoverable-DLQ; want 0", n)
	}
	// The large record failed on the stream (attempt 1) and succeeded on
	// the first receive of its one-record pointer (attempt 2); b, never
	// handed to the function on the stream, is numbered as a retry.
	if got := c.attemptsOf(key10(big)); !slices.Equal(got, []int{1, 2}) {
		t.Errorf("the large record's attempts %v; want [1 2]", got)
	}
	if got := c.attemptsOf("b"); !slices.Equal(got, []int{2, 3}) {
		t.Errorf("b's attempts %v; want [2 3]", got)
	}
}

// TestAPanicInTheRecordHandlerIsThatRecordsFailure: a panic in Handle on
// the stream is the failure of that record only. Before, it failed the
// whole invocation: in the IdempotentUnsupported flow the mapping
// (MaximumRetryAttempts 0) then sent the whole batch to the Retry-DLQ as
// a pointer, and a, processed before the panic, was processed again. Now
// the panicking record is inserted into the Retry-DLQ like any failed
// record, the batch goes on, and each record is processed once.
func TestAPanicInTheRecordHandlerIsThatRecordsFailure(t *testing.T) {
	s := twoTier(t, "")
	c := newCounting()
	c.panicOnce["p"] = true
	s.put(t, "a", "p", "b")
	s.flow(t, "panic-once", true, c, 3)
	s.drain(t, "p and b processed and the Retry-DLQ empty", func() bool {
		return c.get(c.done, "p") >= 1 && c.get(c.done, "b") >= 1 && count(t, s.rn, s.retryDLQ) == 0
	})
	s.clock.Advance(time.Minute)
	time.Sleep(100 * time.Millisecond)
	for _, d := range []string{"a", "p", "b"} {
		if n := c.get(c.done, d); n != 1 {
			t.Errorf("%s processed %d times; want 1 (attempts %v)", d, n, c.attemptsOf(d))
		}
	}
	if got := c.attemptsOf("p"); !slices.Equal(got, []int{1, 2}) {
		t.Errorf("p's attempts %v; want [1 2] (the stream, then its retry envelope)", got)
	}
}

// crashAfterSplit is an IdempotentUnsupported whose first HandleSQS that
// splits a pointer does not return: once the split messages are sent it
// signals split and waits for its context to end (the process dying
// before the queue mapping deletes the pointer).
type crashAfterSplit struct {
	restartable
	once  sync.Once
	split chan struct{}
}

func (c *crashAfterSplit) HandleSQS(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	resp, err := c.restartable.HandleSQS(ctx, ev)
	pointer := false
	for _, m := range ev.Records {
		pointer = pointer || strings.Contains(m.Body, "KinesisBatchInfo") && strings.Contains(m.Body, `"batchSize":3`)
	}
	if pointer {
		hold := false
		c.once.Do(func() { hold = true })
		if hold {
			close(c.split)
			<-ctx.Done()
			return events.SQSEventResponse{}, ctx.Err()
		}
	}
	return resp, err
}

// TestACrashBetweenAPointersSplitAndItsDeleteSendsItsRecordsTwiceAtWorst:
// what the split of a pointer (IdempotentUnsupported) leaves to
// at-least-once delivery. The process dies after the split messages are
// sent and before the pointer is deleted: the pointer comes back and is
// split again, so each of its records has two messages. Nothing is lost,
// and a record is processed twice at worst (once per copy), as a crash
// between InsertRetry and the checkpoint makes the inserted record; the
// record before the pointer (a) is processed once.
func TestACrashBetweenAPointersSplitAndItsDeleteSendsItsRecordsTwiceAtWorst(t *testing.T) {
	dir := t.TempDir()
	s := twoTier(t, dir)
	rn, ctx := s.rn, context.Background()
	c := newCounting()
	big := "onceBIG" + strings.Repeat("x", 300_000)
	c.failOnce[key10(big)] = true
	h := &crashAfterSplit{restartable: restartable{ready: make(chan struct{})}, split: make(chan struct{})}
	h.fn.Store(&recovery.IdempotentUnsupported{Streams: rn.Streams, Queues: rn.Queues, RetryDLQ: s.retryDLQ, Handle: c.handle, Clock: s.clock})
	function.Register("split-crash", h)
	if _, err := rn.Functions.CreateFunction(ctx, function.Config{FunctionName: "proc", Handler: "split-crash", Timeout: 30}); err != nil {
		t.Fatal(err)
	}
	s.put(t, "a", big, "b", "c")
	zero := 0
	sm, err := rn.Mappings.CreateEventSourceMapping(ctx, mapping.Config{EventSourceArn: s.streamARN, FunctionName: "proc",
		StartingPosition: mapping.TrimHorizon, BatchSize: 4, MaximumBatchingWindowInSeconds: 1, MaximumRetryAttempts: &zero,
		FunctionResponseTypes: []string{mapping.ReportBatchItemFailures},
		DestinationConfig:     &mapping.DestinationConfig{OnFailure: &mapping.OnFailure{Destination: rn.Queues.ARN("retry-dlq")}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rn.Mappings.CreateEventSourceMapping(ctx, mapping.Config{EventSourceArn: rn.Queues.ARN("retry-dlq"), FunctionName: "proc",
		BatchSize: 1, FunctionResponseTypes: []string{mapping.ReportBatchItemFailures}, RetryPolicy: policy}); err != nil {
		t.Fatal(err)
	}
	<-h.split
	// The stream mapping checkpoints its batch (after sending the pointer):
	// the crash is the split's alone.
	testenv.Eventually(t, 20*time.Second, "the stream mapping checkpointed", func() bool {
		st, _ := rn.Mappings.Status(sm.UUID)
		_, last, _ := rn.Streams.ShardBounds(ctx, "orders", "shardId-000000000000")
		end, _ := rn.Streams.SequenceNumber(ctx, "orders", "shardId-000000000000", last+1)
		return len(st.Shards) == 1 && st.Shards[0].Checkpoint == end
	})
	if n := count(t, rn, s.retryDLQ); n < 1 {
		t.Fatal("the pointer is not in the Retry-DLQ at the crash")
	}
	h.fn.Store(nil)
	rn.Crash()

	rn2 := testenv.Start(t, testenv.Options{Clock: s.clock, Dir: dir})
	h.fn.Store(&recovery.IdempotentUnsupported{Streams: rn2.Streams, Queues: rn2.Queues, RetryDLQ: s.retryDLQ, Handle: c.handle, Clock: s.clock})
	close(h.ready)
	s.rn = rn2
	s.drain(t, "the Retry-DLQ empty", func() bool {
		return c.get(c.done, "c") >= 1 && count(t, rn2, s.retryDLQ) == 0
	})
	if n := c.get(c.done, "a"); n != 1 {
		t.Errorf("a processed %d times; want 1", n)
	}
	for _, d := range []string{key10(big), "b", "c"} {
		if n := c.get(c.done, d); n < 1 || n > 2 {
			t.Errorf("%s processed %d times; want 1 or 2 (at-least-once: the split ran twice)", d, n)
		}
	}
	if n := count(t, rn2, s.unrecover); n != 0 {
		t.Errorf("%d messages in the Unrecoverable-DLQ; want 0", n)
	}
	t.Logf("processed: a %d, large %d, b %d, c %d", c.get(c.done, "a"), c.get(c.done, key10(big)), c.get(c.done, "b"), c.get(c.done, "c"))
}

// TestIdempotentUnsupportedRefusesAParallelizationFactorAboveOne: with
// ParallelizationFactor above 1 a stream batch holds one lane's records
// (a subset of the shard's partition keys), but the OnFailure pointer of
// its failure names a range of the shard's sequence numbers (Lambda's
// Kinesis on-failure record: StartSequenceNumber, EndSequenceNumber),
// which holds the other lanes' records too, processed already; the flow's
// split would send them to the Retry-DLQ and process them again.
// CheckMapping accepted it; it now names the field.
func TestIdempotentUnsupportedRefusesAParallelizationFactorAboveOne(t *testing.T) {
	s := twoTier(t, "")
	rn := s.rn
	fn := &recovery.IdempotentUnsupported{Streams: rn.Streams, Queues: rn.Queues, RetryDLQ: s.retryDLQ, Handle: newCounting().handle, Clock: s.clock}
	zero := 0
	cfg := mapping.Config{EventSourceArn: s.streamARN, FunctionName: "proc", StartingPosition: mapping.TrimHorizon,
		MaximumRetryAttempts: &zero, FunctionResponseTypes: []string{mapping.ReportBatchItemFailures},
		DestinationConfig: &mapping.DestinationConfig{OnFailure: &mapping.OnFailure{Destination: rn.Queues.ARN("retry-dlq")}}}
	for _, pf := range []int{0, 1} {
		cfg.ParallelizationFactor = pf
		if err := fn.CheckMapping(cfg); err != nil {
			t.Fatalf("ParallelizationFactor %d: %v", pf, err)
		}
	}
	cfg.ParallelizationFactor = 2
	if err := fn.CheckMapping(cfg); err == nil || !strings.Contains(err.Error(), "ParallelizationFactor must be 1, not 2") {
		t.Fatalf("CheckMapping with ParallelizationFactor 2 = %v; want it refused, naming the field", err)
	}
}
