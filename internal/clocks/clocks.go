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
