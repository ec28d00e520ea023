package mapping_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/mapping"
	"github.com/runnel-dev/runnel/queue"
)

// TestACutBatchKeepsWithinMaximumConcurrency: ScalingConfig's
// MaximumConcurrency "limits the number of concurrent instances of the
// function that an Amazon SQS event source can invoke"
// (lambda/latest/dg/services-sqs-scaling.html; SPEC-aws-semantics.md
// §2.2). A batch cut at 6 MB into parts is no exception: its parts share
// the mapping's MaximumConcurrency slots with the other pollers. Before,
// each poller invoked all the parts of its cut batch at once: with
// MaximumConcurrency 2, 14 messages of 1,000,000 bytes (BatchSize 14)
// ran 3 invocations at once. Each message is still invoked and deleted
// once.
func TestACutBatchKeepsWithinMaximumConcurrency(t *testing.T) {
	var slotWaited atomic.Bool
	mapping.SetQueueSlotWait(func() { slotWaited.Store(true) })
	t.Cleanup(func() { mapping.SetQueueSlotWait(nil) })
	rn := testenv.Start(t, testenv.Options{})
	arn := createQueue(t, rn, "big", map[string]string{"MaximumMessageSize": "1048576", "VisibilityTimeout": "600"})
	for i := range 14 {
		body := string(rune('a'+i)) + strings.Repeat("x", 1_000_000-1)
		if _, err := rn.Queues.SendMessage(context.Background(), "big", queue.SendMessageInput{MessageBody: body}); err != nil {
			t.Fatal(err)
		}
	}
	release := make(chan struct{})
	r := newSQSRecorder(t, rn, function.Config{Timeout: 120}, func(events.SQSEvent) (events.SQSEventResponse, error) {
		<-release // hold every invocation until the test has seen how many run
		return events.SQSEventResponse{}, nil
	})
	createQueueMapping(t, rn, mapping.Config{EventSourceArn: arn, FunctionName: r.name, BatchSize: 14,
		MaximumBatchingWindowInSeconds: 1, ScalingConfig: scaling(2)})
	// Either a part waits for a slot, or a third invocation runs.
	testenv.Eventually(t, wait, "a part waiting or 3 invocations running", func() bool {
		return slotWaited.Load() || r.running.Load() > 2
	})
	close(release)
	testenv.Eventually(t, wait, "all deleted", func() bool { v, nv := counts(t, rn, "big"); return v+nv == 0 })
	if p := r.peak.Load(); p > 2 {
		t.Fatalf("peak concurrent invocations = %d, want at most MaximumConcurrency 2", p)
	}
	seen := map[string]int{}
	calls := heads(t, r)
	for _, c := range calls {
		for _, b := range c {
			seen[b[:1]]++
		}
	}
	if len(seen) != 14 || len(calls) < 3 {
		t.Fatalf("invocations %v: want the 14 messages, each once, in at least 3 events", calls)
	}
	for b, n := range seen {
		if n != 1 {
			t.Fatalf("%s invoked %d times", b, n)
		}
	}
}
