// Package closing holds the Close of the services that start goroutines
// of their own after New (function/async's pollers, SNS's deliveries).
package closing

import (
	"context"
	"sync"
)

// Close marks a service closed under its lock mu, so that no goroutine
// starts after (the service checks *closed under mu before it adds one
// to wg), then cancels the goroutines' context and waits for them.
func Close(mu sync.Locker, closed *bool, cancel context.CancelFunc, wg *sync.WaitGroup) {
	mu.Lock()
	*closed = true
	mu.Unlock()
	cancel()
	wg.Wait()
}
