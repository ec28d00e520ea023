package table

import (
	"slices"
	"sync"

	"github.com/google/btree"
)

// index is a table's item index, kept under Table.idxMu: a hash map from
// key to entry (where the item's latest image is in the log, its expiry
// and size) and a B-tree of the keys in key order (Query, Scan, the TTL
// sweep).
//
// Point operations, which are most of a table's work (GetItem and the
// read of the current item that every write does), touch only the map. A
// write that replaces an item updates the map alone; one that creates an
// item appends its key to pending, and the tree takes the pending keys in
// one sorted pass when an ordered read next needs it (settle). A table
// written with new keys and never scanned (the trades demo's state table:
// millions of random partition keys) so never pays for a B-tree insert,
// which costs several cache misses per level among millions of keys.
//
// Trap: the first ordered read after many creations pays for them (about
// a second per few million keys on a 2-core machine).
type index struct {
	less    btree.LessFunc[entry]
	tree    *btree.BTreeG[entry] // key fields only (h, rk)
	points  map[pointKey]entry
	pending []pointKey // keys created since the last settle; may repeat or be deleted since
	// settleMu serializes settle among readers (holding Table.idxMu for
	// reading); writers hold Table.idxMu exclusively and never settle.
	settleMu sync.Mutex
}

type pointKey struct {
	h  [16]byte
	rk string
}

func newIndex(less btree.LessFunc[entry]) *index {
	return &index{less: less, tree: btree.NewG(32, less), points: map[pointKey]entry{}}
}

// settle moves the pending keys that still exist into the tree, in key
// order. Callers hold Table.idxMu (for reading or writing).
func (x *index) settle() {
	x.settleMu.Lock()
	defer x.settleMu.Unlock()
	if len(x.pending) == 0 {
		return
	}
	keys := make([]entry, 0, len(x.pending))
	for _, k := range x.pending {
		if _, ok := x.points[k]; ok {
			keys = append(keys, entry{h: k.h, rk: k.rk})
		}
	}
	slices.SortFunc(keys, func(a, b entry) int {
		switch {
		case x.less(a, b):
			return -1
		case x.less(b, a):
			return 1
		}
		return 0
	})
	for _, e := range keys {
		x.tree.ReplaceOrInsert(e)
	}
	x.pending = nil
}

// Len is the number of items.
func (x *index) Len() int { return len(x.points) }

// Get returns the entry of e's key.
func (x *index) Get(e entry) (entry, bool) {
	v, ok := x.points[pointKey{e.h, e.rk}]
	return v, ok
}

// ReplaceOrInsert sets the entry of e's key and returns the previous one.
func (x *index) ReplaceOrInsert(e entry) (entry, bool) {
	k := pointKey{e.h, e.rk}
	old, had := x.points[k]
	x.points[k] = e
	if !had {
		x.pending = append(x.pending, k)
	}
	return old, had
}

// Delete removes the entry of e's key and returns it.
func (x *index) Delete(e entry) (entry, bool) {
	k := pointKey{e.h, e.rk}
	old, had := x.points[k]
	if had {
		delete(x.points, k)
		x.tree.Delete(entry{h: e.h, rk: e.rk}) // a pending key is skipped by settle instead
	}
	return old, had
}

// full turns a visit of the tree's key-only entries into a visit of the
// full entries.
func (x *index) full(visit btree.ItemIteratorG[entry]) btree.ItemIteratorG[entry] {
	return func(e entry) bool { return visit(x.points[pointKey{e.h, e.rk}]) }
}

// Ascend visits every entry in key order until visit returns false.
func (x *index) Ascend(visit btree.ItemIteratorG[entry]) {
	x.settle()
	x.tree.Ascend(x.full(visit))
}

// AscendGreaterOrEqual visits the entries from pivot (a key or a search
// bound) upwards.
func (x *index) AscendGreaterOrEqual(pivot entry, visit btree.ItemIteratorG[entry]) {
	x.settle()
	x.tree.AscendGreaterOrEqual(pivot, x.full(visit))
}

// DescendLessOrEqual visits the entries from pivot downwards.
func (x *index) DescendLessOrEqual(pivot entry, visit btree.ItemIteratorG[entry]) {
	x.settle()
	x.tree.DescendLessOrEqual(pivot, x.full(visit))
}
