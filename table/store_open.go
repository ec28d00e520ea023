package table

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/stream"
)

// Opening a table whose index is in the index store (IndexDisk): from the
// store's header, or from the snapshot object another process wrote, and
// then the images the object lacks, filled in the background.

// fromStore opens a table's index from the index store: its header's
// positions and the log after them (store.go says why a store ahead of its
// header is fine). Without a usable header (another process of a cluster
// served the table, or this one never did) the table's keys are cleared,
// and filled from the table's snapshot object when another process wrote
// one (storeFromObject); else why says why (the caller rebuilds from the
// whole log).
func (t *Table) fromStore(ctx context.Context, dx *diskIndex, seen txnSeen, tx *jetstream.StreamInfo) (why string, err error) {
	defer func() {
		if why != "" && err == nil {
			err = t.resetStore(dx)
		}
	}()
	if !t.s.storeHeaders {
		return "index snapshots are off (Options.SnapshotInterval < 0)", nil
	}
	why, err = t.fromStoreHeader(ctx, seen, tx, dx)
	if why == "" || err != nil || t.s.snaps == nil {
		return why, err
	}
	if err := t.resetStore(dx); err != nil {
		return "", err
	}
	objWhy, err := t.storeFromObject(ctx, dx, seen, tx)
	if objWhy != "" {
		objWhy = why + "; " + objWhy
	}
	return objWhy, err
}

// resetStore clears the table's keys in the index store, its secondary
// indexes' with them (they are built again after the log's replay:
// openedIndexes).
func (t *Table) resetStore(dx *diskIndex) error {
	if err := dx.reset(); err != nil {
		return err
	}
	for _, x := range t.indexes() {
		if x.disk != nil {
			if err := x.disk.load(); err != nil {
				return err
			}
		}
	}
	return nil
}

// fromStoreHeader opens the index from the store's header (fromStore).
func (t *Table) fromStoreHeader(ctx context.Context, seen txnSeen, tx *jetstream.StreamInfo, dx *diskIndex) (why string, err error) {
	v, err := t.s.store.get(storeKey('h', dx.tid, 0))
	if err != nil {
		return "index store unreadable: " + err.Error(), nil
	}
	if v == nil {
		return "no header in the index store", nil
	}
	var hdr snapHeader
	if err := json.Unmarshal(v, &hdr); err != nil {
		return "index store header unreadable: " + err.Error(), nil
	}
	spans, why, err := t.tailSpans(ctx, &hdr, tx)
	if why != "" || err != nil {
		return why, err
	}
	t.fillTo = hdr.FillTo // a fill the last holder did not finish
	return "", t.replayTail(ctx, &hdr, spans, seen)
}

// storeFromObject fills the table's keys in the index store (cleared) from
// the table's snapshot object, which the process that served the table
// last wrote (a cluster: the store is each process's own), then replays
// the log after it. The entries come without their items' images: reads
// take an item from the log until it next changes. The entries go into
// the store as sstable files Pebble ingests whole while they come in the
// store's key order, as a store holder's object lists them, and through
// batches after the first that does not (diskFill, store_ingest.go). The
// memory it takes is a block of entries and a file's buffers, whatever
// the item count. why says why it did not ("": it did).
func (t *Table) storeFromObject(ctx context.Context, dx *diskIndex, seen txnSeen, tx *jetstream.StreamInfo) (why string, err error) {
	hdr, spans, why, err := t.withSnapObject(ctx, tx, func(br *bufio.Reader, hdr *snapHeader) error {
		fill, err := dx.newFill(int64(hdr.Count))
		if err != nil {
			return err
		}
		err = fill.finish(readSnapEntries(br, hdr, func(h [16]byte, rk string, sl slot) error {
			return fill.add(entry{h: h, rk: rk, pos: sl.pos, exp: sl.exp, size: sl.size, shard: sl.shard})
		}))
		if err == nil && dx.Len() != hdr.Count {
			err = fmt.Errorf("%d keys, header says %d", dx.Len(), hdr.Count)
		}
		return err
	})
	if why != "" || err != nil {
		return why, err
	}
	t.fillTo = hdr.Pos // the entries up to there lack their images
	return "", t.replayTail(ctx, &hdr, spans, seen)
}

// fillChunk is how many log records fillImages reads before it takes the
// table's index lock to give their entries their images.
const fillChunk = 256

// fillHook, when set (tests only), runs before each chunk of images
// fillImages sets.
var fillHook func()

// startImageFills starts fillImages for each table filled from an object
// (the service's tables are registered: the fill stops when its table is
// no longer the one served).
func (s *Service) startImageFills(tables map[string]*Table) {
	for _, t := range tables {
		dx, ok := t.idx.(*diskIndex)
		if !ok || t.fillTo == nil {
			continue
		}
		to := t.fillTo
		t.fillTo = nil
		t.filling.Store(&to)
		s.backfills.Go(func() { t.fillImages(s.bg, dx, to) })
	}
}

// fillImages gives the entries of a store filled from a snapshot object
// their items' images: it reads each log shard from its first record to
// the object's position (the records after it were replayed, images
// included), and sets the image of each entry that still points at the
// record read and has none. Until then a read of such an entry takes the
// item from the log, as the heap's index does (a Scan at about 40,000
// items/s instead of some 250,000: docs/benchmarks/tables-store.md). It runs
// beside the table's work, holding the index lock fillChunk records at a
// time; it stops at the service's close, when the table is no longer the
// one served (deleted, or the lease lost), or at a failure (logged: the
// entries left read the log); until it ends, the store's header carries
// its positions (snapHeader.FillTo), so that the next open from the
// header starts it again.
func (t *Table) fillImages(ctx context.Context, dx *diskIndex, to []uint64) {
	start, filled := time.Now(), 0
	// t.tableName and t.logName, not t.st's: an UpdateTable during the
	// fill replaces t.st (TestAnIndexRedefinedByAnotherHolderIsBuiltAgain
	// raced under -race).
	name, log := t.tableName, t.logName
	for sh, last := range to {
		if last == 0 {
			continue
		}
		n, err := t.fillShard(ctx, dx, log, sh, last)
		filled += n
		if err != nil {
			if ctx.Err() == nil && t.open() {
				t.s.eng.Logger.Warn("table index store: filling the items' images stopped; reads of the rest take them from the log", "table", name, "shard", sh, "filled", filled, "err", err)
			}
			return
		}
	}
	t.filling.Store(nil)
	t.s.eng.Logger.Info("table index store: the items' images filled", "table", name, "images", filled, "took", time.Since(start).Round(time.Millisecond))
}

// fillImage is one record's image for its item's entry.
type fillImage struct {
	k   key
	pos uint64
	img []byte
}

// fillShard fills the images of shard sh of the table's log up to last.
func (t *Table) fillShard(ctx context.Context, dx *diskIndex, log string, sh int, last uint64) (filled int, err error) {
	first, _, err := t.s.logs.ShardBounds(ctx, log, stream.ShardID(sh))
	if err != nil {
		return 0, err
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	rd, err := t.s.logs.ReadShard(rctx, log, stream.ShardID(sh), first, stream.ReadShardOptions{})
	if err != nil {
		return 0, err
	}
	defer rd.Stop()
	chunk := make([]fillImage, 0, fillChunk)
	flush := func() error {
		if fillHook != nil {
			fillHook()
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		n, err := t.setImages(dx, uint16(sh), chunk)
		filled += n
		chunk = chunk[:0]
		return err
	}
	for rec := range rd.Records() {
		if rec.Seq > last {
			break
		}
		f := strings.Split(rec.PartitionKey, "|")
		if len(f) < 6 || len(f[0]) != 32 {
			return filled, fmt.Errorf("bad change key %q at %s", rec.PartitionKey, rec.SequenceNumber)
		}
		if f[1] != "R" {
			c, err := DecodeChange(rec.Data)
			var k key
			if err == nil {
				k, err = t.schema.keyOf(c.Keys, true)
			}
			if err != nil {
				// Its image stays out of the store (a read of the item
				// reads the log, and fails there): logged, not fatal.
				t.skipRecord(rec, uint16(sh), f[0], err, "its image stays out of the index store; a read of the item reads the record, and fails")
			} else {
				chunk = append(chunk, fillImage{k: k, pos: rec.Seq, img: appendItem(nil, c.NewImage)})
			}
		}
		if len(chunk) == fillChunk {
			if err := flush(); err != nil {
				return filled, err
			}
		}
		if rec.Seq >= last {
			break
		}
	}
	if err := flush(); err != nil {
		return filled, err
	}
	return filled, rd.Err()
}

// setImages gives each entry of chunk's keys that points at its record
// (shard sh) and has no image that image, in one batch under the index
// lock.
func (t *Table) setImages(dx *diskIndex, sh uint16, chunk []fillImage) (int, error) {
	t.idxMu.Lock()
	defer t.idxMu.Unlock()
	if !t.open() {
		return 0, errors.New("the table is no longer served here")
	}
	b := dx.newBatch()
	for _, c := range chunk {
		got, img, ok := dx.getImage(dx.key(c.k.h, c.k.rk), c.k.h)
		if ok && got.shard == sh && got.pos == c.pos && len(img) == 0 {
			b.set(got, got, true, c.img)
		}
	}
	n := len(b.ops)
	b.commit()
	return n, dx.Err()
}
