package recovery_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/queue"
	"github.com/runnel-dev/runnel/recovery"
)

// TestARedriveStoppedAsItsTaskEndsReportsWhatItMoved: `runnel dlq
// redrive` interrupted (Ctrl-C) cancels its message move task
// (CancelMessageMoveTask) and reports what it moved. A task that ended
// between the redrive's last look and the cancel is not running any more,
// so the cancel is refused (ResourceNotFoundException, as SQS refuses a
// task that is not running). Redrive ignored that and reported "moved 0
// (CANCELLED)" though every message had moved; now it reports how the
// task ended and what it moved.
func TestARedriveStoppedAsItsTaskEndsReportsWhatItMoved(t *testing.T) {
	e := newDLQEnv(t)
	e.deadLetter(t, "a", "b", "c", "d")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dlqArn := e.rn.Queues.ARN("work-dlq")
	status := func() queue.MessageMoveTask {
		list, err := e.rn.Queues.ListMessageMoveTasks(context.Background(), dlqArn)
		if err != nil || len(list) == 0 {
			t.Fatalf("ListMessageMoveTasks = %v, %v", list, err)
		}
		return list[0]
	}
	fired := false
	res, err := recovery.Redrive(ctx, e.rn.Queues, "work-dlq", recovery.RedriveOptions{Rate: 2, Poll: time.Hour,
		Progress: func(moved, total int64) {
			if fired {
				return
			}
			fired = true
			// The operator presses Ctrl-C while the task runs; before the
			// redrive gets to cancel it, the task ends.
			testenv.Eventually(t, 10*time.Second, "2 moved", func() bool { return status().ApproximateNumberOfMessagesMoved == 2 })
			cancel()
			e.clock.Advance(time.Second)
			testenv.Eventually(t, 10*time.Second, "the task completed", func() bool { return status().Status == queue.MoveTaskCompleted })
		}})
	if err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	if res == nil || res.Status != queue.MoveTaskCompleted || res.ApproximateNumberOfMessagesMoved != 4 {
		t.Fatalf("Redrive = %+v; want COMPLETED with 4 moved", res)
	}
}
