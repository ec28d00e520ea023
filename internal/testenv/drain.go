package testenv

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/queue"
)

// Drain receives and deletes messages of a queue (with all their
// attributes) until it has n, calling tick (when not nil) between polls,
// for up to 15 s; a queue not created yet is polled again. It fails the
// test with fewer than n.
func Drain(t testing.TB, qs *queue.Service, name string, n int, tick func()) []queue.Message {
	t.Helper()
	var got []queue.Message
	Eventually(t, 15*time.Second, "messages in "+name, func() bool {
		zero := 0
		msgs, err := qs.ReceiveMessage(context.Background(), name, queue.ReceiveMessageInput{MaxNumberOfMessages: 10,
			WaitTimeSeconds: &zero, MessageAttributeNames: []string{"All"}})
		if err != nil && !errors.Is(err, awserr.ErrQueueDoesNotExist) {
			t.Fatal(err)
		}
		for _, m := range msgs {
			qs.DeleteMessage(context.Background(), name, m.ReceiptHandle)
		}
		got = append(got, msgs...)
		if len(got) < n && tick != nil {
			tick()
		}
		return len(got) >= n
	})
	return got
}
