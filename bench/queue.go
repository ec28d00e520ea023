package bench

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/runnel-dev/runnel/queue"
)

// Queue scenario names.
const (
	JetStreamWorkQueue = "jetstream-workqueue"
	RunnelQueue        = "runnel-queue-send-receive-delete"
)

// queueWorkers is how many senders and how many receivers run at once in
// both queue scenarios.
const queueWorkers = 4

// runJetStreamWorkQueue is the baseline of the queue scenario: raw
// JetStream doing what a queue does for a message — publish it (in
// async batches of 10), hand it to one consumer (a pull consumer fetching
// 10 at a time), and remove it when acknowledged (work-queue retention,
// an ack per message) — with senders and receivers running at once.
func runJetStreamWorkQueue(ctx context.Context, e *env, n int, t timer) (string, error) {
	js := e.rn.Engine.JS
	name := "BENCHWQ_" + nuid.Next()
	subj := "benchwq." + name
	s, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{subj}, Storage: jetstream.FileStorage,
		Retention: jetstream.WorkQueuePolicy})
	if err != nil {
		return "", err
	}
	cons, err := s.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "bench", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		return "", err
	}
	var acked atomic.Int64
	errs := make(chan error, 2*queueWorkers)
	t.Start()
	var wg sync.WaitGroup
	per := (n + queueWorkers - 1) / queueWorkers
	for w := 0; w < queueWorkers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w * per; i < min(n, (w+1)*per); i += 10 {
				var fs []jetstream.PubAckFuture
				for j := i; j < min(i+10, (w+1)*per, n); j++ {
					f, err := js.PublishAsync(subj, e.payload)
					if err != nil {
						errs <- err
						return
					}
					fs = append(fs, f)
				}
				for _, f := range fs {
					select {
					case <-f.Ok():
					case err := <-f.Err():
						errs <- err
						return
					}
				}
			}
		}(w)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for acked.Load() < int64(n) && ctx.Err() == nil {
				batch, err := cons.Fetch(10, jetstream.FetchMaxWait(200*time.Millisecond))
				if err != nil {
					errs <- err
					return
				}
				for m := range batch.Messages() {
					if err := m.Ack(); err != nil {
						errs <- err
						return
					}
					acked.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	// Done when the server holds every ack (the stream is empty).
	for {
		info, err := s.Info(ctx)
		if err != nil {
			return "", err
		}
		if info.State.Msgs == 0 {
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Stop()
	select {
	case err := <-errs:
		return "", err
	default:
	}
	return fmt.Sprintf("work-queue stream; %d publishers in async batches of 10, %d pull consumers Fetch(10) + Ack each; until the stream is empty", queueWorkers, queueWorkers), nil
}

// runRunnelQueue sends, receives and deletes n messages through a runnel
// standard queue in batches of 10, senders and receivers at once.
func runRunnelQueue(ctx context.Context, e *env, n int, t timer) (string, error) {
	qs := e.rn.Queues
	url, err := qs.CreateQueue(ctx, "bench-"+nuid.Next(), nil)
	if err != nil {
		return "", err
	}
	body := string(e.payload)
	var deleted atomic.Int64
	errs := make(chan error, 2*queueWorkers)
	t.Start()
	var wg sync.WaitGroup
	per := (n + queueWorkers - 1) / queueWorkers
	for w := 0; w < queueWorkers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w * per; i < min(n, (w+1)*per); i += 10 {
				var entries []queue.SendMessageBatchRequestEntry
				for j := i; j < min(i+10, (w+1)*per, n); j++ {
					entries = append(entries, queue.SendMessageBatchRequestEntry{Id: strconv.Itoa(j - i), MessageBody: body})
				}
				out, err := qs.SendMessageBatch(ctx, url, entries)
				if err != nil {
					errs <- err
					return
				}
				if len(out.Failed) > 0 {
					errs <- fmt.Errorf("send: %d failed: %+v", len(out.Failed), out.Failed[0])
					return
				}
			}
		}(w)
		wg.Add(1)
		go func() {
			defer wg.Done()
			wait := 1
			for deleted.Load() < int64(n) && ctx.Err() == nil {
				ms, err := qs.ReceiveMessage(ctx, url, queue.ReceiveMessageInput{MaxNumberOfMessages: 10, WaitTimeSeconds: &wait})
				if err != nil {
					errs <- err
					return
				}
				if len(ms) == 0 {
					continue
				}
				var del []queue.DeleteMessageBatchRequestEntry
				for i, m := range ms {
					del = append(del, queue.DeleteMessageBatchRequestEntry{Id: strconv.Itoa(i), ReceiptHandle: m.ReceiptHandle})
				}
				out, err := qs.DeleteMessageBatch(ctx, url, del)
				if err != nil {
					errs <- err
					return
				}
				deleted.Add(int64(len(del) - len(out.Failed)))
			}
		}()
	}
	wg.Wait()
	t.Stop()
	select {
	case err := <-errs:
		return "", err
	default:
	}
	return fmt.Sprintf("standard queue; %d senders SendMessageBatch(10), %d receivers ReceiveMessage(10, wait 1 s) + DeleteMessageBatch(10); until all deleted", queueWorkers, queueWorkers), nil
}
