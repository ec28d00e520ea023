package engine

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/nats-io/nats.go/jetstream"
)

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
	t := c.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.Chan():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
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
