package stream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/awserr"
)

// Resharding (API_SplitShard, API_MergeShards, API_UpdateShardCount;
// Kinesis developer guide, kinesis-using-sdk-java-resharding*.html).
//
// A reshard closes parent shards and opens child shards that take over
// their hash keys. It runs in three steps, each durable, after the stored
// description is marked UPDATING (beginReshard): from then until step 3
// no other request writes the description (they refuse a stream that is
// not ACTIVE, and one that read it before fails its compare-and-set):
//
//  1. the children's JetStream streams are created and the description is
//     written with the children open and the parents closed (ClosedMs), the
//     stream UPDATING: from now on puts route to the children;
//  2. each parent is sealed: its JetStream stream's metadata is marked
//     closing, then a seal message is stored on its seal subject, then the
//     seal's sequence is recorded in the metadata;
//  3. the description gets the parents' EndingSequenceNumber and the stream
//     is ACTIVE again.
//
// The rule that no accepted record is lost or lands after a closed shard's
// end: every put to a shard carries the JetStream headers
// Nats-Expected-Last-Subject-Sequence: 0 and
// Nats-Expected-Last-Subject-Sequence-Subject: <seal subject>, so JetStream
// itself refuses any message stored after the seal (the check and the
// store are one step of the stream). A put refused this way (routed by a
// description older than step 1, in this or another process) is routed
// again by the new description, to the children. So every record a put
// acknowledged is in exactly one shard, before that shard's seal; readers
// stop at the seal.
//
// A crash between the steps leaves the stream UPDATING; the next reshard
// of the stream after StaleUpdateAfter completes the seals first.

// Limits of resharding.
const (
	// MaxShardIndex bounds the shard indexes a stream may ever use: the
	// index takes 4 digits of a short sequence number (Numbering), and
	// every stream keeps the same bound.
	MaxShardIndex = 9999
	// MaxScalingsPerDay is how many UpdateShardCount calls a stream takes
	// per rolling 24 hours (API_UpdateShardCount).
	MaxScalingsPerDay = 10
	// StaleUpdateAfter is how long a stream may stay UPDATING before the
	// next reshard takes it for an interrupted one and completes it.
	StaleUpdateAfter = 30 * time.Second
	// UniformScaling is the only ScalingType of UpdateShardCount.
	UniformScaling = "UNIFORM_SCALING"
)

// JetStream stream metadata keys of a shard being closed.
const (
	metaClosing = "runnel_closing"
	metaSeal    = "runnel_seal"
)

// ChildShard is a shard that took over hash keys of a closed shard, as
// GetRecords returns it at the closed shard's end (API_ChildShard).
type ChildShard struct {
	ShardID      string       `json:"ShardId"`
	ParentShards []string     `json:"ParentShards"`
	HashKeyRange HashKeyRange `json:"HashKeyRange"`
}

// UpdateShardCountOutput is the result of UpdateShardCount
// (API_UpdateShardCount).
type UpdateShardCountOutput struct {
	StreamName        string
	StreamARN         string
	CurrentShardCount int
	TargetShardCount  int
}

// SplitShard closes shardToSplit and opens two children
// (API_SplitShard): one with the hash keys from the parent's
// StartingHashKey to newStartingHashKey-1, one from newStartingHashKey to
// the parent's EndingHashKey, both with ParentShardId = shardToSplit.
// newStartingHashKey is a decimal that must be greater than one plus the
// parent's StartingHashKey and less than its EndingHashKey.
//
// Errors: ResourceNotFoundException (stream or shard), InvalidArgumentException
// (the hash key, a closed shard), ResourceInUseException (stream not
// ACTIVE), LimitExceededException (more than MaxShardCount open shards,
// shard indexes exhausted).
func (s *Service) SplitShard(ctx context.Context, streamName, shardToSplit, newStartingHashKey string) (*StreamDescription, error) {
	return s.splitShard(ctx, streamName, shardToSplit, newStartingHashKey, false)
}

// splitShard is SplitShard; onDemand allows it on an ON_DEMAND stream (the
// scaling of ondemand.go).
func (s *Service) splitShard(ctx context.Context, streamName, shardToSplit, newStartingHashKey string, onDemand bool) (*StreamDescription, error) {
	if !explicitHashKeyRE.MatchString(newStartingHashKey) {
		return nil, invalidArg("NewStartingHashKey: %q must be a decimal in 0..2^128-1", newStartingHashKey)
	}
	// A key past 2^128-1 is past the shard's EndingHashKey: refused below
	// in those words, as Kinesis does.
	key, _ := new(big.Int).SetString(newStartingHashKey, 10)
	return s.reshard(ctx, streamName, oneStep(func(d *StreamDescription) ([]change, error) {
		if !onDemand {
			if err := provisionedOnly(d, "SplitShard"); err != nil {
				return nil, err
			}
		}
		p, err := s.openShard(d, shardToSplit, "split")
		if err != nil {
			return nil, err
		}
		start, end := rangeOf(p)
		if key.Cmp(new(big.Int).Add(start, big.NewInt(1))) <= 0 || key.Cmp(end) >= 0 {
			return nil, invalidArg("NewStartingHashKey %s used in SplitShard() on shard %s in stream %s under account %s is not both greater than one plus the shard's StartingHashKey %s and less than the shard's EndingHashKey %s.",
				newStartingHashKey, shardToSplit, streamName, s.eng.AccountID(), p.HashKeyRange.StartingHashKey, p.HashKeyRange.EndingHashKey)
		}
		if n := d.OpenShardCount() + 1; n > MaxShardCount {
			return nil, awserr.New(awserr.ErrLimitExceeded, "SplitShard would give stream %s %d open shards; runnel's limit is %d (MaxShardCount).", streamName, n, MaxShardCount)
		}
		return []change{split(p, key)}, nil
	}))
}

// MergeShards closes two adjacent open shards and opens one child holding
// both their hash keys (API_MergeShards), with ParentShardId =
// shardToMerge and AdjacentParentShardId = adjacentShardToMerge. Two
// shards are adjacent when the union of their hash key ranges is
// contiguous, and shardToMerge must be the lower one: the pair the other
// way round is refused as not adjacent, as Kinesis (kinesalite) does.
//
// Errors: ResourceNotFoundException (stream or shard),
// InvalidArgumentException (not adjacent, the same shard twice, a closed
// shard), ResourceInUseException (stream not ACTIVE), LimitExceededException
// (shard indexes exhausted).
func (s *Service) MergeShards(ctx context.Context, streamName, shardToMerge, adjacentShardToMerge string) (*StreamDescription, error) {
	return s.reshard(ctx, streamName, oneStep(func(d *StreamDescription) ([]change, error) {
		if err := provisionedOnly(d, "MergeShards"); err != nil {
			return nil, err
		}
		a, err := s.openShard(d, shardToMerge, "merge")
		if err != nil {
			return nil, err
		}
		b, err := s.openShard(d, adjacentShardToMerge, "merge")
		if err != nil {
			return nil, err
		}
		// ShardToMerge must be the lower of the two: Kinesis refuses the
		// pair the other way round as not adjacent.
		if a == b || !follows(a, b) {
			return nil, invalidArg("Shards %s and %s in stream %s under account %s are not an adjacent pair of shards eligible for merging",
				shardToMerge, adjacentShardToMerge, streamName, s.eng.AccountID())
		}
		return []change{merge(a, b)}, nil
	}))
}

// oneStep is the plan of a reshard of one step: plan is asked for the
// first round (again if that round is planned again, see beginReshard);
// for a later round it answers that nothing is left.
func oneStep(plan func(d *StreamDescription) ([]change, error)) func(*StreamDescription, int) ([]change, error) {
	return func(d *StreamDescription, round int) ([]change, error) {
		if round > 0 {
			return nil, nil
		}
		return plan(d)
	}
}

// UpdateShardCount scales the stream to targetShardCount open shards of
// equal size (ScalingType UNIFORM_SCALING, the only one) by splits and
// merges, whose closed shards and children are listed like any others
// (API_UpdateShardCount). TargetShardCount must be at most twice and at
// least half the current number of open shards, at most MaxShardCount,
// and a stream takes at most MaxScalingsPerDay calls per rolling 24 hours
// (engine clock): otherwise LimitExceededException. Other errors as
// SplitShard.
func (s *Service) UpdateShardCount(ctx context.Context, streamName string, targetShardCount int, scalingType string) (*UpdateShardCountOutput, error) {
	if scalingType != UniformScaling {
		return nil, invalidArg("ScalingType: %q must be UNIFORM_SCALING", scalingType)
	}
	if targetShardCount < 1 || targetShardCount > 100000 {
		return nil, awserr.OutOfRange(awserr.ErrInvalidArgument, "TargetShardCount", targetShardCount, 1, 100000)
	}
	var out *UpdateShardCountOutput
	var targets []HashKeyRange
	_, err := s.reshard(ctx, streamName, func(d *StreamDescription, round int) ([]change, error) {
		if round == 0 {
			if err := provisionedOnly(d, "UpdateShardCount"); err != nil {
				return nil, err
			}
			cur := d.OpenShardCount()
			out = &UpdateShardCountOutput{StreamName: d.StreamName, StreamARN: d.StreamARN, CurrentShardCount: cur, TargetShardCount: targetShardCount}
			// Kinesis's words (kinesalite's tests, written against AWS).
			if targetShardCount > 2*cur {
				return nil, awserr.New(awserr.ErrLimitExceeded, "UpdateShardCount cannot scale up over double your current open shard count. Current open shard count: %d, Target shard count: %d",
					cur, targetShardCount)
			}
			if 2*targetShardCount < cur {
				return nil, awserr.New(awserr.ErrLimitExceeded, "UpdateShardCount cannot scale down below half your current open shard count. Current open shard count: %d, Target shard count: %d",
					cur, targetShardCount)
			}
			if targetShardCount > MaxShardCount {
				return nil, awserr.New(awserr.ErrLimitExceeded, "UpdateShardCount of stream %s: TargetShardCount %d exceeds runnel's limit of %d open shards (MaxShardCount).", streamName, targetShardCount, MaxShardCount)
			}
			now := s.eng.Clock.Now().UnixMilli()
			recent, err := s.dailyQuota("UpdateShardCount", streamName, "scaling operations", d.Scalings, MaxScalingsPerDay, now)
			if err != nil {
				return nil, err
			}
			if next := maxIndex(d) + 1 + 2*(cur+targetShardCount); next > MaxShardIndex+1 {
				return nil, awserr.New(awserr.ErrLimitExceeded, "UpdateShardCount of stream %s: the stream has used too many shard ids (runnel's limit: shardId-%012d)", streamName, MaxShardIndex)
			}
			targets = splitHashKeySpace(targetShardCount)
			if cs := uniformStep(d, targets); len(cs) > 0 {
				d.Scalings = append(recent, now)
				return cs, nil
			}
			return nil, nil
		}
		return uniformStep(d, targets), nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// uniformStep returns the next round of changes from d's open shards
// towards the target layout: first every open shard that a target
// boundary crosses is split at its lowest such boundary; once no boundary
// crosses a shard, the shards within each target range are merged in
// pairs. Nil when the open shards are the targets.
func uniformStep(d *StreamDescription, targets []HashKeyRange) []change {
	open := openShards(d)
	var cs []change
	for _, p := range open {
		start, end := rangeOf(p)
		for _, t := range targets[1:] {
			b, _ := new(big.Int).SetString(t.StartingHashKey, 10)
			if b.Cmp(start) > 0 && b.Cmp(end) <= 0 {
				cs = append(cs, split(p, b))
				break
			}
		}
	}
	if len(cs) > 0 {
		return cs
	}
	for _, t := range targets {
		var in []*Shard
		for _, p := range open {
			if within(p, t) {
				in = append(in, p)
			}
		}
		for k := 0; k+1 < len(in); k += 2 {
			cs = append(cs, merge(in[k], in[k+1]))
		}
	}
	return cs
}

// change closes parents and opens children in one step of a reshard.
type change struct {
	parents  []*Shard
	children []Shard // ShardID, ParentShardID and HashKeyRange only
}

func split(p *Shard, key *big.Int) change {
	lo := Shard{ParentShardID: p.ShardID, HashKeyRange: HashKeyRange{p.HashKeyRange.StartingHashKey, new(big.Int).Sub(key, big.NewInt(1)).String()}}
	hi := Shard{ParentShardID: p.ShardID, HashKeyRange: HashKeyRange{key.String(), p.HashKeyRange.EndingHashKey}}
	return change{parents: []*Shard{p}, children: []Shard{lo, hi}}
}

func merge(a, b *Shard) change {
	lo, hi := a, b
	if rangeStart(b).Cmp(rangeStart(a)) < 0 {
		lo, hi = b, a
	}
	c := Shard{ParentShardID: a.ShardID, AdjacentParentShardID: b.ShardID,
		HashKeyRange: HashKeyRange{lo.HashKeyRange.StartingHashKey, hi.HashKeyRange.EndingHashKey}}
	return change{parents: []*Shard{a, b}, children: []Shard{c}}
}

func rangeStart(sh *Shard) *big.Int {
	v, _ := new(big.Int).SetString(sh.HashKeyRange.StartingHashKey, 10)
	return v
}

func rangeOf(sh *Shard) (start, end *big.Int) {
	e, _ := new(big.Int).SetString(sh.HashKeyRange.EndingHashKey, 10)
	return rangeStart(sh), e
}

// follows reports whether b's range starts just after a's ends.
func follows(a, b *Shard) bool {
	_, ae := rangeOf(a)
	bs, _ := rangeOf(b)
	return new(big.Int).Add(ae, big.NewInt(1)).Cmp(bs) == 0
}

// within reports whether shard p's range lies inside range t.
func within(p *Shard, t HashKeyRange) bool {
	ps, pe := rangeOf(p)
	ts, _ := new(big.Int).SetString(t.StartingHashKey, 10)
	te, _ := new(big.Int).SetString(t.EndingHashKey, 10)
	return ps.Cmp(ts) >= 0 && pe.Cmp(te) <= 0
}

// openShards returns the open shards of d by starting hash key.
func openShards(d *StreamDescription) []*Shard {
	var out []*Shard
	for i := range d.Shards {
		if d.Shards[i].Open() {
			out = append(out, &d.Shards[i])
		}
	}
	sort.Slice(out, func(a, b int) bool { return rangeStart(out[a]).Cmp(rangeStart(out[b])) < 0 })
	return out
}

func maxIndex(d *StreamDescription) int {
	n := -1
	for _, sh := range d.Shards {
		if i, err := ShardIndex(sh.ShardID); err == nil {
			n = max(n, i)
		}
	}
	return n
}

// openShard returns shard id of d if it is open, or the error SplitShard
// and MergeShards give.
func (s *Service) openShard(d *StreamDescription, id, verb string) (*Shard, error) {
	p := d.shard(id)
	if p == nil {
		return nil, awserr.New(awserr.ErrResourceNotFound, "Could not find shard %s in stream %s under account %s.", id, d.StreamName, s.eng.AccountID())
	}
	if !p.Open() {
		return nil, invalidArg("Shard %s in stream %s under account %s has already been merged or split, and thus is not eligible for %s.", id, d.StreamName, s.eng.AccountID(), verb+"ing")
	}
	return p, nil
}

// reshard runs the rounds plan gives (called with the description as it
// stands before each round and the round's number from 0, until it
// returns no change) as one UPDATING period of the stream. An error of
// the first round refuses the call before anything changed.
//
// The stream is UPDATING from before the first round's children are
// created until the last round is sealed (beginReshard), so no other
// write of the description (tags, retention, settings: updateDesc and
// UpdateRetentionPeriod refuse a stream that is not ACTIVE) can come
// between the rounds, and one that read the description while it was
// still ACTIVE fails its compare-and-set on the revision.
func (s *Service) reshard(ctx context.Context, name string, plan func(d *StreamDescription, round int) ([]change, error)) (*StreamDescription, error) {
	d, cs, rev, before, err := s.beginReshard(ctx, name, plan)
	if err != nil || len(cs) == 0 {
		return d, err
	}
	for round := 0; ; round++ {
		if round > 0 {
			if cs, err = plan(d, round); err != nil || len(cs) == 0 || indexesLeft(d, cs) != nil {
				break
			}
		}
		next := maxIndex(d) + 1
		now := s.eng.Clock.Now().UnixMilli()
		for _, c := range cs {
			for _, p := range c.parents {
				p.ClosedMs = now // before the appends below move d.Shards
			}
		}
		for _, c := range cs {
			for _, ch := range c.children {
				ch.ShardID = ShardID(next)
				ch.CreatedMs = now
				ch.SequenceNumberRange.StartingSequenceNumber = FormatSequenceNumber(d.Numbering(), next, FirstPosition)
				if _, err := s.eng.CreateOrUpdateStream(ctx, s.shardConfig(d, next)); err != nil {
					if round == 0 {
						s.abandon(ctx, &before, rev)
					}
					return nil, awserr.New(awserr.ErrService, "create shard %d of %s: %v", next, name, err)
				}
				d.Shards = append(d.Shards, ch)
				next++
			}
		}
		d.StreamStatus, d.UpdatingMs = StatusUpdating, now
		r, err := s.writeDesc(ctx, d, rev)
		if err != nil {
			if round == 0 {
				s.abandon(ctx, &before, rev)
			}
			return nil, err
		}
		rev = r
		if err := s.sealClosed(ctx, d); err != nil {
			return nil, err
		}
		s.at("round")
	}
	d.StreamStatus, d.UpdatingMs = StatusActive, 0
	if _, err := s.writeDesc(ctx, d, rev); err != nil {
		return nil, err
	}
	return d, nil
}

// beginReshard reads a stream for a reshard (loadForUpdate), asks plan
// for its first round and, if that changes anything, marks the stored
// description UPDATING (a compare-and-set on the revision read) before
// anything else happens. It returns the description, the first round's
// changes (none: nothing to do, the stream untouched), the revision of
// the mark and the description as read (to put back should the first
// round fail before it is written).
//
// A description another request changed between the read and the mark
// (a tag or setting written while the stream was still ACTIVE) is read
// and planned again, up to casRetries times (each lost try means another
// write succeeded; 10 tries were lost in a row to a steady tag writer on
// a loaded machine); one that another reshard or a retention change made
// UPDATING meanwhile is ResourceInUseException (loadForUpdate).
func (s *Service) beginReshard(ctx context.Context, name string, plan func(d *StreamDescription, round int) ([]change, error)) (d *StreamDescription, cs []change, rev uint64, before StreamDescription, err error) {
	for attempt := 0; ; attempt++ {
		if d, rev, err = s.loadForUpdate(ctx, name); err != nil {
			return nil, nil, 0, before, err
		}
		before = *d // plan replaces fields (Scalings); the shards change later
		before.Shards = slices.Clone(d.Shards)
		if cs, err = plan(d, 0); err != nil {
			return nil, nil, 0, before, err
		}
		if len(cs) == 0 {
			return d, nil, rev, before, nil
		}
		if err = indexesLeft(d, cs); err != nil {
			return nil, nil, 0, before, err
		}
		s.at("planned")
		mark := before
		mark.StreamStatus, mark.UpdatingMs = StatusUpdating, s.eng.Clock.Now().UnixMilli()
		r, err := s.writeDesc(ctx, &mark, rev)
		if err == nil {
			return d, cs, r, before, nil
		}
		if attempt == casRetries || !errors.Is(err, awserr.ErrResourceInUse) || ctx.Err() != nil {
			return nil, nil, 0, before, err
		}
	}
}

// indexesLeft refuses a round whose children would pass MaxShardIndex.
func indexesLeft(d *StreamDescription, cs []change) error {
	n := 0
	for _, c := range cs {
		n += len(c.children)
	}
	if maxIndex(d)+1+n > MaxShardIndex+1 {
		return awserr.New(awserr.ErrLimitExceeded, "stream %s has used all shard ids runnel allows (up to shardId-%012d)", d.StreamName, MaxShardIndex)
	}
	return nil
}

// abandon puts back the description a reshard read (ACTIVE) when its
// first round failed before closing any shard; best effort: if it fails
// the stream stays UPDATING until StaleUpdateAfter (loadForUpdate).
func (s *Service) abandon(ctx context.Context, before *StreamDescription, rev uint64) {
	if _, err := s.writeDesc(ctx, before, rev); err != nil {
		s.eng.Logger.Warn("cannot undo a failed reshard's mark", "stream", before.StreamName, "err", err)
	}
}

// at calls the test hook, if any, at a step of a reshard or a retention
// change.
func (s *Service) at(step string) {
	if s.hook != nil {
		s.hook(step)
	}
}

// loadForUpdate reads a stream's description for a reshard: ACTIVE, or
// UPDATING for longer than StaleUpdateAfter (then its seals are completed
// first).
func (s *Service) loadForUpdate(ctx context.Context, name string) (*StreamDescription, uint64, error) {
	if !streamNameRE.MatchString(name) {
		return nil, 0, notFound(name, s.eng.AccountID())
	}
	e, err := s.meta.Get(ctx, name)
	if err != nil {
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return nil, 0, notFound(name, s.eng.AccountID())
		}
		return nil, 0, awserr.New(awserr.ErrService, "describe stream %s: %v", name, err)
	}
	var d StreamDescription
	if err := json.Unmarshal(e.Value(), &d); err != nil {
		return nil, 0, awserr.New(awserr.ErrService, "stream %s: bad description: %v", name, err)
	}
	rev := e.Revision()
	if d.StreamStatus == StatusUpdating {
		if s.eng.Clock.Now().Sub(time.UnixMilli(d.UpdatingMs)) < StaleUpdateAfter {
			return nil, 0, awserr.New(awserr.ErrResourceInUse, "Stream %s under account %s not ACTIVE, instead in state UPDATING", name, s.eng.AccountID())
		}
		s.eng.Logger.Warn("completing an interrupted reshard", "stream", name)
		if err := s.sealClosed(ctx, &d); err != nil {
			return nil, 0, err
		}
		d.StreamStatus, d.UpdatingMs = StatusActive, 0
		if rev, err = s.writeDesc(ctx, &d, rev); err != nil {
			return nil, 0, err
		}
	}
	return &d, rev, nil
}

// writeDesc stores d if the stored description is still at revision rev,
// and drops the cached handle.
func (s *Service) writeDesc(ctx context.Context, d *StreamDescription, rev uint64) (uint64, error) {
	b, _ := json.Marshal(d)
	rev, err := s.meta.Update(ctx, d.StreamName, b, rev)
	s.Forget(d.StreamName)
	if err != nil {
		return 0, awserr.New(awserr.ErrResourceInUse, "Stream %s under account %s was changed by another request; try again (%v)", d.StreamName, s.eng.AccountID(), err)
	}
	return rev, nil
}

// sealClosed seals every closed shard of d without an
// EndingSequenceNumber and sets it.
func (s *Service) sealClosed(ctx context.Context, d *StreamDescription) error {
	for k := range d.Shards {
		sh := &d.Shards[k]
		if sh.Open() || sh.SequenceNumberRange.EndingSequenceNumber != "" {
			continue
		}
		i, _ := ShardIndex(sh.ShardID)
		seal, err := s.seal(ctx, d, i, sh.ClosedMs)
		if err != nil {
			return awserr.New(awserr.ErrService, "close %s of %s: %v", sh.ShardID, d.StreamName, err)
		}
		sh.SequenceNumberRange.EndingSequenceNumber = FormatSequenceNumber(d.Numbering(), i, Position(seal, 0)-1)
	}
	return nil
}

// seal closes shard i for good and returns its seal message's sequence.
// It is idempotent: a shard sealed before keeps its seal.
func (s *Service) seal(ctx context.Context, d *StreamDescription, i int, closedMs int64) (uint64, error) {
	js, err := s.eng.JS.Stream(ctx, jsName(d.ID, i))
	if err != nil {
		return 0, err
	}
	cfg := js.CachedInfo().Config
	if v := cfg.Metadata[metaSeal]; v != "" {
		return strconv.ParseUint(v, 10, 64)
	}
	// Mark it closing first, so a reader that sees the seal message as the
	// last one also knows to look for it (sealOf), and take the records'
	// subject away: a put routed by an older description now finds no
	// stream (and with one replica, one that raced this update is refused
	// by its guard headers after the seal).
	cfg.Subjects = []string{sealSubject(d.ID, i)}
	if cfg.Metadata == nil {
		cfg.Metadata = map[string]string{}
	}
	cfg.Metadata[metaClosing] = "1"
	if _, err := s.eng.UpdateStream(ctx, cfg); err != nil {
		return 0, err
	}
	var seq uint64
	ack, err := s.eng.JS.PublishMsg(ctx, &nats.Msg{Subject: sealSubject(d.ID, i), Data: sealEnvelope(closedMs),
		Header: nats.Header{jetstream.ExpectedLastSubjSeqHeader: []string{"0"}}})
	switch {
	case err == nil:
		seq = ack.Sequence
	case isSealedErr(err): // sealed before
		m, err := js.GetLastMsgForSubject(ctx, sealSubject(d.ID, i))
		if err != nil {
			return 0, err
		}
		seq = m.Sequence
	default:
		return 0, err
	}
	cfg.Metadata[metaSeal] = strconv.FormatUint(seq, 10)
	if _, err := s.eng.UpdateStream(ctx, cfg); err != nil {
		return 0, err
	}
	return seq, nil
}

// sealOf returns the sequence of shard sh's seal message, or 0 while the
// shard is open; md is the metadata of its JetStream stream as just read.
func (s *Service) sealOf(ctx context.Context, h *handle, sh int, md map[string]string) uint64 {
	if q := h.seal[sh].Load(); q != 0 {
		return q
	}
	if v := md[metaSeal]; v != "" {
		q, _ := strconv.ParseUint(v, 10, 64)
		h.seal[sh].Store(q)
		return q
	}
	if md[metaClosing] == "" {
		return 0
	}
	m, err := h.shards[sh].GetLastMsgForSubject(ctx, sealSubject(h.desc.ID, sh))
	if err != nil {
		return 0 // not sealed yet
	}
	h.seal[sh].Store(m.Sequence)
	return m.Sequence
}

// childShards returns the children of a shard (API_ChildShard), reading
// the description again if the cached one does not know them yet.
func (s *Service) childShards(ctx context.Context, streamName, shardID string) ([]ChildShard, error) {
	for attempt := 0; attempt < 2; attempt++ {
		h, err := s.handle(ctx, streamName)
		if err != nil {
			return nil, err
		}
		out := childrenOf(&h.desc, shardID)
		if len(out) > 0 {
			return out, nil
		}
		s.Forget(streamName)
	}
	return nil, fmt.Errorf("stream %s: %s is closed but has no children", streamName, shardID)
}

func childrenOf(d *StreamDescription, shardID string) []ChildShard {
	var out []ChildShard
	for _, c := range d.Shards {
		if c.ParentShardID == shardID || c.AdjacentParentShardID == shardID {
			ps := []string{c.ParentShardID}
			if c.AdjacentParentShardID != "" {
				ps = append(ps, c.AdjacentParentShardID)
			}
			out = append(out, ChildShard{ShardID: c.ShardID, ParentShards: ps, HashKeyRange: c.HashKeyRange})
		}
	}
	return out
}

// ShardEnd returns, for a closed shard whose seal is stored, the position
// after its last record (a mapping that checkpointed there has processed
// the whole shard) and true; for an open shard false.
func (s *Service) ShardEnd(ctx context.Context, streamName, shardID string) (uint64, bool, error) {
	h, sh, err := s.shardOf(ctx, streamName, shardID)
	if err != nil {
		return 0, false, err
	}
	_, _, seal, err := s.msgBounds(ctx, h, sh)
	if err != nil || seal == 0 {
		return 0, false, err
	}
	return Position(seal, 0), true, nil
}
