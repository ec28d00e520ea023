package testenv

import (
	"errors"
	"testing"
	"time"
)

// CrashHook is for a package's crash hook (a function run between two
// writes; an error stops there, as a crash would): set registers hook
// until the test ends; the returned wait blocks until hook was first
// called (10 s at most, wall clock). The caller removes the hook (set
// nil) before it opens the next instance.
func CrashHook(t testing.TB, set func(func() error)) (wait func()) {
	called := make(chan struct{}, 1)
	set(func() error {
		select {
		case called <- struct{}{}:
		default:
		}
		return errors.New("crash")
	})
	t.Cleanup(func() { set(nil) })
	return func() {
		t.Helper()
		select {
		case <-called:
		case <-time.After(10 * time.Second):
			t.Fatal("the crash hook was never reached")
		}
	}
}
