package expr

import (
	"context"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel/internal/clocks"
)

// RunTimer calls fire with the clock's time whenever the time it last
// returned has come, or kick receives; fire does what is due and returns
// when to wake next (the zero time: not until a kick). It returns when ctx
// is done. Every wait is on clock, so a fake clock drives it in tests; its
// timer is clocks.TimerAt's, which a clock jumping while it is set does
// not make late.
func RunTimer(ctx context.Context, clock clockwork.Clock, kick <-chan struct{}, fire func(now time.Time) time.Time) {
	for {
		next := fire(clock.Now())
		var wake <-chan time.Time
		var timer clockwork.Timer
		if !next.IsZero() {
			timer = clocks.TimerAt(clock, next)
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
