package table

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/runnel-dev/runnel/table/expr"
)

// readableIndex returns the index a Query or Scan names. Errors
// (ValidationException, DynamoDB's words): "The table does not have the
// specified index: X"; "Consistent reads are not supported on global
// secondary indexes"; "Cannot read from backfilling global secondary
// index: X" while a GSI added by UpdateTable is CREATING.
func (t *Table) readableIndex(name string, consistent bool) (*secondary, error) {
	x := t.index(name)
	if x == nil {
		return nil, validation("The table does not have the specified index: %s", name)
	}
	if x.global && consistent {
		return nil, validation("Consistent reads are not supported on global secondary indexes")
	}
	x.mu.RLock()
	ready := x.ready
	x.mu.RUnlock()
	if !ready {
		return nil, validation("Cannot read from backfilling global secondary index: %s", name)
	}
	return x, nil
}

// queryIndex answers a Query on index x: the entries of the key
// condition's partition in the index's order, the sort key condition
// checked on each item.
func (r *reader) queryIndex(ctx context.Context, x *secondary, kc *expr.KeyCondition, forward bool, esk Item) (*QueryOutput, error) {
	pk, err := x.sc.partitionOf(kc.HashValue)
	if err != nil {
		return nil, err
	}
	start, err := x.startOf(esk, &pk.h)
	if err != nil {
		return nil, err
	}
	return r.indexPage(ctx, x, func(visit func(*sEntry) bool) error {
		return x.walk(&pk.h, forward, start, visit)
	}, func(it Item) bool {
		if x.sc.rng == "" {
			return true
		}
		rv := it[x.sc.rng]
		return kc.MatchRange(&rv)
	})
}

// scanIndex answers a Scan on index x: every entry of the segment, in the
// index's order.
func (r *reader) scanIndex(ctx context.Context, x *secondary, seg, total int, esk Item) (*QueryOutput, error) {
	start, err := x.startOf(esk, nil)
	if err != nil {
		return nil, err
	}
	return r.indexPage(ctx, x, func(visit func(*sEntry) bool) error {
		return x.walk(nil, true, start, func(e *sEntry) bool {
			return (total > 1 && segmentOf(e.h, total) != seg) || visit(e)
		})
	}, nil)
}

// startOf is the entry of ExclusiveStartKey esk (nil: none), which
// queryKey or scanStart has checked against the index's and the table's
// keys (and, for a Query, the partition h).
func (x *secondary) startOf(esk Item, h *[16]byte) (*sEntry, error) {
	if esk == nil {
		return nil, nil
	}
	tk, err := x.table.keyOf(keyAttrs(esk, x.table), true)
	var start *sEntry
	if err == nil {
		start = x.entryOf(tk, esk)
	}
	if start == nil || (h != nil && start.h != *h) {
		return nil, validation("The provided starting key is invalid: The provided key element does not match the schema")
	}
	return start, nil
}

// walk visits x's entries of partition h (nil: all) in the index's
// order, forward or backward, strictly after start (nil: from the
// first), until visit returns false.
func (x *secondary) walk(h *[16]byte, forward bool, start *sEntry, visit func(*sEntry) bool) error {
	from := start
	for {
		var chunk []*sEntry
		if x.disk != nil {
			var err error
			if chunk, err = x.disk.chunk(h, forward, from); err != nil {
				return err
			}
		} else {
			chunk = x.heapChunk(h, forward, from, walkChunk)
		}
		for _, e := range chunk {
			if !visit(e) {
				return nil
			}
		}
		if len(chunk) < walkChunk {
			return nil
		}
		from = chunk[len(chunk)-1]
	}
}

// walkChunk is how many entries a walk reads under one hold of the
// index's lock (of the heap) or one iterator (of the store).
const walkChunk = 256

// heapChunk is up to n of the heap index's entries of partition h (nil:
// all), in the index's order, forward or backward, strictly after from
// (nil: from the first).
func (x *secondary) heapChunk(h *[16]byte, forward bool, from *sEntry, n int) []*sEntry {
	x.mu.RLock()
	defer x.mu.RUnlock()
	var out []*sEntry
	keep := func(e *sEntry) bool {
		if from != nil && x.compare(e, from) == 0 {
			return true // the start itself is skipped
		}
		if h != nil && e.h != *h {
			// Backward from the next partition's first key: pass over
			// that partition's entries; otherwise the partition ended.
			return !forward && compareHash(e.h, *h) > 0
		}
		out = append(out, e)
		return len(out) < n
	}
	switch {
	case from != nil && forward:
		x.tree.AscendGreaterOrEqual(from, keep)
	case from != nil:
		x.tree.DescendLessOrEqual(from, keep)
	case h != nil && forward:
		x.tree.AscendGreaterOrEqual(&sEntry{ord: string(h[:])}, keep) // below the partition's lowest key
	case h != nil:
		if next, ok := nextHash(*h); ok {
			x.tree.DescendLessOrEqual(&sEntry{ord: string(next[:])}, keep)
		} else {
			x.tree.Descend(keep)
		}
	case forward:
		x.tree.Ascend(keep)
	default:
		x.tree.Descend(keep)
	}
	return out
}

// nextHash is h plus one (ok false: h is the last hash).
func nextHash(h [16]byte) ([16]byte, bool) {
	for i := len(h) - 1; i >= 0; i-- {
		h[i]++
		if h[i] != 0 {
			return h, true
		}
	}
	return h, false
}

// indexPage reads the items of entries through the table's read path
// into a page: an item no longer in the index as the entry says (written
// since) is passed over, as is one match refuses. What the page gets of an
// item is the index's projection, or for an LSI read with Select
// ALL_ATTRIBUTES or a ProjectionExpression, the whole item (fetched from
// the table, as DynamoDB does).
func (r *reader) indexPage(ctx context.Context, x *secondary, walk func(func(*sEntry) bool) error, match func(Item) bool) (*QueryOutput, error) {
	whole := !x.global && (r.selectAll || r.proj != nil)
	err := pageWalk(r, walk, func(e *sEntry) (bool, error) {
		it, _, err := r.t.get(ctx, e.k)
		if err != nil {
			return false, err
		}
		if now := x.entryOf(e.k, it); now == nil || now.h != e.h || now.rk != e.rk {
			return false, nil
		}
		if match != nil && !match(it) {
			return false, nil
		}
		lek := keyAttrs(it, x.table, x.sc)
		if !whole {
			it = x.project(it)
		} else if r.selectAll && x.proj.ProjectionType != ProjectAll && asked(r.rcc) {
			r.fetched += expr.ItemSize(it)
		}
		return r.visitItem(it, int(e.size), lek)
	})
	if err != nil {
		return nil, err
	}
	return r.result(), nil
}

// pageWalk is r's page over the entries walk visits (an index's, or a
// table partition's): it stops the walk at Limit or when step fills the
// page, and the page has a LastEvaluatedKey when entries remain (Limit,
// even on the last entry, counts as remaining, as DynamoDB's page does).
func pageWalk[E any](r *reader, walk func(func(E) bool) error, step func(E) (full bool, err error)) error {
	more, full := false, false
	var serr error
	err := walk(func(e E) bool {
		if full || (r.limit > 0 && r.out.ScannedCount >= r.limit) {
			more = true
			return false
		}
		full, serr = step(e)
		return serr == nil
	})
	if err = errors.Join(err, serr); err != nil {
		return err
	}
	if !more && (r.limit == 0 || r.out.ScannedCount < r.limit) {
		r.out.LastEvaluatedKey = nil
	}
	return nil
}

// A global secondary index answers with what it holds of its items: "If
// you query or scan a global secondary index, you can only request
// attributes that are projected into the index. Global secondary index
// queries cannot fetch attributes from the parent table" (API_Query and
// API_Scan, Select). So a read of a GSI that does not project every
// attribute (ProjectionType KEYS_ONLY or INCLUDE) is refused when it asks
// for one it does not hold (ValidationException, DynamoDB's words as its
// users quote them, and as DynamoDB Local words them):
//   - a ProjectionExpression (or AttributesToGet, which arrives as one),
//     of a Query or a Scan: "One or more parameter values were invalid:
//     Global secondary index X does not project [a, b]";
//   - a FilterExpression (or QueryFilter, which arrives as one) of a
//     Query: "One or more parameter values were invalid: Secondary index X
//     does not project one or more filter attributes: [a, b]".
//
// A Scan's filter is not refused: DynamoDB checks a Query's filter only
// (DynamoDB Local's QueryFunction does, its ScanFunction does not; a
// PartiQL read of an index without its partition key, a scan, "matches
// nothing rather than failing", recorded from AWS by dynoxide), and the
// filter then sees the attribute absent, as in the index. The names are
// the attributes' top-level names, sorted. A local secondary index reads
// what it does not hold from the table, as DynamoDB does, and is not
// checked.

// projects reports whether index x holds attribute a of its items: every
// attribute (ALL); the table's and the index's key attributes; INCLUDE's
// NonKeyAttributes.
func (x *secondary) projects(a string) bool {
	switch {
	case x.proj.ProjectionType == ProjectAll:
		return true
	case a == "":
		return false
	case a == x.table.hash || a == x.table.rng || a == x.sc.hash || a == x.sc.rng:
		return true
	}
	return slices.Contains(x.proj.NonKeyAttributes, a)
}

// unprojected are the attributes of names that index x does not hold,
// sorted, each once, as DynamoDB lists them: "[a, b]" ("" when none).
func (x *secondary) unprojected(names []string) string {
	var out []string
	for _, n := range names {
		if !x.projects(n) && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return ""
	}
	slices.Sort(out)
	return "[" + strings.Join(out, ", ") + "]"
}

// checkProjectedFilter refuses a Query's filter on a global secondary
// index naming an attribute the index does not project.
func (r *reader) checkProjectedFilter() error {
	if x := r.index; x != nil && x.global && r.filter != nil {
		if missing := x.unprojected(r.filter.Attributes()); missing != "" {
			return validation("One or more parameter values were invalid: Secondary index %s does not project one or more filter attributes: %s", x.name, missing)
		}
	}
	return nil
}

// checkProjectedProjection refuses a ProjectionExpression on a global
// secondary index naming an attribute the index does not project.
func (r *reader) checkProjectedProjection() error {
	if x := r.index; x != nil && x.global && r.proj != nil {
		if missing := x.unprojected(r.proj.Names()); missing != "" {
			return validation("One or more parameter values were invalid: Global secondary index %s does not project %s", x.name, missing)
		}
	}
	return nil
}
