package table

import (
	"bytes"
	"strings"
	"sync/atomic"

	"github.com/runnel-dev/runnel/table/expr"
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
// A sort key condition bounds the walk: it starts at the condition's
// first possible entry (a seek, not a walk from the partition's first)
// and ends at the first entry past the condition's last (sortRange), so a
// Query of a range of a partition of N items costs its range, not N. The
// trap: the items a key condition matches are one run of the partition's
// sort order (every operator DynamoDB allows, begins_with included: the
// strings with a prefix are one run of byte order), which is what lets
// the walk stop at the first entry past it.
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

// sortRange is a Query's sort key condition as bounds in the index's
// order: canonical forms of the key values (canonical), compared as the
// index compares them (schema.compareRange). The zero value bounds
// nothing.
type sortRange struct {
	lo, hi         string
	hasLo, hasHi   bool
	loIncl, hiIncl bool
	prefix         string // begins_with's operand (S or B)
	isPrefix       bool
}

// sortRangeOf returns the bounds of kc's sort key condition; the zero
// sortRange when it has none, or when a value is not of the sort key's
// type (the condition's own check answers that).
func (sc schema) sortRangeOf(kc *expr.KeyCondition) sortRange {
	var r sortRange
	if sc.rng == "" || kc.RangeName == "" || len(kc.RangeValues) == 0 {
		return r
	}
	vals := make([]string, len(kc.RangeValues))
	for i, v := range kc.RangeValues {
		c, err := canonical(sc.rng, sc.rngType, v)
		if err != nil {
			return sortRange{}
		}
		vals[i] = c
	}
	v := vals[0]
	switch kc.RangeOp {
	case "=":
		r = sortRange{lo: v, hi: v, hasLo: true, hasHi: true, loIncl: true, hiIncl: true}
	case "<", "<=":
		r = sortRange{hi: v, hasHi: true, hiIncl: kc.RangeOp == "<="}
	case ">", ">=":
		r = sortRange{lo: v, hasLo: true, loIncl: kc.RangeOp == ">="}
	case "BETWEEN":
		if len(vals) == 2 {
			r = sortRange{lo: v, hi: vals[1], hasLo: true, hasHi: true, loIncl: true, hiIncl: true}
		}
	case "begins_with":
		if sc.rngType != TypeN {
			r = sortRange{lo: v, hasLo: true, loIncl: true, prefix: v, isPrefix: true}
		}
	}
	return r
}

// seek is where a walk in the direction forward starts: the bound the
// walk meets first, included; ok false when the condition has none on
// that side.
func (r *sortRange) seek(forward bool) (rk string, ok bool) {
	if forward {
		return r.lo, r.hasLo
	}
	return r.hi, r.hasHi
}

// past says sort key rk (canonical) and every entry after it in the
// direction forward are outside the condition.
func (r *sortRange) past(sc schema, rk string, forward bool) bool {
	if forward {
		if r.hasHi {
			c := sc.compareRange(rk, r.hi)
			return c > 0 || (c == 0 && !r.hiIncl)
		}
		return r.isPrefix && rk > r.prefix && !strings.HasPrefix(rk, r.prefix)
	}
	if r.hasLo {
		c := sc.compareRange(rk, r.lo)
		return c < 0 || (c == 0 && !r.loIncl)
	}
	return false
}

// walkPartition visits the entries of partition h in sort order (forward:
// ascending), strictly after the entry of after (nil: from the
// partition's first), within the sort key range r (nil: all), with each
// one's image from the index store (nil: none), until visit returns false,
// the range ends or the partition does. The image is the walk's own copy.
func (t *Table) walkPartition(h [16]byte, forward bool, after *key, r *sortRange, visit func(e entry, img []byte) bool) {
	for {
		entries, imgs, more := t.partitionChunk(h, forward, after, r, queryChunk)
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
// from the partition's first) and within r (nil: all; see walkPartition),
// and, on the index store, their images (imgs[i] is entries[i]'s; nil in
// the heap) until they hold MaxPageBytes. more says the partition has
// entries of the range past the chunk.
func (t *Table) partitionChunk(h [16]byte, forward bool, after *key, r *sortRange, n int) (entries []entry, imgs [][]byte, more bool) {
	t.idxMu.RLock()
	defer t.idxMu.RUnlock()
	held := 0
	skip := after
	visit := func(e entry, img []byte) bool {
		if e.h != h {
			return false
		}
		if skip != nil && e.rk == skip.rk {
			return true // the entry after which the chunk starts
		}
		if r != nil && r.past(t.schema, e.rk, forward) {
			return false
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
	if r != nil {
		// Start at the range's first possible entry unless the walk is
		// already past it (an ExclusiveStartKey within the range).
		if rk, ok := r.seek(forward); ok && (after == nil ||
			(forward && t.schema.compareRange(rk, after.rk) > 0) ||
			(!forward && t.schema.compareRange(rk, after.rk) < 0)) {
			from, skip = entry{h: h, rk: rk}, nil
		}
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
