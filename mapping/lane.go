package mapping

import (
	"context"
	"encoding/json"
	"sort"
	"sync"
	"time"

	"github.com/runnel-dev/runnel/stream"
	"github.com/runnel-dev/runnel/table"
)

// lane is one of a shard's ParallelizationFactor batch lanes. Records of a
// partition key always go to the same lane, and a lane handles one batch at
// a time, so order per partition key holds.
//
// A record is pending from the moment the dispatcher pushes it until the
// lane has resolved it: processed by a successful invocation, or discarded
// to the on-failure destination (or to the log). The shard's checkpoint
// never passes a pending record.
type lane struct {
	w     *shardWorker
	limit int // most records waiting in queue
	index int

	// replay is the batch that was in flight when the mapping last
	// stopped (see laneBatch): the lane forms exactly it first. Set at
	// start; read and cleared by the lane's goroutine (and read by the
	// dispatcher through wants, under mu).
	replay *laneBatch
	// win is the lane's tumbling window (nil when the mapping has none);
	// see window.go. Its fields are under mu.
	win *windowState

	mu         sync.Mutex
	queue      []stream.Record // waiting, in shard order
	qbuf       []stream.Record // queue's array from its start (enqueue)
	queueBytes int
	inflight   []stream.Record // the batch being resolved, in shard order
	done       []bool
	low        int // index of the first unresolved record of inflight
	idleSince  time.Time

	notify chan struct{} // a record was pushed
	space  chan struct{} // the queue has room again
}

func newLane(w *shardWorker, limit int) *lane {
	return &lane{w: w, limit: limit, notify: make(chan struct{}, 1), space: make(chan struct{}, 1), idleSince: w.r.svc.eng.Clock.Now()}
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// eventFrame is what an event adds to its records' shares: {"Records":[
// and ]}, less the last record's comma.
const eventFrame = len(`{"Records":[]}`) - 1

// recordBytes is a record's share of the lane's queued bytes, which
// close a batch early when they reach 6 MB (lane.queueBytes):
// runner.payloadBytes for a Kinesis source, an estimate for a DynamoDB
// source (4/3 of the change as stored plus 400 bytes), which is cheap.
func (l *lane) recordBytes(r *stream.Record) int {
	if l.w.r.ddb != nil {
		return (len(r.Data)+2)/3*4 + len(r.PartitionKey) + 400
	}
	return l.w.r.payloadBytes(r)
}

// payloadBytes is a record's share of the invocation payload, the 6 MB
// cut's measure: for a Kinesis source its event record's JSON, counted
// exactly but for the partition key's escaping (the data in base64, the
// key, the sequence number twice, the shard id, and the rest measured once
// from this runner's ARNs: kinesisOverhead); for a DynamoDB source its
// event record's JSON, counted exactly from the stored change
// (table.EventRecordSize, about a microsecond a record); and the comma
// between records. The trap: the former estimates (a flat 400 bytes a
// Kinesis record; 4/3 of a stored change plus 400 bytes) fell short of the
// real JSON, so 10,000 Kinesis records of 100 bytes made a 6.86 MB event,
// and items of many small attributes a 9.3 MB one, where Lambda closes
// batches at 6 MB.
func (r *runner) payloadBytes(rec *stream.Record) int {
	if r.ddb != nil {
		return table.EventRecordSize(rec, r.svc.eng.Region(), r.streamARN) + 1
	}
	return r.kinesisOverhead() + (len(rec.Data)+2)/3*4 + len(rec.PartitionKey) + 2*len(rec.SequenceNumber) + len(rec.ShardID)
}

// kinesisOverhead is the JSON of a Kinesis event record of this runner
// with empty data, partition key, sequence number and shard id, an
// arrival time of the longest form, and the comma between records.
func (r *runner) kinesisOverhead() int {
	r.overheadOnce.Do(func() {
		rec := stream.Record{ApproximateArrivalTimestamp: time.Date(2286, 11, 20, 17, 46, 39, 999e6, time.UTC)}
		ev := rec.KinesisEventRecord(r.streamARN)
		ev.AwsRegion, ev.InvokeIdentityArn = r.svc.eng.Region(), "arn:aws:iam::"+r.svc.eng.AccountID()+":role/runnel-event-source-mapping"
		b, _ := json.Marshal(ev)
		r.overhead = len(b) + 1
	})
	return r.overhead
}

// push appends records (in shard order), waiting while the lane is full.
// It returns false if ctx ended first.
func (l *lane) push(ctx context.Context, recs []stream.Record) bool {
	for {
		l.mu.Lock()
		if len(l.queue) < l.limit {
			l.enqueue(recs)
			for i := range recs {
				l.queueBytes += l.recordBytes(&recs[i])
			}
			l.mu.Unlock()
			signal(l.notify)
			return true
		}
		l.mu.Unlock()
		select {
		case <-l.space:
		case <-ctx.Done():
			return false
		}
	}
}

// enqueue appends recs to the queue. Takes leave the queue at the end of
// its array; when it reaches the end while filling at most half of the
// array, it moves to the front instead of to a new array (an append after
// each take had allocated a new one: 3 % of the trades demo's allocation).
func (l *lane) enqueue(recs []stream.Record) {
	need := len(l.queue) + len(recs)
	if need > cap(l.queue) && need <= cap(l.qbuf)/2 {
		n := copy(l.qbuf[:cap(l.qbuf)], l.queue)
		clear(l.qbuf[n:cap(l.qbuf)]) // the records taken or moved: not kept alive
		l.queue = l.qbuf[:n]
	}
	grew := need > cap(l.queue)
	l.queue = append(l.queue, recs...)
	if grew {
		l.qbuf = l.queue[:0]
	}
}

// wants reports whether a record read after a restart is still to be
// delivered by this lane: the records of its replayed batch, and the
// records after it; records before the batch, or before the shard's
// checkpoint and outside the batch, were resolved.
func (l *lane) wants(seq, resolvedBelow uint64) bool {
	l.mu.Lock()
	r := l.replay
	folded := l.win != nil && seq <= l.win.through
	l.mu.Unlock()
	if folded {
		return false // folded into a window's stored state
	}
	if r == nil {
		return seq >= resolvedBelow
	}
	return seq >= r.first
}

// take waits for the next batch: BatchSize records, or the records there
// when the batching window (counted from the end of the previous batch)
// closes, or as many as fit in 6 MB. With a window of 0 it takes whatever
// is waiting as soon as there is at least one record. With a tumbling
// window a batch holds records of one window only, and take returns an
// empty batch when the open window is to be closed (see closeDue).
func (l *lane) take(ctx context.Context) []stream.Record {
	cfg := &l.w.r.cfg
	clock := l.w.r.svc.eng.Clock
	window := time.Duration(cfg.MaximumBatchingWindowInSeconds) * time.Second
	for {
		l.mu.Lock()
		n := len(l.queue)
		var wait time.Duration
		if r := l.replay; r != nil && n > 0 {
			// Re-form the batch that was in flight: its records, and only
			// them, once the last one (or anything after it) has arrived.
			if l.queue[n-1].Seq >= r.last || l.w.seen.Load() >= r.last {
				k := 0
				for k < n && l.queue[k].Seq <= r.last {
					k++
				}
				batch := make([]stream.Record, k)
				copy(batch, l.queue[:k])
				for i := range batch {
					l.queueBytes -= l.recordBytes(&batch[i])
				}
				l.queue = l.queue[k:]
				l.replay = nil
				l.inflight, l.done, l.low = batch, make([]bool, k), 0
				l.mu.Unlock()
				signal(l.space)
				if k == 0 {
					continue
				}
				return batch
			}
			l.mu.Unlock()
			select {
			case <-l.notify:
			case <-clock.After(50 * time.Millisecond):
			case <-ctx.Done():
				return nil
			}
			continue
		}
		if l.win != nil {
			due, caughtUp := l.closeDue(clock.Now())
			if due && !caughtUp {
				l.mu.Unlock()
				caughtUp = l.readAllOf(ctx)
				l.mu.Lock()
				due, _ = l.closeDue(clock.Now()) // records may have come meanwhile
			}
			if due && caughtUp {
				l.mu.Unlock()
				return []stream.Record{}
			}
			if due || (n == 0 && !l.win.start.IsZero()) {
				l.mu.Unlock()
				l.waitWindow(ctx, due)
				if ctx.Err() != nil {
					return nil
				}
				continue
			}
		}
		if n > 0 {
			wait = l.idleSince.Add(window).Sub(clock.Now())
			limit, boundary := n, false
			if l.win != nil {
				limit, boundary = l.cut(n)
			}
			if window == 0 || limit >= cfg.BatchSize || boundary || wait <= 0 || l.queueBytes >= MaxBatchPayloadBytes {
				k, size, queued := 0, 0, 0
				for k < limit && k < cfg.BatchSize {
					b := l.w.r.payloadBytes(&l.queue[k])
					if k > 0 && size+b+eventFrame > MaxBatchPayloadBytes {
						break
					}
					size += b
					queued += l.recordBytes(&l.queue[k])
					k++
				}
				batch := make([]stream.Record, k)
				copy(batch, l.queue[:k])
				l.queue = l.queue[k:]
				l.queueBytes -= queued
				l.inflight, l.done, l.low = batch, make([]bool, k), 0
				l.mu.Unlock()
				signal(l.space)
				return batch
			}
		}
		l.mu.Unlock()
		if n > 0 {
			select {
			case <-l.notify:
			case <-clock.After(wait):
			case <-ctx.Done():
				return nil
			}
		} else {
			select {
			case <-l.notify:
			case <-ctx.Done():
				return nil
			}
		}
	}
}

// markDone records that recs (a part of the inflight batch) are resolved,
// and lets the checkpoint move up to the first unresolved record.
func (l *lane) markDone(recs []stream.Record) {
	l.mu.Lock()
	for i := range recs {
		j := sort.Search(len(l.inflight), func(j int) bool { return l.inflight[j].Seq >= recs[i].Seq })
		if j < len(l.inflight) && l.inflight[j].Seq == recs[i].Seq {
			l.done[j] = true
		}
	}
	for l.low < len(l.done) && l.done[l.low] {
		l.low++
	}
	l.mu.Unlock()
	signal(l.w.ckNotify)
}

// finish ends the inflight batch once all its records are resolved.
func (l *lane) finish() {
	l.mu.Lock()
	l.inflight, l.done, l.low = nil, nil, 0
	l.idleSince = l.w.r.svc.eng.Clock.Now()
	l.mu.Unlock()
	signal(l.w.ckNotify)
}

// lowestPending returns the first unresolved record of the lane.
func (l *lane) lowestPending() (stream.Record, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.low < len(l.inflight) {
		return l.inflight[l.low], true
	}
	if len(l.queue) > 0 {
		return l.queue[0], true
	}
	return stream.Record{}, false
}

// run takes batches until takeCtx ends and resolves each until ctx (of
// which takeCtx is a child) ends. A batch interrupted by the end of ctx
// stays pending: its records are read again after a restart. A batch
// taken before the end of takeCtx alone (a drain) is resolved first.
//
// Before each batch (and each window's final invocation) the lane checks
// the shard's lease (shardWorker.leaseHeld): once it is no longer Valid,
// the batch is not invoked, it stays pending, and the worker stops, so
// that the process taking the lease next is the only one invoking the
// shard's batches.
func (l *lane) run(takeCtx, ctx context.Context) {
	for takeCtx.Err() == nil {
		batch := l.take(takeCtx)
		if batch == nil {
			return
		}
		if !l.w.leaseHeld() {
			return
		}
		b := &batchRun{l: l, w: l.w, r: l.w.r}
		if len(batch) == 0 {
			if err := b.closeWindow(ctx); err != nil {
				return
			}
			continue
		}
		if err := l.recordBatch(ctx, batch); err != nil {
			return
		}
		if !l.w.leaseHeld() { // the batch record's write may have waited
			return
		}
		if l.win != nil {
			l.openWindow(&batch[0])
		}
		if err := b.run(ctx, batch); err != nil {
			return
		}
		l.finish()
	}
}

// pending counts the lane's unresolved records.
func (l *lane) pending() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(l.queue)
	for _, d := range l.done {
		if !d {
			n++
		}
	}
	return int64(n)
}

// recordBatch stores the lane's batch record before the batch is invoked,
// retrying until it is stored (an invocation without it could not be
// replayed identically after a crash). It returns an error only when ctx
// ends.
func (l *lane) recordBatch(ctx context.Context, batch []stream.Record) error {
	r := l.w.r
	b := laneBatch{first: batch[0].Seq, last: batch[len(batch)-1].Seq}
	return l.storeUntilDone(ctx, "batch record write failed; retrying before invoking", func() error {
		return r.svc.storeLaneBatch(ctx, r.cfg.UUID, l.w.shardID, r.streamID, l.index, r.cfg.ParallelizationFactor, b)
	})
}

// storeUntilDone calls store until it succeeds, logging warning and
// waiting a backoff after each failure. It returns an error only when ctx
// ends.
func (l *lane) storeUntilDone(ctx context.Context, warning string, store func() error) error {
	r := l.w.r
	for attempt := 1; ; attempt++ {
		err := store()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r.svc.eng.Logger.Warn(warning, "mapping", r.cfg.UUID, "shard", l.w.shardID, "err", err)
		if err := r.svc.backoff(ctx, attempt); err != nil {
			return err
		}
	}
}
