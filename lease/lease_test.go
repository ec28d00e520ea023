package lease_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/engine"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/lease"
)

// two opens two managers (two processes) on one fresh embedded engine,
// with a 1 s TTL.
func two(t *testing.T) (*engine.Engine, *lease.Manager, *lease.Manager) {
	t.Helper()
	eng, err := engine.Open(context.Background(), engine.Config{DataDir: t.TempDir(), Logger: testenv.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	mk := func(node string) *lease.Manager {
		m, err := lease.New(context.Background(), eng.JS, lease.Options{TTL: time.Second, Node: node, Logger: testenv.Logger(t)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close(context.Background()) })
		return m
	}
	return eng, mk("a"), mk("b")
}

func TestOnlyOneProcessHoldsALeaseUntilItReleasesIt(t *testing.T) {
	_, a, b := two(t)
	ctx := context.Background()
	la, err := a.Acquire(ctx, "sqs")
	if err != nil {
		t.Fatal(err)
	}
	if !la.Valid() {
		t.Fatal("a fresh lease is not valid")
	}
	if _, err := b.Acquire(ctx, "sqs"); !errors.Is(err, lease.ErrHeld) {
		t.Fatalf("second acquire: %v, want ErrHeld", err)
	}
	if h, _ := b.Holder(ctx, "sqs"); h != "a" {
		t.Fatalf("holder = %q, want a", h)
	}
	// Renewals keep it held well past the TTL.
	time.Sleep(2500 * time.Millisecond)
	if !la.Valid() {
		t.Fatal("a renewed lease stopped being valid")
	}
	if _, err := b.Acquire(ctx, "sqs"); !errors.Is(err, lease.ErrHeld) {
		t.Fatalf("acquire of a renewed lease: %v, want ErrHeld", err)
	}
	if err := la.Release(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-la.Lost():
	default:
		t.Fatal("Lost not closed by Release")
	}
	if _, err := b.Acquire(ctx, "sqs"); err != nil {
		t.Fatalf("acquire after release: %v", err)
	}
}

// A holder that stops renewing (a killed process) loses the lease after
// the TTL; another process takes it; the old holder is told at its next
// renewal if it comes back.
func TestAnUnrenewedLeaseExpiresAndPassesToAnotherProcess(t *testing.T) {
	_, a, b := two(t)
	ctx := context.Background()
	if _, err := a.Acquire(ctx, "shard-1"); err != nil {
		t.Fatal(err)
	}
	a.Abandon()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := b.Acquire(ctx, "shard-1")
		if err == nil {
			break
		}
		if !errors.Is(err, lease.ErrHeld) || time.Now().After(deadline) {
			t.Fatalf("b could not take the abandoned lease: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if h, _ := b.Holder(ctx, "shard-1"); h != "b" {
		t.Fatalf("holder = %q, want b", h)
	}
}

// When another process holds the key now, the old holder's next renewal
// fails: its lease is lost and no longer valid.
func TestARenewalThatFindsAnotherHolderLosesTheLease(t *testing.T) {
	eng, a, _ := two(t)
	ctx := context.Background()
	la, err := a.Acquire(ctx, "q")
	if err != nil {
		t.Fatal(err)
	}
	kv, err := eng.JS.KeyValue(ctx, lease.Bucket)
	if err != nil {
		t.Fatal(err)
	}
	if err := kv.Delete(ctx, "q"); err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Create(ctx, "q", []byte("intruder")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-la.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("the lease was not lost after another process took the key")
	}
	if la.Valid() {
		t.Fatal("a lost lease is still valid")
	}
}

// Work under RunWhileHeld runs in one process at a time: the second runs
// it only after the first stops (and releases the lease).
func TestRunWhileHeldRunsInOneProcessAtATime(t *testing.T) {
	_, a, b := two(t)
	running := make(chan string, 2)
	ctxA, stopA := context.WithCancel(context.Background())
	ctxB, stopB := context.WithCancel(context.Background())
	defer stopB()
	doneA := make(chan struct{})
	go func() {
		defer close(doneA)
		a.RunWhileHeld(ctxA, "timer", func(ctx context.Context) { running <- "a"; <-ctx.Done() })
	}()
	if got := <-running; got != "a" {
		t.Fatalf("first runner %q", got)
	}
	go b.RunWhileHeld(ctxB, "timer", func(ctx context.Context) { running <- "b"; <-ctx.Done() })
	select {
	case got := <-running:
		t.Fatalf("%q runs while a holds the lease", got)
	case <-time.After(1500 * time.Millisecond): // b retries every TTL/2 = 500 ms
	}
	stopA()
	<-doneA
	select {
	case got := <-running:
		if got != "b" {
			t.Fatalf("after a stopped, %q runs", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("b did not take over after a stopped")
	}
}

// HoldersOf lists only the leases under its prefix, with their holders;
// Holders lists them all.
func TestHoldersOfListsTheLeasesUnderAPrefix(t *testing.T) {
	_, a, b := two(t)
	ctx := context.Background()
	for m, keys := range map[*lease.Manager][]string{a: {"esm.m1.s0", "node.a"}, b: {"esm.m1.s1", "esm2"}} {
		for _, k := range keys {
			if _, err := m.Acquire(ctx, k); err != nil {
				t.Fatal(err)
			}
		}
	}
	got, err := a.HoldersOf(ctx, "esm.")
	if err != nil || len(got) != 2 || got["esm.m1.s0"] != "a" || got["esm.m1.s1"] != "b" {
		t.Errorf("HoldersOf(esm.) = %v, %v; want esm.m1.s0 by a and esm.m1.s1 by b", got, err)
	}
	if all, err := b.Holders(ctx); err != nil || len(all) != 4 {
		t.Errorf("Holders = %v, %v; want all 4", all, err)
	}
	if none, err := a.HoldersOf(ctx, "queue."); err != nil || len(none) != 0 {
		t.Errorf("HoldersOf(queue.) = %v, %v; want none", none, err)
	}
}
