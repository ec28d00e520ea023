package logs

// SetGate makes s's writer wait for a value on gate before each event of
// PutLogEvent it writes (a stalled log store); call it before the first
// PutLogEvent.
func SetGate(s *Store, gate chan struct{}) { s.gate = gate }

// Knows reports whether s has group recorded as existing (so that a
// write does not create it again).
func Knows(s *Store, group string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.known[knownKey(s.groups, token(group))]
}
