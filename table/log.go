package table

import (
	"context"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/stream"
	"github.com/runnel-dev/runnel/table/expr"
)

// Event names of change records.
const (
	EventInsert = "INSERT"
	EventModify = "MODIFY"
	EventRemove = "REMOVE"
)

// Change is one record of a table's change log, as stored: the data of
// a DynamoDB stream record before the view type is applied.
type Change struct {
	EventName string `json:"e"`
	Keys      Item   `json:"k"`
	NewImage  Item   `json:"n,omitempty"`
	OldImage  Item   `json:"o,omitempty"`
	// Label is the stream label the change belongs to ("" when the table's
	// stream was off), View the stream's view type at the time.
	Label string `json:"l,omitempty"`
	View  string `json:"v,omitempty"`
	// TTL marks a deletion by the TTL sweeper (a service delete).
	TTL bool `json:"ttl,omitempty"`
	// TimeMs is when the change was written (engine clock, ms).
	TimeMs int64 `json:"t"`
	// Txn and TxnIndex identify the change's transaction and its place in
	// it; Txn is "" outside transactions.
	Txn      string `json:"tx,omitempty"`
	TxnIndex int    `json:"ti,omitempty"`
}

// Table is one open table.
type Table struct {
	s         *Service
	schema    schema
	numbering stream.Numbering // how the log writes its sequence numbers

	metaMu sync.Mutex
	st     stored
	// tableName and logName are st's TableName and Log, which never change
	// for a table: read without metaMu (an update of the table replaces st
	// under metaMu, and reading st's fields unlocked raced with it).
	tableName, logName string

	idxMu sync.RWMutex
	idx   itemIndex

	// sec is the table's secondary indexes (secondary.go), replaced whole
	// (never changed in place) under secMu; every write reads it.
	secMu sync.Mutex
	sec   atomic.Pointer[[]*secondary]

	stripes [1024]sync.Mutex

	// cache holds recent items by key id, each with the log position it
	// was read or written at (fetch).
	cacheMu    sync.Mutex
	cache      map[string]cachedItem
	cacheBytes int64 // what the cache holds, as Options.ItemCacheBytes counts

	// recent keeps the latest changes written per shard, decoded, so that
	// the change stream's readers (mappings) need not decode what this
	// process just wrote.
	recentMu sync.Mutex
	// gc is the group commit of each lane of the log (laneOf): lane i
	// holds the changes of shard i when the log's shards split the hash
	// keys evenly, as CreateTable makes them.
	gc [MaxShards]groupCommit
	// changes counts the table's change records: those in the log when it
	// opened and those written since (ChangeRecords).
	changes atomic.Int64
	recent  []recentRing

	// Index snapshots (snapshot.go). unresolved: writes of this table
	// whose outcome is not applied yet, each held by a resolver (no
	// snapshot while above 0: it would cover log positions whose changes
	// the index lacks; before, one lost answer stopped the table's
	// snapshots until its next open); snapChanges: ChangeRecords as of
	// the last snapshot written or loaded; snapTxSeq: the transaction log
	// sequence the snapshot the table opened from covers
	// (openedFromSnapshot); replayed: log records read at open;
	// ttlVersion: the stored.TTLVersion the index's expiries are computed
	// under (-1: not known, while a refresh runs).
	unresolved  atomic.Int64
	ttlVersion  atomic.Int64
	snapChanges atomic.Int64
	snapTxSeq   uint64
	// fillTo: the index store was filled from a snapshot object whose
	// entries up to these log positions lack their images (fillImages
	// starts with them); filling: the positions of a fill not finished,
	// kept in the store's header so that the next open goes on with it.
	fillTo             []uint64
	filling            atomic.Pointer[[]uint64]
	openedFromSnapshot bool
	replayed           int64
	// skippedAtOpen: log records the open could not decode and left out
	// of the index (skipRecord).
	skippedAtOpen atomic.Int64
	openTook      time.Duration
}

const recentPerShard = 1 << 15

type recentRing struct {
	pos  [recentPerShard]uint64
	chg  [recentPerShard]*Change
	next int
}

// ChangeRecords is how many change records the table's log holds: one
// per write that changed an item (its change stream's records), counted
// when the table opened and as they are written. A count, not a position:
// the log's positions are not dense (stream.Position).
func (t *Table) ChangeRecords() int64 { return t.changes.Load() }

// RecentChange returns the change at log position pos of shard if this
// process wrote it recently, or nil (then decode the record's data). The
// returned Change is shared: do not modify it or its images.
func (t *Table) RecentChange(shard int, pos uint64) *Change {
	t.recentMu.Lock()
	defer t.recentMu.Unlock()
	if shard < 0 || shard >= len(t.recent) {
		return nil
	}
	r := &t.recent[shard]
	i := recentSlot(pos)
	if r.pos[i] == pos {
		return r.chg[i]
	}
	return nil
}

// recentSlot spreads positions over the ring: consecutive messages take
// consecutive slots (positions are message<<stream.PositionBits | index,
// so pos % size alone would put every single-record message in a few).
func recentSlot(pos uint64) int {
	msg, idx := stream.MessageOf(pos)
	return int((msg + uint64(idx)*7919) % recentPerShard)
}

func (t *Table) rememberChange(shard uint16, pos uint64, c *Change) {
	t.recentMu.Lock()
	if t.recent == nil {
		t.recent = make([]recentRing, t.st.Shards)
	}
	if int(shard) < len(t.recent) {
		r := &t.recent[shard]
		i := recentSlot(pos)
		r.pos[i], r.chg[i] = pos, c
	}
	t.recentMu.Unlock()
}

// cachedItem is an item of the cache and the log position (shard, pos)
// of the change it is the new image of.
type cachedItem struct {
	shard uint16
	pos   uint64
	item  Item
	bytes int64 // what it counts towards Options.ItemCacheBytes
}

func (s *Service) openTable(st stored) (*Table, error) {
	sc, err := newSchema(st.KeySchema, st.AttributeDefinitions)
	if err != nil {
		return nil, err
	}
	t := &Table{s: s, schema: sc, st: st, tableName: st.TableName, logName: st.Log, cache: map[string]cachedItem{}}
	if s.store != nil {
		if t.idx, err = openDiskIndex(s.store, st.TableId, sc.rngType); err != nil {
			return nil, fmt.Errorf("table %s: open index: %w", st.TableName, err)
		}
	} else {
		t.idx = newIndex(sc.less, sc.rng == "")
	}
	numbering, err := s.logs.Numbering(context.Background(), st.Log)
	if err != nil {
		return nil, fmt.Errorf("table %s: open log: %w", st.TableName, err)
	}
	t.numbering = numbering
	if err := t.openIndexes(); err != nil {
		return nil, fmt.Errorf("table %s: %w", st.TableName, err)
	}
	return t, nil
}

// Name returns the table's name.
func (t *Table) Name() string { return t.tableName }

// LogName returns the name of the table's change log in Service.Logs().
func (t *Table) LogName() string { return t.logName }

// Stream returns the table's current stream label and view type ("" if the
// stream is off) and its ARN.
func (t *Table) Stream() (label, view, arn string) {
	t.metaMu.Lock()
	defer t.metaMu.Unlock()
	if sp := t.st.StreamSpecification; sp != nil && sp.StreamEnabled {
		return t.st.LatestStreamLabel, sp.StreamViewType, t.st.LatestStreamArn
	}
	return "", "", t.st.LatestStreamArn
}

func (t *Table) describe() *TableDescription {
	t.metaMu.Lock()
	d := t.st.TableDescription
	d.TimeToLive, d.Shards, d.Log, d.Provisioned = t.st.TTL, t.st.Shards, t.logName, t.st.Provisioned
	t.metaMu.Unlock()
	t.idxMu.RLock()
	d.ItemCount, d.TableSizeBytes = int64(t.idx.Len()), t.idx.Bytes()
	t.idxMu.RUnlock()
	t.describeIndexes(&d)
	return &d
}

func (t *Table) stripeIndex(k key) int { return (int(k.h[0])<<8 | int(k.h[1])) % len(t.stripes) }

func (t *Table) stripe(k key) *sync.Mutex { return &t.stripes[t.stripeIndex(k)] }

// lookup returns the index entry of k.
func (t *Table) lookup(k key) (entry, bool) {
	t.idxMu.RLock()
	defer t.idxMu.RUnlock()
	return t.idx.Get(entry{h: k.h, rk: k.rk})
}

// put sets an item's index entry to a change whose new image is it (the
// index store keeps the image). The caller holds idxMu.
func (t *Table) put(e entry, it Item) {
	if dx, ok := t.idx.(*diskIndex); ok && it != nil {
		dx.put(e, it)
		return
	}
	t.idx.ReplaceOrInsert(e)
}

// fetch returns the item of an index entry, from the cache, the index
// store or the log.
// A cached item serves only the entry of its own log position: a reader
// that read an item from the log and caches it after a newer write was
// applied (it looked the entry up before that write) leaves an item the
// index no longer points at, which is never served (read again instead).
func (t *Table) fetch(ctx context.Context, k key, e entry) (Item, error) {
	id := k.id()
	if it, ok := t.cached(id, e); ok {
		return it, nil
	}
	if dx, ok := t.idx.(*diskIndex); ok {
		if it, ok := dx.image(e); ok {
			return it, nil
		}
	}
	rec, err := t.s.logs.GetRecord(ctx, t.logName, stream.ShardID(int(e.shard)), e.pos)
	if err != nil {
		return nil, awserr.New(awserr.ErrService, "table %s: read item at %d/%d: %v", t.tableName, e.shard, e.pos, err)
	}
	ch, err := DecodeChange(rec.Data)
	if err != nil {
		return nil, awserr.New(awserr.ErrService, "table %s: bad change at %d/%d: %v", t.tableName, e.shard, e.pos, err)
	}
	t.remember(id, e.shard, e.pos, ch.NewImage, e.size)
	return ch.NewImage, nil
}

// cached returns the cache's item of key id if it is the one at e's log
// position.
func (t *Table) cached(id string, e entry) (Item, bool) {
	t.cacheMu.Lock()
	c, ok := t.cache[id]
	t.cacheMu.Unlock()
	if ok && c.shard == e.shard && c.pos == e.pos {
		return c.item, true
	}
	return nil, false
}

// remember caches it, of size bytes (DynamoDB's count), as the item of
// key id written at (shard, pos); a nil item (a delete) drops the key.
// Past Options.ItemCacheBytes, entries (any) are dropped until half of it
// is left.
func (t *Table) remember(id string, shard uint16, pos uint64, it Item, size int32) {
	t.cacheMu.Lock()
	defer t.cacheMu.Unlock()
	if old, ok := t.cache[id]; ok {
		t.cacheBytes -= old.bytes
		delete(t.cache, id)
	}
	if it == nil {
		return
	}
	c := cachedItem{shard: shard, pos: pos, item: it, bytes: int64(len(id)) + int64(size) + CacheEntryOverhead}
	if limit := t.s.cacheBytes; t.cacheBytes+c.bytes > limit {
		// The kept half moves to a new map. Deleting the other half
		// instead left the map full of deleted slots, which a lookup of
		// a key it does not hold probes past (the common case of a new
		// item): such lookups took 2 % of the trades demo's CPU. The new
		// map is made for as many entries as the old one held, so that
		// it fills again without splitting its tables (each split hashes
		// every key again).
		keep := make(map[string]cachedItem, len(t.cache))
		var kept int64
		for k, e := range t.cache {
			if kept+e.bytes+c.bytes > limit/2 {
				break
			}
			keep[k] = e
			kept += e.bytes
		}
		t.cache, t.cacheBytes = keep, kept
		if c.bytes > limit/2 {
			return // an item larger than half the cache is not kept
		}
	}
	t.cache[id] = c
	t.cacheBytes += c.bytes
}

// get returns the current item of k (nil if none). The caller holds k's
// stripe when it means to write.
//
// On the index store, the entry and the image are one read of the store
// (lookup then fetch read the same key twice: a GetItem's largest cost in
// the table, session 22).
func (t *Table) get(ctx context.Context, k key) (Item, entry, error) {
	if dx, ok := t.idx.(*diskIndex); ok {
		t.idxMu.RLock()
		e, img, ok := dx.getWithImage(entry{h: k.h, rk: k.rk})
		t.idxMu.RUnlock()
		if !ok {
			return nil, entry{}, nil
		}
		if it, ok := t.cached(k.id(), e); ok {
			return it, e, nil
		}
		if it, ok := decodeImage(img); ok {
			return it, e, nil
		}
		it, err := t.fetch(ctx, k, e) // no image: the log
		return it, e, err
	}
	e, ok := t.lookup(k)
	if !ok {
		return nil, entry{}, nil
	}
	it, err := t.fetch(ctx, k, e)
	return it, e, err
}

// pending is a change ready to be appended.
type pending struct {
	t      *Table
	k      key
	change Change
	exp    int64
	size   int32
	// prev is the item's index entry as read under its stripe for this
	// change (prevKnown), which apply then need not look up again: the
	// entry cannot move while the stripe is held.
	prev      entry
	prevKnown bool
	// img is the new image's encoding within the change's (logEntry), for
	// the index store; nil until then.
	img []byte
}

// newChange builds the change from old to new (new nil: a delete). It
// returns nil when nothing changes (no stream record, as DynamoDB).
func (t *Table) newChange(k key, old, nw Item, ttl bool) *pending {
	c := Change{Keys: k.keys, OldImage: old, NewImage: nw, TTL: ttl, TimeMs: t.s.eng.Clock.Now().UnixMilli()}
	switch {
	case old == nil && nw == nil:
		return nil
	case old == nil:
		c.EventName = EventInsert
	case nw == nil:
		c.EventName = EventRemove
	default:
		if itemsEqual(old, nw) {
			return nil
		}
		c.EventName = EventModify
	}
	c.Label, c.View, _ = t.Stream()
	p := &pending{t: t, k: k, change: c}
	if nw != nil {
		p.size = int32(expr.ItemSize(nw))
		p.exp = t.ttlOf(nw)
	}
	return p
}

func itemsEqual(a, b Item) bool {
	if len(a) != len(b) {
		return false
	}
	for n, v := range a {
		w, ok := b[n]
		if !ok || !expr.Equal(v, w) {
			return false
		}
	}
	return true
}

// ttlOf returns the item's TTL attribute as epoch seconds (0: none).
func (t *Table) ttlOf(it Item) int64 {
	t.metaMu.Lock()
	name := t.st.TTL.AttributeName
	t.metaMu.Unlock()
	if name == "" {
		return 0
	}
	v, ok := it[name]
	if !ok || dataTypeName(v) != TypeN {
		return 0
	}
	d, err := expr.ParseNumber(v.Number())
	if err != nil {
		return 0
	}
	i, err := d.Int64()
	if err != nil {
		f, _ := d.Float64()
		i = int64(f)
	}
	return i
}

// partitionKey of a log record carries what the index rebuild and the
// stream readers need without decoding the data:
// "<md5 hex of the item key>|<event>|<ttl>|<size>|<txn>|<index>|<stream label>".
func (p *pending) partitionKey() string {
	return p.k.hex() + "|" + p.change.EventName[:1] + "|" + strconv.FormatInt(p.exp, 10) + "|" +
		strconv.Itoa(int(p.size)) + "|" + p.change.Txn + "|" + strconv.Itoa(p.change.TxnIndex) + "|" + p.change.Label
}

// ItemKeyOf returns the item-key part of a change-log record's partition
// key: changes with the same value are of the same item.
func ItemKeyOf(partitionKey string) string {
	if len(partitionKey) < 32 {
		return partitionKey
	}
	return partitionKey[:32]
}

// LabelOf returns the stream label a change-log record was written under
// ("" if the stream was off), from its partition key.
func LabelOf(partitionKey string) string {
	i := strings.LastIndexByte(partitionKey, '|')
	if i < 0 || strings.Count(partitionKey, "|") < 6 {
		return ""
	}
	return partitionKey[i+1:]
}

func (p *pending) logEntry() (stream.PutRecordsRequestEntry, error) {
	// Sized for the key and both images (size is the new image's) so
	// that the encoding rarely grows.
	data, img := encodeChangeImage(make([]byte, 0, 128+2*int(p.size)), &p.change)
	p.img = img
	h := p.k.h
	return stream.PutRecordsRequestEntry{Data: data, PartitionKey: p.partitionKey(), HashKey: &h}, nil
}

// txnSeen collects, while the logs are read at open, which changes of
// transactions are in the logs: txn id -> indexes present.
type txnSeen map[string]map[int]bool

// rebuild reads the table's log from the start and rebuilds the index.
func (t *Table) rebuild(ctx context.Context, seen txnSeen) error {
	for sh := 0; sh < t.st.Shards; sh++ {
		first, last, err := t.s.logs.ShardBounds(ctx, t.logName, stream.ShardID(sh))
		if err != nil {
			return err
		}
		if last == 0 || last < first {
			continue
		}
		if err := t.replayShard(ctx, sh, first, last, seen); err != nil {
			return err
		}
	}
	return nil
}

// replayShard applies the records of shard sh from position from to
// last (both included) to the index.
func (t *Table) replayShard(ctx context.Context, sh int, from, last uint64, seen txnSeen) error {
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	rd, err := t.s.logs.ReadShard(rctx, t.logName, stream.ShardID(sh), from, stream.ReadShardOptions{})
	if err != nil {
		return err
	}
	defer rd.Stop()
	for rec := range rd.Records() {
		if err := t.replay(rec, uint16(sh), seen); err != nil {
			return err
		}
		if rec.Seq >= last {
			return nil
		}
	}
	return rd.Err()
}

// skipRecord leaves a change record the open cannot decode out of the
// index, counted (skippedAtOpen) and logged with the item's key (the MD5
// of its key, from the record's partition key), its shard and sequence:
// one bad record would otherwise keep the table, and the process, from
// opening. effect says what the item reads as instead.
func (t *Table) skipRecord(rec stream.Record, shard uint16, itemKey string, err error, effect string) {
	t.skippedAtOpen.Add(1)
	t.s.eng.Logger.Error("table index: skipped a change record it cannot decode",
		"table", t.tableName, "itemKey", itemKey, "shard", shard, "sequence", rec.SequenceNumber, "err", err, "effect", effect)
}

// skippedInReplay is what an item whose record the index rebuild skipped
// reads as.
const skippedInReplay = "the item reads as it was before this change (absent if it was)"

// replay applies one log record to the index during rebuild.
func (t *Table) replay(rec stream.Record, shard uint16, seen txnSeen) error {
	t.changes.Add(1)
	t.replayed++
	f := strings.Split(rec.PartitionKey, "|")
	if len(f) < 6 || len(f[0]) != 32 {
		return fmt.Errorf("bad change key %q at %s", rec.PartitionKey, rec.SequenceNumber)
	}
	var k key
	if _, err := hex.Decode(k.h[:], []byte(f[0])); err != nil {
		return err
	}
	exp, _ := strconv.ParseInt(f[2], 10, 64)
	size, _ := strconv.Atoi(f[3])
	if f[4] != "" {
		i, _ := strconv.Atoi(f[5])
		if seen[f[4]] == nil {
			seen[f[4]] = map[int]bool{}
		}
		seen[f[4]][i] = true
	}
	_, disk := t.idx.(*diskIndex)
	var c *Change
	if t.schema.rng != "" || (disk && f[1] != "R") {
		var err error
		if c, err = DecodeChange(rec.Data); err != nil {
			t.skipRecord(rec, shard, f[0], err, skippedInReplay)
			return nil
		}
	}
	if t.schema.rng != "" {
		var err error
		if k, err = t.schema.keyOf(c.Keys, true); err != nil {
			t.skipRecord(rec, shard, f[0], err, skippedInReplay)
			return nil
		}
	}
	var img Item
	if f[1] != "R" {
		if c != nil {
			img = c.NewImage
		}
		t.put(entry{h: k.h, rk: k.rk, shard: shard, pos: rec.Seq, exp: exp, size: int32(size)}, img)
	} else {
		t.idx.Delete(entry{h: k.h, rk: k.rk})
	}
	if dx, disk := t.idx.(*diskIndex); disk && len(t.indexes()) > 0 {
		// The store's secondary indexes follow (a change they hold
		// already is set again, harmlessly: secStore.stage).
		b := dx.newBatch()
		b.secondary(t, k, img, true)
		b.commit()
	}
	return t.idx.Err()
}
