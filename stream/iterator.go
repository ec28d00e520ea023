package stream

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/synadia-io/orbit.go/jetstreamext"

	"github.com/runnel-dev/runnel/awserr"
)

// Shard iterator types (API_GetShardIterator.ShardIteratorType).
const (
	AtSequenceNumber    = "AT_SEQUENCE_NUMBER"
	AfterSequenceNumber = "AFTER_SEQUENCE_NUMBER"
	TrimHorizon         = "TRIM_HORIZON"
	Latest              = "LATEST"
	AtTimestamp         = "AT_TIMESTAMP"
)

// GetShardIteratorInput is the input of GetShardIterator.
type GetShardIteratorInput struct {
	StreamName string
	ShardID    string
	// ShardIteratorType: AT_SEQUENCE_NUMBER, AFTER_SEQUENCE_NUMBER,
	// TRIM_HORIZON, LATEST or AT_TIMESTAMP.
	ShardIteratorType string
	// StartingSequenceNumber is required with AT_ and AFTER_SEQUENCE_NUMBER.
	StartingSequenceNumber string
	// Timestamp is required with AT_TIMESTAMP: the iterator starts at the
	// first record that arrived at or after it.
	Timestamp time.Time
}

// iterator is the decoded form of a shard iterator token. Tokens are
// opaque to callers and valid for IteratorLifetime.
type iterator struct {
	Stream string `json:"s"`
	ID     string `json:"i"`
	Shard  int    `json:"h"`
	Next   uint64 `json:"q"` // next log position to read
	Issued int64  `json:"t"` // Unix ms
}

func (it iterator) encode() string {
	b, _ := json.Marshal(it)
	return base64.RawURLEncoding.EncodeToString(b)
}

// GetShardIterator returns an iterator token positioned as asked
// (API_GetShardIterator). TRIM_HORIZON starts at the oldest record still
// retained; LATEST just after the newest, so only records put afterwards are
// read. A sequence number older than the trim horizon yields an iterator at
// the trim horizon.
func (s *Service) GetShardIterator(ctx context.Context, in GetShardIteratorInput) (string, error) {
	h, err := s.handle(ctx, in.StreamName)
	if err != nil {
		return "", err
	}
	sh, err := parseShardID(in.ShardID, len(h.shards))
	if err != nil {
		return "", err
	}
	next, err := s.position(ctx, h, sh, in)
	if err != nil {
		return "", err
	}
	return iterator{Stream: in.StreamName, ID: h.desc.ID, Shard: sh, Next: next, Issued: s.eng.Clock.Now().UnixMilli()}.encode(), nil
}

// position resolves an iterator type to the next log position to read.
func (s *Service) position(ctx context.Context, h *handle, sh int, in GetShardIteratorInput) (uint64, error) {
	first, last, err := s.bounds(ctx, h, sh)
	if err != nil {
		return 0, err
	}
	switch in.ShardIteratorType {
	case TrimHorizon:
		return first, nil
	case Latest:
		return last + 1, nil
	case AtSequenceNumber, AfterSequenceNumber:
		if in.StartingSequenceNumber == "" {
			return 0, invalidArg("StartingSequenceNumber is required with ShardIteratorType %s", in.ShardIteratorType)
		}
		q, err := ParseSequenceNumber("StartingSequenceNumber", h.desc.Epoch, sh, in.StartingSequenceNumber)
		if err != nil {
			return 0, err
		}
		if in.ShardIteratorType == AfterSequenceNumber {
			q++
		}
		return max(q, first), nil
	case AtTimestamp:
		if in.Timestamp.IsZero() {
			return 0, invalidArg("Timestamp is required with ShardIteratorType AT_TIMESTAMP")
		}
		return s.seqAtTime(ctx, h, sh, in.Timestamp)
	default:
		return 0, invalidArg("ShardIteratorType: %q must be one of AT_SEQUENCE_NUMBER, AFTER_SEQUENCE_NUMBER, TRIM_HORIZON, LATEST, AT_TIMESTAMP", in.ShardIteratorType)
	}
}

// bounds returns the first retained and the last written log positions of a
// shard; an empty shard has last = first-1.
func (s *Service) bounds(ctx context.Context, h *handle, sh int) (first, last uint64, err error) {
	info, err := h.shards[sh].Info(ctx)
	if err != nil {
		return 0, 0, awserr.New(awserr.ErrService, "shard info: %v", err)
	}
	first, last = info.State.FirstSeq, info.State.LastSeq
	if first == 0 {
		first = 1
	}
	return first, last, nil
}

// getRecord reads the record at log position q, or returns
// jetstream.ErrMsgNotFound.
func (s *Service) getRecord(ctx context.Context, h *handle, sh int, q uint64) (Record, error) {
	m, err := h.shards[sh].GetMsg(ctx, q)
	if err != nil {
		return Record{}, err
	}
	return h.decode(sh, q, m.Data)
}

func (h *handle) decode(sh int, q uint64, b []byte) (Record, error) {
	ms, pk, data, err := decodeEnvelope(b)
	if err != nil {
		return Record{}, err
	}
	return Record{
		SequenceNumber:              FormatSequenceNumber(h.desc.Epoch, sh, q),
		ApproximateArrivalTimestamp: time.UnixMilli(ms).UTC(),
		Data:                        data,
		PartitionKey:                pk,
		ShardID:                     h.shardIDs[sh],
		Seq:                         q,
	}, nil
}

// seqAtTime returns the position of the first record of the shard that
// arrived at or after t (last+1 if none), by binary search over arrival
// times, which increase with position.
func (s *Service) seqAtTime(ctx context.Context, h *handle, sh int, t time.Time) (uint64, error) {
	first, last, err := s.bounds(ctx, h, sh)
	if err != nil {
		return 0, err
	}
	lo, hi := first, last+1
	for lo < hi {
		mid := lo + (hi-lo)/2
		r, err := s.getRecord(ctx, h, sh, mid)
		if err != nil {
			if errors.Is(err, jetstream.ErrMsgNotFound) { // trimmed meanwhile
				lo = mid + 1
				continue
			}
			return 0, awserr.New(awserr.ErrService, "read shard: %v", err)
		}
		if r.ApproximateArrivalTimestamp.Before(t) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo, nil
}

// GetRecordsOutput is the result of GetRecords (API_GetRecords).
type GetRecordsOutput struct {
	Records []Record
	// NextShardIterator continues after the last returned record.
	NextShardIterator string
	// MillisBehindLatest is how far the response is from the tip of the
	// shard: 0 when no more records are waiting, else the age of the next
	// unread record.
	MillisBehindLatest int64
}

// GetRecords reads up to limit records (1..10000; 0 means 10000) from a
// shard iterator, at most 10 MiB (API_GetRecords). An iterator older than 5
// minutes fails with ErrExpiredIterator.
func (s *Service) GetRecords(ctx context.Context, shardIterator string, limit int) (*GetRecordsOutput, error) {
	if limit == 0 {
		limit = MaxGetRecordsLimit
	}
	if limit < 1 || limit > MaxGetRecordsLimit {
		return nil, awserr.OutOfRange(awserr.ErrInvalidArgument, "Limit", limit, 1, MaxGetRecordsLimit)
	}
	raw, err := base64.RawURLEncoding.DecodeString(shardIterator)
	var it iterator
	if err == nil {
		err = json.Unmarshal(raw, &it)
	}
	if err != nil || it.Stream == "" {
		return nil, invalidArg("ShardIterator: not a valid shard iterator")
	}
	now := s.eng.Clock.Now()
	if now.Sub(time.UnixMilli(it.Issued)) > IteratorLifetime {
		return nil, awserr.New(awserr.ErrExpiredIterator, "Iterator expired. The iterator was created at time %s while right now it is %s which is further in the future than the tolerated delay of 300000 milliseconds.",
			time.UnixMilli(it.Issued).UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	h, err := s.handle(ctx, it.Stream)
	if err != nil {
		return nil, err
	}
	if h.desc.ID != it.ID {
		return nil, awserr.New(awserr.ErrResourceNotFound, "ShardIterator: stream %s was deleted", it.Stream)
	}
	if it.Shard < 0 || it.Shard >= len(h.shards) {
		return nil, invalidArg("ShardIterator: not a valid shard iterator")
	}
	first, last, err := s.bounds(ctx, h, it.Shard)
	if err != nil {
		return nil, err
	}
	q := max(it.Next, first)
	out := &GetRecordsOutput{}
	size := 0
	// Read in batched direct gets (jetstreamext.GetBatch) rather than one
	// request per record: one request for the whole page (up to limit
	// records and about the 10 MiB cap, which MaxBytes bounds), another
	// only when a record was missing or the server stopped at MaxBytes.
	// Each batch is a request/reply round trip with its own reply
	// subscription; batches of 1,000 made a full page ten of them.
	out.Records = make([]Record, 0, min(limit, int(last-min(q, last+1)+1)))
read:
	for q <= last && len(out.Records) < limit && size < 10<<20 {
		n := min(limit-len(out.Records), int(last-q+1))
		msgs, err := jetstreamext.GetBatch(ctx, s.eng.JS, jsName(h.desc.ID, it.Shard), n,
			jetstreamext.GetBatchSeq(q), jetstreamext.GetBatchMaxBytes(10<<20-size+1<<16))
		if err != nil {
			return nil, awserr.New(awserr.ErrService, "read shard: %v", err)
		}
		got := 0
		for m, err := range msgs {
			if err != nil {
				if errors.Is(err, jetstreamext.ErrNoMessages) {
					break
				}
				return nil, awserr.New(awserr.ErrService, "read shard: %v", err)
			}
			if m.Sequence > last {
				break
			}
			r, err := h.decode(it.Shard, m.Sequence, m.Data)
			if err != nil {
				return nil, awserr.New(awserr.ErrService, "read shard: %v", err)
			}
			if len(out.Records) > 0 && size+len(r.Data)+len(r.PartitionKey) > 10<<20 {
				q = m.Sequence // the next call starts with this record
				break read
			}
			out.Records = append(out.Records, r)
			size += len(r.Data) + len(r.PartitionKey)
			q = m.Sequence + 1
			got++
			if len(out.Records) >= limit {
				break
			}
		}
		if got == 0 {
			q = last + 1 // nothing left at or after q
		}
	}
	if q <= last {
		if r, err := s.getRecord(ctx, h, it.Shard, q); err == nil {
			out.MillisBehindLatest = max(0, now.Sub(r.ApproximateArrivalTimestamp).Milliseconds())
		}
	}
	it.Next, it.Issued = q, now.UnixMilli()
	out.NextShardIterator = it.encode()
	return out, nil
}
