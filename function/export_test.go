package function

// SlotTaken is slotTaken, for tests.
var SlotTaken = slotTaken

// UnreservedPoolSize is the size of this node's pool of unreserved
// concurrency (1,000 less the reservations it knows).
func (s *Service) UnreservedPoolSize() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return cap(s.pool.g.Load().ch)
}
