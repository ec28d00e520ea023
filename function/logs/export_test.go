package logs

// SetGate makes s's writer wait for a value on gate before each event of
// PutLogEvent it writes (a stalled log store); call it before the first
// PutLogEvent.
func SetGate(s *Store, gate chan struct{}) { s.gate = gate }
