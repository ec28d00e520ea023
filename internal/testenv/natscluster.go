package testenv

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/runnel-dev/runnel/engine"
)

// NATSCluster is n plain NATS servers with clustered JetStream on loopback,
// standing in for an external cluster (`nats-server -c` with routes) that
// runnel processes join with --nats-url. A server can be stopped and
// started again on the same ports and storage, as a killed and restarted
// server would be.
type NATSCluster struct {
	t       testing.TB
	mu      sync.Mutex
	servers []*server.Server
	configs []engine.ServerConfig
	ports   []int
}

// StartNATSCluster starts the n servers and stops them at the end of the
// test.
func StartNATSCluster(t testing.TB, n int) *NATSCluster {
	t.Helper()
	ports := FreePorts(t, 2*n)
	c := &NATSCluster{t: t, ports: ports[:n], configs: clusterConfigs(t.TempDir(), ports, n)}
	servers, err := startAll(c.configs)
	if err != nil {
		t.Fatal(err)
	}
	c.servers = servers
	t.Cleanup(func() {
		for i := range n {
			c.Stop(i)
		}
	})
	return c
}

// URL is the client URL list of every server ("nats://a,nats://b,...").
func (c *NATSCluster) URL() string {
	var urls []string
	for _, p := range c.ports {
		urls = append(urls, fmt.Sprintf("nats://127.0.0.1:%d", p))
	}
	return strings.Join(urls, ",")
}

// Stop shuts server i down (its clients reconnect to the others).
func (c *NATSCluster) Stop(i int) {
	c.mu.Lock()
	s := c.servers[i]
	c.servers[i] = nil
	c.mu.Unlock()
	if s != nil {
		s.Shutdown()
		s.WaitForShutdown()
	}
}

// Restart starts server i again on its ports and storage, and waits (up
// to 2 minutes) until it is healthy: every stream and consumer replica it
// holds is current, as an operator waits before restarting the next
// server. Without the wait, stopping the next server leaves the groups
// whose third replica is still catching up without a quorum.
func (c *NATSCluster) Restart(i int) {
	c.t.Helper()
	s, err := engine.StartServer(c.configs[i])
	if err != nil {
		c.t.Fatalf("restart nats server %d: %v", i, err)
	}
	c.mu.Lock()
	c.servers[i] = s
	c.mu.Unlock()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		h := s.Healthz(nil)
		if h.Error == "" && h.StatusCode == 200 {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("nats server %d not healthy 2 minutes after its restart: %s", i, h.Error)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
