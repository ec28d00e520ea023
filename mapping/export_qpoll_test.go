package mapping

// SetQueueSlotWait calls f each time a queue mapping's invocation waits
// for one of its MaximumConcurrency slots (nil f: none).
func SetQueueSlotWait(f func()) {
	if f == nil {
		slotWaitHook.Store(nil)
		return
	}
	slotWaitHook.Store(&f)
}
