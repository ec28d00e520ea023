// Package clocks holds the waits and ticks on a clockwork clock that packages below
// engine share (lease cannot import engine, which imports it).
package clocks

import (
	"context"
	"time"

	"github.com/jonboulle/clockwork"
)

// Sleep waits d on clock c (a fake clock in a test decides when it ends).
// It returns ctx.Err() if ctx ends first, else nil.
func Sleep(ctx context.Context, c clockwork.Clock, d time.Duration) error {
	t := c.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.Chan():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Every calls fn every d on clock c (the first call d after the start)
// until ctx ends; a call in progress delays the next tick, as a
// time.Ticker drops the ticks it could not deliver.
func Every(ctx context.Context, c clockwork.Clock, d time.Duration, fn func()) {
	EveryOrKick(ctx, c, d, nil, fn)
}

// EveryOrKick is Every that also calls fn at once on each receive from
// kick (nil: never), for work that an event may make due early.
func EveryOrKick(ctx context.Context, c clockwork.Clock, d time.Duration, kick <-chan struct{}, fn func()) {
	t := c.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-kick:
		case <-t.Chan():
		}
		fn()
	}
}

// TimerAt returns a timer on clock c that fires once c reaches t (at once
// when t has passed).
//
// The trap it closes: a timer is set for a duration, computed from a
// reading of the clock. A clock that moves forward between that reading
// and the timer's start (a test's fake clock jumping a minute while this
// goroutine is descheduled on a loaded machine) leaves the timer late by
// the whole jump, and what is due waits for a time that may never come.
// So the clock is read again once the timer is set; if it moved by more
// than timerSlack, the timer is set again from the new reading.
func TimerAt(c clockwork.Clock, t time.Time) clockwork.Timer {
	for {
		now := c.Now()
		tm := c.NewTimer(max(0, t.Sub(now)))
		if c.Now().Sub(now) <= timerSlack {
			return tm
		}
		tm.Stop()
	}
}

// timerSlack is how far the clock may move while TimerAt sets its timer
// before the timer counts as late. The real clock moves nanoseconds there
// (more only when the goroutine is descheduled, and then setting the timer
// again costs nothing).
const timerSlack = 10 * time.Millisecond
