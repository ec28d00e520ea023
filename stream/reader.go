package stream

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/synadia-io/orbit.go/jetstreamext"

	"github.com/runnel-dev/runnel/awserr"
)

// ShardReader delivers the records of one shard in order, from a start
// position on, as they arrive. Event source mappings read through it. It
// uses a JetStream ordered consumer without acknowledgements: the reader
// keeps no state on the server, and the mapping keeps its own checkpoint.
type ShardReader struct {
	records chan Record
	cancel  context.CancelFunc
	done    chan struct{}
	mu      sync.Mutex
	err     error
	end     uint64 // the shard's end position, once the reader reached it
	// pending is how many stored messages follow the last one read
	// (JetStream's NumPending), for Behind.
	pending atomic.Uint64
}

// Gap reports records that expired (retention) or were purged before a
// reader reached them: positions FromSequence..ToSequence of the shard
// were never read. Messages is how many stored messages were lost; each
// held the 1..500 records one PutRecords call put into the shard, and
// their number is gone with them, so the gap is reported by range and
// messages, not by a record count. ToSequence is the last position the
// range can hold, not necessarily a record that existed.
type Gap struct {
	ShardID                  string
	FromSequence, ToSequence string
	Messages                 uint64
}

// ReadShardOptions tune a ShardReader.
type ReadShardOptions struct {
	// Buffer is how many records may wait in the reader. Default 4096.
	Buffer int
	// OnGap, if set, is called when the reader skips positions that no
	// longer exist. The mapping logs and counts them.
	OnGap func(Gap)
	// ConsumerARN, if set, reads through that enhanced fan-out consumer of
	// the stream, as a Lambda mapping on a consumer ARN does: the consumer
	// must be ACTIVE, and the reader holds its subscription lease on the
	// shard (subscribe.go) as SubscribeToShard does. The reader stops
	// after SubscriptionLifetime (no error, no End: open it again where
	// it stopped), with ResourceInUseException when a SubscribeToShard
	// takes the lease over, and with ResourceNotFoundException when the
	// consumer is deregistered.
	ConsumerARN string

	lease *heldLease // ConsumerARN's, once held
}

// ReaderHeartbeat is how often the server tells a shard reader its
// consumer is alive while no record comes. Two missed heartbeats make the
// reader's ordered consumer start again where it was, on the shard's
// current leader. nats.go's default, 5 s for a 30 s pull, left a reader
// whose consumer died with a killed cluster node silent for 10 s before
// it even noticed (issue 13: the pipeline resumed about 30 s after a
// kill). Cost: one small message a second per idle reader.
const ReaderHeartbeat = time.Second

// ReadShard opens a reader on shardID of streamName starting at position
// from (see Position; FirstPosition is the first record ever written, and
// any position past a message's last record starts at the next message).
// Records come on Records() until ctx ends or Stop is called, or, for a
// closed shard, until its last record: then the channel closes and End
// reports the shard's end. Err tells why it stopped otherwise.
func (s *Service) ReadShard(ctx context.Context, streamName, shardID string, from uint64, o ReadShardOptions) (*ShardReader, error) {
	h, sh, err := s.shardOf(ctx, streamName, shardID)
	if err != nil {
		return nil, err
	}
	from = max(from, FirstPosition)
	if o.ConsumerARN != "" {
		l, _, err := s.holdLease(ctx, o.ConsumerARN, streamName, shardID)
		if err != nil {
			return nil, err
		}
		o.ConsumerARN, o.lease = "", l
		r, err := s.ReadShard(ctx, streamName, shardID, from, o)
		if err != nil {
			l.release()
		}
		return r, err
	}
	fromMsg, fromIdx := MessageOf(from)
	if o.Buffer <= 0 {
		o.Buffer = 4096
	}
	if _, _, seal, err := s.msgBounds(ctx, h, sh); err != nil {
		return nil, err
	} else if seal != 0 {
		gone := fromMsg > seal
		if !gone {
			_, err := s.msgAt(ctx, h, sh, seal)
			if gone = errors.Is(err, jetstream.ErrMsgNotFound); gone && o.OnGap != nil {
				// The seal expired, and every record before it with it.
				o.OnGap(Gap{ShardID: shardID, FromSequence: FormatSequenceNumber(h.desc.Numbering(), sh, from),
					ToSequence: FormatSequenceNumber(h.desc.Numbering(), sh, Position(seal, 0)-1), Messages: seal - fromMsg})
			}
		}
		if gone {
			// At or past the end of a closed shard: nothing to read.
			if o.lease != nil {
				o.lease.release()
			}
			r := &ShardReader{records: make(chan Record), cancel: func() {}, done: make(chan struct{}), end: Position(seal, 0)}
			close(r.records)
			close(r.done)
			return r, nil
		}
	}
	cons, err := s.eng.JS.OrderedConsumer(ctx, jsName(h.desc.ID, sh), jetstream.OrderedConsumerConfig{
		DeliverPolicy: jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:   fromMsg,
	})
	if err != nil {
		return nil, awserr.New(awserr.ErrService, "open reader on %s %s: %v", streamName, shardID, err)
	}
	iter, err := cons.Messages(jetstream.PullMaxMessages(2048), jetstream.PullHeartbeat(ReaderHeartbeat))
	if err != nil {
		return nil, awserr.New(awserr.ErrService, "open reader on %s %s: %v", streamName, shardID, err)
	}
	rctx, cancel := context.WithCancel(ctx)
	r := &ShardReader{records: make(chan Record, o.Buffer), cancel: cancel, done: make(chan struct{})}
	go func() {
		<-rctx.Done()
		iter.Stop()
	}()
	leaseDone := r.watchLease(rctx, s, o.lease)
	go func() {
		defer func() {
			if leaseDone != nil {
				cancel()
				<-leaseDone // released before Stop returns
			}
			close(r.done)
		}()
		defer close(r.records)
		expect := fromMsg
		var buf []Record
		for {
			m, err := iter.Next()
			if err != nil {
				if rctx.Err() == nil && !errors.Is(err, jetstream.ErrMsgIteratorClosed) {
					r.setErr(err)
				}
				return
			}
			md, err := m.Metadata()
			if err != nil {
				r.setErr(err)
				return
			}
			q := md.Sequence.Stream
			r.pending.Store(md.NumPending)
			if isSeal(m.Data()) {
				h.seal[sh].Store(q)
				r.mu.Lock()
				r.end = Position(q, 0)
				r.mu.Unlock()
				return
			}
			skip := 0
			if q == fromMsg {
				skip = fromIdx
			}
			if q > expect && o.OnGap != nil {
				start := Position(expect, 0)
				if expect == fromMsg {
					start = from
				}
				o.OnGap(Gap{ShardID: shardID, FromSequence: FormatSequenceNumber(h.desc.Numbering(), sh, start),
					ToSequence: FormatSequenceNumber(h.desc.Numbering(), sh, Position(q, 0)-1), Messages: q - expect})
			}
			expect = q + 1
			buf, err = h.decode(buf[:0], sh, q, m.Data(), skip, maxPerMessage)
			if err != nil {
				r.setErr(fmt.Errorf("%s %s message %d: %w", streamName, shardID, q, err))
				return
			}
			for _, rec := range buf {
				select {
				case r.records <- rec:
				case <-rctx.Done():
					return
				}
			}
		}
	}()
	return r, nil
}

// watchLease ends the reader when it loses its consumer's lease l (with
// the error) or after SubscriptionLifetime, and releases l then; it
// returns a channel closed once l is released (nil without a lease).
func (r *ShardReader) watchLease(ctx context.Context, s *Service, l *heldLease) chan struct{} {
	if l == nil {
		return nil
	}
	done := make(chan struct{})
	lifetime := s.eng.Clock.NewTimer(SubscriptionLifetime)
	go func() {
		defer close(done)
		defer l.release()
		defer lifetime.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-lifetime.Chan():
				r.cancel()
				return
			case e, ok := <-l.watch.Updates():
				if err := l.lost(e, ok); err != nil {
					r.setErr(err)
					r.cancel()
					return
				}
			}
		}
	}()
	return done
}

func (r *ShardReader) setErr(err error) {
	r.mu.Lock()
	r.err = err
	r.mu.Unlock()
}

// Behind reports whether records are waiting that Records has not given
// yet: in the reader's buffer, or stored after the last message it read.
func (r *ShardReader) Behind() bool {
	return len(r.records) > 0 || r.pending.Load() > 0
}

// Records is the channel of records in shard order. It is closed when the
// reader stops.
func (r *ShardReader) Records() <-chan Record { return r.records }

// Stop stops the reader and waits for it to end.
func (r *ShardReader) Stop() {
	r.cancel()
	<-r.done
}

// End returns the end position of the closed shard (the position after
// its last record, Position(seal message, 0)) once the reader delivered
// every record of it and stopped, and false otherwise.
func (r *ShardReader) End() (uint64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.end, r.end != 0
}

// Err returns why the reader stopped, or nil if it was stopped on purpose.
func (r *ShardReader) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// ShardBounds returns the positions of the first retained and the last
// written records of a shard (last < first when it is empty). Positions are
// not dense (see Position): last-first+1 is not a record count.
func (s *Service) ShardBounds(ctx context.Context, streamName, shardID string) (first, last uint64, err error) {
	h, sh, err := s.shardOf(ctx, streamName, shardID)
	if err != nil {
		return 0, 0, err
	}
	return s.bounds(ctx, h, sh)
}

// PositionAtTime returns the position of the first record of the shard
// that arrived at or after t; if none did, a position after the last
// record (where a reader would start to read only newer records).
func (s *Service) PositionAtTime(ctx context.Context, streamName, shardID string, t time.Time) (uint64, error) {
	h, sh, err := s.shardOf(ctx, streamName, shardID)
	if err != nil {
		return 0, err
	}
	m, err := s.msgAtTime(ctx, h, sh, t)
	return Position(m, 0), err
}

// ReadRange returns the records of a shard with positions from..to
// inclusive that are still retained, and how many stored messages of the
// range are gone (each held 1..500 records; see Gap; positions after the
// last record written are not counted). It reads in batched direct gets of
// up to 8 MiB. Recovery tools use it to turn a failure pointer
// (KinesisBatchInfo) back into records.
func (s *Service) ReadRange(ctx context.Context, streamName, shardID string, from, to uint64) (recs []Record, missingMessages uint64, err error) {
	h, sh, err := s.shardOf(ctx, streamName, shardID)
	if err != nil {
		return nil, 0, err
	}
	from = max(from, FirstPosition)
	if to < from {
		return nil, 0, nil
	}
	fromMsg, fromIdx := MessageOf(from)
	toMsg, toIdx := MessageOf(to)
	_, lastMsg, _, err := s.msgBounds(ctx, h, sh)
	if err != nil {
		return nil, 0, err
	}
	end := min(toMsg, lastMsg) // past the last message is not written, not missing
	next := fromMsg
	for next <= end {
		got, err := s.getBatch(ctx, h, sh, next, int(end-next+1), 8<<20, end, func(seq uint64, data []byte) (bool, error) {
			missingMessages += seq - next // trimmed or purged
			lo, hi := 0, maxPerMessage
			if seq == fromMsg {
				lo = fromIdx
			}
			if seq == toMsg {
				hi = toIdx + 1
			}
			var err error
			if recs, err = h.decode(recs, sh, seq, data, lo, hi); err != nil {
				return false, awserr.New(awserr.ErrService, "read shard: %v", err)
			}
			next = seq + 1
			return true, nil
		})
		if err != nil {
			return nil, 0, err
		}
		if got == 0 {
			missingMessages += end - next + 1
			break
		}
	}
	return recs, missingMessages, nil
}

// RangeCount is what a position range of a shard holds (CountRange).
type RangeCount struct {
	// Records is how many records of the range are retained.
	Records uint64
	// MissingMessages is how many stored messages of the range are gone
	// (trimmed by retention or purged); each held 1..500 records, whose
	// number is gone with it (see Gap).
	MissingMessages uint64
	// First and Last are the positions of the first and last retained
	// records of the range (zero when Records is 0).
	First, Last uint64
}

// CountRange counts the records of a shard with positions from..to
// inclusive, reading the range's stored messages (in batches of direct
// gets; no record is decoded beyond its length prefixes).
func (s *Service) CountRange(ctx context.Context, streamName, shardID string, from, to uint64) (RangeCount, error) {
	var c RangeCount
	h, sh, err := s.shardOf(ctx, streamName, shardID)
	if err != nil {
		return c, err
	}
	from = max(from, FirstPosition)
	if to < from {
		return c, nil
	}
	firstMsg, lastMsg, _, err := s.msgBounds(ctx, h, sh)
	if err != nil {
		return c, err
	}
	fromMsg, fromIdx := MessageOf(from)
	toMsg, toIdx := MessageOf(to)
	if fromMsg < firstMsg {
		c.MissingMessages = min(toMsg+1, firstMsg) - fromMsg
		fromMsg, fromIdx = firstMsg, 0
	}
	next := fromMsg
	for next <= min(toMsg, lastMsg) {
		got, err := s.getBatch(ctx, h, sh, next, int(min(toMsg, lastMsg)-next+1), 8<<20, toMsg, func(seq uint64, data []byte) (bool, error) {
			c.MissingMessages += seq - next // purged inside the range
			e, err := openEnvelope(data)
			if err != nil {
				return false, awserr.New(awserr.ErrService, "read shard: %v", err)
			}
			lo, hi := 0, e.count-1
			if seq == fromMsg {
				lo = fromIdx
			}
			if seq == toMsg {
				hi = min(hi, toIdx)
			}
			if lo <= hi {
				if c.Records == 0 {
					c.First = Position(seq, lo)
				}
				c.Records += uint64(hi - lo + 1)
				c.Last = Position(seq, hi)
			}
			next = seq + 1
			return true, nil
		})
		if err != nil {
			return c, err
		}
		if got == 0 {
			c.MissingMessages += min(toMsg, lastMsg) - next + 1 // purged at the end of the range
			break
		}
	}
	return c, nil
}

// GetRecord returns the record at position pos of a shard, or an
// error matching awserr.ErrResourceNotFound if it is gone or not written.
func (s *Service) GetRecord(ctx context.Context, streamName, shardID string, pos uint64) (Record, error) {
	h, sh, err := s.shardOf(ctx, streamName, shardID)
	if err != nil {
		return Record{}, err
	}
	r, err := s.getRecord(ctx, h, sh, pos)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return Record{}, awserr.New(awserr.ErrResourceNotFound, "no record at position %d of %s", pos, shardID)
	}
	return r, err
}

// Numbering returns how a stream writes its sequence numbers
// (FormatSequenceNumber, DecodeSequenceNumber).
func (s *Service) Numbering(ctx context.Context, streamName string) (Numbering, error) {
	h, err := s.handle(ctx, streamName)
	if err != nil {
		return Numbering{}, err
	}
	return h.desc.Numbering(), nil
}

// getBatch reads up to n stored messages of shard sh from message sequence
// seq in one batched direct get (jetstreamext.GetBatch, at most maxBytes,
// none past last) and calls each for them in order until it returns false
// or an error. It returns how many messages it read: 0 means none is left
// at or after seq up to last (purged messages are skipped by the server).
//
// A direct get may be answered by any replica of a replicated stream, one
// that has not applied the latest messages among them: an answer of "no
// message at or after seq" while last (the leader's, from msgBounds) says
// there are is checked with the leader, which has every acknowledged
// message (engine.LeaderMsg), and its message is used. Without that, a
// reader would take the follower's lag for messages gone and skip them.
func (s *Service) getBatch(ctx context.Context, h *handle, sh int, seq uint64, n, maxBytes int, last uint64,
	each func(seq uint64, data []byte) (bool, error)) (int, error) {
	got, err := s.directBatch(ctx, h, sh, seq, n, maxBytes, last, each)
	if got > 0 || err != nil || seq > last {
		return got, err
	}
	m, err := s.eng.LeaderMsg(ctx, jsName(h.desc.ID, sh), seq, true)
	if errors.Is(err, jetstream.ErrMsgNotFound) || (err == nil && m.Sequence > last) {
		return 0, nil // gone (trimmed or purged) up to last
	}
	if err != nil {
		return 0, awserr.New(awserr.ErrService, "read shard: %v", err)
	}
	_, err = each(m.Sequence, m.Data)
	return 1, err
}

// directBatch is getBatch's batched direct get.
func (s *Service) directBatch(ctx context.Context, h *handle, sh int, seq uint64, n, maxBytes int, last uint64,
	each func(seq uint64, data []byte) (bool, error)) (int, error) {
	if s.staleReads != nil && s.staleReads() {
		return 0, nil
	}
	msgs, err := jetstreamext.GetBatch(ctx, s.eng.JS, jsName(h.desc.ID, sh), n,
		jetstreamext.GetBatchSeq(seq), jetstreamext.GetBatchMaxBytes(maxBytes))
	if errors.Is(err, nats.ErrNoResponders) {
		return 0, nil // no replica answers (an election): getBatch asks the leader, waiting for one
	}
	if err != nil {
		return 0, awserr.New(awserr.ErrService, "read shard: %v", err)
	}
	got := 0
	for m, err := range msgs {
		if err != nil {
			if errors.Is(err, jetstreamext.ErrNoMessages) || (got == 0 && errors.Is(err, nats.ErrNoResponders)) {
				break
			}
			return got, awserr.New(awserr.ErrService, "read shard: %v", err)
		}
		if m.Sequence > last {
			break
		}
		got++
		more, err := each(m.Sequence, m.Data)
		if err != nil || !more {
			return got, err
		}
	}
	return got, nil
}
