package observe_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/observe"
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
