package lease_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/runnel-dev/runnel/engine"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/lease"
)

// A call forwarded to a holder that dies while serving it is tried again
// at the next holder, instead of waiting for the caller's deadline for an
// answer that cannot come: the caller probes the subject while it waits,
// and "no responders" means the holder is gone. Without the probe, the
// call below waits its whole minute and answers ServiceException.
func TestACallForwardedToAHolderThatDiesIsTriedAtTheNextHolder(t *testing.T) {
	eng, err := engine.Open(context.Background(), engine.Config{DataDir: t.TempDir(), ListenAddr: "127.0.0.1:0", Logger: testenv.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	bg, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	// owner is one process: its own NATS connection (which dies with it)
	// and lease manager; serve answers its forwarded calls.
	owner := func(node string, serve func(ctx context.Context, op string) (any, error)) (*lease.Owner, *nats.Conn, *lease.Manager) {
		nc, err := nats.Connect(eng.ClientURL())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		m, err := lease.New(context.Background(), eng.JS, lease.Options{TTL: time.Second, Node: node, Logger: testenv.Logger(t)})
		if err != nil {
			t.Fatal(err)
		}
		o := lease.NewOwner(bg, lease.OwnerConfig{Key: "sqs", Subject: "runnel.test.rpc", What: "the test state", Conn: nc,
			Leases: func(context.Context) (*lease.Manager, error) { return m, nil },
			Serve:  func(ctx context.Context, op string, _ json.RawMessage) (any, error) { return serve(ctx, op) },
			Lost:   func() {}, Logger: testenv.Logger(t)})
		return o, nc, m
	}
	started := make(chan struct{})
	a, aConn, aLeases := owner("a", func(ctx context.Context, op string) (any, error) {
		close(started)
		<-ctx.Done() // the holder never answers: it dies first
		return nil, ctx.Err()
	})
	if err := a.Serve(bg); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, "a serving", a.Holding)
	b, _, bLeases := owner("b", nil)
	t.Cleanup(func() { bLeases.Close(context.Background()) })

	type result struct {
		remote bool
		err    error
	}
	done := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		remote, err := b.Forward(ctx, "SendMessage", struct{}{}, nil)
		done <- result{remote, err}
	}()
	<-started
	// a dies: no renewal, no subscription.
	aLeases.Abandon()
	aConn.Close()
	r := <-done
	if r.err != nil || r.remote {
		t.Fatalf("Forward after the holder died = remote %v, %v; want the call run here (b took the lease)", r.remote, r.err)
	}
	if !b.Holding() {
		t.Fatal("b runs the call but does not hold the lease")
	}
}
