package main

import (
	"context"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/runnel-dev/runnel/internal/sdkhttp"
)

// TestDeletedMessagesStayDeletedAfterAnUncleanStop: 200 messages are
// received and deleted, `runnel serve` stops cleanly at once, starts
// again, takes 10 new messages and is killed with SIGKILL; started again,
// the queue holds the 10 new messages only. Before the fix the 200
// deleted ones came back (in flight, then received again): a body was
// removed by its tombstone replacing it on its subject, which leaves no
// trace in the JetStream store's blocks (nats-io/nats-server#8505, in
// v2.15.2), and the tombstone itself expired (its TTL) at the restart;
// the unclean stop made the store rebuild from its blocks. Bodies are
// now removed with DeleteMsg, which the blocks record.
func TestDeletedMessagesStayDeletedAfterAnUncleanStop(t *testing.T) {
	bin := runnelBinary(t)
	data := filepath.Join(t.TempDir(), "data")
	addr := freeAddr(t)
	start := func() func(syscall.Signal) {
		cmd := startServe(t, bin, []string{"--data-dir", data, "serve", "--aws", addr}, nil)
		return func(sig syscall.Signal) {
			_ = cmd.Process.Signal(sig)
			_ = cmd.Wait()
		}
	}
	client := sqs.NewFromConfig(aws.Config{
		HTTPClient:   sdkhttp.Client(),
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("AKID", "secret", ""),
		BaseEndpoint: aws.String("http://" + addr),
	})
	ctx := context.Background()
	send := func(url *string, prefix string, batches int) {
		for b := range batches {
			var es []types.SendMessageBatchRequestEntry
			for i := range 10 {
				es = append(es, types.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), MessageBody: aws.String(fmt.Sprintf("%s%d", prefix, b*10+i))})
			}
			out, err := client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: url, Entries: es})
			if err != nil || len(out.Failed) > 0 {
				t.Fatalf("SendMessageBatch: %v %v", out, err)
			}
		}
	}
	counts := func(url *string) (visible, inFlight string) {
		a, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: url, AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}})
		if err != nil {
			t.Fatal(err)
		}
		return a.Attributes["ApproximateNumberOfMessages"], a.Attributes["ApproximateNumberOfMessagesNotVisible"]
	}

	stop := start()
	q, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("q")})
	if err != nil {
		stop(syscall.SIGKILL)
		t.Fatal(err)
	}
	send(q.QueueUrl, "old", 20)
	for deleted := 0; deleted < 200; {
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, MaxNumberOfMessages: 10})
		if err != nil || len(out.Messages) == 0 {
			stop(syscall.SIGKILL)
			t.Fatalf("receive after %d deleted: %v", deleted, err)
		}
		var es []types.DeleteMessageBatchRequestEntry
		for i, m := range out.Messages {
			es = append(es, types.DeleteMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), ReceiptHandle: m.ReceiptHandle})
		}
		if out, err := client.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: q.QueueUrl, Entries: es}); err != nil || len(out.Failed) > 0 {
			stop(syscall.SIGKILL)
			t.Fatalf("DeleteMessageBatch: %v %v", out, err)
		}
		deleted += len(es)
	}
	stop(syscall.SIGTERM) // at once: the bodies' tombstones have not expired yet

	stop = start()
	send(q.QueueUrl, "new", 1)
	time.Sleep(2 * time.Second) // the store writes its blocks meanwhile (the bug needs nothing else)
	stop(syscall.SIGKILL)

	stop = start()
	defer stop(syscall.SIGTERM)
	if v, f := counts(q.QueueUrl); v != "10" || f != "0" {
		t.Fatalf("after the unclean stop: %s visible, %s in flight; want the 10 new messages only", v, f)
	}
}
