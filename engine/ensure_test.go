package engine_test

import (
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/engine"
)

// TestAnEnsureOnAClusterNodeUpdatesAnExistingResource: EnsureStream,
// EnsureBucket and EnsureObjectStore create the resource "or update it
// to cfg" (their doc), on a node of an embedded cluster as elsewhere.
// Before, a cluster node's ensure returned as soon as the lookup found
// the resource: a changed configuration (a new runnel version's) never
// reached an existing stream, bucket or object store. An ensure of the
// configuration a resource already has asks nothing of the leader.
func TestAnEnsureOnAClusterNodeUpdatesAnExistingResource(t *testing.T) {
	es, ctx := cluster3(t)
	var leader string
	for leader == "" && ctx.Err() == nil {
		mi, err := es[0].MetaLeader(ctx)
		if err != nil {
			t.Fatal(err)
		}
		leader = mi.Leader
	}
	names := []string{"node-0", "node-1", "node-2"}
	lead, follower := es[slices.Index(names, leader)], es[(slices.Index(names, leader)+1)%3]
	ensure := func(e *engine.Engine, age time.Duration, desc string) {
		t.Helper()
		if _, err := e.EnsureStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}, Replicas: 3, MaxAge: age}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.EnsureBucket(ctx, jetstream.KeyValueConfig{Bucket: "B", History: 1, Replicas: 3, TTL: age}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.EnsureObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: "O", Replicas: 3, Description: desc}); err != nil {
			t.Fatal(err)
		}
	}
	type state struct {
		S, B    time.Duration
		O       string
		Replica []int
	}
	read := func() state {
		t.Helper()
		var st state
		for _, n := range []string{"S", "KV_B", "OBJ_O"} {
			s, err := follower.JS.Stream(ctx, n)
			if err != nil {
				t.Fatal(err)
			}
			c := s.CachedInfo().Config
			st.Replica = append(st.Replica, c.Replicas)
			switch n {
			case "S":
				st.S = c.MaxAge
			case "KV_B":
				st.B = c.MaxAge
			default:
				st.O = c.Description
			}
		}
		return st
	}
	becomes := func(want state) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for got := read(); !slices.Equal(got.Replica, want.Replica) || got.S != want.S || got.B != want.B || got.O != want.O; got = read() {
			if time.Now().After(deadline) {
				t.Fatalf("configuration %+v, want %+v", got, want)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	ensure(follower, time.Hour, "one")
	becomes(state{time.Hour, time.Hour, "one", []int{3, 3, 3}})

	// The same configuration again: no request to the leader.
	asks, err := follower.NC.SubscribeSync("runnel.cluster.ensure")
	if err != nil {
		t.Fatal(err)
	}
	ensure(follower, time.Hour, "one")
	if err := follower.NC.Publish("runnel.cluster.ensure", []byte("marker")); err != nil {
		t.Fatal(err)
	}
	if m, err := asks.NextMsg(10 * time.Second); err != nil || string(m.Data) != "marker" {
		t.Fatalf("an ensure of the configuration the resources have sent %v (%v), want nothing", m, err)
	}
	asks.Unsubscribe()

	// Another configuration, through a follower, then through the leader.
	ensure(follower, 2*time.Hour, "two")
	becomes(state{2 * time.Hour, 2 * time.Hour, "two", []int{3, 3, 3}})
	ensure(lead, 3*time.Hour, "three")
	if got := read(); got.S != 3*time.Hour || got.B != 3*time.Hour || got.O != "three" {
		t.Fatalf("after the leader's ensure: %+v", got)
	}
}
