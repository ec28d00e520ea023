package engine_test

import (
	"testing"
	"time"

	"github.com/runnel-dev/runnel/engine"
)

// TestACommandGivenOneURLOfAClusterHasTheClustersTimeouts: a process
// connected to a JetStream cluster waits up to 30 s for a JetStream API
// answer (a replicated stream's creation, a leader election after a node
// died take seconds), as the cluster's own nodes do (jsOpts). Before, a
// CLI given one --nats-url and no --replicas chose its timeouts before
// it adopted the cluster's replica count (adoptReplicas) and had the
// single server's 5 s, for its API calls and its publishes.
func TestACommandGivenOneURLOfAClusterHasTheClustersTimeouts(t *testing.T) {
	es, ctx := cluster3(t)
	if _, err := es[0].Bucket(ctx, "runnel_streams"); err != nil { // runnel data of 3 replicas
		t.Fatal(err)
	}
	cli := open(t, engine.Config{NATSURL: es[1].ClientURL(), Logger: quiet()})
	if got := cli.Replicas(); got != 3 {
		t.Fatalf("Replicas() = %d, want the cluster's 3", got)
	}
	if got := cli.JS.Options().DefaultTimeout; got != 30*time.Second {
		t.Errorf("API timeout %v, want 30s", got)
	}
	if got := cli.PublisherJS(0).Options().DefaultTimeout; got != 30*time.Second {
		t.Errorf("publishers' API timeout %v, want 30s", got)
	}
	single := open(t, engine.Config{DataDir: t.TempDir(), Logger: quiet()})
	if got := single.JS.Options().DefaultTimeout; got != 5*time.Second {
		t.Errorf("a single server's API timeout %v, want 5s", got)
	}
}
