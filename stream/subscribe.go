package stream

// SubscribeToShard: an enhanced fan-out consumer's push subscription to a
// shard (https://docs.aws.amazon.com/kinesis/latest/APIReference/API_SubscribeToShard.html,
// https://docs.aws.amazon.com/streams/latest/dev/building-enhanced-consumers-api.html).
//
// A subscription reads the shard through a ShardReader (records arrive as
// they are stored) and hands out SubscribeToShardEvent values: each holds
// the records read so far (at most maxEventRecords, about
// maxEventBytes), ContinuationSequenceNumber (AFTER_SEQUENCE_NUMBER it
// to go on with the next record) and MillisBehindLatest (0 when no record
// waits after the event's, else the age of the event's last record). With
// no records an event comes every SubscriptionHeartbeat. At the end of a
// closed shard the last event carries ChildShards and no
// ContinuationSequenceNumber, and the subscription ends. It also ends
// after SubscriptionLifetime (5 minutes), all on the engine clock.
//
// One subscription per consumer and shard: a lease in the consumers
// bucket (key "<consumer id>.<shard id>", the owner and the start time),
// created or taken over by compare-and-set, so the rule holds across
// processes. A second SubscribeToShard within SubscriptionTakeoverAfter
// (5 s) of the running one's start is ResourceInUseException; later, it
// takes over and the running one ends with ResourceInUseException (it
// watches its lease). A subscription that ends gives the lease up but
// keeps its start: a new one within SubscribeInterval (1 s) of it is
// LimitExceededException. DeregisterStreamConsumer deletes the leases:
// the subscriptions end with ResourceNotFoundException.

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/runnel-dev/runnel/awserr"
)

// SubscribeToShard's times (API_SubscribeToShard).
const (
	// SubscriptionLifetime is how long a subscription lasts: "for up to 5
	// minutes, after which time you need to call SubscribeToShard again".
	SubscriptionLifetime = 5 * time.Minute
	// SubscriptionTakeoverAfter: "If you call SubscribeToShard again with
	// the same ConsumerARN and ShardId within 5 seconds of a successful
	// call, you'll get a ResourceInUseException. If you call
	// SubscribeToShard 5 seconds or more after a successful call, the
	// second call takes over the subscription".
	SubscriptionTakeoverAfter = 5 * time.Second
	// SubscriptionHeartbeat is how often an event comes when no record
	// does (AWS documents no figure; runnel's choice).
	SubscriptionHeartbeat = 5 * time.Second
	// SubscribeInterval: "You can make one call to SubscribeToShard per
	// second per registered consumer per shard"; a subscription started
	// sooner after the last one is LimitExceededException.
	SubscribeInterval = time.Second
)

const (
	maxEventRecords = 10000
	maxEventBytes   = 1 << 20
)

// StartingPosition is where a subscription starts (API_StartingPosition):
// Type AT_SEQUENCE_NUMBER or AFTER_SEQUENCE_NUMBER (with SequenceNumber),
// TRIM_HORIZON, LATEST or AT_TIMESTAMP (with Timestamp).
type StartingPosition struct {
	Type           string
	SequenceNumber string
	Timestamp      time.Time
}

// SubscribeToShardEvent is one event of a subscription
// (API_SubscribeToShardEvent).
type SubscribeToShardEvent struct {
	Records []Record
	// ContinuationSequenceNumber: subscribe again AFTER_SEQUENCE_NUMBER
	// it to go on after this event. Empty at the end of a closed shard.
	ContinuationSequenceNumber string
	// MillisBehindLatest: 0 when the subscription is caught up, else the
	// age of the event's last record (ms).
	MillisBehindLatest int64
	// ChildShards: the closed shard's children, with its last event only.
	ChildShards []ChildShard
}

// Subscription is a running SubscribeToShard.
type Subscription struct {
	events chan SubscribeToShardEvent
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	err    error
}

// Events is the channel of events; it is closed when the subscription
// ends (then see Err).
func (sub *Subscription) Events() <-chan SubscribeToShardEvent { return sub.events }

// Err is why the subscription ended: nil after SubscriptionLifetime, at
// the end of a closed shard or after Close; ResourceInUseException when
// another SubscribeToShard took it over; ResourceNotFoundException when
// the consumer was deregistered; else a read failure.
func (sub *Subscription) Err() error {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	return sub.err
}

// Close ends the subscription and waits for it.
func (sub *Subscription) Close() {
	sub.cancel()
	<-sub.done
}

func leaseKey(consumerID, shardID string) string { return consumerID + "." + shardID }

type lease struct {
	Owner     string `json:"o"`
	StartedMs int64  `json:"t"`
}

// SubscribeToShard subscribes an ACTIVE consumer to a shard of its
// stream. Errors: InvalidArgumentException (the ARN, the position),
// ResourceNotFoundException (consumer, stream or shard),
// ResourceInUseException (the consumer is not ACTIVE, or already
// subscribed to the shard less than 5 s ago), LimitExceededException (a
// subscription of the consumer to the shard started less than 1 s ago).
func (s *Service) SubscribeToShard(ctx context.Context, consumerARN, shardID string, pos StartingPosition) (*Subscription, error) {
	c, err := s.DescribeStreamConsumer(ctx, ConsumerRef{ConsumerARN: consumerARN})
	if err != nil {
		return nil, err
	}
	h, sh, err := s.shardOf(ctx, c.StreamName, shardID)
	if err != nil {
		return nil, err
	}
	from, err := s.position(ctx, h, sh, GetShardIteratorInput{ShardIteratorType: pos.Type, StartingSequenceNumber: pos.SequenceNumber, Timestamp: pos.Timestamp})
	if err != nil {
		return nil, err
	}
	l, _, err := s.holdLease(ctx, consumerARN, c.StreamName, shardID)
	if err != nil {
		return nil, err
	}
	return s.subscribe(ctx, l, h, sh, from)
}

func (s *Service) subscribe(ctx context.Context, l *heldLease, h *handle, sh int, from uint64) (*Subscription, error) {
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r, err := s.ReadShard(sctx, l.streamName, l.shardID, from, ReadShardOptions{})
	if err != nil {
		cancel()
		l.release()
		return nil, err
	}
	sub := &Subscription{events: make(chan SubscribeToShardEvent), cancel: cancel, done: make(chan struct{})}
	// The clocks start now, before the goroutine does.
	lifetime, heartbeat := s.eng.Clock.NewTimer(SubscriptionLifetime), s.eng.Clock.NewTimer(SubscriptionHeartbeat)
	// The caller's context ends the subscription too.
	stopOnCancel := context.AfterFunc(ctx, cancel)
	go func() {
		defer close(sub.done)
		defer close(sub.events)
		defer l.release()
		defer stopOnCancel()
		defer r.Stop()
		err := (&subscriber{s: s, numbering: h.desc.Numbering(), sh: sh, l: l, r: r,
			out: sub.events, next: from, lifetime: lifetime, heartbeat: heartbeat}).run(sctx)
		sub.mu.Lock()
		sub.err = err
		sub.mu.Unlock()
	}()
	return sub, nil
}

// heldLease is a consumer's lease on a shard, held by a subscription (or
// a mapping's reader) until release.
type heldLease struct {
	s                   *Service
	key                 string
	rev                 uint64
	startedMs           int64
	watch               jetstream.KeyWatcher
	streamName, shardID string
}

// holdLease takes the lease of the ACTIVE consumer consumerARN on a shard
// of its stream (which must be streamName, when given) and watches it.
func (s *Service) holdLease(ctx context.Context, consumerARN, streamName, shardID string) (*heldLease, *Consumer, error) {
	c, err := s.DescribeStreamConsumer(ctx, ConsumerRef{ConsumerARN: consumerARN})
	if err != nil {
		return nil, nil, err
	}
	if streamName != "" && c.StreamName != streamName {
		return nil, nil, invalidArg("ConsumerARN: %s is a consumer of stream %s, not of %s", consumerARN, c.StreamName, streamName)
	}
	if c.ConsumerStatus != ConsumerActive {
		return nil, nil, awserr.New(awserr.ErrResourceInUse, "Consumer %s is not ACTIVE, instead in state %s", consumerARN, c.ConsumerStatus)
	}
	l := &heldLease{s: s, key: leaseKey(c.ID, shardID), streamName: c.StreamName, shardID: shardID}
	l.startedMs = s.eng.Clock.Now().UnixMilli()
	if l.rev, err = s.takeLease(ctx, l.key, nuid.Next(), l.startedMs, consumerARN, shardID); err != nil {
		return nil, nil, err
	}
	s.at("subscription lease taken")
	if l.watch, err = s.consumers.Watch(context.WithoutCancel(ctx), l.key, jetstream.UpdatesOnly()); err != nil {
		_ = s.consumers.Delete(context.WithoutCancel(ctx), l.key, jetstream.LastRevision(l.rev))
		return nil, nil, awserr.New(awserr.ErrService, "watch subscription lease: %v", err)
	}
	// DeregisterStreamConsumer marks the consumer DELETING, then deletes
	// its leases once: a lease taken between the two outlived it (the
	// subscription streamed to a deregistered consumer for its 5
	// minutes, the key left behind). Looked at again now that the lease
	// is watched: a deregistration not seen here deletes it after, and
	// the watch ends the subscription.
	if again, err := s.DescribeStreamConsumer(ctx, ConsumerRef{ConsumerARN: consumerARN}); err != nil || again.ConsumerStatus != ConsumerActive {
		_ = l.watch.Stop()
		_ = s.consumers.Delete(context.WithoutCancel(ctx), l.key, jetstream.LastRevision(l.rev))
		if err != nil {
			return nil, nil, err
		}
		return nil, nil, awserr.New(awserr.ErrResourceInUse, "Consumer %s is not ACTIVE, instead in state %s", consumerARN, again.ConsumerStatus)
	}
	return l, c, nil
}

// release stops watching the lease and gives it up (no owner), unless
// another subscription took it over or it was deleted.
func (l *heldLease) release() {
	_ = l.watch.Stop()
	// Kept without an owner: its start still counts for SubscribeInterval.
	b, _ := json.Marshal(lease{StartedMs: l.startedMs})
	_, _ = l.s.consumers.Update(context.Background(), l.key, b, l.rev)
}

// lost tells, from an update of the lease (ok false: the watch ended),
// whether its holder lost it: taken over (ResourceInUseException),
// deleted by DeregisterStreamConsumer (ResourceNotFoundException), or no
// longer watched (a service error).
func (l *heldLease) lost(e jetstream.KeyValueEntry, ok bool) error {
	if !ok {
		return awserr.New(awserr.ErrService, "the watch of the subscription lease of %s of stream %s ended", l.shardID, l.streamName)
	}
	if e == nil || e.Revision() <= l.rev {
		return nil
	}
	if e.Operation() != jetstream.KeyValuePut {
		return awserr.New(awserr.ErrResourceNotFound, "The consumer of this subscription to %s of stream %s was deregistered.", l.shardID, l.streamName)
	}
	return awserr.New(awserr.ErrResourceInUse, "Another SubscribeToShard call took over this subscription to %s of stream %s.", l.shardID, l.streamName)
}

// takeLease creates the lease of key for owner me at nowMs, or takes over
// one released (no owner) at least SubscribeInterval ago or held for at
// least SubscriptionTakeoverAfter; it returns the lease's revision.
func (s *Service) takeLease(ctx context.Context, key, me string, nowMs int64, consumerARN, shardID string) (uint64, error) {
	now := time.UnixMilli(nowMs)
	b, _ := json.Marshal(lease{Owner: me, StartedMs: nowMs})
	rev, err := s.consumers.Create(ctx, key, b)
	if err == nil {
		return rev, nil
	}
	if !errors.Is(err, jetstream.ErrKeyExists) {
		return 0, awserr.New(awserr.ErrService, "subscription lease: %v", err)
	}
	e, err := s.consumers.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return s.takeLease(ctx, key, me, nowMs, consumerARN, shardID) // deleted meanwhile
	}
	if err != nil {
		return 0, awserr.New(awserr.ErrService, "subscription lease: %v", err)
	}
	var held lease
	_ = json.Unmarshal(e.Value(), &held)
	inUse := awserr.New(awserr.ErrResourceInUse, "Another active subscription exists for consumer %s on shard %s; try again %s after it started.", consumerARN, shardID, SubscriptionTakeoverAfter)
	age := now.Sub(time.UnixMilli(held.StartedMs))
	if held.Owner != "" && age < SubscriptionTakeoverAfter {
		return 0, inUse
	}
	if age < SubscribeInterval {
		return 0, awserr.New(awserr.ErrLimitExceeded, "Rate exceeded for consumer %s and shard %s: one SubscribeToShard call per second.", consumerARN, shardID)
	}
	rev, err = s.consumers.Update(ctx, key, b, e.Revision())
	if err != nil {
		return 0, inUse // another call took it over first
	}
	return rev, nil
}

// subscriber is a subscription's loop.
type subscriber struct {
	s         *Service
	numbering Numbering
	sh        int
	l         *heldLease
	r         *ShardReader
	out       chan<- SubscribeToShardEvent
	next      uint64 // the position of the next record to send
	carry     *Record
	// lifetime ends the subscription; heartbeat sends an event without
	// records.
	lifetime, heartbeat clockwork.Timer
}

func (u *subscriber) run(ctx context.Context) error {
	clock, lifetime, heartbeat := u.s.eng.Clock, u.lifetime, u.heartbeat
	defer lifetime.Stop()
	defer heartbeat.Stop()
	for {
		var ev SubscribeToShardEvent
		if u.carry != nil {
			ev.Records, u.carry = []Record{*u.carry}, nil
		} else {
			select {
			case <-ctx.Done():
				return nil
			case <-lifetime.Chan():
				return nil
			case e, ok := <-u.l.watch.Updates():
				if err := u.l.lost(e, ok); err != nil {
					return err
				}
				continue
			case <-heartbeat.Chan():
			case rec, ok := <-u.r.Records():
				if !ok {
					return u.end(ctx)
				}
				ev.Records = []Record{rec}
			}
		}
		if len(ev.Records) > 0 {
			u.fill(&ev, clock)
		}
		ev.ContinuationSequenceNumber = FormatSequenceNumber(u.numbering, u.sh, u.next-1)
		if err := u.send(ctx, ev); err != nil {
			return nil
		}
		resetTimer(heartbeat, SubscriptionHeartbeat)
	}
}

// fill adds the records ready in the reader to ev, within the event's
// bounds (one more becomes the carry), and sets MillisBehindLatest.
func (u *subscriber) fill(ev *SubscribeToShardEvent, clock clockwork.Clock) {
	size := 0
	for _, r := range ev.Records {
		size += len(r.Data) + len(r.PartitionKey)
	}
more:
	for len(ev.Records) < maxEventRecords && size < maxEventBytes {
		select {
		case rec, ok := <-u.r.Records():
			if !ok {
				break more // the end: the next loop finds the channel closed
			}
			ev.Records = append(ev.Records, rec)
			size += len(rec.Data) + len(rec.PartitionKey)
		default:
			break more
		}
	}
	last := ev.Records[len(ev.Records)-1]
	if len(ev.Records) == maxEventRecords || size >= maxEventBytes {
		select {
		case rec, ok := <-u.r.Records():
			if ok {
				u.carry = &rec
			}
		default:
		}
	}
	if u.carry != nil || u.r.Behind() {
		// Records wait after the event's: behind by (at most) the age of
		// its last record.
		ev.MillisBehindLatest = max(0, clock.Since(last.ApproximateArrivalTimestamp).Milliseconds())
	}
	u.next = last.Seq + 1
}

func (u *subscriber) send(ctx context.Context, ev SubscribeToShardEvent) error {
	select {
	case u.out <- ev:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// end finishes a subscription whose reader stopped: at a closed shard's
// end, the last event with ChildShards; otherwise the reader's error.
func (u *subscriber) end(ctx context.Context) error {
	if _, ok := u.r.End(); !ok {
		if err := u.r.Err(); err != nil {
			return awserr.New(awserr.ErrService, "read %s of %s: %v", u.l.shardID, u.l.streamName, err)
		}
		return nil
	}
	children, err := u.s.childShards(ctx, u.l.streamName, u.l.shardID)
	if err != nil {
		return awserr.New(awserr.ErrService, "%v", err)
	}
	_ = u.send(ctx, SubscribeToShardEvent{Records: []Record{}, ChildShards: children})
	return nil
}

func resetTimer(t clockwork.Timer, d time.Duration) {
	if !t.Stop() {
		select {
		case <-t.Chan():
		default:
		}
	}
	t.Reset(d)
}
