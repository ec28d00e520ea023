package engine_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/engine"
	"github.com/runnel-dev/runnel/lease"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func open(t *testing.T, cfg engine.Config) *engine.Engine {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = quiet()
	}
	e, err := engine.Open(t.Context(), cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// startExternal starts a loopback nats-server with JetStream, standing in
// for an external server.
func startExternal(t *testing.T) *server.Server {
	t.Helper()
	srv, err := engine.StartServer(engine.ServerConfig{StoreDir: t.TempDir(), Listen: true})
	if err != nil {
		t.Fatalf("StartServer: %v", err)
	}
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	return srv
}

func TestOpenEmbedded(t *testing.T) {
	dir := t.TempDir()
	clk := clockwork.NewFakeClock()
	e := open(t, engine.Config{DataDir: dir, Clock: clk})
	if !e.Embedded() {
		t.Error("Embedded() = false for an engine without NATSURL")
	}
	if e.Clock != clk {
		t.Error("engine does not carry the injected clock")
	}
	if e.Replicas() != 1 || e.Region() != "us-east-1" || e.AccountID() != "000000000000" {
		t.Errorf("defaults: replicas %d, region %q, account %q", e.Replicas(), e.Region(), e.AccountID())
	}
	if e.Logger == nil {
		t.Error("Logger is nil")
	}
	if _, err := e.JS.AccountInfo(t.Context()); err != nil {
		t.Errorf("JetStream not usable: %v", err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "jetstream")); err != nil || !fi.IsDir() {
		t.Errorf("embedded store not under DataDir/jetstream: %v", err)
	}
	// Region and AccountID are configurable.
	e2 := open(t, engine.Config{DataDir: t.TempDir(), Region: "eu-west-1", AccountID: "123456789012", Replicas: 1})
	if e2.Region() != "eu-west-1" || e2.AccountID() != "123456789012" {
		t.Errorf("region %q account %q, want eu-west-1 123456789012", e2.Region(), e2.AccountID())
	}
	if _, ok := e2.Clock.(*clockwork.FakeClock); ok || e2.Clock == nil {
		t.Errorf("default clock = %T, want the real clock", e2.Clock)
	}
}

func TestBucketIsCached(t *testing.T) {
	e := open(t, engine.Config{DataDir: t.TempDir()})
	ctx := t.Context()
	a1, err := e.Bucket(ctx, "alpha")
	if err != nil {
		t.Fatal(err)
	}
	a2, err := e.Bucket(ctx, "alpha")
	if err != nil {
		t.Fatal(err)
	}
	if a1 != a2 {
		t.Error("second Bucket(alpha) returned a new handle, want the cached one")
	}
	b, err := e.Bucket(ctx, "beta")
	if err != nil {
		t.Fatal(err)
	}
	if b == a1 || b.Bucket() != "beta" || a1.Bucket() != "alpha" {
		t.Errorf("buckets alpha/beta mixed up: %q %q", a1.Bucket(), b.Bucket())
	}
	st, err := a1.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.BackingStore() != "JetStream" || st.History() != 1 {
		t.Errorf("bucket status: store %q history %d", st.BackingStore(), st.History())
	}
	if _, err := e.Bucket(ctx, "bad name!"); err == nil || !strings.Contains(err.Error(), "bad name!") {
		t.Errorf("Bucket with an invalid name: %v, want an error naming it", err)
	}
}

func TestReopenKeepsBucketData(t *testing.T) {
	for _, how := range []string{"Close", "Crash"} {
		t.Run("after "+how, func(t *testing.T) {
			dir := t.TempDir()
			e, err := engine.Open(t.Context(), engine.Config{DataDir: dir, Logger: quiet()})
			if err != nil {
				t.Fatal(err)
			}
			kv, err := e.Bucket(t.Context(), "keep")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := kv.Put(t.Context(), "k", []byte("v1")); err != nil {
				t.Fatal(err)
			}
			if _, err := kv.Put(t.Context(), "k", []byte("v2")); err != nil {
				t.Fatal(err)
			}
			if how == "Close" {
				if err := e.Close(); err != nil {
					t.Fatalf("Close: %v", err)
				}
				if err := e.Close(); err != nil {
					t.Errorf("second Close: %v", err)
				}
			} else {
				e.Crash()
			}
			if e.NC.IsConnected() {
				t.Error("connection still open after " + how)
			}

			e2 := open(t, engine.Config{DataDir: dir})
			kv2, err := e2.Bucket(t.Context(), "keep")
			if err != nil {
				t.Fatal(err)
			}
			ent, err := kv2.Get(t.Context(), "k")
			if err != nil || string(ent.Value()) != "v2" {
				t.Fatalf("after reopen Get(k) = %v, want v2", err)
			}
		})
	}
}

func TestOpenExternal(t *testing.T) {
	srv := startExternal(t)
	dataDir := filepath.Join(t.TempDir(), "unused")
	e := open(t, engine.Config{NATSURL: srv.ClientURL(), DataDir: dataDir})
	if e.Embedded() {
		t.Error("Embedded() = true with NATSURL")
	}
	if _, err := os.Stat(dataDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("DataDir touched although NATSURL is set: %v", err)
	}
	if got := e.NC.ConnectedUrl(); got != srv.ClientURL() {
		t.Errorf("connected to %q, want %q", got, srv.ClientURL())
	}
	kv, err := e.Bucket(t.Context(), "shared")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(t.Context(), "k", []byte("from-e")); err != nil {
		t.Fatal(err)
	}
	// A second engine on the same server sees the same data: the state
	// lives in the external server.
	e2 := open(t, engine.Config{NATSURL: srv.ClientURL()})
	kv2, err := e2.Bucket(t.Context(), "shared")
	if err != nil {
		t.Fatal(err)
	}
	if ent, err := kv2.Get(t.Context(), "k"); err != nil || string(ent.Value()) != "from-e" {
		t.Errorf("second engine reads %v, want from-e", err)
	}
	if err := e.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if !srv.Running() {
		t.Error("closing an external engine stopped the server")
	}
}

func TestOpenFailsClearly(t *testing.T) {
	// A port with nothing listening.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "nats://" + l.Addr().String()
	l.Close()

	// A server without JetStream.
	noJS, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go noJS.Start()
	if !noJS.ReadyForConnections(10 * time.Second) {
		t.Fatal("server without JetStream did not start")
	}
	t.Cleanup(noJS.Shutdown)

	cases := []struct {
		name string
		url  string
		want []string
	}{
		{"nothing listening", closed, []string{"connect to NATS", closed}},
		{"malformed URL", "nats://127.0.0.1:notaport", []string{"connect to NATS", "notaport"}},
		{"server without JetStream", noJS.ClientURL(), []string{"JetStream not available", noJS.ClientURL()}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			start := time.Now()
			e, err := engine.Open(ctx, engine.Config{NATSURL: c.url, Logger: quiet()})
			if err == nil {
				e.Close()
				t.Fatalf("Open(%q) succeeded", c.url)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if d := time.Since(start); d > 8*time.Second {
				t.Errorf("Open took %v to fail", d)
			}
		})
	}
}

func TestStartServer(t *testing.T) {
	t.Run("Listen accepts TCP clients on loopback", func(t *testing.T) {
		srv := startExternal(t)
		if !strings.HasPrefix(srv.ClientURL(), "nats://127.0.0.1:") {
			t.Errorf("ClientURL = %q, want a loopback URL", srv.ClientURL())
		}
		e := open(t, engine.Config{NATSURL: srv.ClientURL()})
		if _, err := e.JS.CreateStream(t.Context(), jetstream.StreamConfig{Name: "S", Subjects: []string{"s"}}); err != nil {
			t.Errorf("JetStream on the started server: %v", err)
		}
	})
	t.Run("without Listen there is no TCP listener", func(t *testing.T) {
		srv, err := engine.StartServer(engine.ServerConfig{StoreDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Shutdown()
		if addr := srv.Addr(); addr != nil {
			t.Errorf("server listens on %v", addr)
		}
	})
	t.Run("an unusable StoreDir fails", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "file")
		if err := os.WriteFile(file, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		srv, err := engine.StartServer(engine.ServerConfig{StoreDir: filepath.Join(file, "sub")})
		if err == nil {
			srv.Shutdown()
			t.Fatal("StartServer under a regular file succeeded")
		}
		if !strings.Contains(err.Error(), "data dir") {
			t.Errorf("error %q does not say what failed", err)
		}
	})
}

func TestDataDirLock(t *testing.T) {
	for _, how := range []string{"Close", "Crash"} {
		t.Run("released by "+how, func(t *testing.T) {
			dir := t.TempDir()
			e := open(t, engine.Config{DataDir: dir})
			_, err := engine.Open(t.Context(), engine.Config{DataDir: dir, Logger: quiet()})
			if !errors.Is(err, engine.ErrDataDirInUse) || !strings.Contains(err.Error(), dir) {
				t.Fatalf("second Open on %s: %v, want ErrDataDirInUse naming the dir", dir, err)
			}
			if how == "Close" {
				e.Close()
			} else {
				e.Crash()
			}
			open(t, engine.Config{DataDir: dir})
		})
	}
}

func TestOpenFailureReleasesDataDir(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if e, err := engine.Open(ctx, engine.Config{DataDir: dir, Logger: quiet()}); err == nil {
		e.Close()
		t.Fatal("Open with a cancelled context succeeded")
	}
	e, err := engine.Open(t.Context(), engine.Config{DataDir: dir, Logger: quiet()})
	if err != nil {
		t.Fatalf("Open after a failed Open: %v", err)
	}
	e.Close()
}

func TestListenAddr(t *testing.T) {
	e := open(t, engine.Config{DataDir: t.TempDir(), ListenAddr: "127.0.0.1:0"})
	url := e.ClientURL()
	if !e.Embedded() || !strings.HasPrefix(url, "nats://127.0.0.1:") || strings.HasSuffix(url, ":0") {
		t.Fatalf("embedded engine with ListenAddr: Embedded %v, ClientURL %q", e.Embedded(), url)
	}
	kv, err := e.Bucket(t.Context(), "via-listener")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(t.Context(), "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	// Another engine reaches the embedded server through its listener.
	client := open(t, engine.Config{NATSURL: url})
	if client.ClientURL() != url {
		t.Errorf("external engine ClientURL = %q, want %q", client.ClientURL(), url)
	}
	kv2, err := client.Bucket(t.Context(), "via-listener")
	if err != nil {
		t.Fatal(err)
	}
	if ent, err := kv2.Get(t.Context(), "k"); err != nil || string(ent.Value()) != "v" {
		t.Errorf("client reads %v, want v", err)
	}
	if got := open(t, engine.Config{DataDir: t.TempDir()}).ClientURL(); got != "" {
		t.Errorf("ClientURL without a listener = %q, want empty", got)
	}
	for _, bad := range []struct{ addr, want string }{{"localhost", "ListenAddr"}, {"127.0.0.1:http", "bad port"}} {
		t.Run("bad ListenAddr "+bad.addr, func(t *testing.T) {
			dir := t.TempDir()
			_, err := engine.Open(t.Context(), engine.Config{DataDir: dir, ListenAddr: bad.addr, Logger: quiet()})
			if err == nil || !strings.Contains(err.Error(), bad.want) || !strings.Contains(err.Error(), bad.addr) {
				t.Fatalf("Open with ListenAddr %q: %v, want an error naming it", bad.addr, err)
			}
			open(t, engine.Config{DataDir: dir}) // the lock was released
		})
	}
}

// A process joining with fewer replicas or another storage type (a CLI
// command run with --nats-url against a cluster) opens the existing
// buckets and streams as they are: it must not scale them down, and
// JetStream refuses a change of storage type ("can not change storage
// type"), which made `runnel cluster status` fail against a cluster whose
// leases bucket is on file storage.
func TestEnsureKeepsAnExistingBucketsStorageAndReplicas(t *testing.T) {
	srv := startExternal(t)
	e := open(t, engine.Config{NATSURL: srv.ClientURL()})
	ctx := t.Context()
	// The leases bucket as a cluster of file-stored replicas has it.
	cluster := lease.BucketConfig(lease.DefaultTTL, 3)
	cluster.Replicas = 1 // one server here; the storage type is the point
	if _, err := e.JS.CreateKeyValue(ctx, cluster); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Leases(ctx); err != nil {
		t.Fatalf("Leases with the memory-storage config of a single process: %v", err)
	}
	kv, err := e.JS.KeyValue(ctx, lease.Bucket)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := kv.Status(ctx)
	if got := st.(*jetstream.KeyValueBucketStatus).StreamInfo().Config.Storage; got != jetstream.FileStorage {
		t.Errorf("leases bucket storage = %v after a process ensured it, want file (unchanged)", got)
	}
	// A stream ensured with another storage type keeps its own.
	if _, err := e.JS.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}, Storage: jetstream.MemoryStorage}); err != nil {
		t.Fatal(err)
	}
	s, err := e.EnsureStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}, Storage: jetstream.FileStorage, MaxAge: time.Hour})
	if err != nil {
		t.Fatalf("EnsureStream with another storage type: %v", err)
	}
	if c := s.CachedInfo().Config; c.Storage != jetstream.MemoryStorage || c.MaxAge != time.Hour {
		t.Errorf("stream config = storage %v, max age %v; want memory (kept) and 1h (updated)", c.Storage, c.MaxAge)
	}
}
