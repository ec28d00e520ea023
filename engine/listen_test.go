package engine_test

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/engine"
)

// TestListenOnAPortInUseFailsAtOnceNamingTheOption: an embedded engine
// asked to listen (Config.ListenAddr, `runnel serve --listen`; or
// ClusterConfig.Listen, `runnel serve --cluster-listen`) on an address
// another process holds fails at once, naming the option and the bind
// error, as nats-server itself does ("Error listening on port: ...
// address already in use", then exit; NATS docs, "Configuring NATS
// Server": host/port, cluster listen). The embedded server reported it
// only to its logger, which runnel turned off, so Open waited 30 s and
// said "nats-server did not become ready within 30s".
func TestListenOnAPortInUseFailsAtOnceNamingTheOption(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	addr := held.Addr().String()
	for _, c := range []struct {
		name string
		cfg  engine.Config
		want string
	}{
		{"listen", engine.Config{ListenAddr: addr}, "--listen"},
		{"cluster-listen", engine.Config{Cluster: engine.ClusterConfig{Listen: addr, Routes: []string{"127.0.0.1:1"}}}, "--cluster-listen"},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.cfg.DataDir, c.cfg.Logger = t.TempDir(), quiet()
			done := make(chan error, 1)
			go func() {
				e, err := engine.Open(t.Context(), c.cfg)
				if err == nil {
					e.Close()
				}
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "address already in use") || !strings.Contains(err.Error(), addr[strings.LastIndexByte(addr, ':')+1:]) {
					t.Fatalf("Open on %s held by another listener: %v; want an error naming %s, the port and the bind error", addr, err, c.want)
				}
			case <-time.After(10 * time.Second): // a bound, not a wait: the answer is immediate
				t.Fatalf("Open on %s held by another listener still waiting after 10 s", addr)
			}
		})
	}
}
