package sns

// ApplyStoredSubscription applies a subscriptions bucket entry as the
// watch does, for tests.
func (s *Service) ApplyStoredSubscription(key string, value []byte, rev uint64) {
	s.applySubscription(key, value, rev)
}
