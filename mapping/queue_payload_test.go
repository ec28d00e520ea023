package mapping_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/mapping"
	"github.com/runnel-dev/runnel/queue"
)

// The 6 MB rule: "Lambda ... invokes the function when ... the batch size
// is reached, the batching window expires, or the payload reaches 6 MB"
// (with-sqs.html; SPEC-aws-semantics.md §2.1, [ESM]). Before runnel cut
// received batches, ten 900 KB messages made one 9 MB event.

// sendBig sends n messages of about 900 KB, one by one (a batch send
// takes at most 1 MiB), with bodies starting "<prefix><index, 2 digits>";
// on a FIFO queue all in group prefix.
func sendBig(t *testing.T, rn *runnel.Runnel, name, prefix string, n int) {
	t.Helper()
	for i := range n {
		in := queue.SendMessageInput{MessageBody: fmt.Sprintf("%s%02d", prefix, i) + strings.Repeat("x", 900_000)}
		if strings.HasSuffix(name, ".fifo") {
			in.MessageGroupId, in.MessageDeduplicationId = prefix, fmt.Sprintf("%s%02d", prefix, i)
		}
		if _, err := rn.Queues.SendMessage(context.Background(), name, in); err != nil {
			t.Fatal(err)
		}
	}
}

// heads returns each invocation's bodies cut to their first three
// characters, and fails the test if an invocation's event passes 6 MB.
func heads(t *testing.T, r *sqsRecorder) [][]string {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([][]string, len(r.events))
	for i, ev := range r.events {
		if b, _ := json.Marshal(ev); len(b) > mapping.MaxBatchPayloadBytes {
			t.Fatalf("invocation %d: event of %d bytes, over Lambda's 6 MB (%d)", i, len(b), mapping.MaxBatchPayloadBytes)
		}
		for _, m := range ev.Records {
			out[i] = append(out[i], m.Body[:3])
		}
	}
	return out
}

func TestQueueBatchesStayWithinSixMegabytes(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	arn := createQueue(t, rn, "big", map[string]string{"MaximumMessageSize": "1048576", "VisibilityTimeout": "60"})
	sendBig(t, rn, "big", "m", 10)
	r := newSQSRecorder(t, rn, function.Config{}, nil)
	// A batching window: one poller gathers at a time, so the ten
	// messages are received as one batch of BatchSize 10.
	m := createQueueMapping(t, rn, mapping.Config{EventSourceArn: arn, FunctionName: r.name, BatchSize: 10,
		MaximumBatchingWindowInSeconds: 1})
	waitQueueStatus(t, rn, m.UUID, "all deleted", func(qs mapping.QueueStatus) bool { return qs.DeletedMessages == 10 })
	calls := heads(t, r)
	seen := map[string]int{}
	for _, c := range calls {
		for _, b := range c {
			seen[b]++
		}
	}
	if len(seen) != 10 || len(calls) < 2 {
		t.Fatalf("invocations %v: want the ten messages, each once, in at least two events", calls)
	}
	for b, n := range seen {
		if n != 1 {
			t.Fatalf("%s delivered %d times: %v", b, n, calls)
		}
	}
	wantCounts(t, rn, "big", 0, 0)
}

func TestQueueFIFOBatchCutAtSixMegabytesKeepsGroupOrder(t *testing.T) {
	clock := newFakeClock()
	rn := testenv.Start(t, testenv.Options{Clock: clock})
	arn := createQueue(t, rn, "big.fifo", map[string]string{"FifoQueue": "true", "MaximumMessageSize": "1048576", "VisibilityTimeout": "30"})
	sendBig(t, rn, "big.fifo", "a", 10)
	failed := false
	r := newSQSRecorder(t, rn, function.Config{}, func(ev events.SQSEvent) (events.SQSEventResponse, error) {
		var resp events.SQSEventResponse
		for _, m := range ev.Records {
			if strings.HasPrefix(m.Body, "a02") && !failed {
				failed = true
				resp.BatchItemFailures = []events.SQSBatchItemFailure{{ItemIdentifier: m.MessageId}}
			}
		}
		return resp, nil
	})
	m := createQueueMapping(t, rn, mapping.Config{EventSourceArn: arn, FunctionName: r.name, ScalingConfig: scaling(2),
		FunctionResponseTypes: []string{mapping.ReportBatchItemFailures}})
	qs := waitQueueStatus(t, rn, m.UUID, "first batch resolved", func(qs mapping.QueueStatus) bool { return qs.DeletedMessages+qs.FailedMessages == 10 })
	// Six 900 KB records fit in 6 MB, seven do not. a02 failed: a03..a05
	// stay behind it, and so do a06..a09, which were received in the
	// same batch but cut into a second invocation that must not run.
	if got, want := heads(t, r), [][]string{{"a00", "a01", "a02", "a03", "a04", "a05"}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("invocations %v, want %v (a06..a09 held behind a02)", got, want)
	}
	if qs.DeletedMessages != 2 {
		t.Fatalf("status %+v, want a00 and a01 deleted", qs)
	}
	// Two steps: the pollers' 20 s long polls end and start again, so the
	// receive that returns a02 began 10 s before (a later part is invoked
	// only while a function timeout of visibility is left, counted from
	// the start of that receive).
	queueIdle(t, clock, 2)
	clock.Advance(20 * time.Second)
	queueIdle(t, clock, 2)
	clock.Advance(10 * time.Second)
	waitQueueStatus(t, rn, m.UUID, "all deleted", func(qs mapping.QueueStatus) bool { return qs.DeletedMessages == 10 })
	want := [][]string{
		{"a00", "a01", "a02", "a03", "a04", "a05"},
		{"a02", "a03", "a04", "a05", "a06", "a07"},
		{"a08", "a09"},
	}
	if got := heads(t, r); !reflect.DeepEqual(got, want) {
		t.Fatalf("invocations %v, want %v", got, want)
	}
	wantCounts(t, rn, "big.fifo", 0, 0)
}

// The stream form of the 6 MB rule: a Kinesis event holds records whose
// JSON together stays within 6 MB. Before the fix each record was counted
// as its data in base64 plus its key plus a flat 400 bytes, about 145
// short of its event record (the eventID and sequenceNumber, two ARNs,
// the region): 10,000 records of 100 bytes made one event of 6.86 MB.
func TestStreamBatchesStayWithinSixMegabytes(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	createStream(t, rn, "big", 1)
	var mu sync.Mutex
	var sizes []int
	records := 0
	r := newRecorder(t, rn, function.Config{}, func(ev events.KinesisEvent) (events.KinesisEventResponse, error) {
		b, _ := json.Marshal(ev)
		mu.Lock()
		sizes = append(sizes, len(b))
		records += len(ev.Records)
		mu.Unlock()
		return events.KinesisEventResponse{}, nil
	})
	data := strings.Repeat("x", 100)
	for i := range 20 {
		batch := make([]string, 500)
		for j := range batch {
			batch[j] = fmt.Sprintf("%04d%s", i*500+j, data[4:])
		}
		put(t, rn, "big", fmt.Sprintf("k%d", i), batch...)
	}
	createMapping(t, rn, mapping.Config{EventSourceArn: rn.Streams.ARN("big"), FunctionName: r.name, BatchSize: 10000, MaximumBatchingWindowInSeconds: 2})
	testenv.Eventually(t, 60*time.Second, "every record delivered", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return records >= 10000
	})
	mu.Lock()
	defer mu.Unlock()
	for i, n := range sizes {
		if n > mapping.MaxBatchPayloadBytes {
			t.Fatalf("invocation %d: event of %d bytes, over Lambda's 6 MB (%d); sizes %v", i, n, mapping.MaxBatchPayloadBytes, sizes)
		}
	}
	if len(sizes) < 2 {
		t.Fatalf("one invocation of %d records, %v bytes: the 6 MB cut never ran", records, sizes)
	}
}
