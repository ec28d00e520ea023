package mapping

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/stream"
)

// nodeName is this process's name in lease values ("" for a passive
// service, which holds none).
func (s *Service) nodeName() string {
	if s.own.leases == nil {
		return ""
	}
	return s.own.leases.Node()
}

// publishStatus writes the live Status of every mapping running in this
// process (this node's shards of it) to the bucket
// "runnel_mapping_status", key "<uuid>.<node>", every second and once at
// Close, so `runnel mappings` in another process (--nats-url) shows it.
func (s *Service) publishStatus() {
	defer close(s.published)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	publish := func() {
		s.mu.Lock()
		running := make(map[string]poller, len(s.runners))
		maps.Copy(running, s.runners)
		s.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		for id, r := range running {
			c, err := s.GetEventSourceMapping(id)
			if err != nil {
				continue
			}
			st := &Status{Config: *c, Live: true, PublishedAt: s.eng.Clock.Now().UTC()}
			r.status(st) // this node's shards only
			b, _ := json.Marshal(st)
			s.live.Put(ctx, id+"."+s.nodeName(), b)
		}
	}
	for {
		select {
		case <-t.C:
			publish()
		case <-s.ctx.Done():
			publish()
			return
		}
	}
}

// ShardStatus is what `runnel mappings` shows per shard.
type ShardStatus struct {
	ShardID string
	// Node is the runnel node (its lease name, as `runnel cluster status`
	// shows it) running the shard; "" when none does (a closed shard
	// processed to its end, or a handover under way).
	Node string `json:",omitempty"`
	// Checkpoint is the sequence number processing resumes at (the next
	// record to read), as stored.
	Checkpoint string
	// IteratorAgeMs, in milliseconds: live (Status.Live), the age of the
	// oldest record the mapping has read but not yet resolved, 0 when it
	// has caught up with what it read; stored (read from the store, the
	// mapping not running in this process), the age of the first record
	// after the stored checkpoint, 0 when the checkpoint is at the shard's
	// end.
	IteratorAgeMs int64
	// PendingRecords: live, how many records the mapping has read from the
	// shard and not yet resolved (waiting in batch lanes or in flight);
	// stored, how many retained records follow the stored checkpoint up
	// to the shard's end (read and in flight in a running holder, or not
	// read yet).
	PendingRecords       int64
	LastProcessingResult string
	LastError            string `json:",omitempty"`
	Invocations          int64
	DeliveredRecords     int64 // records sent to the function, retries included
	ProcessedRecords     int64 // records resolved by a successful invocation
	DiscardedRecords     int64 // records given up on (destination or log)
	FilteredRecords      int64
	ExpiredMessages      int64 // stored messages (1..500 records each, see stream.Gap) that left the stream before being read
	FunctionErrors       int64
	PartialFailures      int64
	Bisects              int64
	Retries              int64
	Throttles            int64
	// WindowsClosed counts tumbling windows closed by a final invocation,
	// WindowsTerminatedEarly those ended early by a state over 1 MB.
	WindowsClosed, WindowsTerminatedEarly int64
}

// Status is a mapping's configuration and the state of each shard (stream
// sources) or of the queue poller (queue sources).
type Status struct {
	Config Config
	Shards []ShardStatus `json:",omitempty"`
	Queue  *QueueStatus  `json:",omitempty"`
	// Live is true when the shards' state comes from the pollers running
	// in this process; false when it was read from the store: the stored
	// checkpoints, the iterator age computed from them, and the counters a
	// running process last published (at PublishedAt).
	Live        bool
	PublishedAt time.Time `json:",omitempty"`
}

// Status returns the state of a mapping. For a mapping running in this
// process it is live for the shards this process runs (and has run to
// their end), followed by the shards other nodes hold, as they last
// published them (Node names the holder). Otherwise (disabled, running
// only on other nodes, or a passive service) each shard shows its stored
// checkpoint with the counters last published for it, its holder in
// Node, and LastProcessingResult "Not running" when none was published.
func (s *Service) Status(id string) (*Status, error) {
	c, err := s.GetEventSourceMapping(id)
	if err != nil {
		return nil, err
	}
	st := &Status{Config: *c}
	s.mu.Lock()
	r := s.runners[id]
	s.mu.Unlock()
	if r == nil {
		return s.storedStatus(st)
	}
	st.Live = true
	r.status(st)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, ok := r.(*runner); ok && s.liveNodes(ctx) > 1 {
		// The shards other nodes hold, as they last published them.
		live := map[string]bool{}
		for _, ss := range st.Shards {
			live[ss.ShardID] = true
		}
		stored, _ := s.storedStatus(&Status{Config: *c})
		for _, ss := range stored.Shards {
			if !live[ss.ShardID] && ss.Node != "" && ss.Node != s.nodeName() {
				st.Shards = append(st.Shards, ss)
			}
		}
		st.PublishedAt = stored.PublishedAt
	}
	return st, nil
}

// poller is a running mapping: a stream runner or a queue runner.
type poller interface {
	stop()
	status(st *Status)
}

func (r *runner) status(st *Status) {
	now := r.svc.eng.Clock.Now()
	for _, w := range r.workers() {
		_, oldest, found := w.nextCheckpoint()
		ss := ShardStatus{ShardID: w.shardID, Node: r.svc.nodeName(), Checkpoint: stream.FormatSequenceNumber(r.numbering, w.shard, w.checkpoint.Load())}
		for _, l := range w.lanes {
			ss.PendingRecords += l.pending()
		}
		if found {
			ss.IteratorAgeMs = max(0, now.Sub(oldest.ApproximateArrivalTimestamp).Milliseconds())
		}
		// Counters first, then the result: the workers set the result
		// before they count (see queueRunner.status).
		c := &w.counters
		ss.Invocations, ss.DeliveredRecords, ss.ProcessedRecords = c.invocations.Load(), c.deliveredRecords.Load(), c.processedRecords.Load()
		ss.DiscardedRecords, ss.FilteredRecords, ss.ExpiredMessages = c.discardedRecords.Load(), c.filteredRecords.Load(), c.expiredMessages.Load()
		ss.FunctionErrors, ss.PartialFailures, ss.Bisects = c.functionErrors.Load(), c.partialFailures.Load(), c.bisects.Load()
		ss.Retries, ss.Throttles = c.retries.Load(), c.throttles.Load()
		ss.WindowsClosed, ss.WindowsTerminatedEarly = c.windowsClosed.Load(), c.windowsTerminatedEarly.Load()
		w.mu.Lock()
		ss.LastProcessingResult, ss.LastError = w.lastResult, w.lastErr
		w.mu.Unlock()
		st.Shards = append(st.Shards, ss)
	}
}

func (s *Service) storedStatus(st *Status) (*Status, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	lasts := s.publishedStatuses(ctx, st.Config.UUID)
	streams, name, _, err := s.sourceStreams(st.Config)
	if err != nil {
		if len(lasts) > 0 {
			st.PublishedAt, st.Queue = lasts[0].PublishedAt, lasts[0].Queue
		}
		return st, nil
	}
	shards, err := streams.ListShards(ctx, name)
	if err != nil {
		return st, nil // the stream is gone; the mapping remains
	}
	published := map[string]ShardStatus{}
	for _, last := range slices.Backward(lasts) { // the newest wins
		st.PublishedAt = last.PublishedAt
		for _, sh := range last.Shards {
			published[sh.ShardID] = sh
		}
	}
	holders := s.shardHolders(ctx, st.Config.UUID)
	now := s.eng.Clock.Now()
	for _, sh := range shards {
		next, _, ok, err := s.peekCheckpoint(ctx, st.Config.UUID, sh.ShardID)
		if err != nil || !ok {
			continue
		}
		ss, ok := published[sh.ShardID]
		if !ok {
			ss = ShardStatus{ShardID: sh.ShardID, LastProcessingResult: "Not running"}
		}
		ss.Node = holders[sh.ShardID]
		ss.Checkpoint, _ = streams.SequenceNumber(ctx, name, sh.ShardID, next)
		ss.PendingRecords, ss.IteratorAgeMs = backlog(ctx, streams, name, sh.ShardID, next, now)
		st.Shards = append(st.Shards, ss)
	}
	return st, nil
}

// backlog returns what waits in a shard after the stored checkpoint next
// (the position processing resumes at): how many retained records there
// are from next to the shard's end, and the age in milliseconds (by now)
// of the first of them, the record processing resumes with; 0, 0 when
// none waits or the shard cannot be read. next is usually not a record's
// position: the checkpoint after a message's last record is one past it
// (see stream.Position), so the first waiting record is found by counting
// from next, not read at next.
func backlog(ctx context.Context, streams *stream.Service, name, shardID string, next uint64, now time.Time) (pending, ageMs int64) {
	_, last, err := streams.ShardBounds(ctx, name, shardID)
	if err != nil || last < next {
		return 0, 0
	}
	c, err := streams.CountRange(ctx, name, shardID, next, last)
	if err != nil || c.Records == 0 {
		return 0, 0
	}
	pending = int64(c.Records)
	if r, err := streams.GetRecord(ctx, name, shardID, c.First); err == nil {
		ageMs = max(0, now.Sub(r.ApproximateArrivalTimestamp).Milliseconds())
	}
	return pending, ageMs
}

// publishedStatuses returns the Status of mapping id each node last
// published (key "<uuid>.<node>"), the newest first.
func (s *Service) publishedStatuses(ctx context.Context, id string) []Status {
	var out []Status
	keys, err := s.live.ListKeysFiltered(ctx, id+".>")
	if err != nil {
		return nil
	}
	for k := range keys.Keys() {
		e, err := s.live.Get(ctx, k)
		if err != nil {
			continue
		}
		var last Status
		if json.Unmarshal(e.Value(), &last) == nil {
			out = append(out, last)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PublishedAt.After(out[j].PublishedAt) })
	return out
}

// shardHolders returns the node holding each shard's lease of mapping id
// (none when the leases cannot be read).
func (s *Service) shardHolders(ctx context.Context, id string) map[string]string {
	out := map[string]string{}
	held, err := s.eng.LeaseHolders(ctx)
	if err != nil {
		return out
	}
	for key, node := range held {
		if shard, ok := strings.CutPrefix(key, mappingLeasePrefix+id+"."); ok {
			out[shard] = node
		}
	}
	return out
}

// CaughtUp reports whether mapping id has resolved every record its
// source's shards hold now (a Kinesis stream, or a DynamoDB table's
// stream): each shard's stored checkpoint, the next position to read, is
// past the shard's last record, so every record up to now was processed
// by a successful invocation, sent to the on-failure destination or
// discarded. A shard without records is caught up; one with records and
// no checkpoint (or the checkpoint of an earlier stream of the same
// name) is not.
//
// It reads what is stored, so every process sharing the JetStream (one
// that runs none of the mapping's shards, a passive client) gets the same
// answer; the stored checkpoints follow the holders' progress at most
// Options.CheckpointInterval (default 100 ms) late. A record put after
// the call is not covered. Errors: ResourceNotFoundException for an
// unknown mapping, InvalidParameterValueException for a queue source (its
// progress is the queue's messages, not a checkpoint), ServiceException
// when the source or a checkpoint cannot be read.
func (s *Service) CaughtUp(ctx context.Context, id string) (bool, error) {
	c, err := s.GetEventSourceMapping(id)
	if err != nil {
		return false, err
	}
	if c.sourceKind() == sourceQueue {
		return false, invalid("mapping %s: a queue source has no checkpoint to catch up", id)
	}
	streams, name, _, err := s.sourceStreams(*c)
	if err != nil {
		return false, err
	}
	d, err := streams.DescribeStream(ctx, name)
	if err != nil {
		return false, err
	}
	for _, sh := range d.Shards {
		first, last, err := streams.ShardBounds(ctx, name, sh.ShardID)
		if err != nil {
			return false, err
		}
		if last < first {
			continue // no record
		}
		next, streamID, ok, err := s.peekCheckpoint(ctx, id, sh.ShardID)
		if err != nil {
			return false, awserr.New(awserr.ErrService, "mapping %s: checkpoint of %s: %v", id, sh.ShardID, err)
		}
		if !ok || streamID != d.ID || next <= last {
			return false, nil
		}
	}
	return true, nil
}
