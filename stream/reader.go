package stream

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

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
}

// Gap reports records that expired (retention) or were purged before a
// reader reached them: positions From..To of the shard were never read.
type Gap struct {
	ShardID                  string
	FromSequence, ToSequence string
	Count                    uint64
}

// ReadShardOptions tune a ShardReader.
type ReadShardOptions struct {
	// Buffer is how many records may wait in the reader. Default 4096.
	Buffer int
	// OnGap, if set, is called when the reader skips positions that no
	// longer exist. The mapping logs and counts them.
	OnGap func(Gap)
}

// ReadShard opens a reader on shardID of streamName starting at log
// position from (1 is the first record ever written). Records come on
// Records() until ctx ends or Stop is called; Err tells why it stopped.
func (s *Service) ReadShard(ctx context.Context, streamName, shardID string, from uint64, o ReadShardOptions) (*ShardReader, error) {
	h, err := s.handle(ctx, streamName)
	if err != nil {
		return nil, err
	}
	sh, err := parseShardID(shardID, len(h.shards))
	if err != nil {
		return nil, err
	}
	if from < 1 {
		from = 1
	}
	if o.Buffer <= 0 {
		o.Buffer = 4096
	}
	cons, err := s.eng.JS.OrderedConsumer(ctx, jsName(h.desc.ID, sh), jetstream.OrderedConsumerConfig{
		DeliverPolicy: jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:   from,
	})
	if err != nil {
		return nil, awserr.New(awserr.ErrService, "open reader on %s %s: %v", streamName, shardID, err)
	}
	iter, err := cons.Messages(jetstream.PullMaxMessages(2048))
	if err != nil {
		return nil, awserr.New(awserr.ErrService, "open reader on %s %s: %v", streamName, shardID, err)
	}
	rctx, cancel := context.WithCancel(ctx)
	r := &ShardReader{records: make(chan Record, o.Buffer), cancel: cancel, done: make(chan struct{})}
	go func() {
		<-rctx.Done()
		iter.Stop()
	}()
	go func() {
		defer close(r.done)
		defer close(r.records)
		expect := from
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
			if q > expect && o.OnGap != nil {
				o.OnGap(Gap{ShardID: shardID, FromSequence: FormatSequenceNumber(h.desc.Epoch, sh, expect),
					ToSequence: FormatSequenceNumber(h.desc.Epoch, sh, q-1), Count: q - expect})
			}
			expect = q + 1
			rec, err := h.decode(sh, q, m.Data())
			if err != nil {
				r.setErr(fmt.Errorf("%s %s position %d: %w", streamName, shardID, q, err))
				return
			}
			select {
			case r.records <- rec:
			case <-rctx.Done():
				return
			}
		}
	}()
	return r, nil
}

func (r *ShardReader) setErr(err error) {
	r.mu.Lock()
	r.err = err
	r.mu.Unlock()
}

// Records is the channel of records in shard order. It is closed when the
// reader stops.
func (r *ShardReader) Records() <-chan Record { return r.records }

// Stop stops the reader and waits for it to end.
func (r *ShardReader) Stop() {
	r.cancel()
	<-r.done
}

// Err returns why the reader stopped, or nil if it was stopped on purpose.
func (r *ShardReader) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// ShardBounds returns the first retained and last written log positions of
// a shard (last = first-1 when it is empty).
func (s *Service) ShardBounds(ctx context.Context, streamName, shardID string) (first, last uint64, err error) {
	h, err := s.handle(ctx, streamName)
	if err != nil {
		return 0, 0, err
	}
	sh, err := parseShardID(shardID, len(h.shards))
	if err != nil {
		return 0, 0, err
	}
	return s.bounds(ctx, h, sh)
}

// PositionAtTime returns the log position of the first record of the shard
// that arrived at or after t (ShardBounds' last+1 if none did).
func (s *Service) PositionAtTime(ctx context.Context, streamName, shardID string, t time.Time) (uint64, error) {
	h, err := s.handle(ctx, streamName)
	if err != nil {
		return 0, err
	}
	sh, err := parseShardID(shardID, len(h.shards))
	if err != nil {
		return 0, err
	}
	return s.seqAtTime(ctx, h, sh, t)
}

// ReadRange returns the records of a shard with log positions from..to
// inclusive that are still retained, and how many of the range are gone.
// Recovery tools use it to turn a failure pointer (KinesisBatchInfo) back
// into records.
func (s *Service) ReadRange(ctx context.Context, streamName, shardID string, from, to uint64) (recs []Record, missing uint64, err error) {
	h, err := s.handle(ctx, streamName)
	if err != nil {
		return nil, 0, err
	}
	sh, err := parseShardID(shardID, len(h.shards))
	if err != nil {
		return nil, 0, err
	}
	for q := from; q <= to; q++ {
		r, err := s.getRecord(ctx, h, sh, q)
		if err != nil {
			if errors.Is(err, jetstream.ErrMsgNotFound) {
				missing++
				continue
			}
			return nil, 0, awserr.New(awserr.ErrService, "read shard: %v", err)
		}
		recs = append(recs, r)
	}
	return recs, missing, nil
}

// GetRecord returns the record at log position pos of a shard, or an
// error matching awserr.ErrResourceNotFound if it is gone or not written.
func (s *Service) GetRecord(ctx context.Context, streamName, shardID string, pos uint64) (Record, error) {
	h, err := s.handle(ctx, streamName)
	if err != nil {
		return Record{}, err
	}
	sh, err := parseShardID(shardID, len(h.shards))
	if err != nil {
		return Record{}, err
	}
	r, err := s.getRecord(ctx, h, sh, pos)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return Record{}, awserr.New(awserr.ErrResourceNotFound, "no record at position %d of %s", pos, shardID)
	}
	return r, err
}

// Epoch returns the sequence-number prefix of a stream (see Record).
func (s *Service) Epoch(ctx context.Context, streamName string) (int64, error) {
	h, err := s.handle(ctx, streamName)
	if err != nil {
		return 0, err
	}
	return h.desc.Epoch, nil
}
