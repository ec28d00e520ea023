package stream

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"
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
		h, err := s.handle(ctx, name)
		if err != nil {
			continue
		}
		cutoff := s.eng.Clock.Now().Add(-time.Duration(h.desc.RetentionPeriodHours) * time.Hour)
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

// RunRetention calls TrimExpired every interval (by the engine's clock)
// until ctx ends.
func (s *Service) RunRetention(ctx context.Context, interval time.Duration) {
	t := s.eng.Clock.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.Chan():
			if n, err := s.TrimExpired(ctx); err != nil {
				s.eng.Logger.Warn("retention trim failed", "err", err)
			} else if n > 0 {
				s.eng.Logger.Info("retention trimmed expired records", "records", n)
			}
		}
	}
}
