package stream

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/awserr"
)

// TrimExpired removes, from every shard of every stream, the records that
// arrived longer ago than the stream's RetentionPeriodHours by the engine's
// clock, and returns how many it removed.
//
// JetStream's MaxAge (set to the retention period) trims by the server's
// wall clock on its own; TrimExpired applies the same rule by runnel's clock
// so the rule holds under an injected clock too. RunRetention calls it every
// minute.
func (s *Service) TrimExpired(ctx context.Context) (uint64, error) {
	if s.keep {
		return 0, nil
	}
	names, err := s.ListStreams(ctx)
	if err != nil {
		return 0, err
	}
	var total uint64
	for _, name := range names {
		if err := s.dropExpiredShards(ctx, name); err != nil {
			s.eng.Logger.Warn("cannot remove expired shards", "stream", name, "err", err)
		}
		// The retention period as stored now, never as cached: another
		// process may have raised it (IncreaseStreamRetentionPeriod), and
		// trimming by the old period deleted records the stream must keep.
		d, err := s.DescribeStream(ctx, name)
		if err != nil {
			continue
		}
		h, err := s.handle(ctx, name)
		if err != nil {
			continue
		}
		if h.desc.ID != d.ID || len(h.desc.Shards) != len(d.Shards) {
			s.Forget(name) // re-created or resharded by another process
			if h, err = s.handle(ctx, name); err != nil {
				continue
			}
		}
		cutoff := s.eng.Clock.Now().Add(-time.Duration(d.RetentionPeriodHours) * time.Hour)
		for sh := range h.shards {
			if h.shards[sh] == nil {
				continue
			}
			first, _, _, err := s.msgBounds(ctx, h, sh)
			if err != nil {
				return total, err
			}
			pos, err := s.msgAtTime(ctx, h, sh, cutoff)
			if err != nil {
				return total, err
			}
			if pos > first {
				if err := h.shards[sh].Purge(ctx, jetstream.WithPurgeSequence(pos)); err != nil {
					return total, err
				}
				total += pos - first
			}
		}
	}
	return total, nil
}

// dropExpiredShards removes from a stream's description the closed shards
// whose close is older than the retention period (every record they held
// arrived before the close, so none is left: AWS calls them EXPIRED and
// lists them no more) and deletes their JetStream streams. Shard ids are
// not reused: the highest one always belongs to a shard that is open or
// whose children are younger.
func (s *Service) dropExpiredShards(ctx context.Context, name string) error {
	d, rev, err := s.loadForUpdate(ctx, name)
	if err != nil {
		if errors.Is(err, awserr.ErrResourceInUse) {
			return nil // resharding: next time
		}
		return err
	}
	cutoff := s.eng.Clock.Now().Add(-time.Duration(d.RetentionPeriodHours) * time.Hour).UnixMilli()
	keep := d.Shards[:0:0]
	var gone []string
	for _, sh := range d.Shards {
		if !sh.Open() && sh.SequenceNumberRange.EndingSequenceNumber != "" && sh.ClosedMs < cutoff {
			gone = append(gone, sh.ShardID)
			continue
		}
		keep = append(keep, sh)
	}
	if len(gone) == 0 {
		return nil
	}
	d.Shards = keep
	if _, err := s.writeDesc(ctx, d, rev); err != nil {
		return err
	}
	for _, id := range gone {
		i, _ := ShardIndex(id)
		if err := s.eng.JS.DeleteStream(ctx, jsName(d.ID, i)); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
			return err
		}
	}
	s.eng.Logger.Info("expired shards removed", "stream", name, "shards", gone)
	return nil
}

// RunRetention calls TrimExpired every interval, and ScaleOnDemand every
// OnDemandWindow (by the engine's clock), until ctx ends.
func (s *Service) RunRetention(ctx context.Context, interval time.Duration) {
	t := s.eng.Clock.NewTicker(interval)
	defer t.Stop()
	scale := s.eng.Clock.NewTicker(OnDemandWindow)
	defer scale.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-scale.Chan():
			if _, err := s.ScaleOnDemand(ctx); err != nil {
				s.eng.Logger.Warn("on-demand scaling failed", "err", err)
			}
		case <-t.Chan():
			if n, err := s.TrimExpired(ctx); err != nil {
				s.eng.Logger.Warn("retention trim failed", "err", err)
			} else if n > 0 {
				s.eng.Logger.Info("retention trimmed expired records", "records", n)
			}
		}
	}
}
