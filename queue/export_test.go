package queue

// SetCacheBudget sets the bytes of message payloads s keeps in memory.
func SetCacheBudget(s *Service, n int64) { s.cacheBudget = n }

// Cached returns the bytes of message payloads s keeps in memory.
func Cached(s *Service) int64 { return s.cached.Load() }

// SetHolding replaces s's answer to "may this process still count its
// writes as the queues' holder" (nil: the lease's own answer).
func SetHolding(s *Service, holding func() bool) { s.holdingHook = holding }

// SetDeleteHook makes DeleteQueue call h once the queue is marked
// deleted, before its metadata and stream are removed.
func SetDeleteHook(s *Service, h func()) { s.deleteHook = h }
