package scheduler

// SetCrashAfterStore makes fireOne stop, as a crash would, between
// storing an occurrence's delivery and recording the occurrence, while f
// returns an error; nil removes it.
func SetCrashAfterStore(f func() error) {
	if f == nil {
		crashAfterStore.Store(nil)
		return
	}
	crashAfterStore.Store(&f)
}
