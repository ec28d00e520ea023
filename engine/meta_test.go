package engine_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/engine"
)

// cluster opens n engines whose embedded servers form one NATS cluster
// (replicas n), the second one with a client listener.
func cluster(t *testing.T, n int) []*engine.Engine {
	t.Helper()
	var routes []string
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		routes = append(routes, l.Addr().String())
		l.Close()
	}
	es := make([]*engine.Engine, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			cfg := engine.Config{DataDir: t.TempDir(), Logger: quiet(), Replicas: n,
				Cluster: engine.ClusterConfig{Listen: routes[i], Routes: routes, Name: fmt.Sprintf("node-%d", i)}}
			if i == 1 {
				cfg.ListenAddr = "127.0.0.1:0"
			}
			es[i], errs[i] = engine.Open(t.Context(), cfg)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("node %d: %v", i, err)
		}
		t.Cleanup(func() { es[i].Close() })
	}
	return es
}

// cluster3 is cluster(t, 3) and a context of 2 minutes for the test's
// calls; skipped with -short.
func cluster3(t *testing.T) ([]*engine.Engine, context.Context) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a 3-node cluster")
	}
	es := cluster(t, 3)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	return es, ctx
}

// In an embedded cluster only the JetStream meta leader creates buckets;
// a bucket that a node that is not the leader opens first (on first use,
// as the Lambda API's) is created by the leader at its request, and any
// process learns who the meta leader is.
func TestClusterNodeGetsABucketOnlyItNeedsAndTheMetaLeaderIsKnown(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster")
	}
	es := cluster(t, 3)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	var leader string
	for leader == "" {
		mi, err := es[0].MetaLeader(ctx)
		if err != nil {
			t.Fatal(err)
		}
		leader = mi.Leader
		if ctx.Err() != nil {
			t.Fatal("no meta leader elected")
		}
	}
	names := []string{"node-0", "node-1", "node-2"}
	if !slices.Contains(names, leader) {
		t.Fatalf("meta leader %q is none of %v", leader, names)
	}
	follower := es[(slices.Index(names, leader)+1)%3]
	// Bounded by ctx (60 s; 20 s failed once at load 20): without the request to the leader the
	// follower would wait for it 2 minutes and fail.
	kv, err := follower.Bucket(ctx, "only-this-node")
	if err != nil {
		t.Fatalf("a follower opening a new bucket: %v", err)
	}
	if _, err := kv.Put(ctx, "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	// Every node reads what one node wrote, at once, from the bucket
	// stream's leader (a direct get may be answered by a replica that has
	// not applied the write yet), and a deleted key is gone everywhere.
	rev, err := kv.Put(ctx, "..odd.", []byte("w")) // a name stored escaped
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range es {
		b, err := e.Bucket(ctx, "only-this-node")
		if err != nil {
			t.Fatal(err)
		}
		if got, err := b.Get(ctx, "k"); err != nil || string(got.Value()) != "v" || got.Key() != "k" {
			t.Errorf("node %d reads k: %v, %v", i, got, err)
		}
		if got, err := b.Get(ctx, "..odd."); err != nil || string(got.Value()) != "w" || got.Revision() != rev {
			t.Errorf("node %d reads ..odd.: %v, %v; want w at revision %d", i, got, err, rev)
		}
		if _, err := b.Get(ctx, "none"); !errors.Is(err, jetstream.ErrKeyNotFound) {
			t.Errorf("node %d reads a key never written: %v, want ErrKeyNotFound", i, err)
		}
	}
	if err := kv.Delete(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	for i, e := range es {
		b, _ := e.Bucket(ctx, "only-this-node")
		if _, err := b.Get(ctx, "k"); !errors.Is(err, jetstream.ErrKeyNotFound) {
			t.Errorf("node %d reads a deleted key: %v, want ErrKeyNotFound", i, err)
		}
	}
	// A process that is not a cluster node asks the nodes.
	client := open(t, engine.Config{NATSURL: es[1].ClientURL(), Replicas: 3})
	mi, err := client.MetaLeader(ctx)
	if err != nil || !slices.Contains(names, mi.Leader) || mi.Peers != 3 {
		t.Fatalf("a client asking for the meta leader: %+v, %v", mi, err)
	}
	// With no cluster node around, it says so.
	single := open(t, engine.Config{DataDir: t.TempDir(), ListenAddr: "127.0.0.1:0"})
	if _, err := open(t, engine.Config{NATSURL: single.ClientURL()}).MetaLeader(ctx); err == nil {
		t.Fatal("MetaLeader against a single server: no error")
	}
}
