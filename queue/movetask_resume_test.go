package queue_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/mapping"
	"github.com/runnel-dev/runnel/queue"
)

// TestAMoveTaskGoesOnAfterARestart: SQS keeps a started message move task
// until it ends (API_ListMessageMoveTasks lists "the most recent message
// movement tasks (up to 10) under a specific source queue"; a task is
// RUNNING until COMPLETED, CANCELLED or FAILED). runnel kept tasks in the
// memory of the process serving the queues: a restart ended a running
// task FAILED ("the queue service closed") with the rest of its messages
// left in the DLQ. Now its state is stored: after a restart the task is
// listed RUNNING with what it had moved and its TaskHandle, goes on at its
// rate, moves only the messages sent before its start, and completes; its
// handle still cancels a resumed task.
func TestAMoveTaskGoesOnAfterARestart(t *testing.T) {
	e := newEnv(t)
	dlq := e.create("dlq", nil)
	src := e.create("src", map[string]string{"RedrivePolicy": redrivePolicy(e, "dlq", 1)})
	e.deadLetter(src, 5)
	dlqArn := e.svc.ARN("dlq")
	handle, err := e.svc.StartMessageMoveTask(e.ctx, dlqArn, "", 2)
	if err != nil {
		t.Fatal(err)
	}
	e.waitMoved(dlqArn, 2, queue.MoveTaskRunning)
	e.send(dlq, "late") // sent after the start: stays
	e.restart()
	if task := e.task(dlqArn); task.Status != queue.MoveTaskRunning || task.TaskHandle != handle || task.ApproximateNumberOfMessagesToMove != 5 {
		t.Fatalf("after the restart the task is %+v; want RUNNING with its handle and 5 to move", task)
	}
	e.waitMoved(dlqArn, 4, queue.MoveTaskRunning)
	e.clock.Advance(time.Second)
	e.waitMoved(dlqArn, 5, queue.MoveTaskCompleted)
	if got := e.bodies(dlq, queue.ReceiveMessageInput{MaxNumberOfMessages: 10}); !equal(got, []string{"late"}) {
		t.Fatalf("the DLQ holds %v; want [late]", got)
	}
	if n := len(e.receive(src, queue.ReceiveMessageInput{MaxNumberOfMessages: 10})); n != 5 {
		t.Fatalf("the source holds %d messages; want 5", n)
	}

	// A task resumed after a restart is cancelled by its handle.
	e.deadLetter(src, 5)
	handle, err = e.svc.StartMessageMoveTask(e.ctx, dlqArn, "", 2)
	if err != nil {
		t.Fatal(err)
	}
	e.waitMoved(dlqArn, 2, queue.MoveTaskRunning)
	e.restart()
	e.waitMoved(dlqArn, 4, queue.MoveTaskRunning)
	if moved, err := e.svc.CancelMessageMoveTask(e.ctx, handle); err != nil || moved != 4 {
		t.Fatalf("CancelMessageMoveTask after the restart = %d, %v; want 4 moved", moved, err)
	}
	if task := e.task(dlqArn); task.Status != queue.MoveTaskCancelled {
		t.Fatalf("task = %+v; want CANCELLED", task)
	}
}

// TestAMoveTaskGoesOnInTheProcessThatTakesTheQueues: when the process
// serving the queues stops (a serve restarted, a node drained), the
// process that takes them over goes on with its running move task (the
// rule of TestAMoveTaskGoesOnAfterARestart). Before, the task vanished:
// ListMessageMoveTasks answered [] on the new holder, the DLQ kept the
// rest of its messages, and `runnel dlq redrive`, which waits for the
// task to end, waited for ever.
func TestAMoveTaskGoesOnInTheProcessThatTakesTheQueues(t *testing.T) {
	ctx := context.Background()
	clock := clockwork.NewFakeClockAt(epoch)
	a := testenv.Start(t, testenv.Options{Clock: clock, ListenAddr: "127.0.0.1:0", Mappings: mapping.Options{Passive: true}})
	b := testenv.Start(t, testenv.Options{Clock: clock, NATSURL: a.Engine.ClientURL(), Mappings: mapping.Options{Passive: true}})
	dlq, err := a.Queues.CreateQueue(ctx, "dlq", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Queues.CreateQueue(ctx, "other", nil); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if _, err := a.Queues.SendMessage(ctx, dlq, queue.SendMessageInput{MessageBody: "m"}); err != nil {
			t.Fatal(err)
		}
	}
	// dlq is a dead-letter queue once a queue's RedrivePolicy names it.
	if _, err := a.Queues.CreateQueue(ctx, "src", map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"` + a.Queues.ARN("dlq") + `","maxReceiveCount":1}`}); err != nil {
		t.Fatal(err)
	}
	handle, err := a.Queues.StartMessageMoveTask(ctx, a.Queues.ARN("dlq"), a.Queues.ARN("other"), 2)
	if err != nil {
		t.Fatal(err)
	}
	task := func(rn *queue.Service) queue.MessageMoveTask {
		t.Helper()
		list, err := rn.ListMessageMoveTasks(ctx, rn.ARN("dlq"))
		if err != nil || len(list) == 0 {
			t.Fatalf("ListMessageMoveTasks = %+v, %v", list, err)
		}
		return list[0]
	}
	testenv.Eventually(t, 10*time.Second, "2 moved", func() bool { return task(a.Queues).ApproximateNumberOfMessagesMoved == 2 })
	a.Queues.Close() // the holder stops serving the queues; b takes them at its next call
	got := task(b.Queues)
	if got.Status != queue.MoveTaskRunning || got.TaskHandle != handle {
		t.Fatalf("on the new holder the task is %+v; want RUNNING with handle %s", got, handle)
	}
	testenv.Eventually(t, 10*time.Second, "4 moved", func() bool { return task(b.Queues).ApproximateNumberOfMessagesMoved == 4 })
	// The task waits on the fake clock for its next second; the other
	// services may too, so the clock is moved on until the task ends.
	for i := 0; i < 100000 && task(b.Queues).Status == queue.MoveTaskRunning; i++ {
		clock.Advance(time.Second)
		runtime.Gosched()
	}
	if got := task(b.Queues); got.Status != queue.MoveTaskCompleted || got.ApproximateNumberOfMessagesMoved != 5 {
		t.Fatalf("task = %+v; want COMPLETED with 5 moved", got)
	}
	attrs, err := b.Queues.GetQueueAttributes(ctx, "other", []string{"ApproximateNumberOfMessages"})
	if err != nil || attrs["ApproximateNumberOfMessages"] != "5" {
		t.Fatalf("the destination holds %v (%v); want 5", attrs, err)
	}
}

// TestTheMoveTasksOfADeletedQueueGoWithIt: ListMessageMoveTasks lists a
// source queue's tasks; a queue deleted and created again under its name
// is another queue (its ARN is the same). The stored tasks were kept: the
// new queue listed the old one's tasks after a restart, and a task stored
// RUNNING was resumed against the new queue's messages. Now DeleteQueue
// deletes them, and a stored task whose queue is not the one of its name
// now ends FAILED instead of being resumed.
func TestTheMoveTasksOfADeletedQueueGoWithIt(t *testing.T) {
	e := newEnv(t)
	dlq := e.create("dlq", nil)
	src := e.create("src", map[string]string{"RedrivePolicy": redrivePolicy(e, "dlq", 1)})
	e.deadLetter(src, 3)
	dlqArn := e.svc.ARN("dlq")
	if _, err := e.svc.StartMessageMoveTask(e.ctx, dlqArn, "", 1); err != nil {
		t.Fatal(err)
	}
	e.waitMoved(dlqArn, 1, queue.MoveTaskRunning)
	if err := e.svc.DeleteQueue(e.ctx, dlq); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(61 * time.Second) // SQS: wait 60 seconds before creating a queue of the name again
	dlq = e.create("dlq", nil)
	e.send(dlq, "new")
	e.restart()
	if list, err := e.svc.ListMessageMoveTasks(e.ctx, dlqArn); err != nil || len(list) != 0 {
		t.Fatalf("the queue created again lists %+v, %v; want no task", list, err)
	}
	if got := e.bodies(dlq, queue.ReceiveMessageInput{}); !equal(got, []string{"new"}) {
		t.Fatalf("the new queue holds %v; want [new]", got)
	}
}
