package mapping

import "context"

// SetWriteReplyLost makes every successful checkpoint-bucket write
// report f's error instead (nil f: none), as if its reply were lost.
func SetWriteReplyLost(f func(ctx context.Context, key string) error) {
	if f == nil {
		writeReplyLost.Store(nil)
		return
	}
	writeReplyLost.Store(&f)
}

// SetLoadReadStalls makes every reading of a shard's load (its appended
// bytes) run f first with the reading's context and fail with f's error
// (nil f: none), as a stream with no leader would stall it.
func SetLoadReadStalls(f func(ctx context.Context) error) {
	if f == nil {
		loadReadStalls.Store(nil)
		return
	}
	loadReadStalls.Store(&f)
}
