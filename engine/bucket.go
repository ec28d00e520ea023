package engine

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/runnel-dev/runnel/internal/clocks"
)

// Buckets opens (as Bucket) each bucket named in into, in name order,
// and stores its handle where into points; it stops at the first error.
// A service's New opens its buckets with it.
func (e *Engine) Buckets(ctx context.Context, into map[string]*jetstream.KeyValue) error {
	for _, name := range slices.Sorted(maps.Keys(into)) {
		kv, err := e.Bucket(ctx, name)
		if err != nil {
			return err
		}
		*into[name] = kv
	}
	return nil
}

// LoadJSON reads every key of a key-value bucket and decodes its value as
// JSON into a T, calling fn with the key and the value, or with the decode
// error (and the zero T) for a value that does not decode. Keys whose
// entry cannot be read (deleted meanwhile) are skipped. An empty bucket is
// not an error. The services use it to load their stored configurations
// at start.
func LoadJSON[T any](ctx context.Context, kv jetstream.KeyValue, fn func(key string, v T, err error)) error {
	keys, err := kv.Keys(ctx)
	if err != nil && !errors.Is(err, jetstream.ErrNoKeysFound) {
		return err
	}
	for _, k := range keys {
		e, err := kv.Get(ctx, k)
		if err != nil {
			continue
		}
		var v T
		if err := json.Unmarshal(e.Value(), &v); err != nil {
			var zero T
			fn(k, zero, err)
			continue
		}
		fn(k, v, nil)
	}
	return nil
}

// Sleep waits d on clock c (the engine's Clock, so tests with a fake
// clock decide when it ends). It returns ctx.Err() if ctx ends first,
// else nil.
func Sleep(ctx context.Context, c clockwork.Clock, d time.Duration) error {
	return clocks.Sleep(ctx, c, d)
}

// Watch follows a key-value bucket with kv.WatchAll(opts...) until ctx
// ends, calling fn with each entry (the nil that marks the end of the
// initial values is skipped; a deleted key's entry has Operation
// KeyValueDelete or KeyValuePurge). The goroutine is counted in wg.
func Watch(ctx context.Context, wg *sync.WaitGroup, kv jetstream.KeyValue, fn func(jetstream.KeyValueEntry), opts ...jetstream.WatchOpt) error {
	w, err := kv.WatchAll(ctx, opts...)
	if err != nil {
		return err
	}
	wg.Go(func() {
		defer w.Stop()
		for {
			select {
			case e, ok := <-w.Updates():
				if !ok {
					return
				}
				if e != nil {
					fn(e)
				}
			case <-ctx.Done():
				return
			}
		}
	})
	return nil
}

// ApplyEntry applies an entry of a watched bucket to state, a process's
// copy of the bucket by key; the caller holds state's lock. An entry no
// newer than the state held for its key (rev gives that state's
// revision) is skipped: entries come in revision order, so it is this
// process's own write, already applied. A deletion or purge removes the
// key. A put's value is decoded from JSON into a T and handed to build,
// whose result is stored under the key; build returns nil (and logs why)
// to keep the key's state as it was. A value that does not decode is
// handed to unreadable and skipped. It reports whether it stored a state.
func ApplyEntry[T, S any](state map[string]*S, e jetstream.KeyValueEntry, rev func(*S) uint64, build func(T) *S, unreadable func(error)) bool {
	k := e.Key()
	if cur := state[k]; cur != nil && e.Revision() <= rev(cur) {
		return false
	}
	if e.Operation() != jetstream.KeyValuePut {
		delete(state, k)
		return false
	}
	var v T
	if err := json.Unmarshal(e.Value(), &v); err != nil {
		unreadable(err)
		return false
	}
	st := build(v)
	if st == nil {
		return false
	}
	state[k] = st
	return true
}
