package table

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/jonboulle/clockwork"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/internal/clocks"
	"github.com/runnel-dev/runnel/stream"
)

// Index snapshots: opening a table without reading its whole log.
//
// A table's index (index.go) is rebuilt at open from the table's change
// log. To bound the cost of an open, the process serving the tables
// writes, per table, a snapshot of the index into the JetStream object
// store snapBucket ("runnel_table_index", one object per table,
// named after it): the log's identity (log stream name, epoch), per shard
// the last log position the snapshot covers, the change-record count
// (ChangeRecords), the transaction log's last sequence and creation time,
// and every index entry (key hash, sort key if any, log shard and
// position of the item's latest image, expiry, size), and the TTL
// version its expiries were computed under (stored.TTLVersion: a snapshot
// of another version has them recomputed at open). Opening a table
// loads the snapshot and replays only the log records after the covered
// positions; without a usable snapshot (absent, unreadable, or not of
// this log: another table of the same name, a log that no longer holds
// the covered positions) it reads the whole log as before, and says why
// at Info.
//
// When: at Close (before the lease is released to another process), and
// every Options.SnapshotInterval while serving, for each table that
// changed since its last snapshot. Never when the lease is lost (drop).
//
// Consistency: a snapshot is exactly the index as of its positions. Every
// log write holds Service.snapGate for reading from before its append
// until its change is applied to the index (a transaction: from before
// its commit record until all its changes are applied); a snapshot takes
// the gate exclusively, so that while it reads each shard's last
// position and copies the index maps, every record in the log is applied
// and none is half-way. The upload runs after the gate is released.
// A table whose write failed (it may have landed without being applied)
// or whose transaction failed after its commit point writes no snapshot
// until it is opened again; its last good snapshot stays valid, with a
// longer tail. A transaction whose commit record is at or before the
// snapshot's transaction-log sequence is wholly in the snapshot (the gate
// spans it), so the open does not complete it again (recoverTransactions).
//
// The pause: writes wait while the gate is held, for the in-flight
// writes to finish, one ShardBounds request per shard, and one copy of
// each changed table's index map (maps.Clone). Measured on a loaded
// 2-core machine (docs/benchmarks/tables.md, "Session 8: table open from an index snapshot"): 13 ms at 300,000
// items, 0.1 s at 2 million, 0.5 to 1.1 s at 10 million. Reads (GetItem,
// Query, Scan) do not wait.
//
// Secondary indexes are not in the snapshot: they are built from the
// table at open as before (openedIndexes).
const (
	snapBucket = "runnel_table_index"
	// DefaultSnapshotInterval is Options.SnapshotInterval's default.
	DefaultSnapshotInterval = 5 * time.Minute

	// snapIOTimeout bounds a snapshot's upload and its read at open. The
	// object store's client ends a call without a deadline after its
	// default timeout (5 s): too short for a large object.
	snapIOTimeout = 10 * time.Minute

	snapMagic      = "RNIX\x01"
	snapBlockItems = 1 << 15
	snapMaxBlock   = 64 << 20
)

var snapCRC = crc32.MakeTable(crc32.Castagnoli)

// snapHeader is a snapshot's description of what it covers.
type snapHeader struct {
	Table    string `json:"table"`
	TableID  string `json:"table_id"`
	Log      string `json:"log"`
	Epoch    int64  `json:"epoch"`
	HashOnly bool   `json:"hash_only"`
	// Pos is, per shard, the last log position covered (0: none).
	Pos     []uint64 `json:"pos"`
	Changes int64    `json:"changes"`
	// TxSeq is the transaction log's last sequence when the snapshot was
	// taken; TxCreated its creation time (Unix ns).
	TxSeq     uint64 `json:"tx_seq"`
	TxCreated int64  `json:"tx_created"`
	Count     int    `json:"count"`
	// TTLVersion is the stored.TTLVersion the entries' expiries were
	// computed under; absent (older snapshots) or -1: not known.
	TTLVersion *int64 `json:"ttl_version,omitempty"`
	// FillTo (the index store's header only): per shard, the log position
	// up to which entries may still lack their items' images (a fill from
	// an object not finished: fillImages); absent when none may.
	FillTo []uint64 `json:"fill_to,omitempty"`
}

// snapshot is a taken copy of one table's index, not yet written: the
// heap's maps, or, for a table in the index store whose engine other
// processes share, a Pebble snapshot of the store (view; closed by
// putSnapshot).
type snapshot struct {
	t      *Table
	hdr    snapHeader
	byHash map[[16]byte]slot
	byKey  map[pointKey]slot
	view   *pebble.Snapshot
	dx     *diskIndex
}

// runSnapshots writes snapshots every interval (Options.SnapshotClock: the wall clock unless a test gives its own) while this
// process serves the tables.
func (s *Service) runSnapshots(ctx context.Context, interval time.Duration) {
	clock := s.snapClock
	if clock == nil {
		clock = clockwork.NewRealClock()
	}
	clocks.Every(ctx, clock, interval, func() {
		if err := s.writeSnapshots(ctx); err != nil && ctx.Err() == nil {
			s.eng.Logger.Warn("table index snapshot failed", "err", err)
		}
	})
}

// writeSnapshots takes a snapshot of every loaded table that changed
// since its last one and writes them. Nothing when the tables are not
// loaded here or snapshots are off.
func (s *Service) writeSnapshots(ctx context.Context) error {
	if s.snaps == nil && !s.storeHeaders {
		return nil
	}
	s.snapMu.Lock() // one snapshot at a time
	defer s.snapMu.Unlock()
	snaps, pause, err := s.takeSnapshots(ctx)
	if err != nil || len(snaps) == 0 {
		return err
	}
	s.snapPause.Store(int64(pause))
	start := time.Now()
	items := 0
	var errs []error
	for _, sn := range snaps {
		if err := s.putSnapshot(ctx, sn); err != nil {
			// The table's previous snapshot stays (a Put replaces its
			// object only once whole).
			errs = append(errs, fmt.Errorf("table %s: write index snapshot: %w", sn.hdr.Table, err))
			continue
		}
		sn.t.snapChanges.Store(sn.hdr.Changes)
		items += sn.hdr.Count
	}
	s.eng.Logger.Info("table index snapshots written", "tables", len(snaps)-len(errs), "items", items, "writes_paused", pause, "upload", time.Since(start))
	return errors.Join(errs...)
}

// takeSnapshots copies the changed tables' indexes with every write
// stopped (snapGate); pause is how long writes waited.
func (s *Service) takeSnapshots(ctx context.Context) (snaps []*snapshot, pause time.Duration, err error) {
	s.loadMu.Lock() // not while the tables load or drop
	defer s.loadMu.Unlock()
	if !s.loaded.Load() || !s.mayAct() {
		return nil, 0, nil
	}
	s.mu.RLock()
	tables := make([]*Table, 0, len(s.tables))
	for _, t := range s.tables {
		if t.changes.Load() != t.snapChanges.Load() {
			tables = append(tables, t)
		}
	}
	s.mu.RUnlock()
	if len(tables) == 0 {
		return nil, 0, nil
	}
	start := time.Now()
	s.snapGate.Lock()
	defer func() {
		s.snapGate.Unlock()
		pause = time.Since(start)
	}()
	info, err := s.txlog.Info(ctx)
	if err != nil {
		return nil, 0, err
	}
	for _, t := range tables {
		if n := t.unresolved.Load(); n > 0 {
			s.eng.Logger.Info("table index snapshot skipped: writes of unknown outcome are being resolved", "table", t.tableName, "unresolved", n)
			continue
		}
		sn := &snapshot{t: t, hdr: snapHeader{Table: t.tableName, TableID: t.st.TableId, Log: t.logName, Epoch: t.numbering.Epoch,
			HashOnly: t.schema.rng == "", Pos: make([]uint64, t.st.Shards), Changes: t.changes.Load(),
			TxSeq: info.State.LastSeq, TxCreated: info.Created.UnixNano()}}
		ttlv := t.ttlVersion.Load()
		sn.hdr.TTLVersion = &ttlv
		if to := t.filling.Load(); to != nil {
			sn.hdr.FillTo = *to
		}
		var err error
		for sh := 0; sh < len(sn.hdr.Pos) && err == nil; sh++ {
			var first, last uint64
			first, last, err = s.logs.ShardBounds(ctx, t.logName, stream.ShardID(sh))
			if last >= first && last != 0 {
				sn.hdr.Pos[sh] = last
			}
		}
		if err != nil { // the table deleted meanwhile, or the engine failing
			s.eng.Logger.Warn("table index snapshot skipped", "table", t.tableName, "err", err)
			continue
		}
		t.idxMu.RLock()
		switch x := t.idx.(type) {
		case *index:
			sn.byHash, sn.byKey = maps.Clone(x.byHash), maps.Clone(x.byKey)
		case *diskIndex:
			if s.snaps != nil && s.writeObjects { // the next holder may be another process
				sn.dx = x
				sn.view, err = s.store.snapshot()
			}
		}
		sn.hdr.Count = t.idx.Len()
		t.idxMu.RUnlock()
		if err != nil {
			s.eng.Logger.Warn("table index snapshot skipped", "table", t.tableName, "err", err)
			continue
		}
		snaps = append(snaps, sn)
	}
	if !s.mayAct() {
		for _, sn := range snaps {
			sn.release()
		}
		return nil, 0, nil // another process may have written meanwhile
	}
	return snaps, 0, nil
}

// putSnapshot encodes sn into its object, streaming; with the index store,
// it writes sn's header there and flushes the store's memtables (the items
// it covers were written before it, so a store holding the header holds
// them).
func (s *Service) putSnapshot(ctx context.Context, sn *snapshot) error {
	defer sn.release()
	if s.store != nil {
		b, err := json.Marshal(sn.hdr)
		if err != nil {
			return err
		}
		if err := s.store.set(storeKey('h', tablePrefix(sn.hdr.TableID), 0), b, true); err != nil || sn.view == nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, snapIOTimeout)
	defer cancel()
	pr, pw := io.Pipe()
	encoded := make(chan struct{})
	go func() {
		defer close(encoded)
		pw.CloseWithError(sn.encode(pw))
	}()
	_, err := s.snaps.Put(ctx, jetstream.ObjectMeta{Name: sn.hdr.Table, Description: "runnel table index snapshot"}, pr)
	pr.CloseWithError(errors.New("snapshot upload ended"))
	<-encoded // its iterator of sn.view is closed before the view
	return err
}

// encode writes the snapshot: magic, header (uvarint length, JSON, CRC),
// then blocks of up to snapBlockItems entries (uvarint entry count,
// uvarint byte length, the entries, CRC-32C of them), then a 0 count.
// An entry is the 16-byte key hash, the sort key if the table has one
// (uvarint length, bytes), then uvarint position, varint expiry, uvarint
// size, uvarint shard.
func (sn *snapshot) encode(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	hdr, _ := json.Marshal(&sn.hdr)
	b := append([]byte(snapMagic), binary.AppendUvarint(nil, uint64(len(hdr)))...)
	b = append(b, hdr...)
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(hdr, snapCRC))
	if _, err := bw.Write(b); err != nil {
		return err
	}
	var blk []byte
	n := 0
	flush := func() error {
		if n == 0 {
			return nil
		}
		head := binary.AppendUvarint(nil, uint64(n))
		head = binary.AppendUvarint(head, uint64(len(blk)))
		tail := binary.BigEndian.AppendUint32(nil, crc32.Checksum(blk, snapCRC))
		for _, p := range [][]byte{head, blk, tail} {
			if _, err := bw.Write(p); err != nil {
				return err
			}
		}
		blk, n = blk[:0], 0
		return nil
	}
	add := func(h [16]byte, rk *string, sl slot) error {
		blk = append(blk, h[:]...)
		if rk != nil {
			blk = binary.AppendUvarint(blk, uint64(len(*rk)))
			blk = append(blk, *rk...)
		}
		blk = binary.AppendUvarint(blk, sl.pos)
		blk = binary.AppendVarint(blk, sl.exp)
		blk = binary.AppendUvarint(blk, uint64(sl.size))
		blk = binary.AppendUvarint(blk, uint64(sl.shard))
		if n++; n == snapBlockItems {
			return flush()
		}
		return nil
	}
	if sn.view != nil {
		if err := sn.dx.eachEntry(sn.view, func(e entry) error {
			if sn.hdr.HashOnly {
				return add(e.h, nil, slotOf(e))
			}
			return add(e.h, &e.rk, slotOf(e))
		}); err != nil {
			return err
		}
	}
	for h, sl := range sn.byHash {
		if err := add(h, nil, sl); err != nil {
			return err
		}
	}
	for k, sl := range sn.byKey {
		if err := add(k.h, &k.rk, sl); err != nil {
			return err
		}
	}
	if err := flush(); err != nil {
		return err
	}
	if err := bw.WriteByte(0); err != nil {
		return err
	}
	return bw.Flush()
}

// release closes the snapshot's view of the index store, if any.
func (sn *snapshot) release() {
	if sn.view != nil {
		sn.view.Close()
		sn.view = nil
	}
}

// readSnapshotHeader reads the magic and header of a snapshot.
func readSnapshotHeader(br *bufio.Reader) (snapHeader, error) {
	var hdr snapHeader
	magic := make([]byte, len(snapMagic))
	if _, err := io.ReadFull(br, magic); err != nil || string(magic) != snapMagic {
		return hdr, fmt.Errorf("not an index snapshot (version %q)", magic)
	}
	raw, err := readSnapBlock(br, 1<<20)
	if err != nil {
		return hdr, fmt.Errorf("header: %w", err)
	}
	if err := json.Unmarshal(raw, &hdr); err != nil {
		return hdr, fmt.Errorf("header: %w", err)
	}
	return hdr, nil
}

// readSnapBlock reads a uvarint length, that many bytes and their CRC.
func readSnapBlock(br *bufio.Reader, most uint64) ([]byte, error) {
	n, err := binary.ReadUvarint(br)
	if err != nil {
		return nil, err
	}
	if n > most {
		return nil, fmt.Errorf("block of %d bytes", n)
	}
	b := make([]byte, n+4)
	if _, err := io.ReadFull(br, b); err != nil {
		return nil, err
	}
	if crc32.Checksum(b[:n], snapCRC) != binary.BigEndian.Uint32(b[n:]) {
		return nil, errors.New("checksum mismatch")
	}
	return b[:n], nil
}

// readEntries decodes the entries of a snapshot into a new index.
func (t *Table) readEntries(br *bufio.Reader, hdr *snapHeader) (*index, error) {
	x := newIndex(t.schema.less, hdr.HashOnly)
	if hdr.HashOnly {
		x.byHash = make(map[[16]byte]slot, hdr.Count)
		x.pendingH = make([][16]byte, 0, hdr.Count)
	} else {
		x.byKey = make(map[pointKey]slot, hdr.Count)
		x.pendingK = make([]pointKey, 0, hdr.Count)
	}
	var bytes int64
	err := readSnapEntries(br, hdr, func(h [16]byte, rk string, sl slot) error {
		bytes += int64(sl.size)
		if hdr.HashOnly {
			x.byHash[h] = sl
			x.pendingH = append(x.pendingH, h)
		} else {
			k := pointKey{h, rk}
			x.byKey[k] = sl
			x.pendingK = append(x.pendingK, k)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if x.Len() != hdr.Count {
		return nil, fmt.Errorf("%d keys, header says %d", x.Len(), hdr.Count)
	}
	x.bytes = bytes
	return x, nil
}

// readSnapEntries decodes the entries of a snapshot after its header,
// calling fn with each, until the end mark (then the object's end is
// checked too) or fn's error.
func readSnapEntries(br *bufio.Reader, hdr *snapHeader, fn func(h [16]byte, rk string, sl slot) error) error {
	total := 0
	for {
		n, err := binary.ReadUvarint(br)
		if err != nil {
			return err
		}
		if n == 0 {
			break
		}
		blk, err := readSnapBlock(br, snapMaxBlock)
		if err != nil {
			return err
		}
		for range n {
			var h [16]byte
			var rk string
			if len(blk) < 16 {
				return io.ErrUnexpectedEOF
			}
			copy(h[:], blk)
			blk = blk[16:]
			if !hdr.HashOnly {
				l, w := binary.Uvarint(blk)
				if w <= 0 || uint64(len(blk)-w) < l {
					return io.ErrUnexpectedEOF
				}
				rk, blk = string(blk[w:w+int(l)]), blk[w+int(l):]
			}
			var v [4]uint64
			for i := range v {
				var w int
				if i == 1 {
					var e int64
					e, w = binary.Varint(blk)
					v[i] = uint64(e)
				} else {
					v[i], w = binary.Uvarint(blk)
				}
				if w <= 0 {
					return io.ErrUnexpectedEOF
				}
				blk = blk[w:]
			}
			if err := fn(h, rk, slot{pos: v[0], exp: int64(v[1]), size: int32(v[2]), shard: uint16(v[3])}); err != nil {
				return err
			}
		}
		if len(blk) != 0 {
			return errors.New("block longer than its entries")
		}
		total += int(n)
	}
	if total != hdr.Count {
		return fmt.Errorf("%d entries, header says %d", total, hdr.Count)
	}
	_, err := br.ReadByte() // the object's end: its digest is checked there
	if err == nil {
		return errors.New("data after the end")
	}
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// openIndex fills the index of a table being loaded: from its snapshot
// and the log after it when it has a usable one, else from the whole log.
func (t *Table) openIndex(ctx context.Context, seen txnSeen, tx *jetstream.StreamInfo) error {
	start := time.Now()
	defer func() { t.openTook = time.Since(start) }()
	why, err := t.fromSnapshot(ctx, seen, tx)
	if err != nil {
		return err
	}
	if why == "" {
		t.s.eng.Logger.Info("table index loaded from its snapshot", "table", t.tableName, "items", t.idx.Len(), "replayed", t.replayed, "took", time.Since(start))
	} else {
		t.s.eng.Logger.Info("table index: rebuilding from the whole log", "table", t.tableName, "why", why)
		if err := t.rebuild(ctx, seen); err != nil {
			return err
		}
		// The log's expiries are those of their time: current unless the
		// TTL attribute changed while the table held items.
		t.ttlVersion.Store(-1)
		if t.st.TTLVersion == 0 {
			t.ttlVersion.Store(0)
		}
	}
	return t.ttlCurrent(ctx)
}

// ttlCurrent recomputes every expiry from the items when the index's were
// computed under another TTL attribute than the table's (see
// stored.TTLVersion); the table serves only after.
func (t *Table) ttlCurrent(ctx context.Context) error {
	want := int64(t.st.TTLVersion)
	if t.ttlVersion.Load() == want {
		return nil
	}
	t.s.eng.Logger.Info("table index: recomputing the TTL expiries (the TTL attribute changed since they were written)", "table", t.tableName, "items", t.idx.Len())
	if err := t.refreshTTL(ctx); err != nil {
		return fmt.Errorf("recompute TTL expiries: %w", err)
	}
	t.ttlVersion.Store(want)
	return nil
}

// fromSnapshot loads the table's snapshot and replays the log after it.
// why says why it did not ("": it did); err is a failure of the tail's
// replay (the log cannot be read).
func (t *Table) fromSnapshot(ctx context.Context, seen txnSeen, tx *jetstream.StreamInfo) (why string, err error) {
	if dx, ok := t.idx.(*diskIndex); ok {
		return t.fromStore(ctx, dx, seen, tx)
	}
	if t.s.snaps == nil {
		return "index snapshots are off (Options.SnapshotInterval < 0)", nil
	}
	var idx *index
	hdr, spans, why, err := t.withSnapObject(ctx, tx, func(br *bufio.Reader, hdr *snapHeader) (err error) {
		idx, err = t.readEntries(br, hdr)
		return err
	})
	if why != "" || err != nil {
		return why, err
	}
	t.idx = idx
	return "", t.replayTail(ctx, &hdr, spans, seen)
}

// withSnapObject opens the table's snapshot object, reads its header and
// the log spans after it (tailSpans), and calls read with the reader at
// its entries. why says why the object cannot be used ("": it was); a
// failure of read makes it unreadable; err is a failure to read the log's
// bounds.
func (t *Table) withSnapObject(ctx context.Context, tx *jetstream.StreamInfo, read func(br *bufio.Reader, hdr *snapHeader) error) (hdr snapHeader, spans []logSpan, why string, err error) {
	rctx, cancel := context.WithTimeout(ctx, snapIOTimeout)
	defer cancel()
	obj, err := t.s.snaps.Get(rctx, t.tableName)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return hdr, nil, "no snapshot", nil
	}
	if err != nil {
		return hdr, nil, "snapshot unreadable: " + err.Error(), nil
	}
	defer obj.Close()
	br := bufio.NewReaderSize(obj, 1<<20)
	if hdr, err = readSnapshotHeader(br); err != nil {
		return hdr, nil, "snapshot unreadable: " + err.Error(), nil
	}
	if spans, why, err = t.tailSpans(ctx, &hdr, tx); why != "" || err != nil {
		return hdr, nil, why, err
	}
	if err := read(br, &hdr); err != nil {
		return hdr, nil, "snapshot unreadable: " + err.Error(), nil
	}
	return hdr, spans, "", nil
}

// logSpan is the part of a log shard an open replays (last 0: none).
type logSpan struct{ from, last uint64 }

// tailSpans checks that hdr is of this table, log and transaction log, and
// returns, per shard, the log records after the positions it covers. why
// says why hdr cannot be used ("": it can); err is a failure to read the
// log's bounds.
func (t *Table) tailSpans(ctx context.Context, hdr *snapHeader, tx *jetstream.StreamInfo) (spans []logSpan, why string, err error) {
	switch {
	case hdr.Table != t.tableName || hdr.TableID != t.st.TableId || hdr.Log != t.logName || hdr.Epoch != t.numbering.Epoch:
		return nil, fmt.Sprintf("snapshot of another table or log (%s %s epoch %d)", hdr.TableID, hdr.Log, hdr.Epoch), nil
	case hdr.HashOnly != (t.schema.rng == "") || len(hdr.Pos) != t.st.Shards:
		return nil, "snapshot of another key schema or shard count", nil
	case hdr.TxCreated != tx.Created.UnixNano() || hdr.TxSeq > tx.State.LastSeq:
		return nil, "snapshot of another transaction log", nil
	}
	spans = make([]logSpan, t.st.Shards)
	for sh, pos := range hdr.Pos {
		first, last, err := t.s.logs.ShardBounds(ctx, t.logName, stream.ShardID(sh))
		if err != nil {
			return nil, "", err
		}
		empty := last == 0 || last < first
		switch {
		case pos != 0 && (empty || pos > last):
			return nil, fmt.Sprintf("snapshot covers shard %d up to %d, past the log's end", sh, pos), nil
		case pos != 0 && pos < first:
			return nil, fmt.Sprintf("the log's shard %d no longer holds the records after the snapshot (%d < %d)", sh, pos, first), nil
		}
		spans[sh] = logSpan{from: max(pos+1, first), last: last}
		if empty {
			spans[sh] = logSpan{}
		}
	}
	return spans, "", nil
}

// replayTail takes hdr's counts and replays the spans after it.
func (t *Table) replayTail(ctx context.Context, hdr *snapHeader, spans []logSpan, seen txnSeen) error {
	t.changes.Store(hdr.Changes)
	t.snapTxSeq = hdr.TxSeq
	t.ttlVersion.Store(-1)
	if hdr.TTLVersion != nil {
		t.ttlVersion.Store(*hdr.TTLVersion)
	}
	t.openedFromSnapshot = true
	for sh, sp := range spans {
		if sp.last == 0 || sp.from > sp.last {
			continue
		}
		if err := t.replayShard(ctx, sh, sp.from, sp.last, seen); err != nil {
			return err
		}
	}
	t.snapChanges.Store(hdr.Changes)
	return nil
}

// covers reports whether the transaction whose commit record is at seq
// of the transaction log is wholly in the snapshot the table opened from.
func (t *Table) coversTransaction(seq uint64) bool {
	return t.openedFromSnapshot && seq <= t.snapTxSeq
}
