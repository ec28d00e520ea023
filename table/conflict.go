package table

import (
	"sort"
	"sync"
	"sync/atomic"

	"github.com/runnel-dev/runnel/awserr"
)

// Transaction conflicts, as DynamoDB reports them
// (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/transaction-apis.html#transaction-conflict-handling):
// while a TransactWriteItems is in progress its items are held, and
//   - a PutItem, UpdateItem or DeleteItem on a held item fails with
//     TransactionConflictException;
//   - a BatchWriteItem request on a held item is returned in
//     UnprocessedItems (runnel's choice: the batch's place for a request
//     not written);
//   - a TransactWriteItems or TransactGetItems with a held item is
//     cancelled, that action's reason TransactionConflict.
//
// Held items are this process's own record (one process serves a set of
// tables on the current storage design).

// conflictMessage is DynamoDB's message for a held item.
const conflictMessage = "Transaction is ongoing for the item"

// heldItems is the set of items held by transactions in progress, by
// itemID. Every single write looks it up: n (the items held) lets it skip
// the lock when no transaction runs, and readers share the lock.
type heldItems struct {
	n  atomic.Int64
	mu sync.RWMutex
	m  map[string]bool
}

// claim holds every id, or none: it returns the indexes of the ids
// already held (nil when it held them all).
func (h *heldItems) claim(ids []string) []int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if busy := h.busyLocked(ids); busy != nil {
		return busy
	}
	if h.m == nil {
		h.m = map[string]bool{}
	}
	for _, id := range ids {
		h.m[id] = true
	}
	h.n.Add(int64(len(ids)))
	return nil
}

func (h *heldItems) release(ids []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, id := range ids {
		delete(h.m, id)
	}
	h.n.Add(-int64(len(ids)))
}

// busy returns the indexes of the ids held (nil: none).
func (h *heldItems) busy(ids []string) []int {
	if h.n.Load() == 0 {
		return nil
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.busyLocked(ids)
}

func (h *heldItems) busyLocked(ids []string) []int {
	var out []int
	for i, id := range ids {
		if h.m[id] {
			out = append(out, i)
		}
	}
	return out
}

// itemID names an item across tables.
func (o *op) itemID() string { return o.t.s.itemID(o.t, o.k) }

func (s *Service) itemID(t *Table, k key) string { return t.st.TableId + "/" + k.id() }

// checkHeld is a single write's conflict check: an item held by a
// transaction in progress, or by a write whose outcome is unknown
// (resolve.go).
func (o *op) checkHeld() error {
	if o.t.s.held.n.Load() == 0 && !o.t.s.unsure.any() {
		return nil // no transaction running, nothing unsure: nothing to build
	}
	ids := []string{o.itemID()}
	if o.t.s.unsure.busy(ids) != nil {
		return errHeldUnsure()
	}
	if o.t.s.held.busy(ids) != nil {
		return awserr.New(awserr.ErrTransactionConflict, conflictMessage)
	}
	return nil
}

// conflictCancel is the cancellation of a transaction of n actions whose
// actions at busy met held items.
func conflictCancel(n int, busy []int) *TransactionCanceledError {
	reasons := make([]CancellationReason, n)
	for i := range reasons {
		reasons[i].Code = "None"
	}
	for _, i := range busy {
		reasons[i] = CancellationReason{Code: "TransactionConflict", Message: conflictMessage}
	}
	return &TransactionCanceledError{Reasons: reasons}
}

// lockItems locks the stripes of ops' items, each once, in one global
// order (table id, stripe index), so that transactions on overlapping
// items cannot deadlock; it returns the unlock.
func lockItems(ops []*op) (unlock func()) {
	type lockRef struct {
		table string
		idx   int
		mu    *sync.Mutex
	}
	var locks []lockRef
	have := map[*sync.Mutex]bool{}
	for _, o := range ops {
		if mu := o.t.stripe(o.k); !have[mu] {
			have[mu] = true
			locks = append(locks, lockRef{o.t.st.TableId, o.t.stripeIndex(o.k), mu})
		}
	}
	sort.Slice(locks, func(i, j int) bool {
		if locks[i].table != locks[j].table {
			return locks[i].table < locks[j].table
		}
		return locks[i].idx < locks[j].idx
	})
	for _, l := range locks {
		l.mu.Lock()
	}
	return func() {
		for _, l := range locks {
			l.mu.Unlock()
		}
	}
}
