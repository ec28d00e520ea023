package table

import (
	"slices"
	"sync"

	"github.com/google/btree"
)

// itemIndex is a table's item index: the heap's (index) or the index
// store's (diskIndex). Writers hold Table.idxMu exclusively, readers for
// reading. Entries carry the key fields, the item's log shard and
// position, expiry and size; a search pivot may be a bound (entry.bound).
type itemIndex interface {
	// Len is the number of items, Bytes the sum of their sizes.
	Len() int
	Bytes() int64
	// Get returns the entry of e's key.
	Get(e entry) (entry, bool)
	// ReplaceOrInsert sets the entry of e's key and returns the previous
	// one; Delete removes it and returns it.
	ReplaceOrInsert(e entry) (entry, bool)
	Delete(e entry) (entry, bool)
	// Ascend, AscendGreaterOrEqual and DescendLessOrEqual visit entries in
	// key order (from pivot, included) until visit returns false.
	Ascend(visit func(entry) bool)
	AscendGreaterOrEqual(pivot entry, visit func(entry) bool)
	DescendLessOrEqual(pivot entry, visit func(entry) bool)
	// Err is the index's first failure (the store's), nil if none: the
	// table then answers with it until it is opened again.
	Err() error
}

// index is a table's item index in the heap, kept under Table.idxMu: a hash map from
// key to slot (where the item's latest image is in the log, its expiry
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
// A table without a sort key is indexed by the partition key's hash alone:
// its map and pending keys hold no pointers, so the garbage collector does
// not scan them (10 million items: about 0.6 GB it never reads).
//
// Trap: the first ordered read after many creations pays for them (about
// a second per few million keys on a 2-core machine).
type index struct {
	less  btree.LessFunc[entry]
	bytes int64                // the items' sizes, summed
	tree  *btree.BTreeG[entry] // key fields only (h, rk)

	hashOnly bool
	byHash   map[[16]byte]slot // hashOnly
	byKey    map[pointKey]slot // !hashOnly
	pendingH [][16]byte        // keys created since the last settle (hashOnly); may repeat or be deleted since
	pendingK []pointKey        // the same, !hashOnly

	// settleMu serializes settle among readers (holding Table.idxMu for
	// reading); writers hold Table.idxMu exclusively and never settle.
	settleMu sync.Mutex
}

type pointKey struct {
	h  [16]byte
	rk string
}

// slot is an entry without its key.
type slot struct {
	pos   uint64
	exp   int64
	size  int32
	shard uint16
}

func slotOf(e entry) slot { return slot{pos: e.pos, exp: e.exp, size: e.size, shard: e.shard} }

func (s slot) entry(h [16]byte, rk string) entry {
	return entry{h: h, rk: rk, shard: s.shard, pos: s.pos, exp: s.exp, size: s.size}
}

// newIndex returns an empty index; hashOnly for a table without a sort key.
func newIndex(less btree.LessFunc[entry], hashOnly bool) *index {
	x := &index{less: less, tree: btree.NewG(32, less), hashOnly: hashOnly}
	if hashOnly {
		x.byHash = map[[16]byte]slot{}
	} else {
		x.byKey = map[pointKey]slot{}
	}
	return x
}

func (x *index) lookup(h [16]byte, rk string) (slot, bool) {
	if x.hashOnly {
		s, ok := x.byHash[h]
		return s, ok
	}
	s, ok := x.byKey[pointKey{h, rk}]
	return s, ok
}

// settle moves the pending keys that still exist into the tree, in key
// order. Callers hold Table.idxMu (for reading or writing).
func (x *index) settle() {
	x.settleMu.Lock()
	defer x.settleMu.Unlock()
	if len(x.pendingH) == 0 && len(x.pendingK) == 0 {
		return
	}
	keys := make([]entry, 0, len(x.pendingH)+len(x.pendingK))
	for _, h := range x.pendingH {
		if _, ok := x.byHash[h]; ok {
			keys = append(keys, entry{h: h})
		}
	}
	for _, k := range x.pendingK {
		if _, ok := x.byKey[k]; ok {
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
	x.pendingH, x.pendingK = nil, nil
}

// Bytes is the sum of the items' sizes.
func (x *index) Bytes() int64 { return x.bytes }

// Err is always nil: the heap does not fail.
func (x *index) Err() error { return nil }

// Len is the number of items.
func (x *index) Len() int {
	if x.hashOnly {
		return len(x.byHash)
	}
	return len(x.byKey)
}

// Get returns the entry of e's key.
func (x *index) Get(e entry) (entry, bool) {
	s, ok := x.lookup(e.h, e.rk)
	if !ok {
		return entry{}, false
	}
	return s.entry(e.h, e.rk), true
}

// ReplaceOrInsert sets the entry of e's key and returns the previous one.
func (x *index) ReplaceOrInsert(e entry) (entry, bool) {
	old, had := x.Get(e)
	x.bytes += int64(e.size)
	if had {
		x.bytes -= int64(old.size)
	}
	if x.hashOnly {
		x.byHash[e.h] = slotOf(e)
		if !had {
			x.pendingH = append(x.pendingH, e.h)
		}
	} else {
		k := pointKey{e.h, e.rk}
		x.byKey[k] = slotOf(e)
		if !had {
			x.pendingK = append(x.pendingK, k)
		}
	}
	if n := len(x.pendingH) + len(x.pendingK); n > 2*x.Len()+1024 {
		x.prunePending()
	}
	return old, had
}

// prunePending drops the pending keys that were deleted since or repeat,
// so that a table that creates and deletes keys and is never read in
// order holds at most about twice its items in pending keys (amortized
// O(1) per write). The caller holds Table.idxMu exclusively.
func (x *index) prunePending() {
	if x.hashOnly {
		seen := make(map[[16]byte]bool, len(x.pendingH))
		kept := x.pendingH[:0]
		for _, h := range x.pendingH {
			if _, ok := x.byHash[h]; ok && !seen[h] {
				seen[h] = true
				kept = append(kept, h)
			}
		}
		x.pendingH = slices.Clone(kept) // a fresh array: the old one is released
		return
	}
	seen := make(map[pointKey]bool, len(x.pendingK))
	kept := x.pendingK[:0]
	for _, k := range x.pendingK {
		if _, ok := x.byKey[k]; ok && !seen[k] {
			seen[k] = true
			kept = append(kept, k)
		}
	}
	x.pendingK = slices.Clone(kept)
}

// Delete removes the entry of e's key and returns it.
func (x *index) Delete(e entry) (entry, bool) {
	old, had := x.Get(e)
	if !had {
		return old, false
	}
	x.bytes -= int64(old.size)
	if x.hashOnly {
		delete(x.byHash, e.h)
	} else {
		delete(x.byKey, pointKey{e.h, e.rk})
	}
	x.tree.Delete(entry{h: e.h, rk: e.rk}) // a pending key is skipped by settle instead
	return old, true
}

// full turns a visit of the tree's key-only entries into a visit of the
// full entries.
func (x *index) full(visit btree.ItemIteratorG[entry]) btree.ItemIteratorG[entry] {
	return func(e entry) bool {
		s, _ := x.lookup(e.h, e.rk)
		return visit(s.entry(e.h, e.rk))
	}
}

// Ascend visits every entry in key order until visit returns false.
func (x *index) Ascend(visit func(entry) bool) {
	x.settle()
	x.tree.Ascend(x.full(visit))
}

// AscendGreaterOrEqual visits the entries from pivot (a key or a search
// bound) upwards.
func (x *index) AscendGreaterOrEqual(pivot entry, visit func(entry) bool) {
	x.settle()
	x.tree.AscendGreaterOrEqual(pivot, x.full(visit))
}

// DescendLessOrEqual visits the entries from pivot downwards.
func (x *index) DescendLessOrEqual(pivot entry, visit func(entry) bool) {
	x.settle()
	x.tree.DescendLessOrEqual(pivot, x.full(visit))
}
