package table

import (
	"crypto/md5"
	"encoding/binary"
	"errors"
	"fmt"
)

// secStore is a secondary index kept in the index store (IndexDisk), so
// that its memory does not grow with the item count and an open does not
// read the table's items to build it (issue 12). The heap's indexes
// (IndexMemory) keep their entries in secondary.entries instead.
//
// Four kinds of keys, each beginning with the kind, the table's prefix
// and the index's id (storeID: the MD5 of its name and definition):
//
//	'x' forward: the index partition key's hash, the index sort key in
//	    an encoding whose byte order is DynamoDB's order (rangeBytes),
//	    escaped and ended by 0x00 0x01 (escapeRange), then the table key
//	    (its hash and its sort key in that order): the index's order.
//	    Value: the table key's hash, the projected size, the index sort
//	    key's and the table sort key's canonical text.
//	'w' reverse: the table key; value: the item's forward key. A write
//	    finds the entry to move through it, without the old image.
//	'y' the index's item count and projected bytes.
//	'z' present once the index is built (its backfill finished): an
//	    index without it is cleared and built from the items at open.
//
// Every change of an index is staged into the Pebble batch of the table
// change that causes it (diskBatch.secondary), so that the store holds
// both or neither after a crash; the open replays the change log after
// the store's header over the indexes as over the table (Table.replay),
// and the reverse keys make a replayed change harmless. The counts move
// under Table.idxMu.
type secStore struct {
	st           *store
	tid, iid     [16]byte
	tblN         bool // the table's sort key is a Number
	lo, hi       []byte
	count, bytes int64 // guarded by Table.idxMu
	built        bool  // the 'z' key is there; guarded by Table.idxMu
}

// openSecStore opens index name of the table with id tableID as the
// store holds it.
func openSecStore(st *store, tableID, name string, x *secondary) (*secStore, error) {
	s := &secStore{st: st, tid: tablePrefix(tableID), iid: x.storeID(),
		tblN: x.table.rngType == TypeN}
	s.lo = s.prefix('x')
	s.hi = prefixEnd(s.lo)
	return s, s.load()
}

// load reads the index's count and built mark from the store.
func (s *secStore) load() error {
	s.count, s.bytes, s.built = 0, 0, false
	v, err := s.st.get(s.prefix('y'))
	if err != nil {
		return err
	}
	if v != nil {
		if s.count, s.bytes, err = decodeCount(v); err != nil {
			return fmt.Errorf("index count: %w", err)
		}
	}
	z, err := s.st.get(s.prefix('z'))
	s.built = z != nil
	return err
}

func (s *secStore) prefix(kind byte) []byte {
	return append(storeKey(kind, s.tid, 16), s.iid[:]...)
}

// escapeRange appends b so that the result orders as b does and no
// encoding is a prefix of another: each 0x00 becomes 0x00 0xff, and 0x00
// 0x01 ends it (lower than any byte that can follow in a longer value).
func escapeRange(dst, b []byte) []byte {
	for _, c := range b {
		if c == 0 {
			dst = append(dst, 0, 0xff)
			continue
		}
		dst = append(dst, c)
	}
	return append(dst, 0, 1)
}

// rangeBytes appends sort key rk (canonical text) in an order-preserving
// encoding: a Number's as appendNumberOrdered, a String's or Binary's
// bytes as they are.
func rangeBytes(dst []byte, rk string, number bool) []byte {
	if rk == "" {
		return dst
	}
	if number {
		return appendNumberOrdered(dst, rk)
	}
	return append(dst, rk...)
}

// forward is e's forward key: the index's order (sEntry.ord) after the
// prefix.
func (s *secStore) forward(e *sEntry) []byte {
	return append(append(make([]byte, 0, len(s.lo)+len(e.ord)), s.lo...), e.ord...)
}

// reverse is the reverse key of table key k (hash, then its sort key in
// order).
func (s *secStore) reverse(k key) []byte {
	return rangeBytes(append(s.prefix('w'), k.h[:]...), k.rk, s.tblN)
}

func encodeSecEntry(e *sEntry) []byte {
	v := make([]byte, 0, 16+8+len(e.rk)+len(e.k.rk)+4)
	v = append(v, e.k.h[:]...)
	v = binary.AppendUvarint(v, uint64(e.size))
	v = appendString(v, e.rk)
	return appendString(v, e.k.rk)
}

// decodeSecEntry decodes forward key k's value v (h: the index
// partition's hash, from the key).
func (s *secStore) decodeSecEntry(k, v []byte) (*sEntry, error) {
	if len(k) < len(s.lo)+16 || len(v) < 16 {
		return nil, errors.New("short secondary index entry")
	}
	e := &sEntry{ord: string(k[len(s.lo):])}
	copy(e.h[:], k[len(s.lo):])
	copy(e.k.h[:], v)
	v = v[16:]
	size, w := binary.Uvarint(v)
	if w <= 0 {
		return nil, errors.New("bad secondary index entry size")
	}
	e.size = int64(size)
	v = v[w:]
	for _, dst := range []*string{&e.rk, &e.k.rk} {
		n, w := binary.Uvarint(v)
		if w <= 0 || uint64(len(v)-w) < n {
			return nil, errors.New("bad secondary index entry key")
		}
		*dst = string(v[w : w+int(n)])
		v = v[w+int(n):]
	}
	return e, nil
}

// stage adds to b the ops that make e the entry of table key k in the
// index (e nil: k is not in it), reading k's current entry from the
// store. The caller holds Table.idxMu; b holds no other op of k.
func (s *secStore) stage(b *diskBatch, k key, e *sEntry) error {
	rev := s.reverse(k)
	cur, err := s.st.get(rev)
	if err != nil {
		return err
	}
	var fwd []byte
	if e != nil {
		fwd = s.forward(e)
	}
	tot := b.secTotals(s)
	if cur != nil {
		size, w := binary.Uvarint(cur)
		if w <= 0 {
			return errors.New("bad secondary index reverse entry")
		}
		old := cur[w:]
		tot.count--
		tot.bytes -= int64(size)
		if e == nil || string(old) != string(fwd) {
			b.ops = append(b.ops, diskOp{k: old})
		}
	}
	if e == nil {
		if cur != nil {
			b.ops = append(b.ops, diskOp{k: rev})
		}
		return nil
	}
	tot.count++
	tot.bytes += e.size
	b.ops = append(b.ops,
		diskOp{k: fwd, v: encodeSecEntry(e)},
		diskOp{k: rev, v: append(binary.AppendUvarint(nil, uint64(e.size)), fwd...)})
	return nil
}

// secTotal is an index's count and bytes after a diskBatch's ops.
type secTotal struct {
	s            *secStore
	count, bytes int64
}

// secTotals is s's running totals in b.
func (b *diskBatch) secTotals(s *secStore) *secTotal {
	for i := range b.secs {
		if b.secs[i].s == s {
			return &b.secs[i]
		}
	}
	b.secs = append(b.secs, secTotal{s: s, count: s.count, bytes: s.bytes})
	return &b.secs[len(b.secs)-1]
}

// secondary stages into b the move of table key k to image nw (nil:
// gone) in every index kept in the store that is built or being built
// (replay passes over the ones the open rebuilds anyway).
func (b *diskBatch) secondary(t *Table, k key, nw Item, replaying bool) {
	for _, x := range t.indexes() {
		s := x.disk
		if s == nil || (replaying && !s.built) {
			continue
		}
		if err := s.stage(b, k, x.entryOf(k, nw)); err != nil {
			b.x.fail("read a secondary index", err)
		}
	}
}

// clear deletes every key of the index and its built mark (the index is
// empty and not built). The caller holds Table.idxMu.
func (s *secStore) clear() error {
	if err := s.st.clearPrefixes(s.prefix('x'), s.prefix('w'), s.prefix('y'), s.prefix('z')); err != nil {
		return err
	}
	s.count, s.bytes, s.built = 0, 0, false
	return nil
}

// markBuilt writes the built mark and flushes the store: every entry
// staged before it survives a crash with it.
func (s *secStore) markBuilt() error {
	if err := s.st.set(s.prefix('z'), []byte{1}, true); err != nil {
		return err
	}
	s.built = true
	return nil
}

// chunk is up to walkChunk of the index's entries of partition h (nil:
// all) in the index's order, forward or backward, strictly after from
// (nil: from the first), read under one iterator (secondary.walk holds
// nothing while it visits them: visit reads the table).
func (s *secStore) chunk(h *[16]byte, forward bool, from *sEntry) ([]*sEntry, error) {
	lo, hi := s.lo, s.hi
	if h != nil {
		lo = append(append([]byte(nil), s.lo...), h[:]...)
		hi = prefixEnd(lo)
	}
	var after []byte // exclusive
	if from != nil {
		after = s.forward(from)
	}
	var entries []*sEntry
	err := s.st.iterate(lo, hi, after, forward, walkChunk, func(k, v []byte) error {
		e, err := s.decodeSecEntry(k, v)
		if err == nil {
			entries = append(entries, e)
		}
		return err
	})
	return entries, err
}

// clearStoredIndex deletes what the store holds of index x of t: a
// deleted index's entries, or those an index of the same id deleted
// before left behind.
func (t *Table) clearStoredIndex(x *secondary) error {
	if x == nil || x.disk == nil {
		return nil
	}
	t.idxMu.Lock()
	defer t.idxMu.Unlock()
	return x.disk.clear()
}

// storeID is the index's id in the store: the MD5 of its name, kind, key
// schema and projection. Trap: the name alone is not enough in a cluster,
// where each process keeps its own store: a process serving the table
// again may hold, built, an index of the name that another process
// deleted and created again with another key or projection meanwhile.
// One of the same definition holds what the log's replay makes it (an
// index is a function of the items), so it needs no build.
func (x *secondary) storeID() [16]byte {
	var b []byte
	b = append(b, x.name...)
	b = append(b, 0, byte(len(x.sc.hash)))
	b = append(b, x.sc.hash...)
	b = append(b, x.sc.hashType...)
	b = append(b, 0, byte(len(x.sc.rng)))
	b = append(b, x.sc.rng...)
	b = append(b, x.sc.rngType...)
	b = append(b, 0, byte(len(x.proj.ProjectionType)))
	b = append(b, x.proj.ProjectionType...)
	for _, a := range x.proj.NonKeyAttributes {
		b = append(b, 0, byte(len(a)))
		b = append(b, a...)
	}
	if x.global {
		b = append(b, 'G')
	}
	return md5.Sum(b)
}

// sweepStoredIndexes clears the keys of every index of t that the store
// holds and t has not (a process serving the table again after another
// deleted or redefined an index meanwhile: clearStoredIndex ran in the
// other's store). The caller holds Table.idxMu.
func (t *Table) sweepStoredIndexes(dx *diskIndex) error {
	keep := map[[16]byte]bool{}
	for _, x := range t.indexes() {
		keep[x.storeID()] = true
	}
	var clear [][]byte
	for _, kind := range []byte{'x', 'w', 'y', 'z'} {
		ids, err := dx.st.ids(storeKey(kind, dx.tid, 0))
		if err != nil {
			return err
		}
		for _, id := range ids {
			if !keep[id] {
				clear = append(clear, append(storeKey(kind, dx.tid, 16), id[:]...))
			}
		}
	}
	if len(clear) == 0 {
		return nil
	}
	t.s.eng.Logger.Info("index store: clearing the keys of indexes the table no longer has", "table", t.tableName, "prefixes", len(clear))
	return dx.st.clearPrefixes(clear...)
}
