package expr_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel/scheduler/expr"
)

// jumpingClock is a fake clock that jumps forward once, inside the first
// NewTimer call: between RunTimer's reading of the clock and its timer's
// start, where a test's Advance can land when the timer's goroutine is
// descheduled.
type jumpingClock struct {
	*clockwork.FakeClock
	jump atomic.Int64 // nanoseconds, 0 once jumped
}

func (c *jumpingClock) NewTimer(d time.Duration) clockwork.Timer {
	if j := c.jump.Swap(0); j != 0 {
		c.FakeClock.Advance(time.Duration(j))
	}
	return c.FakeClock.NewTimer(d)
}

// TestRunTimerFiresOnTimeWhenTheClockJumpsWhileItSetsItsTimer: the clock
// jumps 59 s while RunTimer sets its timer for a deadline 60 s away; when
// the clock then reaches the deadline, fire runs (a timer set for the 60 s
// computed before the jump would wait until 119 s).
func TestRunTimerFiresOnTimeWhenTheClockJumpsWhileItSetsItsTimer(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	deadline := t0.Add(time.Minute)
	clock := &jumpingClock{FakeClock: clockwork.NewFakeClockAt(t0)}
	clock.jump.Store(int64(59 * time.Second))
	fired := make(chan time.Time, 100)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		expr.RunTimer(ctx, clock, nil, func(now time.Time) time.Time {
			if !now.Before(deadline) {
				fired <- now
				return time.Time{}
			}
			return deadline
		})
	}()
	defer func() { cancel(); <-done }()
	bctx, bcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer bcancel()
	if err := clock.BlockUntilContext(bctx, 1); err != nil { // RunTimer waits on its timer
		t.Fatalf("RunTimer never set its timer: %v", err)
	}
	if got := clock.Now(); !got.Equal(t0.Add(59 * time.Second)) {
		t.Fatalf("the clock is at %v; want the jump to 59 s", got)
	}
	clock.Advance(time.Second) // the deadline
	select {
	case now := <-fired:
		if now.Before(deadline) {
			t.Fatalf("fired at %v, before the deadline %v", now, deadline)
		}
	case <-time.After(10 * time.Second): // a safety net: fire never runs
		t.Fatalf("the clock reached the deadline %v and fire did not run (the timer was set late by the jump)", deadline)
	}
}
