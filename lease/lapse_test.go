package lease_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/engine"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/lease"
)

// stallKV leaves every Update unanswered until its context ends while
// stalled is set: a leases stream without a leader, as after a server of
// a cluster dies. Nothing else is changed.
type stallKV struct {
	jetstream.KeyValue
	stalled *atomic.Bool
}

func (k stallKV) Update(ctx context.Context, key string, value []byte, rev uint64) (uint64, error) {
	if k.stalled.Load() {
		<-ctx.Done()
		return 0, ctx.Err()
	}
	return k.KeyValue.Update(ctx, key, value, rev)
}

type stallJS struct {
	jetstream.JetStream
	stalled *atomic.Bool
}

func (j stallJS) KeyValue(ctx context.Context, bucket string) (jetstream.KeyValue, error) {
	kv, err := j.JetStream.KeyValue(ctx, bucket)
	if err != nil {
		return nil, err
	}
	return stallKV{kv, j.stalled}, nil
}

// stallingManagers opens an engine and two managers with a TTL of ttl:
// b, and a, whose renewals stall while the returned flag is set.
func stallingManagers(t *testing.T, ttl time.Duration) (*engine.Engine, *lease.Manager, *lease.Manager, *atomic.Bool) {
	t.Helper()
	eng, err := engine.Open(context.Background(), engine.Config{DataDir: t.TempDir(), ListenAddr: "127.0.0.1:0", Logger: testenv.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	var stalled atomic.Bool
	mk := func(node string, js jetstream.JetStream) *lease.Manager {
		m, err := lease.New(context.Background(), js, lease.Options{TTL: ttl, Node: node, Logger: testenv.Logger(t)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Abandon() })
		return m
	}
	b := mk("b", eng.JS) // creates the bucket
	a := mk("a", stallJS{eng.JS, &stalled})
	return eng, a, b, &stalled
}

// The rule of package lease: a holder stops acting before anyone else can
// acquire its key. Before the fix a holder learnt that a lease had lapsed
// only from a renewal that failed, each lease in turn waiting up to TTL/4
// for an answer: with twelve leases whose renewals went unanswered, a
// still held some (Lost open) seconds after b had taken them. Now each
// lease's Lost closes when it stops being Valid, on a timer of its own.
func TestEveryLeaseIsLostBeforeAnotherProcessCanTakeIt(t *testing.T) {
	_, a, b, stalled := stallingManagers(t, time.Second)
	ctx := context.Background()
	keys := make([]string, 12)
	held := map[string]*lease.Lease{}
	for i := range keys {
		keys[i] = fmt.Sprintf("esm.u.%d", i)
		l, err := a.Acquire(ctx, keys[i])
		if err != nil {
			t.Fatal(err)
		}
		held[keys[i]] = l
	}
	time.Sleep(300 * time.Millisecond) // a renewal or two go through
	stalled.Store(true)
	taken := map[string]bool{}
	deadline := time.Now().Add(15 * time.Second)
	for len(taken) < len(keys) {
		if time.Now().After(deadline) {
			t.Fatalf("b took %d of %d leases in 15 s", len(taken), len(keys))
		}
		for _, k := range keys {
			if taken[k] {
				continue
			}
			_, err := b.Acquire(ctx, k)
			if errors.Is(err, lease.ErrHeld) {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			taken[k] = true
			select {
			case <-held[k].Lost():
			default:
				t.Errorf("b took %s while a's lease of it was not lost (Valid %v)", k, held[k].Valid())
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A lease that lapsed because its renewals went unanswered for a moment
// (its key still this process's) is taken back at once when they are
// answered again. Without it, the stall cost the work a wait for the key
// to expire: Acquire answered ErrHeld, the holder being this process.
func TestALeaseLapsedInAStallIsTakenBackAtOnce(t *testing.T) {
	_, a, b, stalled := stallingManagers(t, 4*time.Second)
	ctx := context.Background()
	l, err := a.Acquire(ctx, "sqs")
	if err != nil {
		t.Fatal(err)
	}
	stalled.Store(true)
	select {
	case <-l.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("the lease was not lost 5 s after its renewals stalled (valid 2 s after the last one)")
	}
	if l.Valid() {
		t.Fatal("a lapsed lease is still valid")
	}
	if _, err := b.Acquire(ctx, "sqs"); !errors.Is(err, lease.ErrHeld) {
		t.Fatalf("b's acquire before the key expires: %v, want ErrHeld", err)
	}
	stalled.Store(false)
	again, err := a.Acquire(ctx, "sqs")
	if err != nil {
		t.Fatalf("a's acquire of its own lapsed lease: %v, want it taken back", err)
	}
	if !again.Valid() {
		t.Fatal("the lease taken back is not valid")
	}
	if h, _ := b.Holder(ctx, "sqs"); h != "a" {
		t.Fatalf("holder %q, want a", h)
	}
}

// A call forwarded while the queues pass from one process to another runs
// once. Before the fix the former holder, its lease lapsed but not yet
// lost, stayed subscribed beside the new one: every call reached both,
// the former's quick ErrMoved won, the caller sent the call again, and
// the new holder ran it each time (one SendMessage stored nine times in
// the review's run). Now the holders answer as one queue group, and the
// former holder unsubscribes when its lease stops being valid.
func TestACallForwardedDuringAHandOverRunsOnce(t *testing.T) {
	eng, err := engine.Open(context.Background(), engine.Config{DataDir: t.TempDir(), ListenAddr: "127.0.0.1:0", Logger: testenv.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	bg, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	var mu sync.Mutex
	runs := map[int][]string{} // call -> the processes that ran it
	var stalled atomic.Bool
	process := func(node string, js jetstream.JetStream) (*lease.Owner, *lease.Manager) {
		nc, err := nats.Connect(eng.ClientURL())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		m, err := lease.New(context.Background(), js, lease.Options{TTL: time.Second, Node: node, Logger: testenv.Logger(t)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Abandon() })
		var o *lease.Owner
		o = lease.NewOwner(bg, lease.OwnerConfig{Key: "sqs", Subject: "runnel.test.rpc", What: "the test state", Conn: nc,
			Leases: func(context.Context) (*lease.Manager, error) { return m, nil },
			Serve: func(ctx context.Context, op string, args json.RawMessage) (any, error) {
				var id int
				if err := json.Unmarshal(args, &id); err != nil {
					return nil, err
				}
				// As the queue and table methods do: Forward first.
				if remote, err := o.Forward(ctx, op, id, nil); remote {
					return nil, err
				}
				time.Sleep(2 * time.Millisecond) // a JetStream write
				mu.Lock()
				runs[id] = append(runs[id], node)
				mu.Unlock()
				return id, nil
			},
			Lost: func() {}, Logger: testenv.Logger(t)})
		return o, m
	}
	b, _ := process("b", eng.JS) // creates the leases bucket
	c, _ := process("c", eng.JS)
	a, aLeases := process("a", stallJS{eng.JS, &stalled})
	// a is a node: it holds more leases (shards of mappings, its presence).
	for i := range 11 {
		if _, err := aLeases.Acquire(context.Background(), fmt.Sprintf("esm.u.%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Serve(bg); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 5*time.Second, "a serving", a.Holding)
	if err := b.Serve(bg); err != nil { // b takes over when it can
		t.Fatal(err)
	}
	stalled.Store(true)
	var next atomic.Int64
	var wg sync.WaitGroup
	for _, caller := range []struct {
		node string
		o    *lease.Owner
	}{{"b", b}, {"c", c}} {
		wg.Go(func() {
			for end := time.Now().Add(4 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
				id := int(next.Add(1))
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				remote, err := caller.o.Forward(ctx, "SendMessage", id, nil)
				cancel()
				if err == nil && !remote { // run here, as the services do
					mu.Lock()
					runs[id] = append(runs[id], caller.node+" (its own)")
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if a.Holding() || !b.Holding() && !c.Holding() {
		t.Fatalf("holding: a %v, b %v, c %v; want b or c to have taken the lease over", a.Holding(), b.Holding(), c.Holding())
	}
	twice := 0
	for id, nodes := range runs {
		if len(nodes) > 1 {
			if twice++; twice <= 5 {
				t.Errorf("call %d ran %d times: %v", id, len(nodes), nodes)
			}
		}
	}
	if twice > 0 {
		t.Fatalf("%d of %d forwarded calls ran more than once", twice, next.Load())
	}
}
