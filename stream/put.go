package stream

import (
	"context"
	"encoding/binary"
	"errors"
	"math/big"
	"sort"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/awserr"
)

// PutRecordsRequestEntry is one record to put (API_PutRecordsRequestEntry).
type PutRecordsRequestEntry struct {
	// Data is the blob; with the partition key at most 1 MiB.
	Data []byte
	// PartitionKey selects the shard through its MD5 hash: 1..256
	// Unicode characters. Required.
	PartitionKey string
	// ExplicitHashKey, when set, overrides the partition key's hash: a
	// decimal in 0..2^128-1.
	ExplicitHashKey string
	// HashKey, when set, routes by these 128 bits (big-endian) like
	// ExplicitHashKey, without the decimal text. For runnel's own callers
	// (the tables' change logs); not part of the Kinesis API.
	HashKey *[16]byte
}

// PutRecordsResultEntry is the outcome of one entry (API_PutRecordsResultEntry):
// SequenceNumber and ShardId on success, ErrorCode and ErrorMessage on
// failure. A failed entry was not stored and may be sent again.
type PutRecordsResultEntry struct {
	SequenceNumber string `json:",omitempty"`
	ShardId        string `json:",omitempty"`
	ErrorCode      string `json:",omitempty"`
	ErrorMessage   string `json:",omitempty"`
}

// PutRecordsOutput is the result of PutRecords, one entry per request entry
// in the same order.
type PutRecordsOutput struct {
	FailedRecordCount int
	Records           []PutRecordsResultEntry
}

func validateEntry(i int, e *PutRecordsRequestEntry, field string) error {
	n := utf8.RuneCountInString(e.PartitionKey)
	if n < 1 || n > 256 {
		return invalidArg("%s.PartitionKey: length %d is outside 1..256 characters", field, n)
	}
	if len(e.Data)+len(e.PartitionKey) > MaxRecordSize {
		return invalidArg("%s.Data: %d bytes with the partition key exceeds the 1 MiB (1048576 bytes) record limit", field, len(e.Data)+len(e.PartitionKey))
	}
	if e.ExplicitHashKey != "" {
		if !explicitHashKeyRE.MatchString(e.ExplicitHashKey) {
			return invalidArg("%s.ExplicitHashKey: %q must be a decimal in 0..2^128-1", field, e.ExplicitHashKey)
		}
		if v, _ := new(big.Int).SetString(e.ExplicitHashKey, 10); v.Cmp(maxHashKey) > 0 {
			// Kinesis's words (kinesalite's test, written against AWS).
			return invalidArg("Invalid ExplicitHashKey. ExplicitHashKey must be in the range: [0, 2^128-1]. Specified value was %s", e.ExplicitHashKey)
		}
	}
	return nil
}

func (h *handle) route(e *PutRecordsRequestEntry) int {
	if e.HashKey != nil {
		return h.shardFor(hashKey{binary.BigEndian.Uint64(e.HashKey[:8]), binary.BigEndian.Uint64(e.HashKey[8:])})
	}
	if e.ExplicitHashKey != "" {
		v, _ := new(big.Int).SetString(e.ExplicitHashKey, 10)
		return h.shardFor(hashKeyFromBig(v))
	}
	return h.shardFor(partitionHash(e.PartitionKey))
}

// PutRecord stores one record and returns its shard and sequence number
// (API_PutRecord). The record is on disk in the shard's log when PutRecord
// returns without error.
func (s *Service) PutRecord(ctx context.Context, streamName string, e PutRecordsRequestEntry) (PutRecordsResultEntry, error) {
	out, err := s.PutRecords(ctx, streamName, []PutRecordsRequestEntry{e})
	if err != nil {
		return PutRecordsResultEntry{}, err
	}
	r := out.Records[0]
	if r.ErrorCode != "" {
		return r, &awserr.Error{Code: r.ErrorCode, Message: r.ErrorMessage}
	}
	return r, nil
}

// PutRecords stores up to 500 records (API_PutRecords). A malformed entry
// fails the whole call before anything is stored, with an error naming the
// entry and field (Records.3.PartitionKey). Once validated, each entry
// succeeds or fails on its own: a failed entry carries ErrorCode
// "InternalFailure" and was not stored; every entry with a SequenceNumber
// was acknowledged by JetStream and will be delivered. Records of one
// partition key keep the order of the request.
//
// The records of a call that go to one shard are stored as one JetStream
// message (several when they exceed maxMessageBody), so they succeed or
// fail together; Kinesis allows any subset to fail, and a caller that
// retries its failed entries (as it must) sees no difference.
func (s *Service) PutRecords(ctx context.Context, streamName string, entries []PutRecordsRequestEntry) (*PutRecordsOutput, error) {
	return s.putRecords(ctx, streamName, entries, "")
}

// putRecords is PutRecords; id, when not "", makes it PutLogRecords'.
func (s *Service) putRecords(ctx context.Context, streamName string, entries []PutRecordsRequestEntry, id string) (*PutRecordsOutput, error) {
	if len(entries) < 1 || len(entries) > MaxPutRecords {
		return nil, awserr.OutOfRange(awserr.ErrInvalidArgument, "Records", len(entries), 1, MaxPutRecords)
	}
	size := 0
	for i := range entries {
		if err := validateEntry(i, &entries[i], fieldName(i)); err != nil {
			return nil, err
		}
		size += len(entries[i].Data) + len(entries[i].PartitionKey)
	}
	if size > MaxPutRecordsSize && !s.keep {
		// Kinesis's words (as its clients report them).
		return nil, awserr.New(awserr.ErrInvalidArgument, "Records size exceeds 5 MB limit (%d bytes of data and partition keys; at most %d).", size, MaxPutRecordsSize)
	}
	now := s.eng.Clock.Now().UnixMilli()
	out := &PutRecordsOutput{Records: make([]PutRecordsResultEntry, len(entries))}
	pending := make([]int, len(entries))
	for i := range pending {
		pending[i] = i
	}
	// A shard closed by a reshard refuses the publish (its seal guard, see
	// reshard.go); its entries are routed again by the new description,
	// to the children. Reshards write the children before sealing, so one
	// more round normally suffices.
	for attempt := 0; len(pending) > 0; attempt++ {
		h, err := s.handle(ctx, streamName)
		if err != nil {
			if attempt == 0 {
				return nil, err
			}
			for _, i := range pending {
				out.Records[i] = PutRecordsResultEntry{ErrorCode: "InternalFailure", ErrorMessage: err.Error()}
			}
			break
		}
		msgID := ""
		if id != "" {
			msgID = id + "." + strconv.Itoa(attempt)
		}
		sealed := s.putOnce(ctx, h, entries, pending, now, out, msgID)
		if len(sealed) == 0 {
			break
		}
		s.Forget(streamName)
		if attempt == maxSealedRetries {
			for _, i := range sealed {
				out.Records[i] = PutRecordsResultEntry{ErrorCode: "InternalFailure", ErrorMessage: "the shard was closed by a reshard; put the record again"}
			}
			break
		}
		if attempt > 0 {
			time.Sleep(time.Duration(attempt) * 10 * time.Millisecond)
		}
		pending = sealed
	}
	for _, r := range out.Records {
		if r.ErrorCode != "" {
			out.FailedRecordCount++
		}
	}
	return out, nil
}

// putOnce publishes the entries pending (request indexes, in request
// order) by h's routing and fills their results in out, except for those
// of messages a sealed shard refused, which it returns in request order.
// msgID, when not "", is PutLogRecords': each message carries the id
// msgID.<k> (k: its place in the call), and one whose outcome is unknown
// is published again (resolve).
func (s *Service) putOnce(ctx context.Context, h *handle, entries []PutRecordsRequestEntry, pending []int, now int64, out *PutRecordsOutput, msgID string) []int {
	chunks := h.chunks(entries, pending, now, msgID)
	var sealed []int
	// One connection per call keeps the request's order per partition key
	// (a shard's messages are published in order on it); concurrent calls
	// spread over the engine's publishing connections.
	js := s.eng.NextPublisherJS()
	started := time.Now()
	for _, c := range chunks {
		f, err := js.PublishMsgAsync(c.msg)
		if err != nil {
			c.unknown = err.Error()
			continue
		}
		c.future = f
	}
	// An acknowledgement that never comes (the connection closed under
	// the publish) must not hang the call: after AckTimeout the entries are
	// reported failed, as a synchronous publish would time out.
	wait := AckTimeout
	if msgID != "" {
		wait = logAckTimeout
	}
	timeout := time.NewTimer(wait)
	defer timeout.Stop()
	accept := s.acceptor(h, out)
	for _, c := range chunks {
		if c.future == nil {
			continue
		}
		select {
		case <-timeout.C:
			timeout.Reset(0) // the deadline has passed for the rest too
			select {         // an ack that is already there still counts
			case ack := <-c.future.Ok():
				s.acked(c, ack, accept)
			default:
				c.unknown = "no acknowledgement within " + wait.String()
			}
		case ack := <-c.future.Ok():
			s.acked(c, ack, accept)
		case err := <-c.future.Err():
			if isSealedErr(err) {
				sealed = append(sealed, c.entries...)
				continue
			}
			if storedNot(err) {
				c.fail(out, awserr.ErrInternalFailure.Code, err.Error())
				continue
			}
			c.unknown = err.Error()
		case <-ctx.Done():
			// The publish may still land; the caller sees a failure and may
			// put again (a duplicate, never a loss).
			c.unknown = ctx.Err().Error()
		}
	}
	if msgID != "" {
		s.resolve(ctx, js, chunks, started, accept)
	}
	for _, c := range chunks {
		if c.unknown == "" {
			continue
		}
		if msgID != "" {
			c.fail(out, OutcomeUnknown, c.unknown)
		} else {
			c.fail(out, awserr.ErrInternalFailure.Code, c.unknown)
		}
	}
	sort.Ints(sealed)
	return sealed
}

// chunks groups the entries pending (request indexes, in request order)
// into the messages a call stores, and builds them: the entries of each
// shard, in request order, go into as few stored messages as fit (see
// Position), one message per shard for a typical call, so a call of 500
// records is a handful of JetStream publishes. The grouping depends on
// the entries and the routing only: the same call makes the same
// messages (PutLogRecords' ids rely on it). msgID, when not "", gives
// message k the id msgID.<k>.
func (h *handle) chunks(entries []PutRecordsRequestEntry, pending []int, now int64, msgID string) []*chunk {
	var chunks []*chunk
	open := make(map[int]*chunk, len(h.shards))
	for _, i := range pending {
		sh := h.route(&entries[i])
		sz := envelopePerRecord + len(entries[i].PartitionKey) + len(entries[i].Data)
		c := open[sh]
		if c == nil || len(c.entries) == maxPerMessage || c.size+sz > maxMessageBody {
			c = &chunk{shard: sh, size: envelopeHead}
			chunks = append(chunks, c)
			open[sh] = c
		}
		c.entries = append(c.entries, i)
		c.size += sz
	}
	for k, c := range chunks {
		body := appendEnvelopeHead(make([]byte, 0, c.size), now, len(c.entries))
		for _, i := range c.entries {
			body = appendEnvelopeRecord(body, entries[i].PartitionKey, entries[i].Data)
		}
		// Each shard's subject belongs to its own JetStream stream only, so
		// no expected-stream header is needed. The guard header makes
		// JetStream refuse the message once the shard's seal is stored.
		c.body = body
		c.msg = &nats.Msg{Subject: h.subj[c.shard], Header: h.guard[c.shard], Data: body}
		if msgID != "" {
			c.id = msgID + "." + strconv.Itoa(k)
			hdr := nats.Header{jetstream.MsgIDHeader: []string{c.id}}
			for n, v := range h.guard[c.shard] {
				hdr[n] = v
			}
			c.msg.Header = hdr
		}
	}
	return chunks
}

// acceptor returns what takes a message's acknowledgement: its entries'
// results in out, and the message in the tail cache (a first store) and
// the write rates (ON_DEMAND streams).
func (s *Service) acceptor(h *handle, out *PutRecordsOutput) func(*chunk, *jetstream.PubAck) {
	return func(c *chunk, ack *jetstream.PubAck) {
		c.unknown = ""
		if h.rates != nil && !ack.Duplicate { // an ON_DEMAND stream: count the writes
			h.rates[c.shard].bytes.Add(int64(c.size - envelopeHead - envelopePerRecord*len(c.entries)))
			h.rates[c.shard].records.Add(int64(len(c.entries)))
		}
		if !ack.Duplicate && s.tail != nil {
			s.tail.put(h.desc.ID, c.shard, ack.Sequence, c.body)
		}
		for k, i := range c.entries {
			out.Records[i] = PutRecordsResultEntry{SequenceNumber: FormatSequenceNumber(h.desc.Numbering(), c.shard, Position(ack.Sequence, k)), ShardId: h.shardIDs[c.shard]}
		}
	}
}

// chunk is the entries of one call that go into one stored message.
type chunk struct {
	shard   int
	entries []int // request indexes, in order; entry k is record k of the message
	size    int
	body    []byte
	msg     *nats.Msg
	id      string // its message id ("": none)
	future  jetstream.PubAckFuture
	// unknown: why the message's outcome is not known (no answer came);
	// "" once it is.
	unknown string
}

func (c *chunk) fail(out *PutRecordsOutput, code, msg string) {
	c.unknown = ""
	for _, i := range c.entries {
		out.Records[i] = PutRecordsResultEntry{ErrorCode: code, ErrorMessage: msg}
	}
}

// acked takes an acknowledgement, unless a test loses it (ackLost).
func (s *Service) acked(c *chunk, ack *jetstream.PubAck, accept func(*chunk, *jetstream.PubAck)) {
	if lost := s.ackLost.Load(); lost != nil && (*lost)() {
		c.unknown = "acknowledgement lost (test)"
		return
	}
	accept(c, ack)
}

// storedNot reports whether a publish's error says that the message was
// not stored: JetStream answered with an error, or nobody took it.
// Other errors (a timeout, a connection lost) leave the outcome unknown.
func storedNot(err error) bool {
	if errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders) {
		return true
	}
	var je jetstream.JetStreamError
	return errors.As(err, &je) && je.APIError() != nil
}

// maxSealedRetries bounds how often PutRecords routes entries again after
// a sealed shard refused them.
const maxSealedRetries = 20

// casRetries is how many times a read-modify-write of a stream's stored
// description (or its consumers) is tried again after another request
// changed it between the read and the write. Each lost try means another
// write succeeded, so the stream progresses; the trap is a bound too low
// for a steady writer on a loaded machine (10 were all lost once).
const casRetries = 100

// isSealedErr reports whether a publish was refused by a closed shard:
// its seal guard (the expected last sequence of the seal subject is no
// longer 0), or no stream for the subject any more.
func isSealedErr(err error) bool {
	if errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders) {
		return true // the subject was taken from a closed shard (or the server is away: routed again, then failed)
	}
	var je jetstream.JetStreamError
	if !errors.As(err, &je) || je.APIError() == nil {
		return false
	}
	c := je.APIError().ErrorCode
	return c == jetstream.JSErrCodeStreamWrongLastSequence || c == jetstream.JSErrCodeStreamWrongLastSequenceConstant
}

// AckTimeout is how long PutRecords waits for JetStream to acknowledge
// its entries; an entry not acknowledged by then is reported failed
// (InternalFailure) and may still have been stored: a retry may
// duplicate it, never lose it.
const AckTimeout = 10 * time.Second

// maxMessageBody is the largest stored message PutRecords writes: the
// shard's MaxMsgSize (shardConfig). A record at the 1 MiB limit always
// fits (the envelope adds at most 32 bytes to it).
const maxMessageBody = MaxRecordSize + 1024

func fieldName(i int) string { return "Records." + strconv.Itoa(i) }
