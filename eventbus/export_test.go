package eventbus

// SetCrashAfterStore makes fireRule stop, as a crash would, between
// storing an occurrence's deliveries and recording the occurrence, while
// f returns an error; nil removes it.
func SetCrashAfterStore(f func() error) {
	if f == nil {
		crashAfterStore.Store(nil)
		return
	}
	crashAfterStore.Store(&f)
}

// SetReplayStepped makes every replay call f after each archived event it
// has read and saved; nil removes it.
func SetReplayStepped(f func(replay string)) {
	if f == nil {
		replayStepped.Store(nil)
		return
	}
	replayStepped.Store(&f)
}
