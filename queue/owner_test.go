package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/mapping"
	"github.com/runnel-dev/runnel/queue"
)

// twoProcesses starts a serving runnel whose embedded server listens, and
// a passive one (a CLI command run with --nats-url) connected to it, on
// one fake clock.
func twoProcesses(t *testing.T) (serve, cli *runnel.Runnel) {
	t.Helper()
	clock := clockwork.NewFakeClockAt(epoch)
	serve = testenv.Start(t, testenv.Options{Clock: clock, ListenAddr: "127.0.0.1:0"})
	cli = testenv.Start(t, testenv.Options{Clock: clock, NATSURL: serve.Engine.ClientURL(), Mappings: mapping.Options{Passive: true}})
	return serve, cli
}

// The purge case of issue 13: a purge through a CLI process connected to a
// running serve must act on the queue the serve delivers from. Before the
// queues were served by one lease holder, the CLI purged its own copy of
// the index: the serve went on counting and delivering all five messages.
func TestPurgeThroughAnotherProcessEmptiesTheQueueTheServingProcessDelivers(t *testing.T) {
	serve, cli := twoProcesses(t)
	ctx := context.Background()
	url, err := serve.Queues.CreateQueue(ctx, "jobs-dlq", nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if _, err := serve.Queues.SendMessage(ctx, url, queue.SendMessageInput{MessageBody: "poison"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := cli.Queues.PurgeQueue(ctx, url); err != nil {
		t.Fatal(err)
	}
	attrs, err := serve.Queues.GetQueueAttributes(ctx, url, []string{queue.AttrAll})
	if err != nil {
		t.Fatal(err)
	}
	if n := attrs["ApproximateNumberOfMessages"]; n != "0" {
		t.Errorf("serve counts %s messages after the CLI's purge, want 0", n)
	}
	msgs, err := serve.Queues.ReceiveMessage(ctx, url, queue.ReceiveMessageInput{MaxNumberOfMessages: 10, WaitTimeSeconds: ptr(0)})
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 0 {
		t.Errorf("serve delivered %d purged messages", len(msgs))
	}
}

// A message sent through one process is received through the other and
// deleted through the first with the handle the second gave out; the
// visibility timeout and receive count are the one index's.
func TestMessagesMoveAcrossProcessesThroughOneIndex(t *testing.T) {
	serve, cli := twoProcesses(t)
	ctx := context.Background()
	url, err := cli.Queues.CreateQueue(ctx, "jobs", map[string]string{queue.AttrVisibilityTimeout: "30"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Queues.SendMessage(ctx, url, queue.SendMessageInput{MessageBody: "job-1"}); err != nil {
		t.Fatal(err)
	}
	got, err := serve.Queues.ReceiveMessage(ctx, url, queue.ReceiveMessageInput{WaitTimeSeconds: ptr(0)})
	if err != nil || len(got) != 1 || got[0].Body != "job-1" {
		t.Fatalf("serve received %+v, %v; want job-1", got, err)
	}
	// In flight for the whole queue: the CLI process sees nothing.
	again, err := cli.Queues.ReceiveMessage(ctx, url, queue.ReceiveMessageInput{WaitTimeSeconds: ptr(0)})
	if err != nil || len(again) != 0 {
		t.Fatalf("cli received %d messages while the message is in flight (err %v)", len(again), err)
	}
	if err := cli.Queues.DeleteMessage(ctx, url, got[0].ReceiptHandle); err != nil {
		t.Fatal(err)
	}
	attrs, err := serve.Queues.GetQueueAttributes(ctx, url, []string{queue.AttrAll})
	if err != nil {
		t.Fatal(err)
	}
	if attrs["ApproximateNumberOfMessages"] != "0" || attrs["ApproximateNumberOfMessagesNotVisible"] != "0" {
		t.Errorf("after the delete through the other process: %s visible, %s in flight; want 0, 0",
			attrs["ApproximateNumberOfMessages"], attrs["ApproximateNumberOfMessagesNotVisible"])
	}
}

// When the serving process goes away cleanly, the other takes the queues
// over at once and finds every message that was not deleted.
func TestTheOtherProcessTakesTheQueuesOverWhenTheServingOneCloses(t *testing.T) {
	serve, cli := twoProcesses(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	url, err := serve.Queues.CreateQueue(ctx, "jobs", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{"a", "b"} {
		if _, err := serve.Queues.SendMessage(ctx, url, queue.SendMessageInput{MessageBody: b}); err != nil {
			t.Fatal(err)
		}
	}
	serve.Queues.Close() // the serve stops serving queues; its server still runs
	msgs, err := cli.Queues.ReceiveMessage(ctx, url, queue.ReceiveMessageInput{MaxNumberOfMessages: 10, WaitTimeSeconds: ptr(0)})
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 {
		t.Fatalf("the CLI process received %d messages after the serve closed, want 2", len(msgs))
	}
}
