package stream

import (
	"context"
	"encoding/binary"
	"math/big"
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
			return invalidArg("%s.ExplicitHashKey: %q must be a decimal in 0..2^128-1", field, e.ExplicitHashKey)
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
func (s *Service) PutRecords(ctx context.Context, streamName string, entries []PutRecordsRequestEntry) (*PutRecordsOutput, error) {
	if len(entries) < 1 || len(entries) > MaxPutRecords {
		return nil, awserr.OutOfRange(awserr.ErrInvalidArgument, "Records", len(entries), 1, MaxPutRecords)
	}
	for i := range entries {
		if err := validateEntry(i, &entries[i], fieldName(i)); err != nil {
			return nil, err
		}
	}
	h, err := s.handle(ctx, streamName)
	if err != nil {
		return nil, err
	}
	now := s.eng.Clock.Now().UnixMilli()
	out := &PutRecordsOutput{Records: make([]PutRecordsResultEntry, len(entries))}
	futures := make([]jetstream.PubAckFuture, len(entries))
	// One connection per call keeps the request's order per partition key;
	// concurrent calls spread over the engine's publishing connections.
	js := s.eng.NextPublisherJS()
	shards := make([]int, len(entries))
	for i := range entries {
		sh := h.route(&entries[i])
		shards[i] = sh
		msg := &nats.Msg{Subject: h.subj[sh], Data: encodeEnvelope(make([]byte, 0, 16+len(entries[i].PartitionKey)+len(entries[i].Data)), now, entries[i].PartitionKey, entries[i].Data)}
		// Each shard's subject belongs to its own JetStream stream only, so
		// no expected-stream header is needed.
		f, err := js.PublishMsgAsync(msg)
		if err != nil {
			out.Records[i] = PutRecordsResultEntry{ErrorCode: "InternalFailure", ErrorMessage: err.Error()}
			continue
		}
		futures[i] = f
	}
	// An acknowledgement that never comes (the connection closed under
	// the publish) must not hang the call: after AckTimeout the entry is
	// reported failed, as a synchronous publish would time out.
	timeout := time.NewTimer(AckTimeout)
	defer timeout.Stop()
	for i, f := range futures {
		if f == nil {
			continue
		}
		select {
		case <-timeout.C:
			timeout.Reset(0) // the deadline has passed for the rest too
			select {         // an ack that is already there still counts
			case ack := <-f.Ok():
				out.Records[i] = PutRecordsResultEntry{SequenceNumber: FormatSequenceNumber(h.desc.Epoch, shards[i], ack.Sequence), ShardId: h.shardIDs[shards[i]]}
			default:
				out.Records[i] = PutRecordsResultEntry{ErrorCode: "InternalFailure", ErrorMessage: "no acknowledgement within " + AckTimeout.String()}
			}
			continue
		case ack := <-f.Ok():
			out.Records[i] = PutRecordsResultEntry{SequenceNumber: FormatSequenceNumber(h.desc.Epoch, shards[i], ack.Sequence), ShardId: h.shardIDs[shards[i]]}
		case err := <-f.Err():
			out.Records[i] = PutRecordsResultEntry{ErrorCode: "InternalFailure", ErrorMessage: err.Error()}
		case <-ctx.Done():
			// The publish may still land; the caller sees a failure and may
			// put again (a duplicate, never a loss).
			out.Records[i] = PutRecordsResultEntry{ErrorCode: "InternalFailure", ErrorMessage: ctx.Err().Error()}
		}
	}
	for _, r := range out.Records {
		if r.ErrorCode != "" {
			out.FailedRecordCount++
		}
	}
	return out, nil
}

// AckTimeout is how long PutRecords waits for JetStream to acknowledge
// its entries; an entry not acknowledged by then is reported failed
// (InternalFailure) and may still have been stored: a retry may
// duplicate it, never lose it.
const AckTimeout = 10 * time.Second

func fieldName(i int) string { return "Records." + strconv.Itoa(i) }
