package table

import "github.com/google/btree"

// index is a table's item index, kept under Table.idxMu: a B-tree of keys
// in key order (Query, Scan, the TTL sweep) and a hash map from key to
// entry (where the item's latest image is in the log, its expiry and
// size).
//
// Point operations, which are most of a table's work (GetItem and the
// read of the current item that every write does), touch only the map; a
// write that replaces an existing item updates the map alone, and the tree
// changes only when an item is created or deleted. On a 2-core machine a
// B-tree lookup among millions of items costs several cache misses per
// level; the map costs about one.
type index struct {
	tree   *btree.BTreeG[entry] // key fields only (h, rk)
	points map[pointKey]entry
}

type pointKey struct {
	h  [16]byte
	rk string
}

func newIndex(less btree.LessFunc[entry]) *index {
	return &index{tree: btree.NewG(32, less), points: map[pointKey]entry{}}
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
		x.tree.ReplaceOrInsert(entry{h: e.h, rk: e.rk})
	}
	return old, had
}

// Delete removes the entry of e's key and returns it.
func (x *index) Delete(e entry) (entry, bool) {
	k := pointKey{e.h, e.rk}
	old, had := x.points[k]
	if had {
		delete(x.points, k)
		x.tree.Delete(entry{h: e.h, rk: e.rk})
	}
	return old, had
}

// full turns a visit of the tree's key-only entries into a visit of the
// full entries.
func (x *index) full(visit btree.ItemIteratorG[entry]) btree.ItemIteratorG[entry] {
	return func(e entry) bool { return visit(x.points[pointKey{e.h, e.rk}]) }
}

// Ascend visits every entry in key order until visit returns false.
func (x *index) Ascend(visit btree.ItemIteratorG[entry]) { x.tree.Ascend(x.full(visit)) }

// AscendGreaterOrEqual visits the entries from pivot (a key or a search
// bound) upwards.
func (x *index) AscendGreaterOrEqual(pivot entry, visit btree.ItemIteratorG[entry]) {
	x.tree.AscendGreaterOrEqual(pivot, x.full(visit))
}

// DescendLessOrEqual visits the entries from pivot downwards.
func (x *index) DescendLessOrEqual(pivot entry, visit btree.ItemIteratorG[entry]) {
	x.tree.DescendLessOrEqual(pivot, x.full(visit))
}
