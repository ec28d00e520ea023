package bench

import (
	"context"
	"fmt"
	"strconv"
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
	t.Start()
	err = sendAndReceive(n, func(lo, hi int) error {
		var fs []jetstream.PubAckFuture
		for j := lo; j < hi; j++ {
			f, err := js.PublishAsync(subj, e.payload)
			if err != nil {
				return err
			}
			fs = append(fs, f)
		}
		for _, f := range fs {
			select {
			case <-f.Ok():
			case err := <-f.Err():
				return err
			}
		}
		return nil
	}, func() (bool, error) {
		batch, err := cons.Fetch(10, jetstream.FetchMaxWait(200*time.Millisecond))
		if err != nil {
			return false, err
		}
		for m := range batch.Messages() {
			if err := m.Ack(); err != nil {
				return false, err
			}
			acked.Add(1)
		}
		return acked.Load() < int64(n) && ctx.Err() == nil, nil
	})
	if err != nil {
		return "", err
	}
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
	wait := 1
	t.Start()
	err = sendAndReceive(n, func(lo, hi int) error {
		var entries []queue.SendMessageBatchRequestEntry
		for j := lo; j < hi; j++ {
			entries = append(entries, queue.SendMessageBatchRequestEntry{Id: strconv.Itoa(j - lo), SendMessageInput: queue.SendMessageInput{MessageBody: body}})
		}
		out, err := qs.SendMessageBatch(ctx, url, entries)
		if err != nil {
			return err
		}
		if len(out.Failed) > 0 {
			return fmt.Errorf("send: %d failed: %+v", len(out.Failed), out.Failed[0])
		}
		return nil
	}, func() (bool, error) {
		ms, err := qs.ReceiveMessage(ctx, url, queue.ReceiveMessageInput{MaxNumberOfMessages: 10, WaitTimeSeconds: &wait})
		if err != nil {
			return false, err
		}
		if len(ms) == 0 {
			return deleted.Load() < int64(n) && ctx.Err() == nil, nil
		}
		out, err := qs.DeleteMessageBatch(ctx, url, queue.DeleteEntries(ms, func(m queue.Message) string { return m.ReceiptHandle }))
		if err != nil {
			return false, err
		}
		deleted.Add(int64(len(ms) - len(out.Failed)))
		return deleted.Load() < int64(n) && ctx.Err() == nil, nil
	})
	t.Stop()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("standard queue; %d senders SendMessageBatch(10), %d receivers ReceiveMessage(10, wait 1 s) + DeleteMessageBatch(10); until all deleted", queueWorkers, queueWorkers), nil
}

// sendAndReceive runs queueWorkers senders and queueWorkers receivers at
// once. The senders split [0,n) evenly and call send on consecutive ranges
// [lo,hi) of at most 10; each receiver calls receive until it returns false
// or an error. It returns the first error (a failed worker stops; the
// others run on to their end, as a benchmark's failure is fatal anyway).
func sendAndReceive(n int, send func(lo, hi int) error, receive func() (more bool, err error)) error {
	receivers := make([]func() error, queueWorkers)
	for i := range receivers {
		receivers[i] = func() error {
			for {
				more, err := receive()
				if err != nil || !more {
					return err
				}
			}
		}
	}
	return splitRun(n, queueWorkers, 10, send, receivers...)
}
