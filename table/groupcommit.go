package table

import (
	"context"
	"encoding/binary"
	"math/bits"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nuid"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/stream"
)

// The write path after a change is decided: its append to the table's
// log, committed together with the concurrent appends of its lane (group
// commit), and its application to the index and the caches.

// appendChanges writes changes of one table to its log and, once all are
// acknowledged, moves the index; it returns the first change's error (see
// appendEach). The caller holds the items' stripes.
func (t *Table) appendChanges(ctx context.Context, ps []*pending) error {
	t.s.snapGate.RLock()
	defer t.s.snapGate.RUnlock()
	return t.appendChangesGated(ctx, ps)
}

// appendChangesGated is appendChanges for a caller holding
// Service.snapGate for reading (a transaction).
func (t *Table) appendChangesGated(ctx context.Context, ps []*pending) error {
	errs, err := t.appendEachGated(ctx, ps)
	if err != nil {
		return err
	}
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// appendEach writes changes of one table to its log and moves the index
// to each change acknowledged: errs[i] is nil when ps[i] is stored and
// applied, or why it was not (it may still have landed: a retry
// duplicates it, never loses it). err is a change that could not be
// encoded (nothing written). The caller holds the items' stripes, and no
// two changes are of one item.
//
// Concurrent appends to a table are committed together (group commit),
// lane by lane: a lane is the changes of one shard of the log (laneOf),
// so that a lane's write is one stored message, one JetStream publish.
// An append that finds no write of its lane running writes its own
// changes and every change queued behind them in one PutRecords call;
// one that finds a write running queues and is written with everything
// queued beside it when that write ends, by a goroutine of its own when
// the write that ends was the lead's (the lead's caller is answered at
// once; see flushAppends). Lanes are written concurrently.
// Under load, a write costs a share of one publish instead of one;
// alone, it costs what it did. A BatchWriteItem's changes come as one
// append (writeGroup). Changes of one item are never in one call: the
// item's stripe is held until its change is acknowledged.
func (t *Table) appendEach(ctx context.Context, ps []*pending) (errs []error, err error) {
	t.s.snapGate.RLock()
	defer t.s.snapGate.RUnlock()
	return t.appendEachGated(ctx, ps)
}

// appendEachGated is appendEach for a caller holding Service.snapGate
// for reading (a transaction).
func (t *Table) appendEachGated(ctx context.Context, ps []*pending) (errs []error, err error) {
	if len(ps) == 0 {
		return nil, nil
	}
	// One request per lane, in the order of ps within it.
	var reqs []*appendReq
	for i, p := range ps {
		e, err := p.logEntry()
		if err != nil {
			return nil, err
		}
		l := t.laneOf(p.k)
		var r *appendReq
		for _, q := range reqs {
			if q.lane == l {
				r = q
				break
			}
		}
		if r == nil {
			r = &appendReq{lane: l, done: make(chan struct{})}
			reqs = append(reqs, r)
		}
		r.entries = append(r.entries, e)
		r.of = append(r.of, i)
		r.ps = append(r.ps, p)
	}
	var lead []int
	for _, r := range reqs {
		gc := &t.gc[r.lane]
		gc.mu.Lock()
		gc.queue = append(gc.queue, r)
		gc.queued += len(r.entries)
		if gc.inFlight < maxAppendsInFlight || (gc.inFlight < maxFullAppendsInFlight && gc.queued >= stream.MaxPutRecords) {
			gc.inFlight++
			lead = append(lead, r.lane)
		}
		gc.mu.Unlock()
	}
	for i, l := range lead {
		if i < len(lead)-1 {
			go t.flushAppends(ctx, l, nil)
		} else {
			var own *appendReq
			for _, r := range reqs {
				if r.lane == l {
					own = r
				}
			}
			t.flushAppends(ctx, l, own)
		}
	}
	// Wait for the writes even when ctx ends: they are under way (bounded
	// by stream.AckTimeout), and the items' stripes must stay held until
	// the index says what the log says.
	errs = make([]error, len(ps))
	for _, r := range reqs {
		<-r.done
		for k, i := range r.of {
			errs[i] = r.errs[k]
		}
	}
	if !t.s.mayAct() {
		// Applied here, but acknowledged after this process's lease on
		// the tables stopped being valid: another process may have read
		// the log before the writes landed (see mayAct). The callers hear
		// a retryable error, as for a write whose answer was lost.
		for i, e := range errs {
			if e == nil {
				errs[i] = errLeaseEnded(t.tableName)
			}
		}
	}
	return errs, nil
}

// laneOf is the group-commit lane of an item: the shard of the table's
// log its hash key falls in when the log's shards split the 128-bit hash
// keys evenly (the top 64 bits decide; a key on a boundary may land in
// the neighbour lane, which costs a second message, nothing else).
func (t *Table) laneOf(k key) int {
	n := min(max(t.st.Shards, 1), MaxShards)
	hi, _ := bits.Mul64(binary.BigEndian.Uint64(k.h[:8]), uint64(n))
	return int(hi)
}

// maxAppendsInFlight is how many log writes of one lane may run at once
// (see appendEach). One: a lane's queue fills while its write runs, and
// its next write is one message whatever it holds. (Before lanes, one
// queue per table with two writes in flight wrote 8 concurrent PutItems
// 1.4 changes per PutRecords call spread over 4 shards: about one
// publish per change.)
const maxAppendsInFlight = 1

// maxFullAppendsInFlight is how many log writes of one lane may run at
// once when a whole call's worth of changes (MaxPutRecords) waits: under
// load a lane with one write in flight moves at most MaxPutRecords
// changes per log round trip (the trades demo's state table, one lane,
// fell behind 50,000 changes/s whenever a round trip took more than 10
// ms, with CPU to spare). Two writes in flight hold different items (an
// item's stripe is held until its change is acknowledged), so each
// item's changes stay in order; the header of the index store and the
// index snapshot are written with every write stopped.
const maxFullAppendsInFlight = 2

// groupCommit queues the appends waiting for a log write.
type groupCommit struct {
	mu       sync.Mutex
	queue    []*appendReq
	queued   int // the changes in queue
	inFlight int
}

type appendReq struct {
	lane    int
	of      []int // the index in appendEach's ps of each entry
	ps      []*pending
	entries []stream.PutRecordsRequestEntry
	errs    []error // each entry's outcome: nil when written and applied
	done    chan struct{}
}

// flushAppends writes the appends queued in a lane, up to MaxPutRecords
// entries per call, until its queue is empty; the caller counted itself
// in the lane's inFlight. own is the caller's append (nil: none): once
// it is written, the caller does not stay to write what queued meanwhile
// (its answer would wait for the others' writes): a goroutine of its own
// takes the lane's next write over, with the lane's inFlight count.
func (t *Table) flushAppends(ctx context.Context, lane int, own *appendReq) {
	gc := &t.gc[lane]
	for {
		gc.mu.Lock()
		var batch []*appendReq
		n := 0
		for len(gc.queue) > 0 && (n == 0 || n+len(gc.queue[0].entries) <= stream.MaxPutRecords) {
			r := gc.queue[0]
			gc.queue[0] = nil
			gc.queue = gc.queue[1:]
			gc.queued -= len(r.entries)
			batch = append(batch, r)
			n += len(r.entries)
		}
		if len(batch) == 0 {
			gc.inFlight--
			gc.mu.Unlock()
			return
		}
		gc.mu.Unlock()
		t.writeAppends(context.WithoutCancel(ctx), batch)
		if own != nil && slices.Contains(batch, own) {
			gc.mu.Lock()
			if len(gc.queue) == 0 {
				gc.inFlight--
				gc.mu.Unlock()
				return
			}
			gc.mu.Unlock()
			go t.flushAppends(ctx, lane, nil)
			return
		}
	}
}

// writeAppends writes a batch of a lane's appends to the log and applies
// every change written, then answers each append. A write whose outcome
// is unknown (resolve.go) answers errUnknownOutcome, its items held until
// a resolver learns it.
func (t *Table) writeAppends(ctx context.Context, batch []*appendReq) {
	var all []stream.PutRecordsRequestEntry
	var ps []*pending
	if len(batch) == 1 {
		all, ps = batch[0].entries, batch[0].ps
	} else {
		for _, r := range batch {
			all = append(all, r.entries...)
			ps = append(ps, r.ps...)
		}
	}
	errs := make([]error, len(all))
	var as []applied
	// A single request larger than MaxPutRecords (a transaction's changes
	// to one table are at most 100) is written in slices, each with a
	// message id of its own.
	id := nuid.Next()
	for start := 0; start < len(all); start += stream.MaxPutRecords {
		end := min(start+stream.MaxPutRecords, len(all))
		sliceID := id + "-" + strconv.Itoa(start)
		since := time.Now()
		o, err := t.s.logs.PutLogRecords(ctx, t.logName, sliceID, all[start:end])
		if err == nil && t.s.replyLost != nil {
			if lost := t.s.replyLost(t.tableName); lost != nil {
				// The answer is lost: the outcome of every entry unknown.
				o = &stream.PutRecordsOutput{Records: make([]stream.PutRecordsResultEntry, end-start)}
				for j := range o.Records {
					o.Records[j] = stream.PutRecordsResultEntry{ErrorCode: stream.OutcomeUnknown, ErrorMessage: lost.Error()}
				}
			}
		}
		if err != nil { // refused before anything was published
			for j := start; j < end; j++ {
				errs[j] = awserr.New(awserr.ErrService, "table %s: write failed: %v", t.tableName, err)
			}
			continue
		}
		done := make([]bool, end-start)
		unknown := ""
		for j, r := range o.Records {
			switch r.ErrorCode {
			case "":
				sh, pos, derr := stream.DecodeSequenceNumber(t.numbering, r.SequenceNumber)
				if derr != nil {
					errs[start+j] = derr
					continue
				}
				as = append(as, applied{p: ps[start+j], shard: uint16(sh), pos: pos})
				done[j] = true
			case stream.OutcomeUnknown:
				unknown = r.ErrorMessage
			default: // not stored
				errs[start+j] = awserr.New(awserr.ErrService, "table %s: write failed: %s", t.tableName, r.ErrorMessage)
			}
		}
		if unknown == "" {
			continue
		}
		// Every entry of the slice not applied waits for the resolver,
		// which publishes the slice again with its id: those refused
		// now may land then.
		var ids []string
		for j := range done {
			if !done[j] {
				errs[start+j] = unknownOutcome(t.tableName, unknown)
				ids = append(ids, t.s.itemID(t, ps[start+j].k))
			}
		}
		t.s.eng.Logger.Warn("table write of unknown outcome: its items are held until it is learned", "table", t.tableName, "id", sliceID, "changes", len(ids), "err", unknown)
		// No snapshot may cover the positions of changes not applied.
		t.s.resolveCounted([]*Table{t}, ids, t.settleAppend(sliceID, all[start:end], ps[start:end], done, since))
	}
	// The writer applies every change written (one index batch), then
	// answers the callers, who hold their items' stripes until then.
	t.applyAll(as)
	k := 0
	for _, r := range batch {
		r.errs = errs[k : k+len(r.entries)]
		k += len(r.entries)
		close(r.done)
	}
}

// apply moves the index (and the cache) to a written change.
func (t *Table) apply(p *pending, shard uint16, pos uint64) {
	t.applyAll([]applied{{p: p, shard: shard, pos: pos}})
}

// applied is a change the log holds at (shard, pos).
type applied struct {
	p     *pending
	shard uint16
	pos   uint64
}

// applyAll moves the index (and the cache) to written changes, each of
// another item, under one hold of idxMu: on the index store, in one
// batch (one commit for a group commit's changes, instead of one each).
func (t *Table) applyAll(as []applied) {
	t.changes.Add(int64(len(as)))
	t.idxMu.Lock()
	if dx, disk := t.idx.(*diskIndex); disk {
		b := dx.newBatch()
		for _, a := range as {
			p := a.p
			e := entry{h: p.k.h, rk: p.k.rk, shard: a.shard, pos: a.pos, exp: p.exp, size: p.size}
			old, had := p.prev, p.change.OldImage != nil
			if !p.prevKnown {
				old, had = dx.Get(e)
			}
			switch {
			case p.change.NewImage != nil:
				img := p.img
				if img == nil {
					img = appendItem(nil, p.change.NewImage)
				}
				b.set(e, old, had, img)
			case had:
				b.remove(e, old)
			}
			b.secondary(t, p.k, p.change.NewImage, false)
		}
		b.commit()
	} else {
		for _, a := range as {
			p := a.p
			e := entry{h: p.k.h, rk: p.k.rk, shard: a.shard, pos: a.pos, exp: p.exp, size: p.size}
			if p.change.NewImage != nil {
				t.idx.ReplaceOrInsert(e)
			} else {
				t.idx.Delete(e)
			}
		}
	}
	t.idxMu.Unlock()
	for _, a := range as {
		p := a.p
		t.applyIndexes(p)
		t.remember(p.k.id(), a.shard, a.pos, p.change.NewImage, p.size)
		c := p.change
		t.rememberChange(a.shard, a.pos, &c)
	}
}
