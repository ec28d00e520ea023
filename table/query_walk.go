package table

import (
	"bytes"
	"sync/atomic"
)

// A table Query reads its partition a chunk at a time, as the table Scan
// and the walk of a secondary index do (secondary_read.go, walk): up to
// queryChunk entries, and at most about MaxPageBytes of the images the
// index store hands over with them, under one hold of the table's index
// lock (Table.idxMu, for reading), then the chunk's items without it. The
// walk stops when the page does (Limit items evaluated, or 1 MB read), so
// a Query of a partition of N items costs its page, not N, and writers of
// the table wait for one chunk at most, not for the whole partition.
//
// Between two chunks the partition may change: a chunk starts strictly
// after the last entry of the one before, as a page starts after its
// ExclusiveStartKey, so an item is never visited twice and one written
// meanwhile is seen or not, never half.

// queryChunk is how many entries of a partition a Query lists under one
// hold of the table's index lock.
var queryChunk = walkChunk

// partitionListed counts the entries the partition walks have listed,
// for every service of the process (tests: the walk stops at its budget).
var partitionListed atomic.Int64

// walkPartition visits the entries of partition h in sort order (forward:
// ascending), strictly after the entry of after (nil: from the
// partition's first), with each one's image from the index store (nil:
// none), until visit returns false or the partition ends. The image is
// the walk's own copy.
func (t *Table) walkPartition(h [16]byte, forward bool, after *key, visit func(e entry, img []byte) bool) {
	for {
		entries, imgs, more := t.partitionChunk(h, forward, after, queryChunk)
		for i, e := range entries {
			var img []byte
			if imgs != nil {
				img = imgs[i]
			}
			if !visit(e, img) {
				return
			}
		}
		if !more || len(entries) == 0 {
			return
		}
		last := entries[len(entries)-1]
		after = &key{h: last.h, rk: last.rk}
	}
}

// partitionChunk lists, under one hold of the index lock, up to n entries
// of partition h in sort order strictly after the entry of after (nil:
// from the partition's first), and, on the index store, their images
// (imgs[i] is entries[i]'s; nil in the heap) until they hold MaxPageBytes.
// more says the partition has entries past the chunk.
func (t *Table) partitionChunk(h [16]byte, forward bool, after *key, n int) (entries []entry, imgs [][]byte, more bool) {
	t.idxMu.RLock()
	defer t.idxMu.RUnlock()
	held := 0
	visit := func(e entry, img []byte) bool {
		if e.h != h {
			return false
		}
		if after != nil && e.rk == after.rk {
			return true // the entry after which the chunk starts
		}
		if len(entries) >= n || held >= MaxPageBytes {
			more = true
			return false
		}
		entries = append(entries, e)
		if imgs != nil {
			c := bytes.Clone(img)
			held += len(c)
			imgs = append(imgs, c)
		}
		return true
	}
	from := entry{h: h, bound: -1}
	if !forward {
		from.bound = 1
	}
	if after != nil {
		from = entry{h: h, rk: after.rk}
	}
	if dx, ok := t.idx.(*diskIndex); ok {
		imgs = [][]byte{}
		if forward {
			dx.ascend(from, visit)
		} else {
			dx.descend(from, visit)
		}
	} else {
		entryVisit := func(e entry) bool { return visit(e, nil) }
		if forward {
			t.idx.AscendGreaterOrEqual(from, entryVisit)
		} else {
			t.idx.DescendLessOrEqual(from, entryVisit)
		}
		imgs = nil
	}
	partitionListed.Add(int64(len(entries)))
	return entries, imgs, more
}
