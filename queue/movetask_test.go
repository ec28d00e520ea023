package queue_test

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/queue"
)

// deadLetter sends n messages to src (maxReceiveCount 1) and fails each
// once, so that they are all moved to its dead-letter queue.
func (e *env) deadLetter(src string, n int) []string {
	e.t.Helper()
	var ids []string
	for i := 0; i < n; i++ {
		ids = append(ids, e.send(src, "m"+strconv.Itoa(i)).MessageId)
	}
	for got := 0; got < n; {
		got += len(e.receive(src, queue.ReceiveMessageInput{MaxNumberOfMessages: 10, VisibilityTimeout: ptr(0)}))
	}
	if m := e.receive(src, queue.ReceiveMessageInput{MaxNumberOfMessages: 10}); len(m) != 0 {
		e.t.Fatalf("messages were not dead-lettered: %d received", len(m))
	}
	return ids
}

func (e *env) task(arn string) queue.MessageMoveTask {
	e.t.Helper()
	list, err := e.svc.ListMessageMoveTasks(e.ctx, arn)
	if err != nil || len(list) == 0 {
		e.t.Fatalf("ListMessageMoveTasks = %v, %v", list, err)
	}
	return list[0]
}

// waitMoved waits until the latest task of arn moved n messages and
// waits on the clock (or ended).
func (e *env) waitMoved(arn string, n int64, status string) {
	e.t.Helper()
	testenv.Eventually(e.t, 5*time.Second, "messages moved", func() bool {
		t := e.task(arn)
		return t.ApproximateNumberOfMessagesMoved == n && t.Status == status
	})
	if status == queue.MoveTaskRunning {
		ctx, cancel := context.WithTimeout(e.ctx, 5*time.Second)
		defer cancel()
		if err := e.clock.BlockUntilContext(ctx, 1); err != nil {
			e.t.Fatal("the task does not wait on the clock")
		}
	}
}

func TestMessageMoveTask(t *testing.T) {
	t.Run("moves dead letters back to their source at MaxNumberOfMessagesPerSecond", func(t *testing.T) {
		e := newEnv(t)
		dlq := e.create("dlq", nil)
		src := e.create("src", map[string]string{"RedrivePolicy": redrivePolicy(e, "dlq", 1)})
		ids := e.deadLetter(src, 5)
		dlqArn := e.svc.ARN("dlq")
		handle, err := e.svc.StartMessageMoveTask(e.ctx, dlqArn, "", 2)
		if err != nil {
			t.Fatal(err)
		}
		e.waitMoved(dlqArn, 2, queue.MoveTaskRunning)
		if c := e.counts(src); c[0] != "2" {
			t.Fatalf("source counts after the first second = %v", c)
		}
		e.clock.Advance(time.Second)
		e.waitMoved(dlqArn, 4, queue.MoveTaskRunning)
		e.clock.Advance(time.Second)
		e.waitMoved(dlqArn, 5, queue.MoveTaskCompleted)
		task := e.task(dlqArn)
		if task.ApproximateNumberOfMessagesToMove != 5 || task.TaskHandle != "" || task.SourceArn != dlqArn ||
			task.MaxNumberOfMessagesPerSecond != 2 || task.StartedTimestamp != epoch.UnixMilli() {
			t.Fatalf("task = %+v", task)
		}
		if _, err := e.svc.CancelMessageMoveTask(e.ctx, handle); !awserrIs(err, awserr.ErrResourceNotFound) {
			t.Fatalf("cancelling a completed task = %v", err)
		}
		if c := e.counts(dlq); c != [3]string{"0", "0", "0"} {
			t.Fatalf("dead-letter counts = %v", c)
		}
		m := e.receive(src, queue.ReceiveMessageInput{MaxNumberOfMessages: 10})
		if len(m) != 5 {
			t.Fatalf("source has %d messages", len(m))
		}
		// "All redriven messages are considered new messages and are
		// assigned a new messageID and enqueueTime"
		// (sqs-configure-dead-letter-queue-redrive)
		seen := map[string]bool{}
		for i := range m {
			if m[i].MessageId == ids[i] || seen[m[i].MessageId] || m[i].Body != "m"+strconv.Itoa(i) || m[i].Attributes["ApproximateReceiveCount"] != "1" ||
				m[i].Attributes["DeadLetterQueueSourceArn"] != "" {
				t.Fatalf("message %d = %+v (sent as %s)", i, m[i], ids[i])
			}
			seen[m[i].MessageId] = true
		}
	})
	t.Run("moves to DestinationArn; messages sent after the start stay", func(t *testing.T) {
		e := newEnv(t)
		dlq := e.create("dlq", nil)
		src := e.create("src", map[string]string{"RedrivePolicy": redrivePolicy(e, "dlq", 1)})
		other := e.create("other", nil)
		e.deadLetter(src, 3)
		if _, err := e.svc.StartMessageMoveTask(e.ctx, e.svc.ARN("dlq"), e.svc.ARN("other"), 1); err != nil {
			t.Fatal(err)
		}
		e.waitMoved(e.svc.ARN("dlq"), 1, queue.MoveTaskRunning)
		e.send(dlq, "late")
		for i := 2; i <= 3; i++ {
			e.clock.Advance(time.Second)
			status := queue.MoveTaskRunning
			if i == 3 {
				status = queue.MoveTaskCompleted
			}
			e.waitMoved(e.svc.ARN("dlq"), int64(i), status)
		}
		if got := e.bodies(other, queue.ReceiveMessageInput{}); !equal(got, []string{"m0", "m1", "m2"}) {
			t.Fatalf("destination = %v", got)
		}
		if got := e.bodies(dlq, queue.ReceiveMessageInput{}); !equal(got, []string{"late"}) {
			t.Fatalf("dead-letter queue = %v", got)
		}
		if c := e.counts(src); c[0] != "0" {
			t.Fatalf("source = %v", c)
		}
	})
	t.Run("cancel stops the task and returns the count moved", func(t *testing.T) {
		e := newEnv(t)
		e.create("dlq", nil)
		src := e.create("src", map[string]string{"RedrivePolicy": redrivePolicy(e, "dlq", 1)})
		e.deadLetter(src, 4)
		arn := e.svc.ARN("dlq")
		handle, err := e.svc.StartMessageMoveTask(e.ctx, arn, "", 1)
		if err != nil {
			t.Fatal(err)
		}
		e.waitMoved(arn, 1, queue.MoveTaskRunning)
		_, err = e.svc.StartMessageMoveTask(e.ctx, arn, "", 1)
		wantErr(t, err, awserr.ErrUnsupportedOperation, "already")
		moved, err := e.svc.CancelMessageMoveTask(e.ctx, handle)
		if err != nil || moved != 1 {
			t.Fatalf("CancelMessageMoveTask = %d, %v", moved, err)
		}
		if task := e.task(arn); task.Status != queue.MoveTaskCancelled {
			t.Fatalf("task = %+v", task)
		}
		e.clock.Advance(time.Minute)
		if c := e.counts("dlq"); c[0] != "3" {
			t.Fatalf("dead-letter queue after cancel = %v, want 3 left", c)
		}
		if _, err := e.svc.StartMessageMoveTask(e.ctx, arn, "", 0); err != nil {
			t.Fatalf("a new task after the cancel: %v", err)
		}
		e.waitMoved(arn, 3, queue.MoveTaskCompleted) // default rate 500/s
		if list, _ := e.svc.ListMessageMoveTasks(e.ctx, arn); len(list) != 2 || list[1].Status != queue.MoveTaskCancelled {
			t.Fatalf("tasks = %+v", list)
		}
	})
	t.Run("validation", func(t *testing.T) {
		e := newEnv(t)
		e.create("dlq", nil)
		e.create("plain", nil)
		e.create("dlq.fifo", fifoAttrs())
		e.create("src", map[string]string{"RedrivePolicy": redrivePolicy(e, "dlq", 1)})
		arn := e.svc.ARN("dlq")
		tests := []struct {
			rule         string
			source, dest string
			rate         int
			err          error
		}{
			{"the source must be a dead-letter queue", e.svc.ARN("plain"), "", 10, awserr.ErrUnsupportedOperation},
			{"the source must exist", e.svc.ARN("nope"), "", 10, awserr.ErrResourceNotFound},
			{"the destination must exist", arn, e.svc.ARN("nope"), 10, awserr.ErrResourceNotFound},
			{"the destination is not the source", arn, arn, 10, awserr.ErrSQSInvalidParameterValue},
			{"the destination is of the source's type", arn, e.svc.ARN("dlq.fifo"), 10, awserr.ErrSQSInvalidParameterValue},
			{"MaxNumberOfMessagesPerSecond is at most 500", arn, "", 501, awserr.ErrSQSInvalidParameterValue},
			{"MaxNumberOfMessagesPerSecond is positive", arn, "", -1, awserr.ErrSQSInvalidParameterValue},
		}
		for _, tt := range tests {
			t.Run(tt.rule, func(t *testing.T) {
				_, err := e.svc.StartMessageMoveTask(e.ctx, tt.source, tt.dest, tt.rate)
				wantErr(t, err, tt.err)
			})
		}
		_, err := e.svc.CancelMessageMoveTask(e.ctx, "no-such-handle")
		wantErr(t, err, awserr.ErrResourceNotFound)
	})
	t.Run("a message that was never dead-lettered fails a task without destination", func(t *testing.T) {
		e := newEnv(t)
		dlq := e.create("dlq", nil)
		e.create("src", map[string]string{"RedrivePolicy": redrivePolicy(e, "dlq", 1)})
		e.send(dlq, "direct")
		if _, err := e.svc.StartMessageMoveTask(e.ctx, e.svc.ARN("dlq"), "", 10); err != nil {
			t.Fatal(err)
		}
		e.waitMoved(e.svc.ARN("dlq"), 0, queue.MoveTaskFailed)
		if task := e.task(e.svc.ARN("dlq")); task.FailureReason == "" {
			t.Fatalf("task = %+v", task)
		}
		if got := e.bodies(dlq, queue.ReceiveMessageInput{}); !equal(got, []string{"direct"}) {
			t.Fatalf("the message left the dead-letter queue: %v", got)
		}
	})
}

func awserrIs(err error, sentinel *awserr.Error) bool {
	e, ok := err.(*awserr.Error)
	return ok && e.Is(sentinel)
}

// TestAMovedCopysDeduplicationIdIsNotASendAfterARestart: a copy written
// by a redrive or a move task keeps its message's deduplication id, but
// is not a send of the queue it lands in: the 5-minute window runs from
// the client's send ("tracked ... for 5 min"). Before, a restart
// remembered the id with the move's time as its send time, and a new
// send of that id, six minutes after the first, was accepted with a
// MessageId and never delivered.
func TestAMovedCopysDeduplicationIdIsNotASendAfterARestart(t *testing.T) {
	e := newEnv(t)
	e.create("dlq.fifo", fifoAttrs())
	src := e.create("src.fifo", fifoAttrs("RedrivePolicy", redrivePolicy(e, "dlq.fifo", 1)))
	e.sendIn(src, queue.SendMessageInput{MessageBody: "v1", MessageGroupId: "g", MessageDeduplicationId: "order-42"})
	e.receive(src, queue.ReceiveMessageInput{VisibilityTimeout: ptr(0)})
	e.receive(src, queue.ReceiveMessageInput{}) // moved to the DLQ
	e.clock.Advance(10 * time.Minute)
	if _, err := e.svc.StartMessageMoveTask(e.ctx, e.svc.ARN("dlq.fifo"), "", 10); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, "moved back", func() bool { return e.task(e.svc.ARN("dlq.fifo")).Status == queue.MoveTaskCompleted })
	e.restart()
	e.clock.Advance(time.Minute)
	e.sendIn(src, queue.SendMessageInput{MessageBody: "v2", MessageGroupId: "g", MessageDeduplicationId: "order-42"})
	var got []string
	for range 2 {
		for _, m := range e.receive(src, queue.ReceiveMessageInput{}) {
			got = append(got, m.Body)
			e.delete(src, m.ReceiptHandle)
		}
	}
	if !slices.Equal(got, []string{"v1", "v2"}) {
		t.Fatalf("the source delivers %v, want v1 (moved back) then v2 (a new send, 11 minutes after v1's)", got)
	}
}
