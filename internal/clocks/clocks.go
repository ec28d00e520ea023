// Package clocks holds the waits on a clockwork clock that packages below
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
