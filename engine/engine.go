// Package engine binds runnel to NATS JetStream, its storage and messaging
// layer. By default it starts a nats-server in-process (no TCP listener,
// file storage under Config.DataDir); with Config.NATSURL it connects to an
// external JetStream server or cluster instead. Both paths hand the rest of
// runnel the same jetstream.JetStream handle, so every service above this
// package runs one code path against either backend.
//
// The engine also carries the clock that every time-dependent rule in
// runnel reads (record age, batching windows, retries, iterator expiry), so
// tests can inject a fake one.
package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
	"github.com/runnel-dev/runnel/lease"
)

// DefaultDataDir is where the embedded engine stores its data when
// Config.DataDir is empty.
const DefaultDataDir = "./runnel-data"

// Config configures an Engine. The zero value starts an embedded server
// storing under ./runnel-data with the real clock.
type Config struct {
	// DataDir is the directory of the embedded server's file storage.
	// Default DefaultDataDir. Ignored when NATSURL is set.
	DataDir string
	// NATSURL, when set, connects to an external NATS server with JetStream
	// enabled (for example "nats://127.0.0.1:4222") instead of starting one
	// in-process. Several URLs may be given comma-separated.
	NATSURL string
	// ListenAddr, when set ("127.0.0.1:4222"), makes the embedded server
	// also accept NATS clients on that address, so other runnel commands can
	// reach it with NATSURL while this process runs. Default: no listener.
	ListenAddr string
	// Replicas is the JetStream replica count for every stream and bucket
	// runnel creates. Default 1, or 3 with Cluster (a 3-node cluster keeps
	// every stream when one node dies); with NATSURL, the count of the
	// runnel data already there (a CLI command against a cluster creates
	// what the cluster's nodes would). An existing stream keeps its own
	// count and storage whatever this says: runnel never scales one down.
	Replicas int
	// Cluster, when its Listen is set, makes the embedded server a node of
	// a NATS cluster with clustered JetStream (RAFT) formed with the other
	// runnel nodes listed in Routes. See docs/cluster.md.
	Cluster ClusterConfig
	// Clock is the clock all of runnel's time rules read. Default: the real
	// clock. Tests pass clockwork.NewFakeClock().
	Clock clockwork.Clock
	// Logger receives runnel's structured logs. Default slog.Default().
	Logger *slog.Logger
	// Region and AccountID appear in every ARN runnel builds.
	// Defaults "us-east-1" and "000000000000".
	Region    string
	AccountID string
}

func (c *Config) setDefaults() {
	if c.DataDir == "" {
		c.DataDir = DefaultDataDir
	}
	if c.Replicas <= 0 {
		c.Replicas = 1
		if c.Cluster.Listen != "" && c.NATSURL == "" {
			c.Replicas = 3
		}
	}
	if c.Clock == nil {
		c.Clock = clockwork.NewRealClock()
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Region == "" {
		c.Region = "us-east-1"
	}
	if c.AccountID == "" {
		c.AccountID = "000000000000"
	}
}

// Engine is an open connection to JetStream, embedded or external.
type Engine struct {
	NC     *nats.Conn
	JS     jetstream.JetStream
	Clock  clockwork.Clock
	Logger *slog.Logger
	cfg    Config
	srv    *server.Server
	lock   *os.File
	// crashed: Crash was called (Crashed).
	crashed atomic.Bool

	mu      sync.Mutex
	buckets map[string]jetstream.KeyValue
	leases  *lease.Manager
	// ensureMu makes the creations other nodes ask for (serveEnsure)
	// one at a time.
	ensureMu sync.Mutex

	// pubs are extra connections for the hot publish paths (PublisherJS):
	// one connection is one reader goroutine in the server and one lock
	// in the client, which many concurrent publishers queue behind.
	pubConns []*nats.Conn
	pubs     []jetstream.JetStream
	pubNext  atomic.Uint32
}

// publisherConns is the number of extra publishing connections.
const publisherConns = 4

// PublisherJS returns a JetStream handle for publishing, spread over a few
// connections (round robin), for the paths that publish from many
// goroutines at once (PutRecords, table writes). Trap: messages published
// through different handles are not ordered with respect to each other;
// callers that need an order publish through one handle (PublisherJS
// returns the same handle for the same key) or wait for the first ack.
func (e *Engine) PublisherJS(key uint32) jetstream.JetStream {
	if len(e.pubs) == 0 {
		return e.JS
	}
	return e.pubs[key%uint32(len(e.pubs))]
}

// NextPublisherJS returns the next publishing handle, round robin.
func (e *Engine) NextPublisherJS() jetstream.JetStream {
	return e.PublisherJS(e.pubNext.Add(1))
}

// Open starts the embedded server (or connects to Config.NATSURL) and
// returns a ready Engine. Close it to flush and stop.
func Open(ctx context.Context, cfg Config) (*Engine, error) {
	replicasGiven := cfg.Replicas > 0
	cfg.setDefaults()
	e := &Engine{Clock: cfg.Clock, Logger: cfg.Logger, cfg: cfg, buckets: map[string]jetstream.KeyValue{}}
	opts := []nats.Option{nats.Name("runnel"), nats.MaxReconnects(-1)}
	url := cfg.NATSURL
	if url == "" {
		lock, err := lockDataDir(cfg.DataDir)
		if err != nil {
			return nil, err
		}
		e.lock = lock
		sc := ServerConfig{StoreDir: filepath.Join(cfg.DataDir, "jetstream"), Cluster: cfg.Cluster}
		if cfg.ListenAddr != "" {
			host, port, err := net.SplitHostPort(cfg.ListenAddr)
			if err != nil {
				lock.Close()
				return nil, fmt.Errorf("engine: ListenAddr %q: %w", cfg.ListenAddr, err)
			}
			sc.Listen, sc.Host = true, host
			if sc.Port, err = strconv.Atoi(port); err != nil {
				lock.Close()
				return nil, fmt.Errorf("engine: ListenAddr %q: bad port", cfg.ListenAddr)
			}
		}
		srv, err := StartServer(sc)
		if err != nil {
			lock.Close()
			return nil, err
		}
		e.srv = srv
		opts = append(opts, nats.InProcessServer(srv))
	}
	// fail undoes what Open did so far: the connection, the embedded
	// server and the data-dir lock.
	fail := func(nc *nats.Conn, err error) (*Engine, error) {
		if nc != nil {
			nc.Close()
		}
		if e.srv != nil {
			e.srv.Shutdown()
			e.srv.WaitForShutdown()
		}
		e.unlock()
		return nil, err
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return fail(nil, fmt.Errorf("engine: connect to NATS %q: %w", url, err))
	}
	// Many writers publish asynchronously at once (mappings, tables,
	// producers): nats.go's default of 4,000 outstanding publishes would
	// stall them for up to 200 ms each time it is reached.
	// A cluster (embedded, or external: several URLs, replicas over 1, or
	// one URL of a server in a cluster) may still be electing its meta
	// leader: wait for it.
	clustered := cfg.Cluster.Listen != "" || strings.Contains(url, ",") || cfg.Replicas > 1 || nc.ConnectedClusterName() != ""
	js, err := jetstream.New(nc, jsOpts(clustered)...)
	if err != nil {
		return fail(nc, err)
	}
	if err := waitJetStream(ctx, js, clustered); err != nil {
		return fail(nc, fmt.Errorf("engine: JetStream not available at %q: %w", url, err))
	}
	if e.srv != nil && cfg.Cluster.Listen != "" {
		if err := waitPeers(ctx, e.srv, cfg.Replicas); err != nil {
			return fail(nc, err)
		}
	}
	if e.srv == nil && !replicasGiven {
		e.JS = js
		if n := e.adoptReplicas(ctx); n > e.cfg.Replicas {
			e.cfg.Replicas = n
		}
		// Data of several replicas is a cluster's, whatever the URL:
		// its timeouts (jsOpts). Before, they were chosen before the
		// count was adopted: a CLI with one --nats-url had 5 s.
		if e.cfg.Replicas > 1 && !clustered {
			clustered = true
			if js, err = jetstream.New(nc, jsOpts(clustered)...); err != nil {
				return fail(nc, err)
			}
		}
	}
	// The publishing connections keep no reconnect buffer: a publish
	// while one is disconnected fails at once instead of waiting in the
	// client to be sent, maybe much later, after its writer gave it up
	// and published it again (stream.ResolveLogRecords looks for it in the
	// log; a copy stored after that would be stored twice, late).
	pubOpts := append(slices.Clone(opts), nats.ReconnectBufSize(-1))
	for i := 0; i < publisherConns; i++ {
		pc, err := nats.Connect(url, pubOpts...)
		if err != nil {
			e.closePublishers()
			return fail(nc, fmt.Errorf("engine: connect to NATS %q: %w", url, err))
		}
		pjs, err := jetstream.New(pc, jsOpts(clustered)...)
		if err != nil {
			pc.Close()
			e.closePublishers()
			return fail(nc, err)
		}
		e.pubConns, e.pubs = append(e.pubConns, pc), append(e.pubs, pjs)
	}
	e.NC, e.JS = nc, js
	if err := e.serveMetaInfo(); err != nil {
		e.closePublishers()
		return fail(nc, err)
	}
	if e.srv != nil && cfg.Cluster.Listen != "" {
		go func() {
			c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if _, err := e.RaiseReplicas(c); err != nil {
				e.Logger.Warn("engine: raise replicas", "err", err)
			}
		}()
	}
	return e, nil
}

// ClientURL is the NATS URL other processes can use while this engine
// runs: the embedded server's listener (Config.ListenAddr), or the external
// URL. Empty for an embedded engine without a listener.
func (e *Engine) ClientURL() string {
	if e.srv != nil {
		if e.cfg.ListenAddr == "" {
			return ""
		}
		return e.srv.ClientURL()
	}
	return e.cfg.NATSURL
}

// Shared reports whether another process can reach this engine's
// JetStream: an external server, an embedded server that listens
// (Config.ListenAddr), or a node of a cluster. An embedded engine that
// does neither is the only process on its data, so no other process can
// take a lease from it.
func (e *Engine) Shared() bool { return e.ClientURL() != "" || e.cfg.Cluster.Listen != "" }

// Embedded reports whether the engine runs an in-process server.
func (e *Engine) Embedded() bool { return e.srv != nil }

// DataDir is the directory of the embedded server's storage, "" when the
// engine connects to an external server (Config.NATSURL).
func (e *Engine) DataDir() string {
	if e.srv == nil {
		return ""
	}
	return e.cfg.DataDir
}

// Replicas is the replica count for new streams and buckets.
func (e *Engine) Replicas() int { return e.cfg.Replicas }

// Region is the AWS region used in ARNs.
func (e *Engine) Region() string { return e.cfg.Region }

// AccountID is the AWS account id used in ARNs.
func (e *Engine) AccountID() string { return e.cfg.AccountID }

// Bucket opens (creating if needed) the JetStream key-value bucket name,
// with file storage and the engine's replica count. Handles are cached.
// Its keys may be any AWS resource name, even one that is not a NATS key
// (see nameKeys).
func (e *Engine) Bucket(ctx context.Context, name string) (jetstream.KeyValue, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if kv, ok := e.buckets[name]; ok {
		return kv, nil
	}
	kv, err := e.EnsureBucket(ctx, jetstream.KeyValueConfig{
		Bucket: name, Storage: jetstream.FileStorage, Replicas: e.cfg.Replicas, History: 1,
	})
	if err != nil {
		return nil, fmt.Errorf("engine: open bucket %s: %w", name, err)
	}
	nk := nameKeys{KeyValue: kv}
	if replicatedBucket(ctx, kv) {
		nk.leader, nk.bucket = e, name
	}
	e.buckets[name] = nk
	return e.buckets[name], nil
}

// replicatedBucket reports whether kv's stream has more than one replica
// (as it is, not as this process would create it: a CLI with --nats-url
// against a cluster reads the cluster's replicated buckets).
func replicatedBucket(ctx context.Context, kv jetstream.KeyValue) bool {
	st, err := kv.Status(ctx)
	if err != nil {
		return false
	}
	bs, ok := st.(*jetstream.KeyValueBucketStatus)
	return ok && bs.StreamInfo().Config.Replicas > 1
}

// closePublishers closes the publishing connections. It leaves the slices
// as they are: PublisherJS reads them without a lock from goroutines that
// may outlive the engine (a crashed engine's invocations still running),
// and a handle on a closed connection fails its publishes, as e.JS does.
func (e *Engine) closePublishers() {
	for _, c := range e.pubConns {
		c.Close()
	}
}

// Close drains the connection and stops the embedded server. Data written
// before Close is on disk and is there when the engine is opened again on
// the same DataDir.
func (e *Engine) Close() error {
	var err error
	e.stopLeases(true)
	for _, c := range e.pubConns {
		_ = c.Flush()
	}
	e.closePublishers()
	if e.NC != nil {
		if derr := e.NC.Drain(); derr != nil && !errors.Is(derr, nats.ErrConnectionClosed) {
			err = derr
		}
		// Drain is asynchronous; wait for it so the server stops cleanly.
		for i := 0; i < 200 && !e.NC.IsClosed(); i++ {
			time.Sleep(10 * time.Millisecond)
		}
		e.NC.Close()
	}
	if e.srv != nil {
		e.srv.Shutdown()
		e.srv.WaitForShutdown()
	}
	e.unlock()
	return err
}

func (e *Engine) unlock() {
	if e.lock != nil {
		e.lock.Close()
		e.lock = nil
	}
}

// Leases returns the engine's lease manager (package lease), opening it on
// first use: one per process, shared by the services that own work.
func (e *Engine) Leases(ctx context.Context) (*lease.Manager, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.leases == nil {
		// The bucket first, by one creator in a cluster (ensure).
		if _, err := e.EnsureBucket(ctx, lease.BucketConfig(lease.DefaultTTL, e.cfg.Replicas)); err != nil {
			return nil, err
		}
		m, err := lease.New(ctx, e.JS, lease.Options{Replicas: e.cfg.Replicas, Logger: e.Logger, Node: e.leaseNode()})
		if err != nil {
			return nil, err
		}
		e.leases = m
	}
	return e.leases, nil
}

// LeaseHolders returns the holder of every live lease by its key
// (Leases, then lease.Manager.Holders): one KV read per lease.
func (e *Engine) LeaseHolders(ctx context.Context) (map[string]string, error) {
	m, err := e.Leases(ctx)
	if err != nil {
		return nil, err
	}
	return m.Holders(ctx)
}

// leaseNode names this process in lease values: a random NUID, after the
// server name for an embedded cluster node ("node-1-Vd2cT0Jp"), so that
// runnel cluster status shows which node holds what. The random part
// keeps a restarted node apart from its former self, whose leases live
// until they expire.
func (e *Engine) leaseNode() string {
	id := nuid.Next()
	if e.srv != nil && e.cfg.Cluster.Listen != "" {
		return e.srv.Name() + "-" + id[:8]
	}
	return id
}

// stopLeases stops renewing: released at Close, abandoned (left to
// expire) at Crash.
func (e *Engine) stopLeases(release bool) {
	e.mu.Lock()
	m := e.leases
	e.leases = nil
	e.mu.Unlock()
	if m == nil {
		return
	}
	if release {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		m.Close(ctx)
	} else {
		m.Abandon()
	}
}

// Crash stops the engine the way a killed process would: the connection is
// closed without draining and the embedded server is shut down at once.
// Tests use it to check that work resumes from durable state.
func (e *Engine) Crash() {
	e.crashed.Store(true)
	e.stopLeases(false)
	e.closePublishers()
	if e.NC != nil {
		e.NC.Close()
	}
	if e.srv != nil {
		e.srv.Shutdown()
		e.srv.WaitForShutdown()
	}
	e.unlock()
}

// Crashed reports whether Crash stopped the engine: the services closed
// after it drop what a killed process would lose (the table index store
// its unflushed memtables) instead of saving it.
func (e *Engine) Crashed() bool { return e.crashed.Load() }

// ErrDataDirInUse is returned by Open when another process (or another
// Engine in this process) has the embedded engine's data directory open.
// Two servers on one store would corrupt it; connect to the running one
// with NATSURL instead (start it with ListenAddr).
var ErrDataDirInUse = errors.New("engine: data directory is in use by another runnel; start that one with --listen and use --nats-url")

// lockDataDir takes an exclusive lock on <dir>/LOCK for the engine's life.
func lockDataDir(dir string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("engine: data dir: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "LOCK"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("engine: data dir lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("%w (%s)", ErrDataDirInUse, dir)
	}
	return f, nil
}

// ClusterConfig makes an embedded server a node of a NATS cluster.
type ClusterConfig struct {
	// Listen is the host:port this node accepts cluster routes on
	// ("0.0.0.0:6222"). Empty: no cluster.
	Listen string
	// Routes are the other nodes' route addresses (host:port or
	// nats-route://host:port); listing this node too is harmless.
	Routes []string
	// Name is this node's server name, unique in the cluster. Default
	// "runnel-<Listen's port>".
	Name string
	// ClusterName names the cluster. Default "runnel".
	ClusterName string
}

// jsOpts are the JetStream client options: many asynchronous publishes
// in flight, and, in a cluster (clustered: an embedded cluster node, or a
// JetStream of several URLs, of a server in a cluster, or whose data has
// several replicas; where creating a replicated stream and electing its
// leader take longer, and a leader election after a node dies takes
// seconds), a 30 s default API timeout instead of 5 s.
func jsOpts(clustered bool) []jetstream.JetStreamOpt {
	// An asynchronous publish whose acknowledgement never comes (the
	// message or its ack lost when a server went away) fails after 30 s
	// instead of leaving its writer waiting forever: the queue, table and
	// checkpoint writers then answer a retryable error
	// (TestOneRunnelRidesThroughTheLossOfEachNATSServer hung on one).
	opts := []jetstream.JetStreamOpt{jetstream.WithPublishAsyncMaxPending(1 << 16), jetstream.WithPublishAsyncTimeout(30 * time.Second)}
	if clustered {
		opts = append(opts, jetstream.WithDefaultTimeout(30*time.Second))
	}
	return opts
}

// waitJetStream waits until JetStream answers: at once for a single
// server; for a cluster node, until the cluster has elected its meta
// leader (the other nodes may still be starting), at most 2 minutes.
func waitJetStream(ctx context.Context, js jetstream.JetStream, clustered bool) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		c, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := js.AccountInfo(c)
		cancel()
		if err == nil || !clustered || time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// waitPeers waits until the embedded cluster node's JetStream meta group
// has a leader and at least want peers (itself included), so that
// streams of want replicas can be placed; at most 2 minutes.
func waitPeers(ctx context.Context, srv *server.Server, want int) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		have := 0
		if jsz, err := srv.Jsz(nil); err == nil && jsz.Meta != nil && jsz.Meta.Leader != "" {
			have = jsz.Meta.Size
		}
		if have >= want {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("engine: the JetStream cluster has %d peers of the %d its replicas need", have, want)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// ServerConfig configures a nats-server started by StartServer.
type ServerConfig struct {
	// Cluster makes the server a cluster node (see ClusterConfig).
	Cluster ClusterConfig
	// StoreDir is the JetStream file storage directory. Required.
	StoreDir string
	// Listen, when true, makes the server accept TCP clients on Host:Port
	// (Port -1 picks a free port). When false the server has no listener
	// and is reachable only in-process.
	Listen bool
	Host   string
	Port   int
}

// StartServer starts a nats-server with JetStream in this process and waits
// until it accepts connections. runnel uses it for the embedded engine;
// tests use it with Listen to stand in for an external server.
func StartServer(c ServerConfig) (*server.Server, error) {
	if err := os.MkdirAll(c.StoreDir, 0o755); err != nil {
		return nil, fmt.Errorf("engine: data dir: %w", err)
	}
	if c.Cluster.Listen != "" && !c.Listen {
		// nats-server starts routing only once its client listener is up
		// (Server.Start): a cluster node needs one, on loopback.
		c.Listen, c.Host, c.Port = true, "127.0.0.1", -1
	}
	opts := &server.Options{
		JetStream:              true,
		StoreDir:               c.StoreDir,
		DontListen:             !c.Listen,
		NoSigs:                 true,
		NoLog:                  true,
		DisableJetStreamBanner: true,
		MaxPayload:             8 << 20,
	}
	if c.Listen {
		opts.Host = c.Host
		if opts.Host == "" {
			opts.Host = "127.0.0.1"
		}
		opts.Port = c.Port
		if opts.Port == 0 {
			opts.Port = -1
		}
	}
	if err := clusterOptions(opts, c.Cluster); err != nil {
		return nil, err
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("engine: start nats-server: %w", err)
	}
	// nats-server reports a listener it cannot open (a port in use, an
	// address not of this host) only to its logger, as a fatal error,
	// and then never becomes ready: without this, Open waited 30 s and
	// said nothing of why.
	fatal := &startupLog{fatal: make(chan string, 1)}
	srv.SetLogger(fatal, false, false)
	go srv.Start()
	ready := make(chan bool, 1)
	go func() { ready <- srv.ReadyForConnections(30 * time.Second) }()
	select {
	case ok := <-ready:
		if !ok {
			srv.Shutdown()
			return nil, errors.New("engine: nats-server did not become ready within 30s")
		}
		return srv, nil
	case msg := <-fatal.fatal:
		srv.Shutdown()
		return nil, listenError(c, opts, msg)
	}
}

// listenError turns nats-server's fatal startup message into an error
// naming the listener and the option that set it: the client listener
// (Config.ListenAddr, runnel serve --listen) or the route listener
// (ClusterConfig.Listen, runnel serve --cluster-listen), with the bind
// error ("address already in use").
func listenError(c ServerConfig, opts *server.Options, msg string) error {
	switch {
	case strings.Contains(msg, "router port"):
		return fmt.Errorf("engine: cannot listen for cluster routes on %s (ClusterConfig.Listen, runnel serve --cluster-listen): %s", c.Cluster.Listen, msg)
	case strings.HasPrefix(msg, "Error listening on port"):
		return fmt.Errorf("engine: cannot listen for NATS clients on %s (Config.ListenAddr, runnel serve --listen): %s",
			net.JoinHostPort(opts.Host, strconv.Itoa(opts.Port)), msg)
	}
	return fmt.Errorf("engine: start nats-server: %s", msg)
}

// startupLog is the embedded nats-server's logger: it keeps the first
// fatal message (a listener that could not be opened) for StartServer and
// drops the rest, as NoLog did.
type startupLog struct{ fatal chan string }

func (l *startupLog) Fatalf(format string, v ...any) {
	select {
	case l.fatal <- fmt.Sprintf(format, v...):
	default:
	}
}
func (l *startupLog) Noticef(string, ...any) {}
func (l *startupLog) Warnf(string, ...any)   {}
func (l *startupLog) Errorf(string, ...any)  {}
func (l *startupLog) Debugf(string, ...any)  {}
func (l *startupLog) Tracef(string, ...any)  {}

// clusterOptions sets the route listener, routes and names of a cluster
// node.
func clusterOptions(opts *server.Options, c ClusterConfig) error {
	if c.Listen == "" {
		return nil
	}
	host, port, err := net.SplitHostPort(c.Listen)
	if err != nil {
		return fmt.Errorf("engine: cluster listen %q: %w", c.Listen, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p <= 0 || p > 65535 {
		return fmt.Errorf("engine: cluster listen %q: the port must be 1..65535", c.Listen)
	}
	opts.Cluster.Host, opts.Cluster.Port = host, p
	opts.Cluster.Name = c.ClusterName
	if opts.Cluster.Name == "" {
		opts.Cluster.Name = "runnel"
	}
	opts.ServerName = c.Name
	if opts.ServerName == "" {
		opts.ServerName = "runnel-" + port
	}
	var routes []string
	for _, r := range c.Routes {
		if r = strings.TrimSpace(r); r == "" {
			continue
		}
		if !strings.Contains(r, "://") {
			r = "nats-route://" + r
		}
		routes = append(routes, r)
	}
	opts.Routes = server.RoutesFromStr(strings.Join(routes, ","))
	return nil
}
