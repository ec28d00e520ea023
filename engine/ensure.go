package engine

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// EnsureBucket opens the key-value bucket of cfg, creating it (or
// updating it to cfg) as EnsureStream does a stream. An existing bucket
// keeps its storage type and replicas (keepPlacement).
func (e *Engine) EnsureBucket(ctx context.Context, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	return ensureAs(e, ctx, ensureRequest{Kind: kindBucket, Bucket: &cfg},
		func(ctx context.Context) (jetstream.KeyValue, error) { return e.JS.KeyValue(ctx, cfg.Bucket) },
		func(err error) bool { return errors.Is(err, jetstream.ErrBucketNotFound) },
		func(ctx context.Context, kv jetstream.KeyValue) (bool, error) {
			st, err := kv.Status(ctx)
			if err != nil {
				return false, err
			}
			bs, ok := st.(*jetstream.KeyValueBucketStatus)
			if !ok {
				return true, nil
			}
			want, have := cfg, bs.Config()
			want.Storage, want.Replicas = keepPlacement(want.Replicas, bs.StreamInfo().Config)
			return covers(want, have), nil
		},
		func(ctx context.Context) (jetstream.KeyValue, error) {
			var err error
			if cfg.Storage, cfg.Replicas, err = e.placement(ctx, "KV_"+cfg.Bucket, cfg.Storage, cfg.Replicas); err != nil {
				return nil, err
			}
			return ChangeAgain(ctx, func(c context.Context) (jetstream.KeyValue, error) { return e.JS.CreateOrUpdateKeyValue(c, cfg) })
		})
}

// EnsureStream creates the stream of cfg, or updates it to cfg when it
// exists with another configuration, keeping its storage type and
// replicas (keepPlacement). Unlike CreateOrUpdateStream it is safe when
// several cluster nodes ensure one new replicated stream at once (see
// Bucket).
func (e *Engine) EnsureStream(ctx context.Context, cfg jetstream.StreamConfig) (jetstream.Stream, error) {
	return ensureAs(e, ctx, ensureRequest{Kind: kindStream, Stream: &cfg},
		func(ctx context.Context) (jetstream.Stream, error) { return e.JS.Stream(ctx, cfg.Name) },
		func(err error) bool { return errors.Is(err, jetstream.ErrStreamNotFound) },
		func(_ context.Context, st jetstream.Stream) (bool, error) {
			want, have := cfg, st.CachedInfo().Config
			want.Storage, want.Replicas = keepPlacement(want.Replicas, have)
			return covers(want, have), nil
		},
		func(ctx context.Context) (jetstream.Stream, error) { return e.CreateOrUpdateStream(ctx, cfg) })
}

var (
	errNotYet = errors.New("engine: not created yet")
	errStale  = errors.New("engine: exists with another configuration")
)

// ensureAs is ensure for a resource of type T: open opens it (an error
// for which notFound is true: it does not exist yet), current tells
// whether the resource open found has the wanted configuration (asked
// in an embedded cluster only), create creates it or updates it to the
// wanted configuration. It returns the resource from the last of the
// two that ran.
func ensureAs[T any](e *Engine, ctx context.Context, req ensureRequest, open func(context.Context) (T, error), notFound func(error) bool, current func(context.Context, T) (bool, error), create func(context.Context) (T, error)) (T, error) {
	var r T
	err := e.ensure(ctx, req, func(ctx context.Context) (err error) {
		r, err = open(ctx)
		if notFound(err) {
			return errNotYet
		}
		if err != nil {
			return err
		}
		ok, err := current(ctx, r)
		if err == nil && !ok {
			return errStale
		}
		return err
	}, func(ctx context.Context) (err error) {
		r, err = create(ctx)
		return err
	})
	return r, err
}

// EnsureObjectStore opens the object store of cfg, creating it (or
// updating it to cfg) as EnsureStream does a stream, keeping an existing
// store's storage type and replicas (keepPlacement).
func (e *Engine) EnsureObjectStore(ctx context.Context, cfg jetstream.ObjectStoreConfig) (jetstream.ObjectStore, error) {
	return ensureAs(e, ctx, ensureRequest{Kind: kindObjectStore, ObjectStore: &cfg},
		func(ctx context.Context) (jetstream.ObjectStore, error) { return e.JS.ObjectStore(ctx, cfg.Bucket) },
		func(err error) bool {
			return errors.Is(err, jetstream.ErrBucketNotFound) || errors.Is(err, jetstream.ErrStreamNotFound)
		},
		func(ctx context.Context, os jetstream.ObjectStore) (bool, error) {
			st, err := os.Status(ctx)
			if err != nil {
				return false, err
			}
			bs, ok := st.(*jetstream.ObjectBucketStatus)
			if !ok {
				return true, nil
			}
			c := bs.StreamInfo().Config
			have := jetstream.ObjectStoreConfig{Bucket: cfg.Bucket, Description: c.Description, TTL: c.MaxAge, MaxBytes: c.MaxBytes,
				Storage: c.Storage, Replicas: c.Replicas, Placement: c.Placement, Compression: c.Compression != jetstream.NoCompression, Metadata: c.Metadata}
			want := cfg
			want.Storage, want.Replicas = keepPlacement(want.Replicas, c)
			return covers(want, have), nil
		},
		func(ctx context.Context) (jetstream.ObjectStore, error) {
			var err error
			if cfg.Storage, cfg.Replicas, err = e.placement(ctx, "OBJ_"+cfg.Bucket, cfg.Storage, cfg.Replicas); err != nil {
				return nil, err
			}
			return ChangeAgain(ctx, func(c context.Context) (jetstream.ObjectStore, error) { return e.JS.CreateOrUpdateObjectStore(c, cfg) })
		})
}

// ensure creates a resource (a bucket, a shared stream). On a node of an
// embedded cluster only the JetStream meta leader creates it: when
// several nodes starting at once created one new replicated bucket
// together, all but one of their calls hung until their timeout
// (nats-server 2.15.2). Another node asks the leader's node to create it
// (req, over NATS, every 2 s: a resource opened on first use, e.g. by a
// Lambda API call, is needed by this node alone) and waits until lookup
// finds it, at most 2 minutes. Elsewhere it creates.
//
// A resource that exists with another configuration than the wanted one
// (lookup: errStale) is updated the same way: by the meta leader's node
// itself; another node asks the leader's node to update it and goes on
// with the resource as it is (the update follows within moments; a
// stale comparison never holds a node up). Before (to 2026-11-28) a node
// of an embedded cluster never updated an existing resource: a bucket's
// or stream's new configuration (a new runnel version's) never reached
// it. The configurations compare by the fields the wanted one sets
// (covers): a field set back to its zero value is not seen as a change.
//
// In a cluster every lookup is one request of at most AskEvery and every
// create one of at most ChangeEvery, each sent again while the
// 2 minutes last: a request that reaches JetStream while the meta leader
// is changing (a cluster just started, a loaded machine) is never
// answered, and one bounded by the caller's context alone waited it out
// (TestACommandWithoutReplicasNeverScalesTheClusterDown hung 2 minutes in
// 1 run of 3 at load 8).
func (e *Engine) ensure(ctx context.Context, req ensureRequest, lookup, create func(context.Context) error) error {
	if e.srv == nil || e.cfg.Cluster.Listen == "" {
		return create(ctx)
	}
	bounded := func(f func(context.Context) error, within time.Duration) error {
		c, cancel := context.WithTimeout(ctx, within)
		defer cancel()
		return f(c)
	}
	deadline := time.Now().Add(2 * time.Minute)
	var asked time.Time
	for {
		err := bounded(lookup, AskEvery)
		missing := errors.Is(err, errNotYet) || errors.Is(err, errStale)
		if !missing && !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		if missing && e.srv.JetStreamIsLeader() {
			// A proposal lost in a leader change (a loaded machine) is
			// never answered: try again until the deadline.
			if err = bounded(create, ChangeEvery); !errors.Is(err, context.DeadlineExceeded) {
				return err
			}
		} else if errors.Is(err, errStale) {
			e.askLeaderToCreate(req)
			return nil
		} else if errors.Is(err, errNotYet) && time.Since(asked) > 2*time.Second {
			asked = time.Now()
			e.askLeaderToCreate(req)
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("engine: not created by the JetStream meta leader (waited %v): %w", time.Since(deadline.Add(-2*time.Minute)).Round(time.Second), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// covers reports whether have, a configuration of the same struct type as
// want, has every field want sets (non-zero): the same value, or for a
// map (metadata, to which the server adds its own keys) want's entries.
func covers(want, have any) bool {
	w, h := reflect.ValueOf(want), reflect.ValueOf(have)
	for i := range w.NumField() {
		f := w.Field(i)
		if !w.Type().Field(i).IsExported() || f.IsZero() {
			continue
		}
		g := h.Field(i)
		if f.Kind() == reflect.Map {
			for _, k := range f.MapKeys() {
				if v := g.MapIndex(k); !v.IsValid() || !reflect.DeepEqual(v.Interface(), f.MapIndex(k).Interface()) {
					return false
				}
			}
			continue
		}
		if !reflect.DeepEqual(f.Interface(), g.Interface()) {
			return false
		}
	}
	return true
}
