package queue_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/queue"
)

// perm is a permutation of 1..n seconds over i in 0..n-1 (step coprime
// with n), so that timers are due in an order unrelated to send order.
func perm(i, step, n int) int { return (i*step)%n + 1 }

// count reads one of the queue's Approximate* attributes as a number.
func (e *env) count(url, attr string) int {
	e.t.Helper()
	n, err := strconv.Atoi(e.attrs(url)[attr])
	if err != nil {
		e.t.Fatalf("%s: %v", attr, err)
	}
	return n
}

// receiveAllInOrder receives the queue's visible messages ten at a time
// and checks that they come in send order (their bodies are their send
// indexes, zero-padded).
func (e *env) receiveAllInOrder(url string, want []int) []queue.Message {
	e.t.Helper()
	var got []queue.Message
	for len(got) < len(want) {
		ms := e.receive(url, queue.ReceiveMessageInput{MaxNumberOfMessages: 10, VisibilityTimeout: ptr(600)})
		if len(ms) == 0 {
			e.t.Fatalf("received %d of %d messages", len(got), len(want))
		}
		got = append(got, ms...)
	}
	for i, m := range got {
		if w := fmt.Sprintf("%02d", want[i]); m.Body != w {
			e.t.Fatalf("message %d received is %s, want %s (send order)", i, m.Body, w)
		}
	}
	return got
}

// TestDelaysAndVisibilityTimeoutsEndOnTimeWhateverTheirOrder: a delayed
// message becomes visible when its DelaySeconds end and an in-flight one
// when its visibility timeout (as last changed by
// ChangeMessageVisibility) ends, each at its own time whatever the order
// they were set in; deleting in-flight messages does not disturb the
// others' timers. Messages that became visible are received in send order
// (runnel's standard queue order), whatever order they became visible in.
func TestDelaysAndVisibilityTimeoutsEndOnTimeWhateverTheirOrder(t *testing.T) {
	const n = 40
	e := newEnv(t)
	url := e.create("timers", nil)
	for i := 0; i < n; i++ {
		e.sendIn(url, queue.SendMessageInput{MessageBody: fmt.Sprintf("%02d", i), DelaySeconds: ptr(perm(i, 17, n))})
	}
	for s := 1; s <= n; s++ {
		e.clock.Advance(time.Second)
		if v, d := e.count(url, "ApproximateNumberOfMessages"), e.count(url, "ApproximateNumberOfMessagesDelayed"); v != s || d != n-s {
			t.Fatalf("%d s after the sends: %d visible, %d delayed; want %d, %d", s, v, d, s, n-s)
		}
	}
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	got := e.receiveAllInOrder(url, all)

	// New timeouts in another order; every third message deleted.
	due := map[int]int{} // send index -> seconds until visible
	for i, m := range got {
		if i%3 == 0 {
			e.delete(url, m.ReceiptHandle)
			continue
		}
		due[i] = perm(i, 23, n)
		if err := e.svc.ChangeMessageVisibility(e.ctx, url, m.ReceiptHandle, due[i]); err != nil {
			t.Fatal(err)
		}
	}
	var left []int
	for s := 1; s <= n; s++ {
		e.clock.Advance(time.Second)
		visible := 0
		for _, d := range due {
			if d <= s {
				visible++
			}
		}
		if v, f := e.count(url, "ApproximateNumberOfMessages"), e.count(url, "ApproximateNumberOfMessagesNotVisible"); v != visible || f != len(due)-visible {
			t.Fatalf("%d s after ChangeMessageVisibility: %d visible, %d in flight; want %d, %d", s, v, f, visible, len(due)-visible)
		}
	}
	for i := 0; i < n; i++ {
		if _, ok := due[i]; ok {
			left = append(left, i)
		}
	}
	e.receiveAllInOrder(url, left)
}

// TestAgeOfOldestMessageFollowsDeletesInAnyOrder: the age of the oldest
// message is that of the oldest one still in the queue, however the
// messages before it were deleted; and MessageRetentionPeriod deletes
// each message when its own retention ends.
func TestAgeOfOldestMessageFollowsDeletesInAnyOrder(t *testing.T) {
	const n = 20
	e := newEnv(t)
	url := e.create("ages", map[string]string{"MessageRetentionPeriod": "60"})
	for i := 0; i < n; i++ {
		e.send(url, fmt.Sprintf("%02d", i)) // message i sent at epoch + i s
		e.clock.Advance(time.Second)
	}
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	got := e.receiveAllInOrder(url, all)
	// Delete half of them, in an order unrelated to send order.
	deleted := map[int]bool{}
	for k := 0; k < n/2; k++ {
		i := (k * 7) % n
		e.delete(url, got[i].ReceiptHandle)
		deleted[i] = true
		oldest := 0
		for deleted[oldest] {
			oldest++
		}
		want := time.Duration(n-oldest) * time.Second
		if age, err := e.svc.ApproximateAgeOfOldestMessage(e.ctx, url); err != nil || age != want {
			t.Fatalf("after deleting message %d: age %v (%v), want %v (message %d)", i, age, err, want, oldest)
		}
	}
	// Retention: message i goes at epoch + i + 60 s; the clock is at
	// epoch + n s.
	for s := n; s <= 60+n; s++ {
		stored := 0
		for i := 0; i < n; i++ {
			if !deleted[i] && i+60 > s {
				stored++
			}
		}
		if f := e.count(url, "ApproximateNumberOfMessagesNotVisible"); f != stored {
			t.Fatalf("at %d s: %d messages stored, want %d", s, f, stored)
		}
		e.clock.Advance(time.Second)
	}
}

// TestCachedPayloadCountsBodyAndAttributes: a message kept in memory
// counts against the service's cache budget with its body and its
// message attributes (names, data types and values), and gives the bytes
// back when deleted.
func TestCachedPayloadCountsBodyAndAttributes(t *testing.T) {
	e := newEnv(t)
	queue.SetCacheBudget(e.svc, 1<<20)
	url := e.create("cached", nil)
	attrs := map[string]queue.MessageAttributeValue{"key": {DataType: "String", StringValue: str("value")}}
	e.sendIn(url, queue.SendMessageInput{MessageBody: "body", MessageAttributes: attrs})
	if c, want := queue.Cached(e.svc), int64(len("body")+len("key")+len("String")+len("value")); c != want {
		t.Fatalf("cached = %d bytes, want %d (body and attributes)", c, want)
	}
	m := e.receive(url, queue.ReceiveMessageInput{})
	e.delete(url, m[0].ReceiptHandle)
	if c := queue.Cached(e.svc); c != 0 {
		t.Fatalf("cached after delete = %d", c)
	}
}

// TestDeadLetteredMessageAgesFromItsFirstSend: a message redriven to a
// standard dead-letter queue keeps its original send time (as on AWS), so
// it is the dead-letter queue's oldest message even when a message sent
// to that queue directly arrived there before it.
func TestDeadLetteredMessageAgesFromItsFirstSend(t *testing.T) {
	e := newEnv(t)
	url := e.create("src", nil)
	dlq := e.create("src-dlq", nil)
	if err := e.svc.SetQueueAttributes(e.ctx, url, map[string]string{"RedrivePolicy": redrivePolicy(e, "src-dlq", 1)}); err != nil {
		t.Fatal(err)
	}
	e.send(url, "first") // at epoch
	e.clock.Advance(10 * time.Second)
	e.send(dlq, "direct") // at epoch + 10 s
	e.clock.Advance(10 * time.Second)
	e.receive(url, queue.ReceiveMessageInput{VisibilityTimeout: ptr(0)})
	if got := e.bodies(url, queue.ReceiveMessageInput{}); len(got) != 0 { // the second receive moves it
		t.Fatalf("source still delivers %v", got)
	}
	if n := e.count(dlq, "ApproximateNumberOfMessages"); n != 2 {
		t.Fatalf("dead-letter queue holds %d messages, want 2", n)
	}
	if age, err := e.svc.ApproximateAgeOfOldestMessage(e.ctx, dlq); err != nil || age != 20*time.Second {
		t.Fatalf("age of the oldest dead-letter message = %v (%v), want 20s (the redriven one, from its first send)", age, err)
	}
}

// TestPayloadThatFillsTheCacheBudgetExactlyIsCached: the cache keeps a
// payload as long as the bytes kept stay within the budget, the last byte
// included.
func TestPayloadThatFillsTheCacheBudgetExactlyIsCached(t *testing.T) {
	e := newEnv(t)
	size := int64(len("body") + len("key") + len("String") + len("value"))
	queue.SetCacheBudget(e.svc, size)
	url := e.create("cached", nil)
	attrs := map[string]queue.MessageAttributeValue{"key": {DataType: "String", StringValue: str("value")}}
	e.sendIn(url, queue.SendMessageInput{MessageBody: "body", MessageAttributes: attrs})
	if c := queue.Cached(e.svc); c != size {
		t.Fatalf("cached = %d bytes, want %d (the budget, exactly)", c, size)
	}
	e.sendIn(url, queue.SendMessageInput{MessageBody: "more", MessageAttributes: attrs})
	if c := queue.Cached(e.svc); c != size {
		t.Fatalf("cached = %d bytes after a second message, want %d (over the budget: not kept)", c, size)
	}
	if got := e.bodies(url, queue.ReceiveMessageInput{MaxNumberOfMessages: 10}); len(got) != 2 {
		t.Fatalf("received %v, want both messages (the second read back from JetStream)", got)
	}
}
