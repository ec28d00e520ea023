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
