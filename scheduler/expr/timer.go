package expr

import (
	"context"
	"time"

	"github.com/jonboulle/clockwork"
)

// RunTimer calls fire with the clock's time whenever the time it last
// returned has come, or kick receives; fire does what is due and returns
// when to wake next (the zero time: not until a kick). It returns when ctx
// is done. Every wait is on clock, so a fake clock drives it in tests.
//
// The trap: a timer is set for a duration, computed from a reading of the
// clock. A clock that moves forward between that reading and the timer's
// start (a test's fake clock jumping a minute while this goroutine is
// descheduled) would leave the timer late by the whole jump, and what is
// due would wait for a time that may never come. So the clock is read
// again once the timer is set; if it moved by more than timerSlack, the
// timer is dropped and fire looks again at once.
func RunTimer(ctx context.Context, clock clockwork.Clock, kick <-chan struct{}, fire func(now time.Time) time.Time) {
	for {
		next := fire(clock.Now())
		var wake <-chan time.Time
		var timer clockwork.Timer
		if !next.IsZero() {
			now := clock.Now()
			timer = clock.NewTimer(max(0, next.Sub(now)))
			if clock.Now().Sub(now) > timerSlack {
				timer.Stop()
				continue
			}
			wake = timer.Chan()
		}
		select {
		case <-ctx.Done():
			if timer != nil {
				timer.Stop()
			}
			return
		case <-kick:
		case <-wake:
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// timerSlack is how far the clock may move while RunTimer sets its timer
// before the timer counts as late. The real clock moves nanoseconds there
// (more only when the goroutine is descheduled, and then looking again
// costs one call of fire).
const timerSlack = 10 * time.Millisecond
