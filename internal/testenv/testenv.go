// Package testenv starts a real runnel (embedded JetStream in a temporary
// directory) for tests.
package testenv

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/engine"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/nodeproc"
	"github.com/runnel-dev/runnel/mapping"
	"github.com/runnel-dev/runnel/table"
	"github.com/runnel-dev/runnel/target"
)

// Options for Start.
type Options struct {
	// Dir is the data directory; default a new t.TempDir().
	Dir string
	// Clock; default the real clock.
	Clock clockwork.Clock
	// NATSURL connects to an external server instead of embedding one.
	NATSURL string
	// Cluster makes the embedded server a node of a NATS cluster.
	Cluster engine.ClusterConfig
	// ListenAddr makes the embedded server accept other processes
	// ("127.0.0.1:0": any free port; see Runnel.Engine.ClientURL).
	ListenAddr string
	// Mappings are the mapping service knobs; RetryBaseDelay defaults to
	// a negative value (retry at once) in tests.
	Mappings mapping.Options
	// Tables are the tables service knobs; TTLInterval defaults to -1 (no
	// sweeper: tests call SweepExpired).
	Tables table.Options
	// Targets are the rule and schedule delivery knobs (Passive: deliveries
	// stored, none attempted).
	Targets target.Options
	// Registry holds the instance's handlers; nil: the default registry.
	Registry *function.Registry
	// Replicas is the JetStream replica count (engine.Config.Replicas);
	// 0: the engine's default.
	Replicas int
	// Logger receives the instance's log; nil: Logger(t).
	Logger *slog.Logger
}

// Logger returns a logger that writes everything to stderr when
// RUNNEL_TEST_LOG is set. Otherwise it keeps the last warnings and errors
// (at most keptLogLines) and writes them to the test log only if the test
// fails: a flake under load then shows what the engine complained of (a
// checkpoint write that timed out, a fence) without a rerun.
func Logger(t testing.TB) *slog.Logger {
	if os.Getenv("RUNNEL_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	kept := &keptLog{}
	t.Cleanup(func() {
		if t.Failed() {
			if lines := kept.String(); lines != "" {
				t.Logf("the engine's warnings and errors (last %d lines):\n%s", keptLogLines, lines)
			}
		}
	})
	return slog.New(slog.NewTextHandler(kept, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// keptLogLines bounds what a keptLog holds.
const keptLogLines = 200

// keptLog is an io.Writer that keeps the last keptLogLines writes (one
// slog record each).
type keptLog struct {
	mu    sync.Mutex
	lines []string
}

func (k *keptLog) Write(p []byte) (int, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.lines) == keptLogLines {
		k.lines = k.lines[1:]
	}
	k.lines = append(k.lines, string(p))
	return len(p), nil
}

func (k *keptLog) String() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return strings.Join(k.lines, "")
}

// Start opens a runnel for the test and closes it at the end.
func Start(t testing.TB, o Options) *runnel.Runnel {
	t.Helper()
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	useSuiteCluster(t, &o)
	if o.Mappings.RetryBaseDelay == 0 {
		o.Mappings.RetryBaseDelay = -1
	}
	if o.Tables.TTLInterval == 0 {
		o.Tables.TTLInterval = -1
	}
	if o.Tables.Index == "" {
		// RUNNEL_TABLE_INDEX=memory runs a suite with the heap's item
		// indexes where the default is the index store (.ci/run does
		// for ./table/).
		o.Tables.Index = os.Getenv("RUNNEL_TABLE_INDEX")
	}
	rn, err := runnel.Open(context.Background(), runnel.Config{
		Tables:            o.Tables,
		Engine:            engine.Config{DataDir: o.Dir, NATSURL: o.NATSURL, ListenAddr: o.ListenAddr, Cluster: o.Cluster, Clock: o.Clock, Logger: cmp.Or(o.Logger, Logger(t)), Replicas: o.Replicas},
		Mappings:          o.Mappings,
		Targets:           o.Targets,
		RetentionInterval: -1,
		Registry:          o.Registry,
	})
	if err != nil {
		t.Fatalf("open runnel: %v", err)
	}
	t.Cleanup(func() { rn.Close() })
	return rn
}

// Eventually polls cond every 5ms until it is true or timeout passes.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// FreePorts returns n TCP ports free on 127.0.0.1 now.
func FreePorts(t testing.TB, n int) []int {
	t.Helper()
	ports, err := nodeproc.FreePorts(n)
	if err != nil {
		t.Fatal(err)
	}
	return ports
}

// Cluster starts n runnel nodes whose embedded servers form one NATS
// cluster with clustered JetStream (replicas 3), as n `runnel serve
// --cluster-listen ... --routes ...` processes would, and closes them at
// the end. The nodes start concurrently: each waits for the cluster.
func Cluster(t testing.TB, n int) []*runnel.Runnel {
	t.Helper()
	ports := FreePorts(t, n)
	var routes []string
	for _, p := range ports {
		routes = append(routes, fmt.Sprintf("127.0.0.1:%d", p))
	}
	nodes := make([]*runnel.Runnel, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rn, err := runnel.Open(context.Background(), runnel.Config{
				Tables: table.Options{TTLInterval: -1},
				Engine: engine.Config{DataDir: t.TempDir(), Logger: Logger(t), ListenAddr: "127.0.0.1:0",
					Cluster: engine.ClusterConfig{Listen: routes[i], Routes: routes, Name: fmt.Sprintf("node-%d", i)}},
				Mappings:          mapping.Options{RetryBaseDelay: -1},
				RetentionInterval: -1,
			})
			nodes[i], errs[i] = rn, err
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("cluster node %d: %v", i, err)
		}
	}
	for _, rn := range nodes {
		t.Cleanup(func() { rn.Close() })
	}
	return nodes
}
