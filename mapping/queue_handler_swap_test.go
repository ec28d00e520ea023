package mapping_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/mapping"
)

// TestAFunctionReplacedByAStreamHandlerDeletesNoQueueMessage: a queue
// mapping whose function is replaced (PutFunction) by a handler of
// Kinesis events only does not invoke it (it would get an empty event,
// "succeed", and the messages would be deleted unprocessed): the batch
// stays in the queue, and the status says why. CreateEventSourceMapping
// refuses such a handler; the replacement came after.
func TestAFunctionReplacedByAStreamHandlerDeletesNoQueueMessage(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	arn := createQueue(t, rn, "swap", nil)
	r := newSQSRecorder(t, rn, function.Config{}, nil)
	m := createQueueMapping(t, rn, mapping.Config{EventSourceArn: arn, FunctionName: r.name})
	var seen atomic.Int32
	function.Register("swap-kinesis-only", function.KinesisHandler(func(ctx context.Context, ev events.KinesisEvent) (events.KinesisEventResponse, error) {
		seen.Add(int32(len(ev.Records)))
		return events.KinesisEventResponse{}, nil
	}))
	if _, err := rn.Functions.PutFunction(context.Background(), function.Config{FunctionName: r.name, Handler: "swap-kinesis-only"}); err != nil {
		t.Fatal(err)
	}
	send(t, rn, "swap", "important-1", "important-2")
	qs := waitQueueStatus(t, rn, m.UUID, "the problem reported", func(qs mapping.QueueStatus) bool {
		return strings.Contains(qs.LastProcessingResult, "takes no SQS events")
	})
	if qs.DeletedMessages != 0 || seen.Load() != 0 {
		t.Fatalf("deleted %d messages, the stream handler saw %d records; want none", qs.DeletedMessages, seen.Load())
	}
	if v, f := counts(t, rn, "swap"); v+f != 2 {
		t.Fatalf("the queue holds %d visible and %d in flight, want the 2 messages", v, f)
	}
}

// TestAnUpdateLetsARunningBatchEndAndBeDeleted: an
// UpdateEventSourceMapping while a batch's function runs does not cancel
// it: the function's success deletes the batch, which is invoked once.
// Before, stopping the runner cancelled the invocation's context; the
// batch was not deleted and came back after its visibility timeout, to be
// processed a second time.
func TestAnUpdateLetsARunningBatchEndAndBeDeleted(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	arn := createQueue(t, rn, "upd", map[string]string{"VisibilityTimeout": "3"})
	send(t, rn, "upd", "m1")
	started := make(chan struct{}, 10)
	release := make(chan struct{})
	var calls atomic.Int32
	r := newSQSRecorder(t, rn, function.Config{Timeout: 3}, nil)
	r.behave = func(ev events.SQSEvent) (events.SQSEventResponse, error) {
		if calls.Add(1) == 1 {
			started <- struct{}{}
			<-release
		}
		return events.SQSEventResponse{}, nil
	}
	m := createQueueMapping(t, rn, mapping.Config{EventSourceArn: arn, FunctionName: r.name})
	<-started
	if _, err := rn.Mappings.UpdateEventSourceMapping(context.Background(), mapping.Config{UUID: m.UUID, BatchSize: 5}); err != nil {
		t.Fatal(err)
	}
	close(release) // the running invocation succeeds
	testenv.Eventually(t, 20*time.Second, "the message deleted", func() bool {
		v, f := counts(t, rn, "upd")
		return v+f == 0
	})
	if n := calls.Load(); n != 1 {
		t.Fatalf("the function ran %d times for one message, want once", n)
	}
}

// TestAFunctionReplacedByAQueueHandlerCheckpointsNoStreamRecord: the
// stream form of the rule above. Before the fix a stream mapping whose
// function was replaced by an SQS handler invoked it with the records
// decoded as an empty SQS event; it "succeeded", and the records were
// checkpointed unprocessed (a silent loss, ReportBatchItemFailures
// ignored). Now the shard waits, the status says why, and a handler of
// stream events put back gets the records.
func TestAFunctionReplacedByAQueueHandlerCheckpointsNoStreamRecord(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	createStream(t, rn, "swp", 1)
	r := newRecorder(t, rn, function.Config{}, nil)
	m := createMapping(t, rn, mapping.Config{EventSourceArn: rn.Streams.ARN("swp"), FunctionName: r.name,
		FunctionResponseTypes: []string{mapping.ReportBatchItemFailures}})
	var seen atomic.Int32
	function.Register("swap-sqs-only", function.SQSHandler(func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		seen.Add(int32(len(ev.Records)))
		return events.SQSEventResponse{}, nil
	}))
	ctx := context.Background()
	if _, err := rn.Functions.PutFunction(ctx, function.Config{FunctionName: r.name, Handler: "swap-sqs-only"}); err != nil {
		t.Fatal(err)
	}
	put(t, rn, "swp", "k", "important-1", "important-2")
	testenv.Eventually(t, 20*time.Second, "the problem reported", func() bool {
		st, err := rn.Mappings.Status(m.UUID)
		return err == nil && len(st.Shards) == 1 && strings.Contains(st.Shards[0].LastProcessingResult, "takes no kinesis events")
	})
	if st, _ := rn.Mappings.Status(m.UUID); st.Shards[0].ProcessedRecords != 0 || seen.Load() != 0 {
		t.Fatalf("processed %d records, the SQS handler saw %d; want none", st.Shards[0].ProcessedRecords, seen.Load())
	}
	// The stream handler put back gets both records.
	if _, err := rn.Functions.PutFunction(ctx, function.Config{FunctionName: r.name, Handler: r.name}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, "both records delivered", func() bool { return r.processed() == 2 })
}

// TestAnUpdateLetsARunningStreamBatchEndAndInvokesItOnce: the stream form
// of the rule above. Before the fix UpdateEventSourceMapping cancelled
// the running invocation; the new runner invoked the same batch again at
// once while the cancelled call still ran (an in-process handler cannot
// be stopped): the batch ran twice, two at once on one shard. Now the
// running batch finishes (up to HandOverDrain) and is checkpointed first.
func TestAnUpdateLetsARunningStreamBatchEndAndInvokesItOnce(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	createStream(t, rn, "upd", 1)
	seqs := put(t, rn, "upd", "k", "r1", "r2", "r3")
	started := make(chan struct{}, 10)
	release := make(chan struct{})
	var calls, running, most atomic.Int32
	r := newRecorder(t, rn, function.Config{Timeout: 60}, func(ev events.KinesisEvent) (events.KinesisEventResponse, error) {
		n := running.Add(1)
		defer running.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		if calls.Add(1) == 1 {
			started <- struct{}{}
			<-release
		}
		return events.KinesisEventResponse{}, nil
	})
	m := createMapping(t, rn, mapping.Config{EventSourceArn: rn.Streams.ARN("upd"), FunctionName: r.name, BatchSize: 10})
	<-started
	updated := make(chan error, 1)
	go func() {
		_, err := rn.Mappings.UpdateEventSourceMapping(context.Background(), mapping.Config{UUID: m.UUID, BatchSize: 5})
		updated <- err
	}()
	time.Sleep(300 * time.Millisecond) // the update is under way (if not yet, the test proves less, never fails wrongly)
	close(release)
	if err := <-updated; err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 20*time.Second, "the batch processed and checkpointed", func() bool {
		st, err := rn.Mappings.Status(m.UUID)
		return r.processed() == 3 && err == nil && len(st.Shards) == 1 && st.Shards[0].Checkpoint > seqs[2]
	})
	if n, c := calls.Load(), most.Load(); n != 1 || c != 1 {
		t.Fatalf("the batch was invoked %d times, %d at once; want once", n, c)
	}
}
