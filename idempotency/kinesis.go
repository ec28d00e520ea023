package idempotency

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// SequenceKey identifies one Kinesis record by where the stream put it:
// the whitepaper's "sequence+subsequence number combination as an
// idempotency key" (seed 000, "Alternative Considerations"), which makes
// any stream's records idempotent without an id in the data. The stream
// and the shard are part of it because a sequence number is unique only
// within a shard (in runnel it is the shard's log position).
type SequenceKey struct {
	StreamARN      string `json:"stream"`
	ShardID        string `json:"shard"`
	SequenceNumber string `json:"sequenceNumber"`
	// SubSequenceNumber is the user record's index inside a KPL aggregate
	// (set it when deaggregating); nil for plain records.
	SubSequenceNumber *int64 `json:"subSequenceNumber,omitempty"`
}

// KinesisSequenceKey returns the key of a record of a Kinesis event (the
// shard is read from its eventID, "<shardId>:<sequenceNumber>").
func KinesisSequenceKey(r events.KinesisEventRecord) SequenceKey {
	shard, _, _ := strings.Cut(r.EventID, ":")
	return SequenceKey{StreamARN: r.EventSourceArn, ShardID: shard, SequenceNumber: r.Kinesis.SequenceNumber}
}

// WithSubSequence returns k for the user record n of a KPL aggregate.
func (k SequenceKey) WithSubSequence(n int64) SequenceKey {
	k.SubSequenceNumber = &n
	return k
}

// KinesisKey is a Config.KeyFunc for payloads that are Kinesis records:
// an events.KinesisEventRecord (or pointer) gives its KinesisSequenceKey,
// a SequenceKey (for a deaggregated user record) is used as it is.
func KinesisKey(payload any) (any, error) {
	switch p := payload.(type) {
	case events.KinesisEventRecord:
		return KinesisSequenceKey(p), nil
	case *events.KinesisEventRecord:
		return KinesisSequenceKey(*p), nil
	case SequenceKey:
		return p, nil
	case *SequenceKey:
		return *p, nil
	}
	return nil, fmt.Errorf("idempotency: KinesisKey needs an events.KinesisEventRecord or a SequenceKey, not %T", payload)
}

// KinesisSequenceConfig returns cfg keyed by the record's sequence number
// (KeyFunc = KinesisKey), and logs a warning on cfg.Logger when
// cfg.ExpiresAfter (default one hour) is shorter than retention plus
// retryHorizon: the stream can deliver a record again (a retry, a replay
// from TRIM_HORIZON, a Retry-DLQ redrive of a pointer) as long as it
// keeps it, so a record that expires before that lets a duplicate run.
// retention is the stream's retention period (24 h by default in
// Kinesis); retryHorizon is how long after that a redelivery can still
// come (the Retry-DLQ's MaximumAge, say; 0 if none).
func KinesisSequenceConfig(cfg Config, retention, retryHorizon time.Duration) Config {
	cfg.KeyFunc = KinesisKey
	expires := cfg.ExpiresAfter
	if expires == 0 {
		expires = DefaultExpiresAfter
	}
	if need := retention + retryHorizon; expires < need {
		log := cfg.Logger
		if log == nil {
			log = slog.Default()
		}
		log.LogAttrs(context.Background(), slog.LevelWarn,
			"idempotency: ExpiresAfter is shorter than the stream's retention plus the retry horizon; a redelivered record may run twice",
			slog.Duration("expiresAfter", expires), slog.Duration("retention", retention),
			slog.Duration("retryHorizon", retryHorizon), slog.Duration("need", need))
	}
	return cfg
}
