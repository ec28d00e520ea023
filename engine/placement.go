package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Placement: a stream's storage type and replica count, once the stream
// exists, are the cluster's, not the caller's. A CLI command run against
// a 3-node cluster with --nats-url starts an engine with replicas 1; had
// its ensures and updates sent that count, they would have taken the
// cluster's streams down to one replica, and a stream of one replica on
// a node that dies has no leader until that node is back (seen: the
// table index snapshots' object store and the function versions bucket,
// taken down by `runnel cluster status` during a node's restart, then
// unavailable for minutes after the next kill). So every update here
// reads the stream's configuration first, keeps its placement, and does
// not update at all when that configuration cannot be read (a stream
// without a leader): it returns the error, for the caller to retry.

// keepPlacement returns the storage type and replica count an ensure
// gives a stream or bucket that exists with the configuration have: its
// storage type, and the larger of the two replica counts. Ensuring never
// scales down and never changes storage: JetStream refuses a change of
// storage type outright ("stream configuration update can not change
// storage type"), which made `runnel cluster status` fail against a
// cluster whose leases bucket is on file storage. A node started with a
// higher --replicas still scales existing data up.
func keepPlacement(replicas int, have jetstream.StreamConfig) (jetstream.StorageType, int) {
	return have.Storage, max(have.Replicas, replicas, 1)
}

// placement returns the storage type and replica count to write for the
// stream named name: storage and replicas when it does not exist, its
// own kept (keepPlacement) when it does. An error other than "not found"
// (no leader, a timeout) is returned: updating blind could scale it down.
func (e *Engine) placement(ctx context.Context, name string, storage jetstream.StorageType, replicas int) (jetstream.StorageType, int, error) {
	st, err := AskAgain(ctx, func(c context.Context) (jetstream.Stream, error) { return e.JS.Stream(c, name) })
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		return storage, replicas, nil
	case err != nil:
		return storage, replicas, fmt.Errorf("engine: read the configuration of %s before updating it: %w", name, err)
	}
	s, r := keepPlacement(replicas, st.CachedInfo().Config)
	return s, r, nil
}

// CreateOrUpdateStream creates the stream of cfg, or updates an existing
// one to cfg keeping its storage type and replicas (keepPlacement).
// Errors: reading the existing configuration failed (no leader: retry),
// or JetStream's own. Use it, not JS.CreateOrUpdateStream or
// JS.UpdateStream, for every stream runnel changes after creating it.
func (e *Engine) CreateOrUpdateStream(ctx context.Context, cfg jetstream.StreamConfig) (jetstream.Stream, error) {
	var err error
	if cfg.Storage, cfg.Replicas, err = e.placement(ctx, cfg.Name, cfg.Storage, cfg.Replicas); err != nil {
		return nil, err
	}
	return ChangeAgain(ctx, func(c context.Context) (jetstream.Stream, error) { return e.JS.CreateOrUpdateStream(c, cfg) })
}

// UpdateStream updates the existing stream of cfg as CreateOrUpdateStream
// does; jetstream.ErrStreamNotFound when it does not exist. Both requests
// are sent again while unanswered (AskAgain, ChangeAgain).
func (e *Engine) UpdateStream(ctx context.Context, cfg jetstream.StreamConfig) (jetstream.Stream, error) {
	st, err := AskAgain(ctx, func(c context.Context) (jetstream.Stream, error) { return e.JS.Stream(c, cfg.Name) })
	if err != nil {
		return nil, err
	}
	cfg.Storage, cfg.Replicas = keepPlacement(cfg.Replicas, st.CachedInfo().Config)
	return ChangeAgain(ctx, func(c context.Context) (jetstream.Stream, error) { return e.JS.UpdateStream(c, cfg) })
}

// adoptBuckets are buckets every runnel node creates at its start; an
// engine without its own replica count reads theirs (adoptReplicas).
var adoptBuckets = []string{"KV_runnel_leases", "KV_runnel_streams", "KV_runnel_queues", "KV_runnel_tables", "KV_runnel_functions"}

// adoptReplicas returns the replica count of the runnel data already on
// the JetStream this engine is connected to (that of the first of
// adoptBuckets that answers, each within 2 s), or 0 when there is none or
// none answers. An engine given
// no --replicas (a CLI command run with --nats-url against a cluster)
// creates its new streams with that count, as the cluster's nodes do.
func (e *Engine) adoptReplicas(ctx context.Context) int {
	for _, name := range adoptBuckets {
		c, cancel := context.WithTimeout(ctx, 2*time.Second)
		st, err := e.JS.Stream(c, name)
		cancel()
		if err == nil {
			return st.CachedInfo().Config.Replicas
		}
	}
	return 0
}

// runnelStreamPrefixes name the JetStream streams runnel creates: its
// buckets and object stores, Kinesis shards and table logs, queues, and
// its own streams (RUNNEL_LOGS, RUNNEL_TXLOG, RUNNEL_EB_ARCHIVE). Another
// application's streams on a shared JetStream are never touched.
var runnelStreamPrefixes = []string{"KV_runnel_", "OBJ_runnel_", "KDS_", "SQS_", "RUNNEL_"}

// RaiseReplicas scales every runnel stream with fewer replicas than this
// engine's count up to it, and returns the names it raised. Only for a
// count above 1 (a cluster). Why: a runnel CLI before session 12's fix
// took some of a cluster's streams down to one replica (see placement),
// and such a stream has no leader while its one node is down. A node of
// a cluster calls it once at start (Open, in the background); a failure
// (too few peers yet, a stream without a leader) is logged and the other
// streams are still tried. Errors: listing the streams failed.
func (e *Engine) RaiseReplicas(ctx context.Context) ([]string, error) {
	want := e.cfg.Replicas
	if want <= 1 {
		return nil, nil
	}
	names := e.JS.StreamNames(ctx)
	var all []string
	for n := range names.Name() {
		all = append(all, n)
	}
	if err := names.Err(); err != nil {
		return nil, fmt.Errorf("engine: list streams: %w", err)
	}
	var raised []string
	for _, name := range all {
		if !slices.ContainsFunc(runnelStreamPrefixes, func(p string) bool { return strings.HasPrefix(name, p) }) {
			continue
		}
		st, err := AskAgain(ctx, func(c context.Context) (jetstream.Stream, error) { return e.JS.Stream(c, name) })
		if err != nil {
			e.Logger.Warn("engine: read a stream's replicas", "stream", name, "err", err)
			continue
		}
		cfg := st.CachedInfo().Config
		if cfg.Replicas >= want {
			continue
		}
		from := cfg.Replicas
		cfg.Replicas = want
		if _, err := e.JS.UpdateStream(ctx, cfg); err != nil {
			e.Logger.Warn("engine: raise a stream's replicas", "stream", name, "from", from, "to", want, "err", err)
			continue
		}
		e.Logger.Warn("engine: raised a stream's replicas (taken down by an older runnel CLI?)", "stream", name, "from", from, "to", want)
		raised = append(raised, name)
	}
	return raised, nil
}
