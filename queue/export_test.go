package queue

import (
	"context"
	"testing"
)

// SetCacheBudget sets the bytes of message payloads s keeps in memory.
func SetCacheBudget(s *Service, n int64) { s.cacheBudget = n }

// Cached returns the bytes of message payloads s keeps in memory.
func Cached(s *Service) int64 { return s.cached.Load() }

// SetStaleReads makes direct gets of message bodies answer "not found"
// while stale returns true, as a follower that has not applied them.
func SetStaleReads(s *Service, stale func() bool) { s.staleReads = stale }

// SetReadFault fails every read of a message body with what fault
// returns, while it returns an error.
func SetReadFault(s *Service, fault func() error) { s.readFault = fault }

// SetHolding replaces s's answer to "may this process still count its
// writes as the queues' holder" (nil: the lease's own answer).
func SetHolding(s *Service, holding func() bool) { s.holdingHook = holding }

// SetDeleteHook makes DeleteQueue call h once the queue is marked
// deleted, before its metadata and stream are removed.
func SetDeleteHook(s *Service, h func()) { s.deleteHook = h }

// RewindRecordNumber makes the queue's index take its next record number
// k lower, as an index loaded behind its stream would.
func RewindRecordNumber(t testing.TB, s *Service, url string, k uint64) {
	t.Helper()
	q, err := s.queue(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	q.mu.Lock()
	q.nextN -= k
	q.mu.Unlock()
}

// Waiters is how many receives wait on the queue's index now.
func Waiters(t testing.TB, s *Service, url string) int {
	t.Helper()
	q, err := s.queue(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.waiters
}
