package stream

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/engine"
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
	Next   uint64 `json:"q"` // next position to read (see Position)
	Issued int64  `json:"t"` // Unix ms
}

func (it iterator) encode() string {
	b, _ := json.Marshal(it)
	return base64.RawURLEncoding.EncodeToString(b)
}

// IteratorShardIndex returns the index of the shard a shard iterator
// token reads (ok false for a token that does not decode). For wrappers
// of the token (the DynamoDB Streams API's iterators) that need the shard
// of one they did not record it in.
func IteratorShardIndex(token string) (int, bool) {
	raw, err := base64.RawURLEncoding.DecodeString(token)
	var it iterator
	if err != nil || json.Unmarshal(raw, &it) != nil || it.Stream == "" {
		return 0, false
	}
	return it.Shard, true
}

// GetShardIterator returns an iterator token positioned as asked
// (API_GetShardIterator). TRIM_HORIZON starts at the oldest record still
// retained; LATEST just after the newest, so only records put afterwards are
// read. A sequence number older than the trim horizon yields an iterator at
// the trim horizon. A StartingSequenceNumber of another shard, of another
// stream (or an earlier stream of the same name), or no sequence number at
// all fails with InvalidArgumentException in Kinesis's words (see
// parseStartingSequenceNumber).
func (s *Service) GetShardIterator(ctx context.Context, in GetShardIteratorInput) (string, error) {
	h, sh, err := s.shardOf(ctx, in.StreamName, in.ShardID)
	if err != nil {
		return "", err
	}
	next, err := s.position(ctx, h, sh, in)
	if err != nil {
		return "", err
	}
	return iterator{Stream: in.StreamName, ID: h.desc.ID, Shard: sh, Next: next, Issued: s.eng.Clock.Now().UnixMilli()}.encode(), nil
}

// position resolves an iterator type to the next position to read.
func (s *Service) position(ctx context.Context, h *handle, sh int, in GetShardIteratorInput) (uint64, error) {
	firstMsg, lastMsg, _, err := s.msgBounds(ctx, h, sh)
	if err != nil {
		return 0, err
	}
	switch in.ShardIteratorType {
	case TrimHorizon:
		return Position(firstMsg, 0), nil
	case Latest:
		return Position(lastMsg+1, 0), nil
	case AtSequenceNumber, AfterSequenceNumber:
		if in.StartingSequenceNumber == "" {
			return 0, invalidArg("StartingSequenceNumber is required with ShardIteratorType %s", in.ShardIteratorType)
		}
		q, err := parseStartingSequenceNumber(h.desc.Numbering(), sh, in.StartingSequenceNumber, h.desc.StreamName, s.eng.AccountID())
		if err != nil {
			return 0, err
		}
		if in.ShardIteratorType == AfterSequenceNumber {
			q++
		}
		return max(q, Position(firstMsg, 0)), nil
	case AtTimestamp:
		if in.Timestamp.IsZero() {
			return 0, invalidArg("Timestamp is required with ShardIteratorType AT_TIMESTAMP")
		}
		m, err := s.msgAtTime(ctx, h, sh, in.Timestamp)
		return Position(m, 0), err
	default:
		return 0, invalidArg("ShardIteratorType: %q must be one of AT_SEQUENCE_NUMBER, AFTER_SEQUENCE_NUMBER, TRIM_HORIZON, LATEST, AT_TIMESTAMP", in.ShardIteratorType)
	}
}

// msgBounds returns the JetStream sequences of the first retained and the
// last written messages of a shard that may hold records; an empty shard
// has last = first-1. seal is the sequence of the shard's seal message
// once the shard is closed (then last < seal), 0 while it is open.
func (s *Service) msgBounds(ctx context.Context, h *handle, sh int) (first, last, seal uint64, err error) {
	info, err := engine.AskAgain(ctx, func(c context.Context) (*jetstream.StreamInfo, error) { return h.shards[sh].Info(c) })
	if err != nil {
		return 0, 0, 0, awserr.New(awserr.ErrService, "shard info: %v", err)
	}
	first, last = info.State.FirstSeq, info.State.LastSeq
	if first == 0 {
		first = 1
	}
	seal = s.sealOf(ctx, h, sh, info.Config.Metadata)
	if seal != 0 {
		last = min(last, seal-1)
		first = min(first, seal)
	}
	return first, last, seal, nil
}

// msgAt reads stored message seq of shard sh: by a direct get, and when
// that answers "not found", from the stream's leader (a follower that has
// not applied the message yet may have answered; see getBatch). The error
// is jetstream.ErrMsgNotFound only when the leader has no such message.
func (s *Service) msgAt(ctx context.Context, h *handle, sh int, seq uint64) (*jetstream.RawStreamMsg, error) {
	var m *jetstream.RawStreamMsg
	var err error = jetstream.ErrMsgNotFound
	if s.staleReads == nil || !s.staleReads() {
		m, err = h.shards[sh].GetMsg(ctx, seq)
	}
	if !errors.Is(err, jetstream.ErrMsgNotFound) && !errors.Is(err, nats.ErrNoResponders) {
		return m, err
	}
	return s.eng.LeaderMsg(ctx, jsName(h.desc.ID, sh), seq, false) // waits out an election
}

// bounds returns the positions of the first retained and the last written
// records of a shard; an empty shard has last = first-1. The last one
// costs a read of the last message (to count its records).
func (s *Service) bounds(ctx context.Context, h *handle, sh int) (first, last uint64, err error) {
	firstMsg, lastMsg, _, err := s.msgBounds(ctx, h, sh)
	if err != nil {
		return 0, 0, err
	}
	first = Position(firstMsg, 0)
	for m := lastMsg; m >= firstMsg; m-- {
		msg, err := s.msgAt(ctx, h, sh, m)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue // purged meanwhile
		}
		if err != nil {
			return 0, 0, awserr.New(awserr.ErrService, "read shard: %v", err)
		}
		e, err := openEnvelope(msg.Data)
		if err != nil {
			return 0, 0, awserr.New(awserr.ErrService, "read shard: %v", err)
		}
		if e.count == 0 {
			continue
		}
		return first, Position(m, e.count-1), nil
	}
	return first, first - 1, nil
}

// getRecord reads the record at position q, or returns
// jetstream.ErrMsgNotFound.
func (s *Service) getRecord(ctx context.Context, h *handle, sh int, q uint64) (Record, error) {
	msg, idx := MessageOf(q)
	m, err := s.msgAt(ctx, h, sh, msg)
	if err != nil {
		return Record{}, err
	}
	recs, err := h.decode(nil, sh, msg, m.Data, idx, idx+1)
	if err != nil {
		return Record{}, err
	}
	if len(recs) == 0 {
		return Record{}, jetstream.ErrMsgNotFound
	}
	return recs[0], nil
}

// decode appends the records with indexes from..to-1 of the stored message
// with sequence msg to dst (fewer when the message holds fewer). Data
// aliases b. The keys and the sequence numbers of the message's records
// are copied into one string each, which the records' PartitionKey and
// SequenceNumber are substrings of: two allocations per message rather
// than two per record (a GetRecords page holds up to 10,000 records).
func (h *handle) decode(dst []Record, sh int, msg uint64, b []byte, from, to int) ([]Record, error) {
	e, err := openEnvelope(b)
	if err != nil {
		return dst, err
	}
	to = min(to, e.count)
	if from >= to {
		return dst, nil
	}
	at := time.UnixMilli(e.arrivalMs).UTC()
	var keyEnds [maxPerMessage]int32
	var keyBuf [4096]byte
	keys := keyBuf[:0]
	start := len(dst)
	for k := 0; k < to; k++ {
		pk, data, err := e.next()
		if err != nil {
			return dst[:start], err
		}
		if k < from {
			continue
		}
		keys = append(keys, pk...)
		keyEnds[k-from] = int32(len(keys))
		dst = append(dst, Record{ApproximateArrivalTimestamp: at, Data: data, ShardID: h.shardIDs[sh], Seq: Position(msg, k)})
	}
	allKeys := string(keys)
	seqs := h.sequenceNumbers(sh, msg, from, to)
	w := len(seqs) / (to - from)
	off := 0
	for i := range dst[start:] {
		r := &dst[start+i]
		r.PartitionKey = allKeys[off:keyEnds[i]]
		off = int(keyEnds[i])
		r.SequenceNumber = seqs[i*w : (i+1)*w]
	}
	return dst, nil
}

// sequenceNumbers returns the sequence numbers of indexes from..to-1 of
// message msg of shard sh, concatenated: all of a stream's have the same
// width (FormatSequenceNumber).
func (h *handle) sequenceNumbers(sh int, msg uint64, from, to int) string {
	var buf [4096]byte
	b := buf[:0]
	for k := from; k < to; k++ {
		b = AppendSequenceNumber(b, h.desc.Numbering(), sh, Position(msg, k))
	}
	return string(b)
}

// msgAtTime returns the sequence of the first message of the shard that
// arrived at or after t (the last message's + 1 if none), by binary search
// over arrival times, then a look back (lookBackAtTime). All the records
// of a message arrived together.
//
// Trap: arrival times only mostly increase with the sequence. A put
// stamps its records before it publishes them, and concurrent puts
// publish on different connections, so a shard may store a message of
// 109 ms before one of 108 ms. The binary search alone could land past a
// message that arrived at or after t, and AT_TIMESTAMP skipped it.
func (s *Service) msgAtTime(ctx context.Context, h *handle, sh int, t time.Time) (uint64, error) {
	first, _, _, err := s.msgBounds(ctx, h, sh)
	if err != nil {
		return 0, err
	}
	lo, err := s.searchAtTime(ctx, h, sh, t)
	if err != nil {
		return 0, err
	}
	// Look back over the messages stored just before lo: while they
	// arrived within arrivalDisorder of t, one at or after t may be among
	// them (at most lookBackAtTime messages: the disorder is of the
	// publishes in flight at once).
	found := lo
	for q, n := lo, 0; q > first && n < lookBackAtTime; n++ {
		q--
		m, err := s.msgAt(ctx, h, sh, q)
		if err != nil {
			if errors.Is(err, jetstream.ErrMsgNotFound) { // trimmed meanwhile
				break
			}
			return 0, awserr.New(awserr.ErrService, "read shard: %v", err)
		}
		e, err := openEnvelope(m.Data)
		if err != nil {
			continue // a seal
		}
		at := time.UnixMilli(e.arrivalMs)
		if at.Before(t.Add(-arrivalDisorder)) {
			break
		}
		if !at.Before(t) {
			found = q
		}
	}
	return found, nil
}

// arrivalDisorder and lookBackAtTime bound msgAtTime's look back: how much
// earlier than an earlier-stored message a message may be stamped, and
// how many messages it reads at most.
const (
	arrivalDisorder = time.Second
	lookBackAtTime  = 512
)

// searchAtTime is msgAtTime's binary search, which takes the arrival times
// as increasing with the sequence.
func (s *Service) searchAtTime(ctx context.Context, h *handle, sh int, t time.Time) (uint64, error) {
	first, last, _, err := s.msgBounds(ctx, h, sh)
	if err != nil {
		return 0, err
	}
	lo, hi := first, last+1
	for lo < hi {
		mid := lo + (hi-lo)/2
		m, err := s.msgAt(ctx, h, sh, mid)
		if err != nil {
			if errors.Is(err, jetstream.ErrMsgNotFound) { // trimmed meanwhile
				lo = mid + 1
				continue
			}
			return 0, awserr.New(awserr.ErrService, "read shard: %v", err)
		}
		e, err := openEnvelope(m.Data)
		if err != nil {
			return 0, awserr.New(awserr.ErrService, "read shard: %v", err)
		}
		if time.UnixMilli(e.arrivalMs).Before(t) {
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
	// NextShardIterator continues after the last returned record. It is
	// empty (null on the wire) once the reader reached the end of a closed
	// shard: continue with ChildShards.
	NextShardIterator string
	// ChildShards are the shards that took over the closed shard's hash
	// keys, given only with the shard's end (API_ChildShard).
	ChildShards []ChildShard
	// MillisBehindLatest is how far the response is from the tip of the
	// shard: 0 when no more records are waiting, else the age of the next
	// unread record.
	MillisBehindLatest int64
}

// GetRecords reads up to limit records (1..10000; 0 means 10000) from a
// shard iterator, at most 10 MiB (API_GetRecords). An iterator older than 5
// minutes fails with ErrExpiredIterator. Each Record's Data is the
// caller's own copy: changing it changes no stored record, nor what any
// later read returns (the process's tail cache stays untouched).
func (s *Service) GetRecords(ctx context.Context, shardIterator string, limit int) (*GetRecordsOutput, error) {
	var recs []Record
	out, err := s.GetRecordsFunc(ctx, shardIterator, limit, func(r *PageRecord) {
		recs = append(recs, Record{
			SequenceNumber:              string(r.AppendSequenceNumber(nil)),
			ApproximateArrivalTimestamp: time.UnixMilli(r.ArrivalMs).UTC(),
			Data:                        bytes.Clone(r.Data), // r.Data may be the shared tail cache's
			PartitionKey:                string(r.PartitionKey),
			ShardID:                     r.ShardID,
			Seq:                         r.Seq,
		})
	})
	if err != nil {
		return nil, err
	}
	out.Records = recs
	if out.Records == nil && out.NextShardIterator == "" {
		out.Records = []Record{} // the end of a closed shard
	}
	return out, nil
}

// PageRecord is a record of a GetRecords page as GetRecordsFunc hands it
// over: the fields of Record without their copies. PartitionKey and Data
// alias the stored message; they and the PageRecord are valid only during
// the call.
type PageRecord struct {
	// Seq is the record's position (see Position).
	Seq uint64
	// ArrivalMs is ApproximateArrivalTimestamp in Unix milliseconds.
	ArrivalMs    int64
	PartitionKey []byte
	Data         []byte
	ShardID      string
	numbering    Numbering
	shard        int
	// seqText is the SequenceNumber of position seqOf, kept from one
	// record to the next of the page (AppendSequenceNumber).
	seqText []byte
	seqOf   uint64
}

// AppendSequenceNumber appends the record's SequenceNumber to b. The
// records of one stored message have consecutive positions: the text of
// the previous record's number is kept and counted up by one in decimal
// (its last 20 digits are the position, zero-padded), rather than
// formatted again.
func (r *PageRecord) AppendSequenceNumber(b []byte) []byte {
	switch {
	case r.seqText != nil && r.Seq == r.seqOf:
	case r.seqText != nil && r.Seq == r.seqOf+1 && r.Seq != 0:
		for i := len(r.seqText) - 1; ; i-- {
			if r.seqText[i] != '9' {
				r.seqText[i]++
				break
			}
			r.seqText[i] = '0'
		}
	default:
		r.seqText = AppendSequenceNumber(r.seqText[:0], r.numbering, r.shard, r.Seq)
	}
	r.seqOf = r.Seq
	return append(b, r.seqText...)
}

// GetRecordsFunc is GetRecords handing each record of the page to each,
// in order, instead of collecting them: out.Records is nil. The endpoint
// writes GetRecords' response this way, a record at a time as it is read,
// without building a Record (two strings) per record. The rules, limits
// and errors are GetRecords'.
func (s *Service) GetRecordsFunc(ctx context.Context, shardIterator string, limit int, each func(r *PageRecord)) (*GetRecordsOutput, error) {
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
		return nil, invalidArg("Invalid ShardIterator.") // Kinesis's words
	}
	now := s.eng.Clock.Now()
	life := IteratorLifetime
	if s.keep {
		life = LogIteratorLifetime
	}
	if now.Sub(time.UnixMilli(it.Issued)) > life {
		return nil, awserr.New(awserr.ErrExpiredIterator, "Iterator expired. The iterator was created at time %s while right now it is %s which is further in the future than the tolerated delay of %d milliseconds.",
			time.UnixMilli(it.Issued).UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339), life.Milliseconds())
	}
	// An iterator of a stream deleted (or deleted and created again)
	// names its shard, as Kinesis does.
	gone := awserr.New(awserr.ErrResourceNotFound, "Shard %s in stream %s under account %s does not exist", ShardID(it.Shard), it.Stream, s.eng.AccountID())
	h, err := s.handle(ctx, it.Stream)
	if err == nil && (h.desc.ID != it.ID || it.Shard < 0 || it.Shard >= len(h.shards) || h.shards[it.Shard] == nil) {
		// The iterator may name what another process made after this one
		// cached the stream (a child shard of a reshard, or the stream
		// created again): read the description again, once, as shardOf
		// does.
		s.Forget(it.Stream)
		h, err = s.handle(ctx, it.Stream)
	}
	if errors.Is(err, awserr.ErrResourceNotFound) {
		return nil, gone
	}
	if err != nil {
		return nil, err
	}
	if h.desc.ID != it.ID {
		return nil, gone
	}
	if it.Shard < 0 || it.Shard >= len(h.shards) || h.shards[it.Shard] == nil {
		return nil, invalidArg("ShardIterator: not a valid shard iterator")
	}
	firstMsg, lastMsg, seal, err := s.msgBounds(ctx, h, it.Shard)
	if err != nil {
		return nil, err
	}
	q := max(it.Next, Position(firstMsg, 0))
	out := &GetRecordsOutput{}
	// Read in batched direct gets (jetstreamext.GetBatch) rather than one
	// request per message: one request for about the messages the page
	// needs (estimated from the shard's records per message so far) and
	// about the 10 MiB cap (which MaxBytes bounds), another only when the
	// estimate fell short.
	perMsg := max(1, int(h.perMsg[it.Shard].Load()))
	var msgsRead, recsRead int
	count, size := 0, 0
	full := false // the page ended inside a message
	r := PageRecord{ShardID: h.shardIDs[it.Shard], numbering: h.desc.Numbering(), shard: it.Shard}
	// visit hands the records of the stored message seq (body data) from
	// position q on to each, until the page is full, and moves q past
	// them; it reports whether the page has room for more.
	visit := func(seq uint64, data []byte) (bool, error) {
		from := 0
		if msg, idx := MessageOf(q); seq == msg {
			from = idx
		}
		e, err := openEnvelope(data)
		if err != nil {
			return false, awserr.New(awserr.ErrService, "read shard: %v", err)
		}
		msgsRead++
		recsRead += e.count
		r.ArrivalMs = e.arrivalMs
		for k := 0; k < e.count; k++ {
			pk, d, err := e.next()
			if err != nil {
				return false, awserr.New(awserr.ErrService, "read shard: %v", err)
			}
			if k < from {
				continue
			}
			// Keep the page within limit and 10 MiB (the first record
			// always goes): the records past either stay for the next
			// call.
			rs := len(d) + len(pk)
			if count >= limit || (count > 0 && size+rs > 10<<20) {
				q = Position(seq, k)
				full = true
				return false, nil
			}
			size += rs
			count++
			r.Seq, r.PartitionKey, r.Data = Position(seq, k), pk, d
			each(&r)
		}
		q = Position(seq+1, 0)
		return count < limit, nil
	}
	for !full {
		msg, _ := MessageOf(q)
		if msg > lastMsg || count >= limit || size >= 10<<20 {
			break
		}
		if body, ok := s.tail.get(h.desc.ID, it.Shard, msg); ok {
			if _, err := visit(msg, body); err != nil {
				return nil, err
			}
			continue
		}
		need := limit - count
		n := int(min(uint64((need+perMsg-1)/perMsg+1), lastMsg-msg+1))
		got, err := s.getBatch(ctx, h, it.Shard, msg, n, 10<<20-size+1<<16, lastMsg, visit)
		if err != nil {
			return nil, err
		}
		if got == 0 {
			q = Position(lastMsg+1, 0) // nothing left at or after q
		}
	}
	if msgsRead > 0 {
		h.perMsg[it.Shard].Store(int64(max(1, recsRead/msgsRead)))
	}
	if msg, idx := MessageOf(q); msg <= lastMsg {
		// The next unread record's age; all of a message's records
		// arrived together.
		if body, ok := s.tail.get(h.desc.ID, it.Shard, msg); ok {
			if e, err := openEnvelope(body); err == nil && idx < e.count {
				out.MillisBehindLatest = max(0, now.Sub(time.UnixMilli(e.arrivalMs)).Milliseconds())
			}
		} else if r, err := s.getRecord(ctx, h, it.Shard, q); err == nil {
			out.MillisBehindLatest = max(0, now.Sub(r.ApproximateArrivalTimestamp).Milliseconds())
		}
	}
	if msg, _ := MessageOf(q); seal != 0 && msg >= seal {
		// The end of a closed shard: its children, and no iterator.
		if out.ChildShards, err = s.childShards(ctx, it.Stream, h.shardIDs[it.Shard]); err != nil {
			return nil, err
		}
		return out, nil
	}
	it.Next, it.Issued = q, now.UnixMilli()
	out.NextShardIterator = it.encode()
	return out, nil
}

// ShardAppended estimates the bytes ever appended to shard shardID of
// stream streamName: its messages written (the last JetStream sequence)
// times the mean size of those it still stores. The estimate only grows
// as records are put (trimming old messages by retention changes the mean,
// not the count), so two readings apart in time give the shard's incoming
// byte rate; the mapping balance weighs shard leases by it. A shard
// storing nothing yet reports 0.
func (s *Service) ShardAppended(ctx context.Context, streamName, shardID string) (uint64, error) {
	h, sh, err := s.shardOf(ctx, streamName, shardID)
	if err != nil {
		return 0, err
	}
	info, err := h.shards[sh].Info(ctx)
	if err != nil {
		return 0, awserr.New(awserr.ErrService, "shard info: %v", err)
	}
	if info.State.Msgs == 0 {
		return 0, nil
	}
	return uint64(float64(info.State.LastSeq) * float64(info.State.Bytes) / float64(info.State.Msgs)), nil
}
