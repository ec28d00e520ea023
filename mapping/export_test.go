package mapping

import (
	"context"

	"github.com/runnel-dev/runnel/stream"
)

// SetWriteReplyLost makes every successful checkpoint-bucket write
// report f's error instead (nil f: none), as if its reply were lost.
func SetWriteReplyLost(f func(ctx context.Context, key string) error) {
	if f == nil {
		writeReplyLost.Store(nil)
		return
	}
	writeReplyLost.Store(&f)
}

// SetAfterLoad runs f in every NewService between loading the mappings'
// configurations and applying the watch's changes (nil: none).
func SetAfterLoad(f func()) { afterLoad = f }

// SetRequestStalls makes every load reading (kind "load"), checkpoint
// bucket write (kind "checkpoint"), every write of a shard's position
// before it (kind "position"), and the read that checks whether a write
// of unknown outcome landed (kind "verify") run f first with the request's context and
// fail with f's error (nil f: none), as a stream with no leader would
// stall it.
func SetRequestStalls(f func(ctx context.Context, kind string) error) {
	if f == nil {
		requestStalls.Store(nil)
		return
	}
	requestStalls.Store(&f)
}

// SetFencedHook calls f with the unit of every checkpoint write this
// process found fenced (nil f: none).
func SetFencedHook(f func(unit string)) {
	if f == nil {
		fencedHook.Store(nil)
		return
	}
	fencedHook.Store(&f)
}

// SetBeforeSeen runs f in every shard worker after a read's records are
// pushed to their lanes and before the worker counts them as seen, with
// the read's last record (nil f: none). A read is what the worker found
// waiting: under load, a PutRecords call's records can come in more than
// one.
func SetBeforeSeen(f func(last *stream.Record)) {
	if f == nil {
		beforeSeen.Store(nil)
		return
	}
	beforeSeen.Store(&f)
}
