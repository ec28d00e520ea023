package stream

import "time"

// SetStaleReads makes s's direct gets answer, while stale returns true,
// as a follower of a replicated stream that has applied no message yet
// (nil: never).
func SetStaleReads(s *Service, stale func() bool) { s.staleReads = stale }

// SetAckLost makes s lose the acknowledgement of each publish for which
// lost returns true (nil: none), and sets how long PutLogRecords tries
// to learn an outcome (0: ResolveWithin).
func SetAckLost(s *Service, lost func() bool, resolveWithin time.Duration) {
	s.ackLost, s.resolveWithin = lost, resolveWithin
}
