package mapping_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/mapping"
)

// TestAStoppedBatchingWindowProcessesTheBatchItHolds: a message reaches
// the queue's dead-letter queue only after maxReceiveCount failed
// processing attempts (SPEC-aws-semantics.md §2.2;
// lambda/latest/dg/services-sqs-errorhandling.html). An
// UpdateEventSourceMapping or a disable while a poller gathers a batch in
// its MaximumBatchingWindowInSeconds closes the window at once and the
// batch is invoked and deleted, as a running batch is let finish on an
// update. Before, the poller dropped the messages it held: they stayed
// invisible for the visibility timeout with one receive spent, and with
// maxReceiveCount 1 they went to the dead-letter queue never invoked.
func TestAStoppedBatchingWindowProcessesTheBatchItHolds(t *testing.T) {
	for _, tc := range []struct {
		name   string
		update mapping.Config
	}{
		{"UpdateEventSourceMapping", mapping.Config{BatchSize: 50, MaximumBatchingWindowInSeconds: 20}},
		{"disable", mapping.Config{Enabled: ptr(false), BatchSize: 100, MaximumBatchingWindowInSeconds: 20}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := newFakeClock()
			rn := testenv.Start(t, testenv.Options{Clock: clock})
			dlq := createQueue(t, rn, "dlq", nil)
			arn := createQueue(t, rn, "src", map[string]string{"VisibilityTimeout": "30", "RedrivePolicy": redrive(dlq, 1)})
			r := newSQSRecorder(t, rn, function.Config{}, nil)
			m := createQueueMapping(t, rn, mapping.Config{EventSourceArn: arn, FunctionName: r.name, BatchSize: 100, MaximumBatchingWindowInSeconds: 20})
			send(t, rn, "src", "a")
			testenv.Eventually(t, wait, "a in flight", func() bool { _, nv := counts(t, rn, "src"); return nv == 1 })
			if r.count() != 0 {
				t.Fatal("invoked before the window ended")
			}
			tc.update.UUID = m.UUID
			if _, err := rn.Mappings.UpdateEventSourceMapping(context.Background(), tc.update); err != nil {
				t.Fatal(err)
			}
			// No clock advance: the stopped window closes at once.
			testenv.Eventually(t, wait, "a invoked and deleted", func() bool {
				v, nv := counts(t, rn, "src")
				return r.count() == 1 && v+nv == 0
			})
			clock.Advance(31 * time.Second)
			clock.Advance(25 * time.Second)
			if got := r.calls(); !reflect.DeepEqual(got, [][]string{{"a"}}) {
				t.Fatalf("invocations %v, want [[a]]", got)
			}
			if ev, _ := r.event(0); !reflect.DeepEqual(receiveCounts(ev), []string{"1"}) {
				t.Fatalf("ApproximateReceiveCount %v, want [1]", receiveCounts(ev))
			}
			if got := bodies(receiveAll(t, rn, "dlq")); len(got) != 0 {
				t.Fatalf("dead-letter queue holds %v, want nothing", got)
			}
			wantCounts(t, rn, "src", 0, 0)
		})
	}
}
