package engine_test

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/engine"
)

// A CLI command run with --nats-url against a 3-node cluster (no
// --replicas) creates what it creates with the cluster's replica count,
// and its ensures and updates never take the cluster's streams, buckets
// or object stores down to one replica: a stream of one replica whose
// node dies has no leader until that node is back. Seen: the table index
// snapshots' object store went to one replica at the first `runnel
// cluster status`, and was unreadable for minutes after its node's kill.
func TestACommandWithoutReplicasNeverScalesTheClusterDown(t *testing.T) {
	es, ctx := cluster3(t)
	if _, err := es[0].Bucket(ctx, "runnel_streams"); err != nil {
		t.Fatal(err)
	}
	if _, err := es[0].EnsureObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: "snaps", Replicas: 3}); err != nil {
		t.Fatal(err)
	}
	if _, err := es[0].EnsureStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}, Replicas: 3}); err != nil {
		t.Fatal(err)
	}

	cli := open(t, engine.Config{NATSURL: es[1].ClientURL(), Logger: quiet()})
	if got := cli.Replicas(); got != 3 {
		t.Errorf("Replicas() of a process given none, on a cluster whose data has 3 = %d, want 3", got)
	}
	replicas := func(name string) int {
		t.Helper()
		s, err := cli.JS.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		return s.CachedInfo().Config.Replicas
	}
	if _, err := cli.EnsureObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: "snaps", Replicas: 1, Description: "d"}); err != nil {
		t.Fatal(err)
	}
	if got := replicas("OBJ_snaps"); got != 3 {
		t.Errorf("object store replicas after an ensure with 1 = %d, want 3 (kept)", got)
	}
	if _, err := cli.EnsureBucket(ctx, jetstream.KeyValueConfig{Bucket: "runnel_streams", Replicas: 1, History: 1}); err != nil {
		t.Fatal(err)
	}
	if got := replicas("KV_runnel_streams"); got != 3 {
		t.Errorf("bucket replicas after an ensure with 1 = %d, want 3 (kept)", got)
	}
	s, err := cli.UpdateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}, Replicas: 1, MaxAge: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if c := s.CachedInfo().Config; c.Replicas != 3 || c.MaxAge != time.Hour {
		t.Errorf("UpdateStream with replicas 1 and max age 1h: replicas %d, max age %v; want 3 (kept) and 1h", c.Replicas, c.MaxAge)
	}
	if _, err := cli.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}, Replicas: 1, MaxAge: 2 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	if got := replicas("S"); got != 3 {
		t.Errorf("stream replicas after CreateOrUpdateStream with 1 = %d, want 3 (kept)", got)
	}
	if _, err := cli.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: "NEW", Subjects: []string{"new.>"}, Replicas: cli.Replicas()}); err != nil {
		t.Fatal(err)
	}
	if got := replicas("NEW"); got != 3 {
		t.Errorf("a new stream created by the process = %d replicas, want the cluster's 3", got)
	}
}

// A node of a cluster raises every runnel stream left with fewer replicas
// than its count (a cluster an older runnel CLI took down to one), and
// leaves other applications' streams on the same JetStream alone.
func TestANodeRaisesRunnelStreamsLeftWithOneReplica(t *testing.T) {
	es, ctx := cluster3(t)
	for _, name := range []string{"OBJ_runnel_table_index", "OTHER"} {
		if _, err := es[0].JS.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{name + ".>"}, Replicas: 1}); err != nil {
			t.Fatal(err)
		}
	}
	// (Each node also runs it once in the background at its start, which
	// may raise the stream first: the state after is what is checked.)
	if _, err := es[1].RaiseReplicas(ctx); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]int{"OBJ_runnel_table_index": 3, "OTHER": 1} {
		s, err := es[0].JS.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.CachedInfo().Config.Replicas; got != want {
			t.Errorf("%s: %d replicas after RaiseReplicas, want %d", name, got, want)
		}
	}
}
