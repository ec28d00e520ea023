package stream

// SetStaleReads makes s's direct gets answer, while stale returns true,
// as a follower of a replicated stream that has applied no message yet
// (nil: never).
func SetStaleReads(s *Service, stale func() bool) { s.staleReads = stale }
