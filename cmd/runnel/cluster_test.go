package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/mapping"
)

// `runnel cluster status` lists every node holding a presence lease and
// the work it holds: the queues' lease of the node serving them.
func TestClusterStatusListsNodesAndTheirWork(t *testing.T) {
	a := testenv.Start(t, testenv.Options{ListenAddr: "127.0.0.1:0"})
	testenv.Start(t, testenv.Options{NATSURL: a.Engine.ClientURL()})
	cli := testenv.Start(t, testenv.Options{NATSURL: a.Engine.ClientURL(), Mappings: mapping.Options{Passive: true}})
	ctx := context.Background()
	if _, err := a.Queues.CreateQueue(ctx, "jobs", nil); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := printCluster(ctx, &out, cli); err != nil {
		t.Fatal(err)
	}
	m, _ := a.Engine.Leases(ctx)
	s := out.String()
	if !strings.Contains(s, "2 runnel nodes") {
		t.Fatalf("cluster status does not count the two serving nodes:\n%s", s)
	}
	var line string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, m.Node()) {
			line = l
		}
	}
	if !strings.Contains(line, "sqs") {
		t.Fatalf("cluster status does not show the queues' lease on the node serving them (%s):\n%s", m.Node(), s)
	}
}
