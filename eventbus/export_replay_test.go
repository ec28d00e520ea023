package eventbus

// SetReplayRouteFault makes every replay call f before it sends an
// archived event, and fail the sending with f's error when it is not nil;
// nil removes it.
func SetReplayRouteFault(f func(replay string) error) {
	if f == nil {
		replayRouteFault.Store(nil)
		return
	}
	replayRouteFault.Store(&f)
}
