package queue

// SetCacheBudget sets the bytes of message payloads s keeps in memory.
func SetCacheBudget(s *Service, n int64) { s.cacheBudget = n }

// Cached returns the bytes of message payloads s keeps in memory.
func Cached(s *Service) int64 { return s.cached.Load() }
