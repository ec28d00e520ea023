package target

// Deliveries stored twice by a crash: a schedule's (or a scheduled
// rule's) occurrence fired again after a crash between storing its
// deliveries and recording the occurrence. Such a delivery
// (Delivery.Once) has an ID derived from what it is (schedule and
// occurrence), and only one stored copy of an (ID, source, target) is
// attempted: the first to claim it in the bucket
// "runnel_target_claims" (value: the internal queue's MessageId of the
// copy). That copy may be received again (a crash before it settled) and
// still is its ID's; another copy is deleted, logged and counted
// (Stats.Duplicates).

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/queue"
)

// claimBucket holds one key per claimed delivery ID.
const claimBucket = "runnel_target_claims"

// ClaimTTL is how long a claim is kept: longer than any copy of a
// delivery waits in the internal queue before its first attempt (a copy
// is attempted at once, or at the restart that stored it).
const ClaimTTL = 48 * time.Hour

// claims opens the bucket, once.
func (s *Service) claims(ctx context.Context) (jetstream.KeyValue, error) {
	s.claimMu.Lock()
	defer s.claimMu.Unlock()
	if s.claimKV != nil {
		return s.claimKV, nil
	}
	kv, err := s.eng.EnsureBucket(ctx, jetstream.KeyValueConfig{Bucket: claimBucket, Storage: jetstream.FileStorage,
		Replicas: s.eng.Replicas(), History: 1, TTL: ClaimTTL})
	if err != nil {
		return nil, err
	}
	s.claimKV = kv
	return kv, nil
}

// claimKey names a delivery in the bucket: its ID, source and target
// (one event goes to several targets), hashed into a key's alphabet.
func claimKey(d *Delivery) string {
	h := sha256.Sum256([]byte(d.ID + "\n" + d.RuleArn + d.ScheduleArn + "\n" + d.TargetArn))
	return hex.EncodeToString(h[:20])
}

// claim reports whether msg is the copy of d to attempt: d is not Once,
// or is a retry (stored by its claimed copy), or msg claims d.ID now or
// claimed it before.
func (s *Service) claim(ctx context.Context, d *Delivery, msg *queue.Message) (bool, error) {
	if !d.Once || d.Attempts > 0 {
		return true, nil
	}
	kv, err := s.claims(ctx)
	if err != nil {
		return false, err
	}
	key := claimKey(d)
	_, err = kv.Create(ctx, key, []byte(msg.MessageId))
	if err == nil {
		return true, nil
	}
	if !errors.Is(err, jetstream.ErrKeyExists) {
		return false, err
	}
	e, err := kv.Get(ctx, key)
	if err != nil {
		return false, err
	}
	return string(e.Value()) == msg.MessageId, nil
}
