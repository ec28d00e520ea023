package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/engine"
	"github.com/runnel-dev/runnel/internal/nodeproc"
)

// ClusterSuiteEnv names the environment variable that runs whole test
// packages on a NATS cluster (issue 13: "the stream, queue, table and
// mapping conformance suites run against a 3-node cluster"). With
// RUNNEL_TEST_NATS_CLUSTER=1, every Start that would embed a lone server
// (no NATSURL, Cluster or ListenAddr given) connects instead to one
// 3-server NATS cluster with clustered JetStream on loopback, started once
// per test binary, with replicas 3; and when the test ends, every
// JetStream stream on the cluster is deleted, so the next test starts from
// an empty cluster as it would from an empty data directory. Run packages
// one at a time (the cluster is per test binary, so -p 1 is not needed,
// but 2 cores cannot carry several clusters):
//
//	RUNNEL_TEST_NATS_CLUSTER=1 go test -p 1 ./stream/ ./queue/ ./table/ ./mapping/
//
// A test that needs an embedded server (its data directory, Crash and
// reopen of the same directory with the log on disk) calls NeedsEmbedded
// and is skipped in this mode, with the reason printed.
const ClusterSuiteEnv = "RUNNEL_TEST_NATS_CLUSTER"

var suiteCluster struct {
	once sync.Once
	url  string
	err  error
}

// ClusterSuite reports whether the cluster-suite mode is on.
func ClusterSuite() bool { return os.Getenv(ClusterSuiteEnv) == "1" }

// NeedsEmbedded skips t in the cluster-suite mode: t checks what only an
// embedded server has (a data directory, or a crash that loses what the
// process held in memory while the log survives on its disk).
func NeedsEmbedded(t testing.TB, why string) {
	t.Helper()
	if ClusterSuite() {
		t.Skipf("%s=1 runs on an external NATS cluster; this test needs an embedded server: %s", ClusterSuiteEnv, why)
	}
}

// suiteClusterURL starts the suite's cluster once per test binary and
// returns its client URLs. The servers live until the binary exits; their
// storage is under a temporary directory removed at exit by the OS's
// temporary-file cleaning, not by the test.
func suiteClusterURL() (string, error) {
	suiteCluster.once.Do(func() {
		dir, err := os.MkdirTemp("", "runnel-suite-cluster-")
		if err != nil {
			suiteCluster.err = err
			return
		}
		servers, urls, err := startServers(dir, 3)
		if err != nil {
			suiteCluster.err = err
			return
		}
		suiteCluster.url = strings.Join(urls, ",")
		// Wait until JetStream answers with a meta leader.
		deadline := time.Now().Add(2 * time.Minute)
		for !slices.ContainsFunc(servers, (*server.Server).JetStreamIsLeader) {
			if time.Now().After(deadline) {
				suiteCluster.err = fmt.Errorf("testenv: no JetStream meta leader 2 minutes after the suite cluster started")
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
	return suiteCluster.url, suiteCluster.err
}

// startServers starts n clustered JetStream servers with storage under dir.
func startServers(dir string, n int) ([]*server.Server, []string, error) {
	ports, err := nodeproc.FreePorts(2 * n)
	if err != nil {
		return nil, nil, err
	}
	var urls []string
	for _, p := range ports[:n] {
		urls = append(urls, fmt.Sprintf("nats://127.0.0.1:%d", p))
	}
	servers, err := startAll(clusterConfigs(dir, ports, n))
	return servers, urls, err
}

// clusterConfigs returns the configurations of n clustered servers: client
// ports ports[:n], route ports ports[n:2n], storage under dir.
func clusterConfigs(dir string, ports []int, n int) []engine.ServerConfig {
	var routes []string
	for i := range n {
		routes = append(routes, fmt.Sprintf("127.0.0.1:%d", ports[n+i]))
	}
	var cfgs []engine.ServerConfig
	for i := range n {
		cfgs = append(cfgs, engine.ServerConfig{
			StoreDir: filepath.Join(dir, fmt.Sprintf("nats-%d", i)),
			Listen:   true, Host: "127.0.0.1", Port: ports[i],
			Cluster: engine.ClusterConfig{Listen: routes[i], Routes: routes, Name: fmt.Sprintf("nats-%d", i)},
		})
	}
	return cfgs
}

// startAll starts the servers of cfgs at once (each waits for the others
// to form the cluster).
func startAll(cfgs []engine.ServerConfig) ([]*server.Server, error) {
	servers := make([]*server.Server, len(cfgs))
	errs := make([]error, len(cfgs))
	var wg sync.WaitGroup
	for i := range cfgs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			servers[i], errs[i] = engine.StartServer(cfgs[i])
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("testenv: nats server %d: %w", i, err)
		}
	}
	return servers, nil
}

// useSuiteCluster points o at the suite's cluster when the mode is on and
// o would embed a lone server, and registers the end-of-test cleaning; it
// must run before the runnel opens (cleanups run last-in first-out, so
// the cleaning runs after the runnel's Close).
func useSuiteCluster(t testing.TB, o *Options) {
	t.Helper()
	if !ClusterSuite() || o.NATSURL != "" || o.Cluster.Listen != "" || o.ListenAddr != "" {
		return
	}
	url, err := suiteClusterURL()
	if err != nil {
		t.Fatal(err)
	}
	o.NATSURL = url
	if o.Replicas == 0 {
		o.Replicas = 3
	}
	t.Cleanup(func() { deleteAllStreams(t, url) })
}

// deleteAllStreams deletes every JetStream stream on the cluster.
func deleteAllStreams(t testing.TB, url string) {
	nc, err := nats.Connect(url)
	if err != nil {
		t.Errorf("testenv: clean the suite cluster: %v", err)
		return
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Errorf("testenv: clean the suite cluster: %v", err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var names []string
	l := js.StreamNames(ctx)
	for n := range l.Name() {
		names = append(names, n)
	}
	if err := l.Err(); err != nil {
		t.Errorf("testenv: list the suite cluster's streams: %v", err)
	}
	for _, n := range names {
		if err := js.DeleteStream(ctx, n); err != nil {
			t.Errorf("testenv: delete stream %s from the suite cluster: %v", n, err)
		}
	}
}
