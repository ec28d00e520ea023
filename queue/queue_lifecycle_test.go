package queue_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/queue"
)

func TestPurgeQueue(t *testing.T) {
	e := newEnv(t)
	url := e.create("q", nil)
	for _, b := range []string{"a", "b", "c"} {
		e.send(url, b)
	}
	e.sendIn(url, queue.SendMessageInput{MessageBody: "d", DelaySeconds: ptr(60)})
	inflight := e.receive(url, queue.ReceiveMessageInput{})
	if err := e.svc.PurgeQueue(e.ctx, url); err != nil {
		t.Fatal(err)
	}
	if c := e.counts(url); c != [3]string{"0", "0", "0"} {
		t.Fatalf("counts after purge = %v", c)
	}
	e.clock.Advance(30 * time.Second) // the in-flight message's timeout ends
	if got := e.bodies(url, queue.ReceiveMessageInput{}); len(got) != 0 {
		t.Fatalf("received %v after purge", got)
	}
	e.delete(url, inflight[0].ReceiptHandle) // a purged message's handle deletes nothing, without error
	t.Run("one purge per 60 s", func(t *testing.T) {
		e.send(url, "e")
		e.clock.Advance(29 * time.Second)
		wantErr(t, e.svc.PurgeQueue(e.ctx, url), awserr.ErrPurgeQueueInProgress)
		e.clock.Advance(time.Second) // 60 s after the purge; the delayed d would be visible now
		if got := e.bodies(url, queue.ReceiveMessageInput{}); !equal(got, []string{"e"}) {
			t.Fatalf("= %v, want only e, sent after the purge", got)
		}
		if err := e.svc.PurgeQueue(e.ctx, url); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("the purge survives a restart", func(t *testing.T) {
		e.clock.Advance(time.Minute)
		e.send(url, "f")
		if err := e.svc.PurgeQueue(e.ctx, url); err != nil {
			t.Fatal(err)
		}
		e.send(url, "g")
		e.restart()
		if got := e.bodies(url, queue.ReceiveMessageInput{}); !equal(got, []string{"g"}) {
			t.Fatalf("after restart = %v", got)
		}
		// The 60 s rule holds across the restart (before, the purge's
		// time lived in memory only).
		wantErr(t, e.svc.PurgeQueue(e.ctx, url), awserr.ErrPurgeQueueInProgress)
		e.clock.Advance(time.Minute)
		if err := e.svc.PurgeQueue(e.ctx, url); err != nil {
			t.Fatalf("a purge 60 s after the last one, after a restart: %v", err)
		}
	})
}

func TestRetention(t *testing.T) {
	e := newEnv(t)
	url := e.create("q", map[string]string{"MessageRetentionPeriod": "60"})
	e.send(url, "a")
	e.send(url, "b")
	e.receive(url, queue.ReceiveMessageInput{VisibilityTimeout: ptr(600)}) // a is in flight
	e.clock.Advance(30 * time.Second)
	e.send(url, "c")
	e.clock.Advance(29 * time.Second)
	if c := e.counts(url); c != [3]string{"2", "1", "0"} {
		t.Fatalf("counts at 59 s = %v", c)
	}
	e.clock.Advance(time.Second)
	if c := e.counts(url); c != [3]string{"1", "0", "0"} {
		t.Fatalf("counts at 60 s = %v, want only c", c)
	}
	if got := e.bodies(url, queue.ReceiveMessageInput{}); !equal(got, []string{"c"}) {
		t.Fatalf("= %v, want c (a and b expired)", got)
	}
	// Nothing goes silently: each expiry is counted (and logged).
	if n := e.svc.ExpiredMessages("q"); n != 2 {
		t.Fatalf("ExpiredMessages = %d, want 2 (a and b)", n)
	}
	t.Run("a shorter retention applies to messages already queued", func(t *testing.T) {
		url := e.create("q2", nil)
		e.send(url, "old")
		e.clock.Advance(2 * time.Minute)
		if err := e.svc.SetQueueAttributes(e.ctx, url, map[string]string{"MessageRetentionPeriod": "60"}); err != nil {
			t.Fatal(err)
		}
		if got := e.bodies(url, queue.ReceiveMessageInput{}); len(got) != 0 {
			t.Fatalf("= %v, want nothing", got)
		}
	})
}

type pollResult struct {
	msgs []queue.Message
	err  error
}

// poll starts a receive in the background and waits until it blocks on
// the fake clock.
func (e *env) poll(t *testing.T, url string, in queue.ReceiveMessageInput) <-chan pollResult {
	t.Helper()
	ch := make(chan pollResult, 1)
	go func() {
		m, err := e.svc.ReceiveMessage(e.ctx, url, in)
		ch <- pollResult{m, err}
	}()
	ctx, cancel := context.WithTimeout(e.ctx, 5*time.Second)
	defer cancel()
	if err := e.clock.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal("the receive is not waiting on the clock")
	}
	return ch
}

// polled returns what a poll received.
func polled(t *testing.T, ch <-chan pollResult) pollResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(5 * time.Second):
		t.Fatal("the receive did not return")
		return pollResult{}
	}
}

func TestLongPolling(t *testing.T) {
	tests := []struct {
		rule string
		run  func(t *testing.T, e *env, url string)
	}{
		{"a send wakes a waiting receive before the wait ends", func(t *testing.T, e *env, url string) {
			ch := e.poll(t, url, queue.ReceiveMessageInput{WaitTimeSeconds: ptr(20)})
			e.send(url, "hello")
			r := polled(t, ch)
			if r.err != nil || len(r.msgs) != 1 || r.msgs[0].Body != "hello" {
				t.Fatalf("= %+v", r)
			}
			if !e.clock.Now().Equal(epoch) {
				t.Fatal("the clock moved")
			}
		}},
		{"the receive returns empty when the 20 s end", func(t *testing.T, e *env, url string) {
			ch := e.poll(t, url, queue.ReceiveMessageInput{WaitTimeSeconds: ptr(20)})
			e.clock.Advance(19 * time.Second)
			select {
			case r := <-ch:
				t.Fatalf("returned after 19 s: %+v", r)
			case <-time.After(20 * time.Millisecond):
			}
			e.clock.Advance(time.Second)
			if r := polled(t, ch); r.err != nil || len(r.msgs) != 0 {
				t.Fatalf("= %+v", r)
			}
		}},
		{"the queue's ReceiveMessageWaitTimeSeconds applies", func(t *testing.T, e *env, url string) {
			if err := e.svc.SetQueueAttributes(e.ctx, url, map[string]string{"ReceiveMessageWaitTimeSeconds": "10"}); err != nil {
				t.Fatal(err)
			}
			ch := e.poll(t, url, queue.ReceiveMessageInput{})
			e.clock.Advance(10 * time.Second)
			if r := polled(t, ch); r.err != nil || len(r.msgs) != 0 {
				t.Fatalf("= %+v", r)
			}
		}},
		{"an ending visibility timeout wakes a waiting receive", func(t *testing.T, e *env, url string) {
			e.send(url, "a")
			e.receive(url, queue.ReceiveMessageInput{VisibilityTimeout: ptr(5)})
			ch := e.poll(t, url, queue.ReceiveMessageInput{WaitTimeSeconds: ptr(20)})
			e.clock.Advance(5 * time.Second)
			if r := polled(t, ch); r.err != nil || len(r.msgs) != 1 || r.msgs[0].Body != "a" {
				t.Fatalf("= %+v", r)
			}
		}},
		{"a ChangeMessageVisibility that ends earlier wakes a waiting receive at its new end", func(t *testing.T, e *env, url string) {
			e.send(url, "a")
			m := e.receive(url, queue.ReceiveMessageInput{VisibilityTimeout: ptr(300)})
			ch := e.poll(t, url, queue.ReceiveMessageInput{WaitTimeSeconds: ptr(20)})
			if err := e.svc.ChangeMessageVisibility(e.ctx, url, m[0].ReceiptHandle, 5); err != nil {
				t.Fatal(err)
			}
			e.clock.Advance(6 * time.Second)
			if r := polled(t, ch); r.err != nil || len(r.msgs) != 1 || r.msgs[0].Body != "a" {
				t.Fatalf("= %+v", r)
			}
			if !e.clock.Now().Equal(epoch.Add(6 * time.Second)) {
				t.Fatal("the clock moved")
			}
		}},
		{"a delayed send wakes a waiting receive when its delay ends", func(t *testing.T, e *env, url string) {
			ch := e.poll(t, url, queue.ReceiveMessageInput{WaitTimeSeconds: ptr(20)})
			e.sendIn(url, queue.SendMessageInput{MessageBody: "later", DelaySeconds: ptr(5)})
			e.clock.Advance(5 * time.Second)
			if r := polled(t, ch); r.err != nil || len(r.msgs) != 1 || r.msgs[0].Body != "later" {
				t.Fatalf("= %+v", r)
			}
		}},
		{"deleting the queue ends the wait", func(t *testing.T, e *env, url string) {
			ch := e.poll(t, url, queue.ReceiveMessageInput{WaitTimeSeconds: ptr(20)})
			if err := e.svc.DeleteQueue(e.ctx, url); err != nil {
				t.Fatal(err)
			}
			wantErr(t, polled(t, ch).err, awserr.ErrQueueDoesNotExist)
		}},
		{"cancelling the context ends the wait", func(t *testing.T, e *env, url string) {
			ctx, cancel := context.WithCancel(e.ctx)
			ch := make(chan error, 1)
			go func() {
				_, err := e.svc.ReceiveMessage(ctx, url, queue.ReceiveMessageInput{WaitTimeSeconds: ptr(20)})
				ch <- err
			}()
			wctx, wcancel := context.WithTimeout(e.ctx, 5*time.Second)
			defer wcancel()
			if err := e.clock.BlockUntilContext(wctx, 1); err != nil {
				t.Fatal("the receive is not waiting on the clock")
			}
			cancel()
			if err := <-ch; !errors.Is(err, context.Canceled) {
				t.Fatalf("= %v", err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			e := newEnv(t)
			tt.run(t, e, e.create("q", nil))
		})
	}
}

func TestRestart(t *testing.T) {
	e := newEnv(t)
	url := e.create("q", map[string]string{"VisibilityTimeout": "60"})
	for _, b := range []string{"a", "b", "c", "d"} {
		e.send(url, b)
	}
	first := e.receive(url, queue.ReceiveMessageInput{MaxNumberOfMessages: 2}) // a, b in flight
	e.delete(url, first[1].ReceiptHandle)                                      // b deleted
	e.sendIn(url, queue.SendMessageInput{MessageBody: "e", DelaySeconds: ptr(30)})
	e.clock.Advance(10 * time.Second)
	e.restart()
	if c := e.counts(url); c != [3]string{"2", "1", "1"} {
		t.Fatalf("counts after restart = %v, want c, d visible, a in flight, e delayed", c)
	}
	if a := e.attrs(url); a["VisibilityTimeout"] != "60" {
		t.Fatalf("attributes lost: %v", a)
	}
	if got := e.bodies(url, queue.ReceiveMessageInput{}); !equal(got, []string{"c", "d"}) {
		t.Fatalf("after restart = %v, want c d (a in flight, b deleted, e delayed)", got)
	}
	e.clock.Advance(49 * time.Second)
	if got := e.bodies(url, queue.ReceiveMessageInput{}); !equal(got, []string{"e"}) {
		t.Fatalf("59 s after a's receive = %v, want only e", got)
	}
	e.clock.Advance(time.Second) // a's 60 s end
	m := e.receive(url, queue.ReceiveMessageInput{MaxNumberOfMessages: 10})
	if len(m) != 1 || m[0].Body != "a" || m[0].Attributes["ApproximateReceiveCount"] != "2" ||
		m[0].Attributes["ApproximateFirstReceiveTimestamp"] != ms(epoch) {
		t.Fatalf("= %+v, want a, received twice, first at the epoch", m)
	}
	t.Run("a receipt handle issued before a restart still works", func(t *testing.T) {
		e.restart()
		if err := e.svc.ChangeMessageVisibility(e.ctx, url, m[0].ReceiptHandle, 0); err != nil {
			t.Fatal(err)
		}
		got := e.receive(url, queue.ReceiveMessageInput{VisibilityTimeout: ptr(300)})
		if len(got) != 1 || got[0].Body != "a" || got[0].Attributes["ApproximateReceiveCount"] != "3" {
			t.Fatalf("= %+v", got)
		}
		e.delete(url, got[0].ReceiptHandle)
		e.restart()
		if c := e.counts(url); c != [3]string{"0", "3", "0"} {
			t.Fatalf("counts = %v, want c, d, e in flight", c)
		}
	})
}

// BenchmarkSendReceiveDelete measures the whole life of messages in
// batches of 10 (SendMessageBatch, ReceiveMessage of 10,
// DeleteMessageBatch) from 8 concurrent clients on the real clock and
// the embedded JetStream; it reports deleted messages per second.
func BenchmarkSendReceiveDelete(b *testing.B) {
	ctx := context.Background()
	s := testenv.Start(b, testenv.Options{}).Queues
	url, err := s.CreateQueue(ctx, "bench", nil)
	if err != nil {
		b.Fatal(err)
	}
	body := strings.Repeat("x", 100)
	entries := make([]queue.SendMessageBatchRequestEntry, 10)
	for i := range entries {
		entries[i] = queue.SendMessageBatchRequestEntry{Id: strconv.Itoa(i), SendMessageInput: queue.SendMessageInput{MessageBody: body}}
	}
	const clients = 8
	var left, deleted atomic.Int64
	left.Store(int64((b.N + 9) / 10))
	b.ResetTimer()
	var wg sync.WaitGroup
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dels := make([]queue.DeleteMessageBatchRequestEntry, 0, 10)
			for left.Add(-1) >= 0 {
				if out, err := s.SendMessageBatch(ctx, url, entries); err != nil || len(out.Failed) > 0 {
					b.Error(err, out)
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

func TestCacheBudget(t *testing.T) {
	e := newEnv(t)
	queue.SetCacheBudget(e.svc, 10)
	url := e.create("q", nil)
	dlq := e.create("dlq", nil)
	if err := e.svc.SetQueueAttributes(e.ctx, url, map[string]string{"RedrivePolicy": redrivePolicy(e, "dlq", 1)}); err != nil {
		t.Fatal(err)
	}
	attrs := map[string]queue.MessageAttributeValue{"k": {DataType: "Binary", BinaryValue: []byte{0, 1, 2}}}
	e.sendIn(url, queue.SendMessageInput{MessageBody: "small"}) // 5 bytes: cached
	e.sendIn(url, queue.SendMessageInput{MessageBody: "a body beyond the budget", MessageAttributes: attrs})
	if c := queue.Cached(e.svc); c != 5 {
		t.Fatalf("cached = %d bytes, want 5", c)
	}
	m := e.receive(url, queue.ReceiveMessageInput{MaxNumberOfMessages: 10, VisibilityTimeout: ptr(0), MessageAttributeNames: []string{"All"}})
	if len(m) != 2 || m[0].Body != "small" || m[1].Body != "a body beyond the budget" || string(m[1].MessageAttributes["k"].BinaryValue) != "\x00\x01\x02" {
		t.Fatalf("= %+v", m)
	}
	// moved to the dead-letter queue from JetStream, not from memory
	if got := e.bodies(url, queue.ReceiveMessageInput{}); len(got) != 0 {
		t.Fatalf("= %v", got)
	}
	if got := e.bodies(dlq, queue.ReceiveMessageInput{}); !equal(got, []string{"small", "a body beyond the budget"}) {
		t.Fatalf("dead-letter queue = %v", got)
	}
	if err := e.svc.PurgeQueue(e.ctx, dlq); err != nil {
		t.Fatal(err)
	}
	if c := queue.Cached(e.svc); c != 0 {
		t.Fatalf("cached after purge = %d", c)
	}
}

// API_DeleteQueue: "you must wait at least 60 seconds before creating a
// queue with the same name" (QueueDeletedRecently). Before the fix
// CreateQueue succeeded at once. The wait holds across a restart (it is
// stored in the engine); the queues runnel keeps for itself (EnsureQueue)
// are created again at once.
func TestAQueueNameIsRefusedForAMinuteAfterItsDeletion(t *testing.T) {
	e := newEnv(t)
	url := e.create("q", nil)
	if err := e.svc.DeleteQueue(e.ctx, url); err != nil {
		t.Fatal(err)
	}
	_, err := e.svc.CreateQueue(e.ctx, "q", nil)
	wantErr(t, err, awserr.ErrQueueDeletedRecently)
	if !awserr.IsRetryable(err) {
		t.Errorf("QueueDeletedRecently is not retryable: %v", err)
	}
	e.clock.Advance(59 * time.Second)
	e.restart()
	_, err = e.svc.CreateQueue(e.ctx, "q", nil)
	wantErr(t, err, awserr.ErrQueueDeletedRecently)
	// Another name is free.
	e.create("other", nil)
	e.clock.Advance(time.Second)
	url = e.create("q", nil)
	e.send(url, "a")
	if got := e.bodies(url, queue.ReceiveMessageInput{}); !equal(got, []string{"a"}) {
		t.Fatalf("the queue created again after 60 s received %v", got)
	}
	if err := e.svc.DeleteQueue(e.ctx, url); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.EnsureQueue(e.ctx, "q", nil); err != nil {
		t.Fatalf("EnsureQueue right after the deletion: %v", err)
	}
}
