package table

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/cockroachdb/apd/v3"
	"github.com/cockroachdb/pebble/v2"
)

// diskIndex is a table's item index in the process's index store
// (store.go): the same entries as the heap index (index.go), kept in key
// order by Pebble, so memory does not grow with the item count and an
// open need not read every key.
//
// An entry's key is 'i', the table's prefix, the partition key's hash and
// the sort key in an encoding whose byte order is DynamoDB's order of the
// sort key (rangeBytes); its value is the log shard and position of the
// item's latest change, its expiry, size and sort key's canonical text.
//
// Writers hold Table.idxMu exclusively, readers for reading, as for the
// heap index; each change is one Pebble batch holding the entry and the
// table's new count and size.
type diskIndex struct {
	st     *store
	tid    [16]byte
	rngN   bool // the sort key is a Number (rangeBytes)
	lo, hi []byte

	count, bytes int64
	filter       *keyFilter // keys the store may hold (index_filter.go)

	errMu sync.Mutex
	err   error // sticky: the first store failure
}

// openDiskIndex opens the index of the table with id tableID as the store
// holds it (empty if it holds none).
func openDiskIndex(st *store, tableID string, rngType string) (*diskIndex, error) {
	x := &diskIndex{st: st, tid: tablePrefix(tableID), rngN: rngType == TypeN}
	x.lo = storeKey('i', x.tid, 0)
	x.hi = prefixEnd(x.lo)
	v, err := st.get(storeKey('c', x.tid, 0))
	if err != nil {
		return nil, err
	}
	if v != nil {
		if x.count, x.bytes, err = decodeCount(v); err != nil {
			return nil, err
		}
	}
	x.filter = newKeyFilter(x.count, x.count == 0)
	if x.count > 0 {
		go x.buildFilter()
	}
	return x, nil
}

// fail records the store's first failure and logs it.
func (x *diskIndex) fail(op string, err error) {
	x.errMu.Lock()
	defer x.errMu.Unlock()
	if x.err == nil {
		x.err = fmt.Errorf("table index store: %s: %w", op, err)
		x.st.log.Error("table index store failed: the table answers with errors until it is opened again (its index is then rebuilt from the log)", "err", x.err)
	}
}

// Err is the store's first failure, nil if none.
func (x *diskIndex) Err() error {
	x.errMu.Lock()
	defer x.errMu.Unlock()
	return x.err
}

func (x *diskIndex) Len() int     { return int(x.count) }
func (x *diskIndex) Bytes() int64 { return x.bytes }

// key is the store key of e's item (e.bound 0).
func (x *diskIndex) key(h [16]byte, rk string) []byte {
	return x.appendKey(make([]byte, 0, len(x.lo)+16+len(rk)+4), h, rk)
}

// appendKey appends the store key of (h, rk) to dst.
func (x *diskIndex) appendKey(dst []byte, h [16]byte, rk string) []byte {
	return rangeBytes(append(append(dst, x.lo...), h[:]...), rk, x.rngN)
}

// seekKey is the store key a search from pivot starts at: the item's own
// key, or, for a bound, the first key of the hash (-1) or the first key
// after it (+1).
func (x *diskIndex) seekKey(p entry) []byte {
	switch {
	case p.bound < 0:
		return x.key(p.h, "")
	case p.bound > 0:
		h := p.h
		for i := len(h) - 1; i >= 0; i-- {
			h[i]++
			if h[i] != 0 {
				return x.key(h, "")
			}
		}
		return x.hi
	}
	return x.key(p.h, p.rk)
}

// encodeSlot is an entry's value: shard (2 bytes), position, expiry,
// size, the sort key's canonical text (length first), then the item's
// image in the change log's item form (codec.go's appendItem), which
// serves GetItem, Query and Scan without a read of the log.
func encodeSlot(e entry, img []byte) []byte {
	return appendSlot(make([]byte, 0, 24+len(e.rk)+len(img)), e, img)
}

// appendSlot appends encodeSlot(e, img) to v.
func appendSlot(v []byte, e entry, img []byte) []byte {
	v = binary.BigEndian.AppendUint16(v, e.shard)
	v = binary.AppendUvarint(v, e.pos)
	v = binary.AppendVarint(v, e.exp)
	v = binary.AppendUvarint(v, uint64(e.size))
	v = appendString(v, e.rk)
	return append(v, img...)
}

// decodeSlot decodes an entry's value; img is the image's bytes (a view
// of v), empty if the value has none.
func decodeSlot(h [16]byte, v []byte) (e entry, img []byte, err error) {
	e = entry{h: h}
	if len(v) < 2 {
		return e, nil, errors.New("short entry")
	}
	e.shard = binary.BigEndian.Uint16(v)
	v = v[2:]
	var w int
	if e.pos, w = binary.Uvarint(v); w <= 0 {
		return e, nil, errors.New("bad position")
	}
	v = v[w:]
	if e.exp, w = binary.Varint(v); w <= 0 {
		return e, nil, errors.New("bad expiry")
	}
	v = v[w:]
	size, w := binary.Uvarint(v)
	if w <= 0 {
		return e, nil, errors.New("bad size")
	}
	v = v[w:]
	n, w := binary.Uvarint(v)
	if w <= 0 || uint64(len(v)-w) < n {
		return e, nil, errors.New("bad sort key")
	}
	e.size, e.rk = int32(size), string(v[w:w+int(n)])
	return e, v[w+int(n):], nil
}

// Get returns the entry of e's key. The caller holds Table.idxMu.
func (x *diskIndex) Get(e entry) (entry, bool) {
	got, _, ok := x.getWithImage(e)
	return got, ok
}

// getWithImage is Get with the entry's image bytes (nil: none). The
// caller holds Table.idxMu.
func (x *diskIndex) getWithImage(e entry) (entry, []byte, bool) {
	k := x.key(e.h, e.rk)
	if !x.filter.mayHold(k) {
		return entry{}, nil, false
	}
	return x.getImage(k, e.h)
}

// getImage returns the entry of store key k (of hash h) and its image's
// bytes.
func (x *diskIndex) getImage(k []byte, h [16]byte) (entry, []byte, bool) {
	v, err := x.st.get(k)
	if err != nil {
		x.fail("get", err)
		return entry{}, nil, false
	}
	if v == nil {
		return entry{}, nil, false
	}
	got, img, err := decodeSlot(h, v)
	if err != nil {
		x.fail("get", err)
		return entry{}, nil, false
	}
	return got, img, true
}

// image returns the item of entry e if the store holds it at e's log
// position (ok false: read the log: the entry moved on, or has no image).
// The caller need not hold Table.idxMu (so the filter is not asked).
func (x *diskIndex) image(e entry) (Item, bool) {
	got, img, ok := x.getImage(x.key(e.h, e.rk), e.h)
	if !ok || got.pos != e.pos || got.shard != e.shard || len(img) == 0 {
		return nil, false
	}
	return decodeImage(img)
}

// decodeImage decodes an entry's image (ok false: none, or damaged).
func decodeImage(img []byte) (Item, bool) {
	if len(img) == 0 {
		return nil, false
	}
	d := changeDecoder{b: img}
	it := d.item(0)
	if d.err != nil || it == nil {
		return nil, false
	}
	return it, true
}

// diskBatch is changes to a table's entries committed together: one
// Pebble batch holding them and the table's new count and size, so one
// commit (the group commit of the log writes them in, Table.applyAll).
// The changes are of distinct items, each with its previous entry.
type diskBatch struct {
	x            *diskIndex
	ops          []diskOp
	count, bytes int64
	secs         []secTotal // the secondary indexes' totals after ops
}

type diskOp struct {
	k, v  []byte // v nil: delete k
	added bool   // the store did not hold k
}

func (x *diskIndex) newBatch() *diskBatch {
	return &diskBatch{x: x, count: x.count, bytes: x.bytes}
}

// set sets the entry of e's key, whose previous entry is old (had), with
// image img.
func (b *diskBatch) set(e, old entry, had bool, img []byte) {
	b.bytes += int64(e.size)
	if had {
		b.bytes -= int64(old.size)
	} else {
		b.count++
	}
	e.bound = 0
	b.ops = append(b.ops, diskOp{k: b.x.key(e.h, e.rk), v: encodeSlot(e, img), added: !had})
}

// remove deletes the entry of e's key, which is old.
func (b *diskBatch) remove(e, old entry) {
	b.count--
	b.bytes -= int64(old.size)
	b.ops = append(b.ops, diskOp{k: b.x.key(e.h, e.rk)})
}

// commit writes the batch; on a failure the index keeps its entries and
// records the failure (Err).
func (b *diskBatch) commit() {
	if len(b.ops) == 0 {
		return
	}
	x := b.x
	for _, t := range b.secs {
		b.ops = append(b.ops, diskOp{k: t.s.prefix('y'), v: encodeCount(t.count, t.bytes)})
	}
	if err := x.commitOps(b.ops, encodeCount(b.count, b.bytes)); err != nil {
		x.fail("write", err)
		return
	}
	for _, t := range b.secs {
		t.s.count, t.s.bytes = t.count, t.bytes
	}
	for _, op := range b.ops {
		if op.added {
			x.filter.add(op.k)
		}
	}
	x.count, x.bytes = b.count, b.bytes
}

func (x *diskIndex) commitOps(ops []diskOp, count []byte) error {
	x.st.mu.RLock()
	defer x.st.mu.RUnlock()
	if x.st.closed {
		return errStoreClosed
	}
	pb := x.st.db.NewBatch()
	defer pb.Close()
	for _, op := range ops {
		var err error
		if op.v != nil {
			err = pb.Set(op.k, op.v, nil)
		} else {
			err = pb.Delete(op.k, nil)
		}
		if err != nil {
			return err
		}
	}
	if err := pb.Set(storeKey('c', x.tid, 0), count, nil); err != nil {
		return err
	}
	return pb.Commit(pebble.NoSync)
}

// ReplaceOrInsert sets the entry of e's key and returns the previous one;
// the item's image stays (the entry moved within the same change: its
// expiry recomputed). A change's new image comes with put.
func (x *diskIndex) ReplaceOrInsert(e entry) (entry, bool) {
	var (
		old entry
		img []byte
		had bool
	)
	if k := x.key(e.h, e.rk); x.filter.mayHold(k) {
		old, img, had = x.getImage(k, e.h)
	}
	if had && (old.pos != e.pos || old.shard != e.shard) {
		img = nil
	}
	x.set(e, old, had, img)
	return old, had
}

// put sets the entry of e's key to a change whose new image is it, and
// returns the previous entry.
func (x *diskIndex) put(e entry, it Item) (entry, bool) {
	old, had := x.Get(e)
	x.set(e, old, had, appendItem(nil, it))
	return old, had
}

// set commits one entry (set's batch of one).
func (x *diskIndex) set(e, old entry, had bool, img []byte) {
	b := x.newBatch()
	b.set(e, old, had, img)
	b.commit()
}

// Delete removes the entry of e's key and returns it.
func (x *diskIndex) Delete(e entry) (entry, bool) {
	old, had := x.Get(e)
	if !had {
		return old, false
	}
	return x.remove(e, old), true
}

// remove deletes the entry of e's key, which is old.
func (x *diskIndex) remove(e, old entry) entry {
	b := x.newBatch()
	b.remove(e, old)
	b.commit()
	return old
}

// iterate visits entries from seek (nil: the first), forward or
// backward, with their images' bytes (valid during the call; nil: none),
// until visit returns false. Backward starts before seek.
func (x *diskIndex) iterate(seek []byte, forward bool, visit func(entry, []byte) bool) {
	x.st.mu.RLock()
	defer x.st.mu.RUnlock()
	if x.st.closed {
		x.fail("read", errStoreClosed)
		return
	}
	it, err := x.st.db.NewIter(&pebble.IterOptions{LowerBound: x.lo, UpperBound: x.hi})
	if err != nil {
		x.fail("read", err)
		return
	}
	defer it.Close()
	var ok bool
	switch {
	case seek == nil && forward:
		ok = it.First()
	case forward:
		ok = it.SeekGE(seek)
	default:
		ok = it.SeekLT(seek)
	}
	for ; ok; ok = step(it, forward) {
		k := it.Key()
		if len(k) < len(x.lo)+16 {
			x.fail("read", fmt.Errorf("short key %x", k))
			return
		}
		var h [16]byte
		copy(h[:], k[len(x.lo):])
		e, img, err := decodeSlot(h, it.Value())
		if err != nil {
			x.fail("read", err)
			return
		}
		if len(img) == 0 {
			img = nil
		}
		if !visit(e, img) {
			return
		}
	}
	if err := it.Error(); err != nil {
		x.fail("read", err)
	}
}

// eachEntry calls fn with every entry of the table that view holds (a
// snapshot of the store), in key order, until fn fails.
func (x *diskIndex) eachEntry(view pebble.Reader, fn func(entry) error) error {
	it, err := view.NewIter(&pebble.IterOptions{LowerBound: x.lo, UpperBound: x.hi})
	if err != nil {
		return err
	}
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		if len(k) < len(x.lo)+16 {
			err = fmt.Errorf("short key %x", k)
			break
		}
		var h [16]byte
		copy(h[:], k[len(x.lo):])
		var e entry
		if e, _, err = decodeSlot(h, it.Value()); err != nil {
			break
		}
		if err = fn(e); err != nil {
			break
		}
	}
	return errors.Join(err, it.Error(), it.Close())
}

func step(it *pebble.Iterator, forward bool) bool {
	if forward {
		return it.Next()
	}
	return it.Prev()
}

// Ascend visits every entry in key order until visit returns false.
func (x *diskIndex) Ascend(visit func(entry) bool) { x.iterate(nil, true, entryOnly(visit)) }

// entryOnly is visit without the image.
func entryOnly(visit func(entry) bool) func(entry, []byte) bool {
	return func(e entry, _ []byte) bool { return visit(e) }
}

// AscendGreaterOrEqual visits the entries from pivot (a key or a search
// bound) upwards.
func (x *diskIndex) AscendGreaterOrEqual(pivot entry, visit func(entry) bool) {
	x.ascend(pivot, entryOnly(visit))
}

// DescendLessOrEqual visits the entries from pivot downwards.
func (x *diskIndex) DescendLessOrEqual(pivot entry, visit func(entry) bool) {
	x.descend(pivot, entryOnly(visit))
}

// ascend is AscendGreaterOrEqual with each entry's image bytes (valid
// during the visit only).
func (x *diskIndex) ascend(pivot entry, visit func(entry, []byte) bool) {
	x.iterate(x.seekKey(pivot), true, visit)
}

// descend is DescendLessOrEqual with each entry's image bytes (valid
// during the visit only).
func (x *diskIndex) descend(pivot entry, visit func(entry, []byte) bool) {
	seek := x.seekKey(pivot)
	if pivot.bound == 0 {
		seek = append(seek, 0) // the pivot itself is included
	}
	x.iterate(seek, false, visit)
}

// appendNumberOrdered appends the canonical text of a DynamoDB number
// (canonical's form for a Number key) in an encoding whose byte order is
// the numbers' order:
//
//	negative  0x01, ^(adjusted exponent + 0x4000) (2 bytes),
//	          each coefficient digit as 0xff-digit, then 0xff
//	zero      0x02
//	positive  0x03, adjusted exponent + 0x4000 (2 bytes), the digits
//
// The coefficient has no trailing zeros (canonical reduces it), so two
// numbers of one sign and adjusted exponent order as their digit strings
// do, a prefix first (1 < 1.5); for negative numbers the complement and
// the 0xff end reverse that. DynamoDB's exponents (-130 to +125) fit.
func appendNumberOrdered(dst []byte, canonicalText string) []byte {
	var d apd.Decimal
	if _, _, err := d.SetString(canonicalText); err != nil {
		return append(append(dst, 0x04), canonicalText...) // never for a stored key
	}
	var r apd.Decimal
	r.Reduce(&d)
	if r.IsZero() {
		return append(dst, 0x02)
	}
	digits := r.Coeff.String()
	adj := uint16(int(r.Exponent) + len(digits) - 1 + 0x4000)
	if !r.Negative {
		dst = binary.BigEndian.AppendUint16(append(dst, 0x03), adj)
		return append(dst, digits...)
	}
	dst = binary.BigEndian.AppendUint16(append(dst, 0x01), ^adj)
	for i := 0; i < len(digits); i++ {
		dst = append(dst, 0xff-digits[i])
	}
	return append(dst, 0xff)
}

// reset deletes every key of the table from the store: the index is
// empty, to be rebuilt from the log.
func (x *diskIndex) reset() error {
	if err := x.st.clear(x.tid); err != nil {
		return fmt.Errorf("clear the table's index store: %w", err)
	}
	x.filter.clear()
	x.count, x.bytes = 0, 0
	return nil
}
