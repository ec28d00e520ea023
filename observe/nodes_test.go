package observe_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/mapping"
	"github.com/runnel-dev/runnel/observe"
	"github.com/runnel-dev/runnel/stream"
)

// GET /api/nodes, asked of either of two processes sharing a JetStream,
// lists both, marks the one answering, and names the one serving the
// queues and the tables (the first to open).
func TestNodesListEveryProcessAndItsWork(t *testing.T) {
	first := testenv.Start(t, testenv.Options{ListenAddr: "127.0.0.1:0"})
	second := testenv.Start(t, testenv.Options{NATSURL: first.Engine.ClientURL()})
	a, err := observe.NewAlarms(second, observe.Config{Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(observe.Handler(second, a))
	defer srv.Close()
	var got observe.Nodes
	testenv.Eventually(t, 30*time.Second, "two nodes", func() bool {
		r, err := http.Get(srv.URL + "/api/nodes")
		if err != nil {
			return false
		}
		defer r.Body.Close()
		got = observe.Nodes{}
		return r.StatusCode == 200 && json.NewDecoder(r.Body).Decode(&got) == nil && len(got.Nodes) == 2
	})
	selfs, serving := 0, 0
	for _, n := range got.Nodes {
		if n.Self {
			selfs++
			if slices.Contains(n.Serves, "queues") {
				t.Errorf("the answering (second) process serves the queues: %+v", n)
			}
		}
		if slices.Contains(n.Serves, "queues") && slices.Contains(n.Serves, "tables") {
			serving++
		}
	}
	if selfs != 1 || serving != 1 {
		t.Errorf("nodes %+v: want one marked self and one serving the queues and tables", got.Nodes)
	}
}

// Each node lists the shards of a stream mapping it runs (one lease
// each) and the mapping once: with a 4-shard mapping and two processes,
// every shard is listed once, on a node that lists the mapping.
func TestNodesListTheShardsEachRuns(t *testing.T) {
	first := testenv.Start(t, testenv.Options{ListenAddr: "127.0.0.1:0"})
	second := testenv.Start(t, testenv.Options{NATSURL: first.Engine.ClientURL()})
	ctx := context.Background()
	d, err := first.Streams.CreateStream(ctx, stream.CreateStreamInput{StreamName: "orders", ShardCount: 4})
	if err != nil {
		t.Fatal(err)
	}
	fn := kinesisFunction(t, first, function.Config{}, func(context.Context, events.KinesisEvent) error { return nil })
	id := createMapping(t, first, mapping.Config{EventSourceArn: d.StreamARN, FunctionName: fn})
	testenv.Eventually(t, 30*time.Second, "each shard listed once, on a node running the mapping", func() bool {
		got, err := observe.TakeNodes(ctx, second)
		if err != nil {
			return false
		}
		shards := map[string]int{}
		for _, n := range got.Nodes {
			for _, s := range n.Shards {
				f := strings.Fields(s)
				if len(f) != 3 || f[0] != fn || f[1] != id || !slices.Contains(n.Mappings, fn+" "+id) {
					return false
				}
				shards[f[2]]++
			}
		}
		for i := range 4 {
			if shards[stream.ShardID(i)] != 1 {
				return false
			}
		}
		return len(shards) == 4
	})
}
