package scheduler_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/queue"
)

// 10,000 schedules, 1,000 a minute for 10 minutes, on a fake clock: none
// fires a second early, every one of a minute has fired (and is stored
// in its target queue) before the clock moves on.
func TestTenThousandSchedulesFireOnTime(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 schedules")
	}
	const n, perMinute = 10000, 1000
	clock := clockwork.NewFakeClockAt(t0)
	rn := start(t, t.TempDir(), clock)
	ctx := context.Background()
	rn.Queues.CreateQueue(ctx, "q", nil)
	for i := range n {
		create(t, rn, schedule(rn, fmt.Sprintf("s%05d", i), fmt.Sprintf("at(2026-01-01T00:%02d:00)", 1+i/perMinute), "q"))
	}
	count := func() int {
		attrs, _ := rn.Queues.GetQueueAttributes(ctx, "q", []string{queue.AttrApproximateNumberOfMessages})
		c, _ := strconv.Atoi(attrs[queue.AttrApproximateNumberOfMessages])
		return c
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("at the failure: %d delivered, the engine clock at %v", count(), clock.Now())
		}
	})
	for m := 1; m <= n/perMinute; m++ {
		due := t0.Add(time.Duration(m) * time.Minute)
		clock.Advance(due.Add(-time.Second).Sub(clock.Now()))
		time.Sleep(20 * time.Millisecond)
		if c := count(); c != (m-1)*perMinute {
			t.Fatalf("minute %d, a second before: %d delivered, want %d", m, c, (m-1)*perMinute)
		}
		clock.Advance(time.Second)
		// Time goes on while the deliveries are made, 100 ms a poll and at
		// most 50 s (never into the next minute): a delivery retried, or a
		// poller waiting a second after a failed receive on a loaded
		// machine, waits on the engine clock (CI saw a minute stuck at
		// fewer than 1,000 deliveries with the clock held still). CI saw
		// one stuck again with this in place (2026-11-27, no engine
		// warning logged). A cause that fits: the scheduler's timer for
		// the minute could start after the jump to a second before it,
		// late by the whole jump, past the 50 s (expr.RunTimer now looks
		// again when the clock moved while it set the timer).
		testenv.Eventually(t, 60*time.Second, fmt.Sprintf("minute %d's schedules", m), func() bool {
			if clock.Now().Before(due.Add(50 * time.Second)) {
				clock.Advance(100 * time.Millisecond)
			}
			return count() == m*perMinute
		})
	}
}

// 100 schedules on the real clock (the wall clock, as `runnel serve` runs
// them): all delivered to their queue, none before its time (each copy's
// SentTimestamp at or after it). How late they come is a figure, not a
// rule asserted here: on a loaded machine it grows with the load (logged).
func TestHundredSchedulesOnTheRealClock(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the real clock")
	}
	rn := testenv.Start(t, testenv.Options{})
	ctx := context.Background()
	rn.Queues.CreateQueue(ctx, "q", nil)
	at := time.Now().UTC().Truncate(time.Second).Add(3 * time.Second)
	for i := range 100 {
		create(t, rn, schedule(rn, fmt.Sprintf("s%03d", i), "at("+at.Format("2006-01-02T15:04:05")+")", "q"))
	}
	count := func() int {
		attrs, _ := rn.Queues.GetQueueAttributes(ctx, "q", []string{queue.AttrApproximateNumberOfMessages})
		c, _ := strconv.Atoi(attrs[queue.AttrApproximateNumberOfMessages])
		return c
	}
	testenv.Eventually(t, 60*time.Second, "100 deliveries", func() bool { return count() == 100 })
	t.Logf("the last delivery came %v after the schedules' time", time.Since(at))
	zero := 0
	got := 0
	for got < 100 {
		msgs, err := rn.Queues.ReceiveMessage(ctx, "q", queue.ReceiveMessageInput{MaxNumberOfMessages: 10, WaitTimeSeconds: &zero,
			MessageSystemAttributeNames: []string{queue.MsgAttrSentTimestamp}})
		if err != nil || len(msgs) == 0 {
			t.Fatalf("receive after %d: %d messages, %v", got, len(msgs), err)
		}
		for _, m := range msgs {
			sent, _ := strconv.ParseInt(m.Attributes[queue.MsgAttrSentTimestamp], 10, 64)
			if sent < at.UnixMilli() {
				t.Fatalf("a copy sent at %v, %v before the schedules' time", time.UnixMilli(sent).UTC(), at.Sub(time.UnixMilli(sent)))
			}
		}
		got += len(msgs)
	}
}
