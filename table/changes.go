package table

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"maps"
	"slices"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/runnel-dev/runnel/internal/clocks"
	"github.com/runnel-dev/runnel/stream"
	"github.com/runnel-dev/runnel/table/expr"
)

// EventRecord turns a change-log record into the DynamoDB stream record
// Lambda delivers (events.DynamoDBEventRecord, SPEC 5): the images the
// record's StreamViewType keeps, eventVersion "1.1", eventSource
// "aws:dynamodb", dynamodb.SequenceNumber = the log record's sequence
// number (the itemIdentifier of a partial batch response), and for a TTL
// deletion userIdentity {"type":"Service","principalId":"dynamodb.amazonaws.com"}.
//
// The record's Keys and images are its own (cloneItem): the change is the
// table's, shared with its item cache, and a handler may change its event
// as it likes, as a freshly decoded Lambda event on AWS.
func EventRecord(rec *stream.Record, c *Change, region, streamARN string) events.DynamoDBEventRecord {
	return eventRecord(rec, c, region, streamARN, cloneItem)
}

// EventRecordShared is EventRecord without the copies: the record's Keys
// and images are the change's, which the table shares with its item
// cache. For a reader that only reads or encodes the record (a filter's
// match) and never lets it out; changing it changes the table.
func EventRecordShared(rec *stream.Record, c *Change, region, streamARN string) events.DynamoDBEventRecord {
	return eventRecord(rec, c, region, streamARN, func(it Item) Item { return it })
}

func eventRecord(rec *stream.Record, c *Change, region, streamARN string, own func(Item) Item) events.DynamoDBEventRecord {
	view := c.View
	if view == "" {
		view = ViewNewAndOldImages
	}
	sr := events.DynamoDBStreamRecord{
		ApproximateCreationDateTime: events.SecondsEpochTime{Time: time.UnixMilli(c.TimeMs).Truncate(time.Second)},
		Keys:                        own(c.Keys),
		SequenceNumber:              rec.SequenceNumber,
		SizeBytes:                   int64(len(rec.Data)),
		StreamViewType:              view,
	}
	if view == ViewNewImage || view == ViewNewAndOldImages {
		sr.NewImage = own(c.NewImage)
	}
	if view == ViewOldImage || view == ViewNewAndOldImages {
		sr.OldImage = own(c.OldImage)
	}
	id := md5.Sum([]byte(streamARN + "/" + rec.SequenceNumber))
	out := events.DynamoDBEventRecord{
		AWSRegion:      region,
		Change:         sr,
		EventID:        hex.EncodeToString(id[:]),
		EventName:      c.EventName,
		EventSource:    "aws:dynamodb",
		EventVersion:   "1.1",
		EventSourceArn: streamARN,
	}
	if c.TTL {
		out.UserIdentity = &events.DynamoDBUserIdentity{Type: "Service", PrincipalID: "dynamodb.amazonaws.com"}
	}
	return out
}

// StreamSizeBytes is a stream record's SizeBytes in DynamoDB Streams
// ("The size of the stream record, in bytes", API_streams_StreamRecord):
// the DynamoDB item size (expr.ItemSize, the count the 400 KB item limit
// uses) of its Keys plus the images its view type shows (view "" is
// NEW_AND_OLD_IMAGES, as EventRecord). AWS's sample record (Keys
// {Id: N 101}, NewImage {Message: S "New item!", Id: N 101}) is 5 + 21 =
// 26 bytes. GetRecords' 1 MB answer is counted with it.
func StreamSizeBytes(c *Change) int64 {
	view := c.View
	if view == "" {
		view = ViewNewAndOldImages
	}
	n := expr.ItemSize(c.Keys)
	if view == ViewNewImage || view == ViewNewAndOldImages {
		n += expr.ItemSize(c.NewImage)
	}
	if view == ViewOldImage || view == ViewNewAndOldImages {
		n += expr.ItemSize(c.OldImage)
	}
	return int64(n)
}

// InStream reports whether a change belongs to the stream with label
// (changes written while the stream was off, or under an earlier label,
// belong to no current stream).
func (c *Change) InStream(label string) bool { return c.Label != "" && c.Label == label }

// SweepExpired deletes, in every table with TTL enabled, the items whose
// TTL attribute is in the past (by the engine's clock) and at most five
// years old, each deletion a REMOVE change marked as a service delete.
// It returns how many items it deleted. The sweeper calls it every
// Options.TTLInterval.
func (s *Service) SweepExpired(ctx context.Context) (int, error) {
	var n int
	if remote, err := s.forward(ctx, "SweepExpired", nil, &n); remote {
		return n, err
	}
	now := s.eng.Clock.Now().Unix()
	floor := now - 5*365*24*3600
	total := 0
	s.mu.RLock()
	tables := slices.Collect(maps.Values(s.tables))
	s.mu.RUnlock()
	for _, t := range tables {
		t.metaMu.Lock()
		on := t.st.TTL.Enabled
		t.metaMu.Unlock()
		if !on {
			continue
		}
		var failed error
		t.walkIndex(func(chunk []entry) bool {
			for _, e := range chunk {
				if e.exp <= 0 || e.exp >= now || e.exp < floor {
					continue
				}
				n, err := t.expire(ctx, key{h: e.h, rk: e.rk}, now)
				if err != nil {
					failed = err
					return false
				}
				total += n
			}
			return ctx.Err() == nil
		})
		if failed != nil {
			return total, failed
		}
	}
	return total, nil
}

// expire deletes one item if it is still expired.
func (t *Table) expire(ctx context.Context, k key, now int64) (int, error) {
	mu := t.stripe(k)
	mu.Lock()
	defer mu.Unlock()
	if t.s.unsure.any() && t.s.unsure.busy([]string{t.s.itemID(t, k)}) != nil {
		return 0, nil // held by a write of unknown outcome: the next sweep
	}
	old, prev, err := t.get(ctx, k)
	if err != nil || old == nil {
		return 0, err
	}
	if exp := t.ttlOf(old); exp == 0 || exp >= now {
		return 0, nil
	}
	kk, err := t.schema.keyOf(old, false)
	if err != nil {
		return 0, err
	}
	p := t.newChange(kk, old, nil, true)
	p.prev, p.prevKnown = prev, true
	if err := t.appendChanges(ctx, []*pending{p}); err != nil {
		return 0, err
	}
	return 1, nil
}

// refreshTTL recomputes every entry's expiry after the TTL attribute
// changed.
func (t *Table) refreshTTL(ctx context.Context) error {
	var failed error
	t.walkIndex(func(chunk []entry) bool {
		for _, e := range chunk {
			if failed = t.refreshEntry(ctx, e); failed != nil {
				return false
			}
		}
		return true
	})
	return failed
}

// refreshEntry recomputes e's expiry if e is still the key's entry.
func (t *Table) refreshEntry(ctx context.Context, e entry) error {
	k := key{h: e.h, rk: e.rk}
	mu := t.stripe(k)
	mu.Lock()
	defer mu.Unlock()
	cur, ok := t.lookup(k)
	if !ok || cur.pos != e.pos || cur.shard != e.shard {
		return nil
	}
	it, err := t.fetch(ctx, k, cur)
	if err != nil {
		return err
	}
	cur.exp = t.ttlOf(it)
	t.idxMu.Lock()
	t.idx.ReplaceOrInsert(cur)
	t.idxMu.Unlock()
	return nil
}

// indexWalkChunk is how many index entries walkIndex copies under one hold of
// the index's read lock (a variable for tests).
var indexWalkChunk = 1024

// walkIndex visits every entry of t's index in key order, indexWalkChunk
// entries at a time, holding the index's read lock only while it copies a
// chunk: visit runs without it, so writes go on between chunks (the TTL
// sweep of a table of millions of items held it for its whole walk and
// stalled every write; DynamoDB deletes expired items "on a best-effort
// basis to ensure availability of throughput for other data operations").
// An entry written behind the walk's position after it passed is not
// visited; one deleted ahead of it is not either. visit returns false to
// stop.
func (t *Table) walkIndex(visit func(chunk []entry) bool) {
	var (
		chunk []entry
		from  entry
		first = true
	)
	for {
		chunk = chunk[:0]
		t.idxMu.RLock()
		take := func(e entry) bool {
			if !first && e.h == from.h && e.rk == from.rk {
				return true // the pivot, visited in the last chunk
			}
			chunk = append(chunk, e)
			return len(chunk) < indexWalkChunk
		}
		if first {
			t.idx.Ascend(take)
		} else {
			t.idx.AscendGreaterOrEqual(from, take)
		}
		t.idxMu.RUnlock()
		if len(chunk) == 0 {
			return
		}
		last := chunk[len(chunk)-1]
		from, first = entry{h: last.h, rk: last.rk}, false
		if afterWalkChunk != nil {
			afterWalkChunk(t)
		}
		if !visit(chunk) || len(chunk) < indexWalkChunk {
			return
		}
	}
}

// afterWalkChunk, when set (tests), runs after walkIndex has copied each
// chunk and let go of the index.
var afterWalkChunk func(*Table)

func (s *Service) runTTL(ctx context.Context, interval time.Duration) {
	clocks.Every(ctx, s.eng.Clock, interval, func() {
		if !s.own.Holding() {
			return // the process serving the tables sweeps them
		}
		if n, err := s.SweepExpired(ctx); err != nil {
			if ctx.Err() == nil {
				s.eng.Logger.Warn("TTL sweep failed", "err", err)
			}
		} else if n > 0 {
			s.eng.Logger.Info("TTL deleted expired items", "items", n)
		}
		if _, err := s.sweepDeletedStreams(ctx); err != nil && ctx.Err() == nil {
			s.eng.Logger.Warn("sweep of deleted tables' streams failed", "err", err)
		}
	})
}
