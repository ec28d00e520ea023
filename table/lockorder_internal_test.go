package table

import (
	"testing"
	"time"
)

// TestTransactionsLockStripesInOneOrder: a transaction locks its items'
// stripes in one global order (table id, then stripe index), whatever the
// order of its actions, so that two transactions on different items that
// share stripes cannot each hold one the other waits for. Here the
// actions come high stripe first; with the high stripe held by another
// writer, the transaction must already hold the low one while it waits.
func TestTransactionsLockStripesInOneOrder(t *testing.T) {
	tb := &Table{st: stored{TableDescription: TableDescription{TableId: "t"}}}
	keyAt := func(stripe int) key { return key{h: [16]byte{byte(stripe >> 8), byte(stripe)}} }
	high, low := keyAt(700), keyAt(3)
	if tb.stripeIndex(high) != 700 || tb.stripeIndex(low) != 3 {
		t.Fatalf("stripes %d, %d", tb.stripeIndex(high), tb.stripeIndex(low))
	}
	tb.stripe(high).Lock() // another writer holds the high stripe
	locked := make(chan func())
	go func() { locked <- lockItems([]*op{{t: tb, k: high}, {t: tb, k: low}}) }()

	deadline := time.Now().Add(20 * time.Second)
	for tb.stripe(low).TryLock() {
		tb.stripe(low).Unlock()
		if time.Now().After(deadline) {
			t.Fatal("the transaction waits for the high stripe without holding the low one: it locks in action order")
		}
		time.Sleep(time.Millisecond)
	}
	tb.stripe(high).Unlock()
	(<-locked)()
	for _, k := range []key{high, low} {
		if !tb.stripe(k).TryLock() {
			t.Fatalf("stripe %d still locked after unlock", tb.stripeIndex(k))
		}
	}
}
