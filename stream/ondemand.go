package stream

// Capacity modes (API_StreamModeDetails, API_UpdateStreamMode;
// https://docs.aws.amazon.com/streams/latest/dev/how-do-i-size-a-stream.html).
//
// A PROVISIONED stream has the shards its owner gives it (CreateStream's
// ShardCount, SplitShard, MergeShards, UpdateShardCount). An ON_DEMAND
// stream starts with OnDemandInitialShards shards and runnel scales it:
// SplitShard, MergeShards and UpdateShardCount are refused
// (ValidationException, "provisioned only").
//
// The scaling rule. AWS: "If a shard sees traffic over 500 KB/s it is
// split evenly within 15 minutes" and new capacity follows write
// throughput; a shard takes at most 1 MiB/s or 1,000 records/s of writes
// (service-sizes-and-limits.html). runnel measures each open shard's
// writes (the records PutRecord and PutRecords stored through this
// process) over windows of OnDemandWindow (1 minute, engine clock) and
// splits a shard whose window averaged more than half its write limit —
// OnDemandSplitBytesPerSecond (500 KB/s, taken as 512,000 bytes/s) or
// OnDemandSplitRecordsPerSecond (500 records/s) — at the middle of its
// hash key range, one split per shard per window. Shards are never
// merged back (AWS documents no scale-down). Writes through another
// process on the same JetStream count in that process's windows only.

import (
	"context"
	"math/big"
	"sync/atomic"
	"time"

	"github.com/runnel-dev/runnel/awserr"
)

// Stream modes (API_StreamModeDetails.StreamMode).
const (
	StreamModeProvisioned = "PROVISIONED"
	StreamModeOnDemand    = "ON_DEMAND"
)

// On-demand figures (see the file comment).
const (
	// OnDemandInitialShards is the shard count of a new ON_DEMAND stream
	// (4 MB/s of writes: 4 shards of 1 MiB/s).
	OnDemandInitialShards = 4
	// OnDemandWindow is the window writes are measured over.
	OnDemandWindow = time.Minute
	// OnDemandSplitBytesPerSecond and OnDemandSplitRecordsPerSecond: a
	// shard whose writes averaged more over a window is split.
	OnDemandSplitBytesPerSecond   = 500 * 1024
	OnDemandSplitRecordsPerSecond = 500
	// MaxStreamModeSwitches is how many UpdateStreamMode calls a stream
	// takes per rolling 24 hours.
	MaxStreamModeSwitches = 2
)

// Mode is the stream's StreamMode: PROVISIONED or ON_DEMAND.
func (d *StreamDescription) Mode() string {
	if d.StreamMode == "" {
		return StreamModeProvisioned
	}
	return d.StreamMode
}

// provisionedOnly refuses a reshard of an ON_DEMAND stream.
func provisionedOnly(d *StreamDescription, op string) error {
	if d.Mode() == StreamModeOnDemand {
		return awserr.New(awserr.ErrValidation, "%s is not supported for stream %s: its StreamMode is ON_DEMAND (provisioned streams only).", op, d.StreamName)
	}
	return nil
}

func validStreamMode(field, mode string) error {
	if mode != StreamModeProvisioned && mode != StreamModeOnDemand {
		return invalidArg("%s: %q must be PROVISIONED or ON_DEMAND", field, mode)
	}
	return nil
}

// UpdateStreamMode switches a stream between PROVISIONED and ON_DEMAND
// (API_UpdateStreamMode), keeping its shards. At most
// MaxStreamModeSwitches switches per rolling 24 hours (engine clock),
// else LimitExceededException; a stream that is not ACTIVE is
// ResourceInUseException; the mode it already has changes nothing.
func (s *Service) UpdateStreamMode(ctx context.Context, streamName, mode string) error {
	if err := validStreamMode("StreamModeDetails.StreamMode", mode); err != nil {
		return err
	}
	return s.updateDesc(ctx, streamName, func(d *StreamDescription) error {
		if d.Mode() == mode {
			return nil
		}
		now := s.eng.Clock.Now().UnixMilli()
		recent, err := s.dailyQuota("UpdateStreamMode", streamName, "capacity mode switches", d.ModeSwitches, MaxStreamModeSwitches, now)
		if err != nil {
			return err
		}
		d.StreamMode, d.ModeSwitches = mode, append(recent, now)
		return nil
	})
}

// dailyQuota returns the times (Unix ms) of times within the 24 hours
// before now, or LimitExceededException when they are already limit.
func (s *Service) dailyQuota(op, streamName, what string, times []int64, limit int, now int64) ([]int64, error) {
	recent := times[:0:0]
	for _, t := range times {
		if now-t < (24 * time.Hour).Milliseconds() {
			recent = append(recent, t)
		}
	}
	if len(recent) >= limit {
		return nil, awserr.New(awserr.ErrLimitExceeded, "%s of stream %s under account %s: at most %d %s per rolling 24 hours; the next is possible at %s.",
			op, streamName, s.eng.AccountID(), limit, what, time.UnixMilli(recent[0]).Add(24*time.Hour).UTC().Format(time.RFC3339))
	}
	return recent, nil
}

// writeRate counts one shard's stored writes since the last scaling pass.
type writeRate struct {
	bytes, records atomic.Int64
	sinceMs        atomic.Int64 // start of the current window (Unix ms)
}

// rateOf returns the write counter of shard i of d, created at now.
func (s *Service) rateOf(d *StreamDescription, i int) *writeRate {
	r := &writeRate{}
	r.sinceMs.Store(s.eng.Clock.Now().UnixMilli())
	v, _ := s.rates.LoadOrStore(jsName(d.ID, i), r)
	return v.(*writeRate)
}

// ScaleOnDemand runs one scaling pass over the ON_DEMAND streams: each
// open shard whose writes over a full window averaged more than
// OnDemandSplitBytesPerSecond or OnDemandSplitRecordsPerSecond is split
// at the middle of its hash key range. It returns the shards split.
// RunRetention runs it every OnDemandWindow.
func (s *Service) ScaleOnDemand(ctx context.Context) ([]string, error) {
	names, err := s.ListStreams(ctx)
	if err != nil {
		return nil, err
	}
	var split []string
	for _, name := range names {
		d, err := s.DescribeStream(ctx, name)
		if err != nil || d.Mode() != StreamModeOnDemand || d.StreamStatus != StatusActive {
			continue
		}
		now := s.eng.Clock.Now().UnixMilli()
		for _, sh := range d.Shards {
			i, _ := ShardIndex(sh.ShardID)
			if !sh.Open() {
				s.rates.Delete(jsName(d.ID, i))
				continue
			}
			r := s.rateOf(d, i)
			elapsed := now - r.sinceMs.Load()
			if elapsed < OnDemandWindow.Milliseconds() {
				continue // not a full window yet
			}
			r.sinceMs.Store(now)
			bytes, records := r.bytes.Swap(0), r.records.Swap(0)
			if bytes*1000 <= OnDemandSplitBytesPerSecond*elapsed && records*1000 <= OnDemandSplitRecordsPerSecond*elapsed {
				continue
			}
			start, end := rangeOf(&sh)
			mid := new(big.Int).Add(start, end)
			mid.Add(mid.Rsh(mid, 1), big.NewInt(1)) // the upper child starts past the middle
			if _, err := s.splitShard(ctx, name, sh.ShardID, mid.String(), true); err != nil {
				s.eng.Logger.Warn("on-demand scaling: split failed", "stream", name, "shard", sh.ShardID, "err", err)
				continue
			}
			s.eng.Logger.Info("on-demand scaling: split a hot shard", "stream", name, "shard", sh.ShardID,
				"bytesPerSecond", bytes*1000/elapsed, "recordsPerSecond", records*1000/elapsed)
			split = append(split, sh.ShardID)
		}
	}
	return split, nil
}
