package mapping

import (
	"context"
	"errors"
	"hash/fnv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/engine"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/clocks"
	"github.com/runnel-dev/runnel/lease"
	"github.com/runnel-dev/runnel/mapping/filter"
	"github.com/runnel-dev/runnel/stream"
)

// runner runs one enabled mapping: a shardWorker per shard of its stream.
type runner struct {
	svc        *Service
	streams    *stream.Service // where the source's shards are: the streams, or the tables' logs
	ddb        *ddbSource      // set when the source is a table's change stream
	cfg        Config
	streamName string
	streamARN  string
	// consumerARN is the enhanced fan-out consumer the mapping reads
	// through when its EventSourceArn is a consumer ARN.
	consumerARN string
	streamID    string           // the stream incarnation the mapping reads
	numbering   stream.Numbering // how the stream writes its sequence numbers
	matcher     *filter.Matcher
	dest        Destination // nil: discarded records are logged and counted

	// retention is the stream's RetentionPeriodHours as last read (see
	// retentionPeriod), read again at most once a minute.
	retMu       sync.Mutex
	retention   time.Duration
	retentionAt time.Time

	cancel context.CancelFunc
	wg     sync.WaitGroup
	wake   chan struct{} // a shard finished: look for the shards it unblocks

	overheadOnce sync.Once
	overhead     int // kinesisOverhead

	// startMu serializes starting workers (startReady) with handing a
	// shard over (drop), so a shard dropped is never started after.
	startMu  sync.Mutex
	mu       sync.Mutex
	shards   []*shardWorker  // every worker started and not dropped, finished ones too
	started  map[string]bool // shards with a worker
	finished map[string]bool // closed shards processed to their end
	mine     map[string]bool // shards whose lease this process holds (owner_units.go)
	// leases: shard -> its lease here, which its worker checks before
	// each invocation (shard_lease.go); a shard without one (a service
	// with no lease manager) is not checked.
	leases map[string]*lease.Lease
}

// retentionPeriod is the source stream's retention period (24 h for a
// DynamoDB stream), read from its description at most once a minute by
// the engine's clock; until the first read succeeds, 0 (unknown).
func (r *runner) retentionPeriod(ctx context.Context) time.Duration {
	r.retMu.Lock()
	defer r.retMu.Unlock()
	now := r.svc.eng.Clock.Now()
	if r.retention == 0 || now.Sub(r.retentionAt) >= time.Minute {
		if d, err := r.streams.DescribeStream(ctx, r.streamName); err == nil {
			r.retention, r.retentionAt = time.Duration(d.RetentionPeriodHours)*time.Hour, now
		}
	}
	return r.retention
}

func (r *runner) workers() []*shardWorker {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*shardWorker(nil), r.shards...)
}

// shardCounters are a shard's counters since the mapping started in this
// process.
type shardCounters struct {
	invocations, deliveredRecords, processedRecords, discardedRecords atomic.Int64
	functionErrors, partialFailures, bisects, retries, throttles      atomic.Int64
	filteredRecords, expiredMessages                                  atomic.Int64
	windowsClosed, windowsTerminatedEarly                             atomic.Int64
}

// shardWorker reads one shard, spreads its records over the lanes and keeps
// the durable checkpoint.
type shardWorker struct {
	r       *runner
	shardID string
	shard   int // index of shardID
	lanes   []*lane

	seen       atomic.Uint64 // highest position dispatched or filtered out
	checkpoint atomic.Uint64 // next position to read, as last stored
	// resolvedBelow is the checkpoint the worker started from: records
	// before it were resolved, except those of a lane's replayed batch.
	resolvedBelow uint64
	replayUntil   uint64 // the last position of any lane's replayed batch
	// retired are the shard's lane windows stored under a former lane
	// count or window length; retiredUntil is their highest Through.
	retired      []retiredWindow
	retiredUntil uint64
	ended        atomic.Bool // the closed shard is read to its end
	// lease is the shard's lease (nil: none to check): the worker stops
	// when it is lost, and its lanes invoke nothing once it is not Valid
	// (shard_lease.go).
	lease    *lease.Lease
	ckNotify chan struct{}
	counters shardCounters
	cancel   context.CancelFunc // stops this worker alone (drop)
	// drain stops the worker reading and its lanes taking new batches;
	// the batches being invoked go on until resolved (or cancel).
	drain context.CancelFunc
	done  chan struct{} // closed when run returned, its final checkpoint stored

	mu         sync.Mutex
	lastResult string
	lastErr    string
}

func (w *shardWorker) setResult(res string) {
	w.mu.Lock()
	w.lastResult = res
	w.mu.Unlock()
}

// start launches the workers of the shards ready to be read, and the
// lineage loop that starts the others when they become ready: a shard is
// read only once each of its parents (ParentShardId,
// AdjacentParentShardId) still in the stream was processed to its end,
// so the records of a partition key are processed in order across a
// reshard, as Lambda does. A closed shard's worker stops once its
// checkpoint reaches the shard's end; shards created by a reshard while
// the mapping runs are found when a parent finishes (and every
// DiscoveryInterval).
func (r *runner) start(ctx context.Context) error {
	ctx, r.cancel = context.WithCancel(ctx)
	r.wake = make(chan struct{}, 1)
	r.started, r.finished = map[string]bool{}, map[string]bool{}
	if r.mine == nil {
		r.mine = map[string]bool{}
	}
	if r.leases == nil {
		// start runs under Service.mu (startLocked), as s.own.held wants.
		r.leases = r.svc.heldLeasesLocked(r.cfg.UUID)
	}
	if err := r.startReady(ctx); err != nil {
		r.cancel()
		return err
	}
	r.wg.Add(1)
	go func() { defer r.wg.Done(); r.discover(ctx) }()
	if r.ddb == nil {
		// A JetStream consumer on a deleted stream just goes quiet: watch
		// the stream's identity and restart the mapping when it changes.
		go r.watchStream(ctx)
	}
	return nil
}

// DiscoveryInterval is how often a stream mapping looks for shards that
// became ready without one of its workers finishing (a reshard made by
// another process, a parent expired).
const DiscoveryInterval = time.Second

func (r *runner) discover(ctx context.Context) {
	clocks.EveryOrKick(ctx, clockwork.NewRealClock(), DiscoveryInterval, r.wake, func() {
		if err := r.startReady(ctx); err != nil && ctx.Err() == nil {
			r.svc.eng.Logger.Warn("cannot look for new shards; will retry", "mapping", r.cfg.UUID, "err", err)
		}
	})
}

// startReady starts a worker for every shard of the stream held here
// (r.mine) that has none, is not processed to its end, and whose parents
// are (wherever they ran: the stored checkpoints tell).
func (r *runner) startReady(ctx context.Context) error {
	r.startMu.Lock()
	defer r.startMu.Unlock()
	d, err := r.streams.DescribeStream(ctx, r.streamName)
	if err != nil {
		return err
	}
	if d.ID != r.streamID {
		return nil // re-created: watchStream restarts the mapping
	}
	present := map[string]bool{}
	for _, sh := range d.Shards {
		present[sh.ShardID] = true
	}
	for {
		progressed := false
		for _, sh := range d.Shards {
			r.mu.Lock()
			skip := r.started[sh.ShardID] || r.finished[sh.ShardID]
			ready := true
			for _, p := range []string{sh.ParentShardID, sh.AdjacentParentShardID} {
				if p != "" && present[p] && !r.finished[p] {
					ready = false
				}
			}
			r.mu.Unlock()
			if skip || !ready {
				continue
			}
			done := false
			if !sh.Open() { // an open shard is not processed to its end: no read
				if done, err = r.processedToEnd(ctx, sh.ShardID); err != nil {
					return err
				}
			}
			if done {
				r.mu.Lock()
				r.finished[sh.ShardID] = true
				r.mu.Unlock()
				progressed = true // its children may be ready now
				continue
			}
			r.mu.Lock()
			mine := r.mine[sh.ShardID]
			r.mu.Unlock()
			if !mine {
				continue // another process runs it
			}
			if err := r.startShard(ctx, sh); err != nil {
				return err
			}
		}
		if !progressed {
			return nil
		}
	}
}

// processedToEnd reports whether shardID is closed and the mapping's
// stored checkpoint is at its end.
func (r *runner) processedToEnd(ctx context.Context, shardID string) (bool, error) {
	end, closed, err := r.streams.ShardEnd(ctx, r.streamName, shardID)
	if err != nil || !closed {
		return false, err
	}
	next, id, ok, err := r.svc.peekCheckpoint(ctx, r.cfg.UUID, shardID)
	if err != nil || !ok || id != r.streamID || next < end {
		return false, err
	}
	// The checkpoint reaches the end when every record is folded, before
	// the final invocations of the shard's windows: a worker stopped in
	// between (a disable, an update, a hand-over, a crash) leaves a window
	// stored open, and the shard is not done until a worker closes it.
	// Before, its children started and the window's state was lost.
	open, err := r.svc.openWindowStored(ctx, r.cfg.UUID, r.streamID, shardID)
	return err == nil && !open, err
}

// startShard launches the worker of one shard from its checkpoint (the
// shard's trim horizon when it has none: a shard created by a reshard
// after the mapping).
func (r *runner) startShard(ctx context.Context, sh stream.Shard) error {
	{
		next, id, ok, err := r.svc.loadCheckpoint(ctx, r.cfg.UUID, sh.ShardID)
		if err != nil {
			return err
		}
		if ok && id != "" && id != r.streamID {
			// The stream was deleted and created again under the same name:
			// the stored position belongs to the old records, which are gone.
			// Start at the new stream's trim horizon, so none of its records
			// is skipped.
			first, _, err := r.streams.ShardBounds(ctx, r.streamName, sh.ShardID)
			if err != nil {
				return err
			}
			r.svc.eng.Logger.Warn("the source stream was re-created; the mapping starts at the new stream's TRIM_HORIZON",
				"mapping", r.cfg.UUID, "shard", sh.ShardID, "stream", r.streamName)
			next = first
		} else if !ok {
			next = 1
		}
		idx, err := stream.ShardIndex(sh.ShardID)
		if err != nil {
			return err
		}
		w := &shardWorker{r: r, shardID: sh.ShardID, shard: idx, ckNotify: make(chan struct{}, 1), lastResult: "No records processed", resolvedBelow: next}
		w.checkpoint.Store(next)
		from := next
		for i := 0; i < r.cfg.ParallelizationFactor; i++ {
			l := newLane(w, max(2*r.cfg.BatchSize, r.svc.opts.LaneBuffer))
			l.index = i
			// A batch record is replayed also when the shard has no
			// checkpoint yet (a shard created after the mapping, or a
			// DynamoDB stream mapping created before they stored one at
			// creation; the first batch may be in flight before the first
			// checkpoint write). loadLaneBatch checks the record's stream id.
			if !ok || id == r.streamID {
				if b, found := r.svc.loadLaneBatch(ctx, r.cfg.UUID, sh.ShardID, r.streamID, i, r.cfg.ParallelizationFactor); found && b.last >= next {
					l.replay = &b
					from = min(from, b.first)
					w.replayUntil = max(w.replayUntil, b.last)
				}
			}
			if r.cfg.tumblingWindow() > 0 {
				l.win = r.svc.loadWindow(ctx, r, sh.ShardID, i)
				w.replayUntil = max(w.replayUntil, l.win.through)
			}
			w.lanes = append(w.lanes, l)
		}
		if ok && id == r.streamID {
			if w.retired, err = r.svc.retiredWindows(ctx, r, sh.ShardID, from); err != nil {
				return err
			}
			for _, rw := range w.retired {
				w.retiredUntil = max(w.retiredUntil, rw.sw.Through)
			}
		}
		w.seen.Store(from - 1)
		wctx, cancel := context.WithCancel(ctx)
		tctx, drain := context.WithCancel(wctx)
		w.cancel, w.drain, w.done = cancel, drain, make(chan struct{})
		r.mu.Lock()
		w.lease = r.leases[sh.ShardID]
		r.shards = append(r.shards, w)
		r.started[sh.ShardID] = true
		r.mu.Unlock()
		w.stopOnLostLease(wctx)
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			defer close(w.done)
			defer cancel()
			if w.run(wctx, tctx, from) {
				r.mu.Lock()
				r.finished[w.shardID] = true
				r.mu.Unlock()
				signal(r.wake)
				signal(r.svc.own.kick)
			}
		}()
	}
	return nil
}

// stop ends the workers and waits for their last checkpoints.
func (r *runner) stop() {
	r.cancel()
	r.wg.Wait()
}

// stopDrained is stop after a drain: every worker stops reading and its
// lanes taking batches, and the batches being invoked get up to drain
// (wall clock) to be resolved and checkpointed; then, or at once, the
// rest is cancelled (and delivered again by the next runner).
func (r *runner) stopDrained(drain time.Duration) {
	if drain > 0 {
		ws := r.workers()
		for _, w := range ws {
			w.drain()
		}
		t := time.NewTimer(drain)
		defer t.Stop()
		for _, w := range ws {
			select {
			case <-w.done:
			case <-t.C:
				r.svc.eng.Logger.Warn("a mapping updated did not finish its batches in time; cancelling them (they are delivered again)",
					"mapping", r.cfg.UUID, "drain", drain)
				r.stop()
				return
			}
		}
	}
	r.stop()
}

// run reads the shard until ctx or tctx ends, or, for a closed shard,
// until every record of it is resolved and the checkpoint stored at its
// end: then it returns true. The end of ctx cancels the batches being
// invoked (they stay pending, and are delivered again after a restart);
// the end of tctx alone (a drain: the shard is handed over) stops reading
// and taking batches, and lets the lanes resolve the batches they hold
// before the final checkpoint.
func (w *shardWorker) run(ctx, tctx context.Context, from uint64) (finished bool) {
	log := w.r.svc.eng.Logger.With("mapping", w.r.cfg.UUID, "shard", w.shardID)
	if w.closeRetired(ctx) != nil {
		return false
	}
	var lanes sync.WaitGroup
	laneCtx, stopLanes := context.WithCancel(ctx)
	takeCtx, stopTaking := context.WithCancel(laneCtx)
	defer context.AfterFunc(tctx, stopTaking)()
	for _, l := range w.lanes {
		lanes.Add(1)
		go func() { defer lanes.Done(); l.run(takeCtx, laneCtx) }()
	}
	ckDone, lanesDone := make(chan struct{}), make(chan struct{})
	go func() { defer close(ckDone); w.checkpointer(laneCtx, lanesDone) }()
	defer func() {
		stopTaking()
		lanes.Wait() // at once unless draining: the lanes finish their batches
		stopLanes()
		close(lanesDone) // no lane marks a record done after this
		<-ckDone
	}()

	ctx = takeCtx // reading stops with a drain
	for ctx.Err() == nil {
		rd, err := w.r.streams.ReadShard(ctx, w.r.streamName, w.shardID, w.seen.Load()+1, stream.ReadShardOptions{
			ConsumerARN: w.r.consumerARN,
			OnGap: func(g stream.Gap) {
				w.counters.expiredMessages.Add(int64(g.Messages))
				log.Warn("records expired from the stream before the mapping read them",
					"startSequenceNumber", g.FromSequence, "endSequenceNumber", g.ToSequence, "messages", g.Messages)
			},
		})
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if w.expired(ctx, err) {
				log.Warn("the closed shard expired (retention) before the mapping read all of it")
				return true
			}
			w.setErr(err)
			log.Warn("cannot read shard; retrying", "err", err)
			if engine.Sleep(ctx, w.r.svc.eng.Clock, time.Second) != nil {
				return false
			}
			continue
		}
		w.dispatch(ctx, rd)
		rd.Stop()
		if end, ok := rd.End(); ok && ctx.Err() == nil {
			return w.finish(ctx, end)
		}
		if err := rd.Err(); err != nil && ctx.Err() == nil {
			w.setErr(err)
			log.Warn("shard reader stopped; reopening", "err", err)
			if engine.Sleep(ctx, w.r.svc.eng.Clock, time.Second) != nil {
				return false
			}
		}
	}
	return false
}

// expired reports whether err says the worker's shard is no longer in
// its stream (a closed shard removed after its retention period) while
// the stream is the same.
func (w *shardWorker) expired(ctx context.Context, err error) bool {
	if !errors.Is(err, awserr.ErrResourceNotFound) {
		return false
	}
	d, derr := w.r.streams.DescribeStream(ctx, w.r.streamName)
	if derr != nil || d.ID != w.r.streamID {
		return false
	}
	for _, sh := range d.Shards {
		if sh.ShardID == w.shardID {
			return false
		}
	}
	return true
}

// finish waits until every record of the closed shard, which ends at
// position end, is resolved and the checkpoint stored at end, and reports
// whether it got there before ctx ended.
func (w *shardWorker) finish(ctx context.Context, end uint64) bool {
	if w.seen.Load() < end-1 {
		w.seen.Store(end - 1) // nothing after the last record: the shard is read
	}
	w.ended.Store(true) // its tumbling windows end with it
	clk := clockwork.NewRealClock()
	for w.checkpoint.Load() < end {
		signal(w.ckNotify)
		if engine.Sleep(ctx, clk, 10*time.Millisecond) != nil {
			return false
		}
	}
	// Every record is resolved, so no window opens any more: wait for
	// the final invocations of the open ones.
	if !w.waitWindowsClosed(ctx) {
		return false
	}
	w.r.svc.eng.Logger.Debug("closed shard processed to its end", "mapping", w.r.cfg.UUID, "shard", w.shardID)
	return true
}

func (w *shardWorker) setErr(err error) {
	w.mu.Lock()
	w.lastErr = err.Error()
	if w.r.consumerARN != "" && (errors.Is(err, awserr.ErrResourceInUse) || errors.Is(err, awserr.ErrResourceNotFound)) {
		// Not ACTIVE, subscribed by another reader, or deregistered.
		w.lastResult = "PROBLEM: cannot read through the stream consumer"
	}
	w.mu.Unlock()
}

// dispatch hands each record to its lane, or skips it if no filter
// matches. It takes whatever the reader has ready (up to BatchSize per
// lane) in one go, so that a lane finds a batch's worth of records when it
// wakes, as a Lambda poller gets them from one GetRecords call.
func (w *shardWorker) dispatch(ctx context.Context, rd *stream.ShardReader) {
	m := w.r.matcher
	n := uint32(len(w.lanes))
	ch := rd.Records()
	limit := w.r.cfg.BatchSize * int(n)
	buf := make([]stream.Record, 0, limit)
	perLane := make([][]stream.Record, n)
	for {
		rec, ok := <-ch
		if !ok {
			return
		}
		buf = append(buf[:0], rec)
	drain:
		for len(buf) < limit {
			select {
			case rec, ok := <-ch:
				if !ok {
					break drain
				}
				buf = append(buf, rec)
			default:
				break drain
			}
		}
		for i := range perLane {
			perLane[i] = perLane[i][:0]
		}
		filtered := 0
		for _, rec := range buf {
			if w.r.ddb != nil {
				if !w.r.ddb.inStream(&rec) {
					continue // written while the stream was off, or under another label
				}
				if !m.Empty() && !w.r.ddb.match(w.r, m, &rec) {
					filtered++
					continue
				}
			} else if !m.Empty() && !m.MatchKinesis(rec.PartitionKey, rec.SequenceNumber, rec.Data) {
				filtered++
				continue
			}
			i := uint32(0)
			if n > 1 || rec.Seq <= w.retiredUntil {
				h := fnv.New32a()
				if w.r.ddb != nil {
					h.Write([]byte(ddbItemKey(&rec))) // one item, one lane
				} else {
					h.Write([]byte(rec.PartitionKey))
				}
				sum := h.Sum32()
				i = sum % n
				if rec.Seq <= w.retiredUntil && w.retiredFolded(rec.Seq, sum) {
					continue // folded into a retired window, closed by closeRetired
				}
			}
			if rec.Seq < w.resolvedBelow || rec.Seq <= w.replayUntil {
				if !w.lanes[i].wants(rec.Seq, w.resolvedBelow) {
					continue // resolved before the restart
				}
			}
			perLane[i] = append(perLane[i], rec)
		}
		for i, recs := range perLane {
			if len(recs) > 0 && !w.lanes[i].push(ctx, recs) {
				return
			}
		}
		// Only after the pushes: the checkpoint may pass a record only once
		// it is pending in a lane (see nextCheckpoint).
		if hook := beforeSeen.Load(); hook != nil {
			(*hook)(&buf[len(buf)-1])
		}
		w.seen.Store(buf[len(buf)-1].Seq)
		if filtered > 0 {
			w.counters.filteredRecords.Add(int64(filtered))
		}
		// And a signal after it, always: a lane may resolve records of
		// this read (and signal) before seen covers them, so the
		// checkpointer's look then stops at seen; a lane that then blocks
		// in a long retry signals no more, and the checkpoint would stay
		// behind its resolved records until the retry ended.
		signal(w.ckNotify)
	}
}

// beforeSeen, set by tests only, runs in dispatch after a read's records
// are pushed to their lanes and before seen covers them; last is the
// read's last record.
var beforeSeen atomic.Pointer[func(last *stream.Record)]

// nextCheckpoint is the position the shard may resume from: the lowest
// pending record of any lane, or just past the last record seen.
func (w *shardWorker) nextCheckpoint() (uint64, stream.Record, bool) {
	next := w.seen.Load() + 1 // read before the lanes: see dispatch
	var oldest stream.Record
	found := false
	for _, l := range w.lanes {
		if r, ok := l.lowestPending(); ok && (!found || r.Seq < oldest.Seq) {
			oldest, found = r, true
		}
	}
	if found && oldest.Seq < next {
		next = oldest.Seq
	}
	return next, oldest, found
}

// checkpointer stores the shard's checkpoint when it moves, at most once
// per Options.CheckpointInterval (so a burst of small batches costs one
// write), and once more when the worker stops. A crash loses at most the
// last interval's progress: those records are delivered again, never
// skipped.
//
// The final write waits for lanesDone: a lane whose invocation returned as
// ctx ended may still mark its records done, and a final write before that
// would leave them to be delivered again after a clean restart.
func (w *shardWorker) checkpointer(ctx context.Context, lanesDone <-chan struct{}) {
	// store writes the checkpoint if it moved: wrote reports a write, ok
	// false a failed one.
	store := func(c context.Context) (wrote, ok bool) {
		next, _, _ := w.nextCheckpoint()
		if next <= w.checkpoint.Load() {
			return false, true
		}
		if err := w.r.svc.storeCheckpoint(c, w.r.cfg.UUID, w.shardID, w.r.streamID, next); err != nil {
			if c.Err() == nil {
				w.r.svc.eng.Logger.Warn("checkpoint write failed; will retry", "mapping", w.r.cfg.UUID, "shard", w.shardID, "next", next, "err", err)
			}
			return false, false
		}
		w.checkpoint.Store(next)
		return true, true
	}
	interval := w.r.svc.opts.CheckpointInterval
	// A failed write is tried again after ckRetryAfter even if nothing
	// else moves: a lane blocked in a long retry sends no more signals,
	// and its checkpoint would otherwise stay behind until it returned.
	var retry <-chan time.Time
	for ctx.Err() == nil {
		select {
		case <-w.ckNotify:
		case <-retry:
		case <-ctx.Done():
			continue
		}
		retry = nil
		wrote, ok := store(ctx)
		if !ok {
			retry = time.After(ckRetryAfter)
			continue
		}
		// The interval follows a write only: a look that found nothing to
		// store must not hold back the next signal's write.
		if wrote && interval > 0 {
			_ = engine.Sleep(ctx, clockwork.NewRealClock(), interval)
		}
	}
	<-lanesDone
	// The final write (a hand-over's next holder starts from it) gets a
	// checkpoint write's whole bound, not less.
	c, cancel := context.WithTimeout(context.Background(), ckWriteTimeout)
	store(c)
	cancel()
}

// watchStream checks every few seconds that the source stream is still
// the one the mapping started on. If it was deleted, the shards report
// it; if it was created again, the mapping restarts (and starts the new
// stream at its trim horizon).
func (r *runner) watchStream(ctx context.Context) {
	for engine.Sleep(ctx, clockwork.NewRealClock(), 2*time.Second) == nil {
		d, err := r.streams.DescribeStream(ctx, r.streamName)
		switch {
		case err != nil && ctx.Err() == nil:
			for _, w := range r.workers() {
				w.setResult("PROBLEM: source stream not found")
				w.setErr(err)
			}
		case err == nil && d.ID != r.streamID:
			r.svc.eng.Logger.Warn("the source stream was deleted and created again; restarting the mapping", "mapping", r.cfg.UUID, "stream", r.streamName)
			r.streams.Forget(r.streamName)
			go r.svc.restart(r.cfg.UUID, r)
			return
		}
	}
}

// function returns the mapping's function, looked up at each invocation so
// a replaced function takes effect.
func (r *runner) function() (*function.Function, error) {
	return r.svc.functions.GetFunction(r.cfg.FunctionName)
}

// eventKind is the kind of event the runner's source makes: a DynamoDB
// stream's or a Kinesis stream's (function.Accepts).
func (r *runner) eventKind() string {
	if r.ddb != nil {
		return function.EventDynamoDB
	}
	return function.EventKinesis
}
