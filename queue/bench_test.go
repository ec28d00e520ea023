package queue_test

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/queue"
)

// BenchmarkSendReceiveDelete measures the full life of messages in
// batches of 10: SendMessageBatch, ReceiveMessage (10), DeleteMessageBatch,
// from 8 concurrent clients, on the real clock and embedded JetStream.
// One op is one message.
func BenchmarkSendReceiveDelete(b *testing.B) {
	ctx := context.Background()
	rn := testenv.Start(b, testenv.Options{})
	s, err := queue.New(ctx, rn.Engine)
	if err != nil {
		b.Fatal(err)
	}
	url, err := s.CreateQueue(ctx, "bench", nil)
	if err != nil {
		b.Fatal(err)
	}
	body := string(make([]byte, 100))
	for i := range body {
		_ = i
	}
	body = "0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789"
	entries := make([]queue.SendMessageBatchRequestEntry, 10)
	for i := range entries {
		entries[i] = queue.SendMessageBatchRequestEntry{Id: strconv.Itoa(i), MessageBody: body}
	}
	const clients = 8
	var left atomic.Int64
	left.Store(int64((b.N + 9) / 10))
	var deleted atomic.Int64
	b.ResetTimer()
	var wg sync.WaitGroup
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dels := make([]queue.DeleteMessageBatchRequestEntry, 0, 10)
			for left.Add(-1) >= 0 {
				if _, err := s.SendMessageBatch(ctx, url, entries); err != nil {
					b.Error(err)
					return
				}
				msgs, err := s.ReceiveMessage(ctx, url, queue.ReceiveMessageInput{MaxNumberOfMessages: 10})
				if err != nil {
					b.Error(err)
					return
				}
				if len(msgs) == 0 {
					continue
				}
				dels = dels[:0]
				for i, m := range msgs {
					dels = append(dels, queue.DeleteMessageBatchRequestEntry{Id: strconv.Itoa(i), ReceiptHandle: m.ReceiptHandle})
				}
				out, err := s.DeleteMessageBatch(ctx, url, dels)
				if err != nil || len(out.Failed) > 0 {
					b.Error(err, out)
					return
				}
				deleted.Add(int64(len(out.Successful)))
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(deleted.Load())/b.Elapsed().Seconds(), "msgs/s")
}
