package stream

import (
	"encoding/binary"
	"errors"
	"strconv"
	"time"
)

// Record is one data record of a shard, as GetRecords returns it and as an
// event source mapping hands it to a function (Kinesis API_Record).
type Record struct {
	// SequenceNumber is the record's position in its shard: a decimal string
	// of up to 129 digits, increasing over time within the shard (Kinesis
	// pattern 0|([1-9]\d{0,128})). runnel's (Numbering) are 56 digits for
	// a Kinesis stream, as AWS's: "49", the stream's creation time, the
	// shard index and Seq. They compare as numbers within a shard and
	// are unique across the shards of a stream and across re-creations
	// of a stream name.
	SequenceNumber string
	// ApproximateArrivalTimestamp is when the record was accepted, with
	// millisecond precision.
	ApproximateArrivalTimestamp time.Time
	// Data is the record's blob, up to 1 MiB together with the partition
	// key. GetRecords hands each caller its own copy: a stored record never
	// changes, whatever a reader does with the bytes it got.
	Data []byte
	// PartitionKey is the key the producer gave (1..256 characters).
	PartitionKey string
	// ShardID is the shard the record belongs to ("shardId-000000000000").
	ShardID string
	// Seq is the record's position in its shard (see Position): increasing
	// with the shard's order, not dense. SequenceNumber is derived from it.
	Seq uint64
}

// Positions. A shard's JetStream log holds one message per PutRecords call
// and shard (more when the records exceed one message's size): the
// records of one call that hash to one shard are stored together, so that
// putting and reading 500 records costs a few JetStream messages, not 500.
// A record's position is its message's JetStream sequence shifted left by
// PositionBits, plus its index in the message:
//
//	position = messageSeq<<PositionBits | index
//
// Positions increase with the shard's order but are not dense: the first
// record ever written is at FirstPosition (1<<PositionBits), and the record
// after the last one of a message is at the next message's index 0.
// "The position after p" is always p+1: a reader started at a position
// past the last index of a message continues with the next message.
const (
	// PositionBits is how many low bits of a position hold the index of
	// the record in its stored message (at most 1<<PositionBits records
	// per message; PutRecords stores at most 500).
	PositionBits = 10
	// FirstPosition is the position of the first record ever written to
	// a shard.
	FirstPosition uint64 = 1 << PositionBits

	maxPerMessage = 1 << PositionBits
	indexMask     = maxPerMessage - 1
)

// Position returns the position of record index of the stored message
// with JetStream sequence msg.
func Position(msg uint64, index int) uint64 { return msg<<PositionBits | uint64(index) }

// MessageOf returns the JetStream sequence of the message holding
// position pos, and the record's index in it.
func MessageOf(pos uint64) (msg uint64, index int) {
	return pos >> PositionBits, int(pos & indexMask)
}

// envelope layouts of a stored message (the JetStream message body).
//
// Version 1, one record:
//
//	byte 0      format version (1)
//	bytes 1..8  arrival, Unix milliseconds, big-endian
//	uvarint     partition key length, then the key
//	rest        data
//
// Version 2, the records of one PutRecords call for one shard, in request
// order (all accepted at the same time):
//
//	byte 0      format version (2)
//	bytes 1..8  arrival, Unix milliseconds, big-endian
//	uvarint     record count (1..1024)
//	per record: uvarint key length, key, uvarint data length, data
//
// Seal (version 3), the last message of a closed shard (see reshard.go),
// stored on the shard's seal subject, never holding records:
//
//	byte 0      format version (3)
//	bytes 1..8  when the shard was closed, Unix milliseconds, big-endian
//	byte 9      0 (no records)
const (
	envelopeV1   = 1
	envelopeV2   = 2
	envelopeSeal = 3
)

func sealEnvelope(closedMs int64) []byte {
	b := []byte{envelopeSeal}
	b = binary.BigEndian.AppendUint64(b, uint64(closedMs))
	return append(b, 0)
}

// isSeal reports whether a stored message is a shard's seal.
func isSeal(b []byte) bool { return len(b) == 10 && b[0] == envelopeSeal && b[9] == 0 }

// envelopeOverhead bounds the bytes a v2 envelope adds: the 9-byte head and
// the count, and per record two length prefixes.
const (
	envelopeHead      = 9 + binary.MaxVarintLen16
	envelopePerRecord = 2 * binary.MaxVarintLen32
)

func appendEnvelopeHead(dst []byte, arrivalMs int64, count int) []byte {
	dst = append(dst, envelopeV2)
	dst = binary.BigEndian.AppendUint64(dst, uint64(arrivalMs))
	return binary.AppendUvarint(dst, uint64(count))
}

func appendEnvelopeRecord(dst []byte, pk string, data []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(pk)))
	dst = append(dst, pk...)
	dst = binary.AppendUvarint(dst, uint64(len(data)))
	return append(dst, data...)
}

var errBadEnvelope = errors.New("stream: stored record has an unknown format")

// envelope is a decoded stored message: its records are read one by one
// with next, without copying (keys and data alias the message body).
type envelope struct {
	arrivalMs int64
	count     int
	rest      []byte
	v1        bool
}

func openEnvelope(b []byte) (envelope, error) {
	if len(b) < 10 || (b[0] != envelopeV1 && b[0] != envelopeV2 && b[0] != envelopeSeal) {
		return envelope{}, errBadEnvelope
	}
	e := envelope{arrivalMs: int64(binary.BigEndian.Uint64(b[1:9]))}
	if b[0] == envelopeSeal {
		if !isSeal(b) {
			return envelope{}, errBadEnvelope
		}
		return e, nil // no records
	}
	if b[0] == envelopeV1 {
		e.count, e.v1, e.rest = 1, true, b[9:]
		return e, nil
	}
	n, w := binary.Uvarint(b[9:])
	if w <= 0 || n < 1 || n > maxPerMessage {
		return envelope{}, errBadEnvelope
	}
	e.count, e.rest = int(n), b[9+w:]
	return e, nil
}

// next returns the next record's key and data.
func (e *envelope) next() (pk, data []byte, err error) {
	n, w := binary.Uvarint(e.rest)
	if w <= 0 || uint64(len(e.rest)-w) < n {
		return nil, nil, errBadEnvelope
	}
	pk = e.rest[w : w+int(n)]
	e.rest = e.rest[w+int(n):]
	if e.v1 {
		data, e.rest = e.rest, nil
		return pk, data, nil
	}
	n, w = binary.Uvarint(e.rest)
	if w <= 0 || uint64(len(e.rest)-w) < n {
		return nil, nil, errBadEnvelope
	}
	data = e.rest[w : w+int(n) : w+int(n)]
	e.rest = e.rest[w+int(n):]
	return pk, data, nil
}

// Numbering is how a stream writes its sequence numbers: the stream's
// epoch (StreamDescription.Epoch) and the layout. Every sequence number of
// one stream has the same width, so that comparing two as numbers (or as
// strings of equal length) orders them: by shard index first, then by log
// position (Position). A child shard's index is greater than its parents',
// so a record put to a child after a reshard has a greater number than
// every record of its parents.
//
// Two layouts:
//   - Long, a Kinesis stream's since 56-digit numbers (StreamDescription
//     with RunnelSequenceDigits 56): "49", the epoch in 19 digits, the
//     shard index in 15 and the log position in 20: 56 digits, as AWS's
//     are (AWS's begin with 49 too; their inner layout is not documented
//     and not copied).
//   - Short: the epoch's decimal digits, the shard index in 4 and the log
//     position in 20 (37 digits for an epoch in Unix milliseconds). A
//     table's change log keeps it, because DynamoDB Streams' sequence
//     numbers are 21 to 40 characters (API_streams_StreamRecord), and so
//     does every stream created before 56-digit numbers, whose stored
//     numbers (checkpoints, dead-letter records) stay valid.
//
// The trap: a number is decoded only against its own stream's Numbering;
// one of another stream, or of the same name created again, is refused
// (ErrInvalidArgument), never read as a position.
type Numbering struct {
	Epoch int64
	Long  bool
}

// LongSequenceDigits is the width of a Long sequence number.
const LongSequenceDigits = 56

// Widths of the parts of a Long sequence number after its "49".
const (
	longEpochDigits = 19
	longShardDigits = 15
	positionDigits  = 20
)

// Numbering returns how the stream writes its sequence numbers.
func (d *StreamDescription) Numbering() Numbering {
	return Numbering{Epoch: d.Epoch, Long: d.SequenceDigits == LongSequenceDigits}
}

// FormatSequenceNumber builds the public sequence number of log position
// seq of shard index shard in a stream numbered n.
func FormatSequenceNumber(n Numbering, shard int, seq uint64) string {
	var b [64]byte
	return string(AppendSequenceNumber(b[:0], n, shard, seq))
}

// AppendSequenceNumber appends FormatSequenceNumber(n, shard, seq) to b.
func AppendSequenceNumber(b []byte, n Numbering, shard int, seq uint64) []byte {
	if n.Long && n.Epoch >= 0 && shard >= 0 {
		// The 56 digits filled from the right (GetRecords writes one per
		// record).
		var d [LongSequenceDigits]byte
		fill := func(to int, v uint64, width int) {
			for i := to; i > to-width; i-- {
				d[i] = byte('0' + v%10)
				v /= 10
			}
		}
		d[0], d[1] = '4', '9'
		fill(LongSequenceDigits-1, seq, positionDigits)
		fill(LongSequenceDigits-1-positionDigits, uint64(shard), longShardDigits)
		fill(1+longEpochDigits, uint64(n.Epoch), longEpochDigits)
		return append(b, d[:]...)
	}
	b = strconv.AppendInt(b, n.Epoch, 10)
	if shard < 0 || shard > 9999 {
		b = appendPadded(b, uint64(shard), 4)
		return appendPadded(b, seq, positionDigits)
	}
	// The 24 digits filled from the right (GetRecords writes one per record).
	var d [24]byte
	for i := 23; i >= 4; i-- {
		d[i] = byte('0' + seq%10)
		seq /= 10
	}
	for i, sh := 3, shard; i >= 0; i-- {
		d[i] = byte('0' + sh%10)
		sh /= 10
	}
	return append(b, d[:]...)
}

func appendPadded(b []byte, v uint64, width int) []byte {
	var tmp [20]byte
	d := strconv.AppendUint(tmp[:0], v, 10)
	for i := len(d); i < width; i++ {
		b = append(b, '0')
	}
	return append(b, d...)
}

// prefix is what every sequence number of the stream begins with, and the
// width of the shard index after it.
func (n Numbering) prefix() (string, int) {
	if n.Long {
		return string(appendPadded([]byte("49"), uint64(n.Epoch), longEpochDigits)), longShardDigits
	}
	return strconv.FormatInt(n.Epoch, 10), 4
}

// DecodeSequenceNumber splits a sequence number of the stream numbered n
// into its shard index and log position. It fails when s was not issued
// by that stream (its prefix, width or digits are not the stream's).
func DecodeSequenceNumber(n Numbering, s string) (shard int, seq uint64, err error) {
	prefix, shardDigits := n.prefix()
	if len(s) != len(prefix)+shardDigits+positionDigits || s[:len(prefix)] != prefix {
		return 0, 0, errNotOurs
	}
	sh, err1 := strconv.ParseUint(s[len(prefix):len(prefix)+shardDigits], 10, 31)
	q, err2 := strconv.ParseUint(s[len(prefix)+shardDigits:], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, errNotOurs
	}
	return int(sh), q, nil
}

var errNotOurs = errors.New("not a sequence number of this stream")

// ParseSequenceNumber returns the log position of a sequence number of
// shard index shard of the stream numbered n. It fails with an
// InvalidArgumentException naming the field when s is not one of that
// shard's sequence numbers.
func ParseSequenceNumber(field string, n Numbering, shard int, s string) (uint64, error) {
	sh, q, err := DecodeSequenceNumber(n, s)
	if err != nil {
		return 0, invalidArg("%s: %q is not a sequence number of this stream", field, s)
	}
	if sh != shard {
		return 0, invalidArg("%s: %q is a sequence number of %s, not of %s", field, s, ShardID(sh), ShardID(shard))
	}
	return q, nil
}

// parseStartingSequenceNumber is ParseSequenceNumber for GetShardIterator's
// StartingSequenceNumber on shard index shard of stream streamName
// (numbered n) under account, failing in Kinesis's words, each an
// InvalidArgumentException (kinesalite actions/getShardIterator.js,
// written against AWS), checked in this order:
//   - a number of another shard: "Invalid StartingSequenceNumber. It
//     encodes shardId-000000000001, while it was used in a call to a shard
//     with shardId-000000000000";
//   - a number of another stream, or of an earlier stream of the same
//     name (the shape of a stream's number, 56 digits beginning with 49
//     or runnel's 37-digit short numbers, but not this stream's):
//     "StartingSequenceNumber <n> used in GetShardIterator on shard <id>
//     in stream <name> under account <acct> is invalid because it did not
//     come from this stream." (clients match these words to drop a stale
//     checkpoint);
//   - anything else: "StartingSequenceNumber <n> used in GetShardIterator
//     on shard <id> in stream <name> under account <acct> is invalid."
func parseStartingSequenceNumber(n Numbering, shard int, s, streamName, account string) (uint64, error) {
	sh, q, err := DecodeSequenceNumber(n, s)
	ours := err == nil
	if !ours {
		// Another stream's number still says which shard it is of.
		fn, ok := foreignNumbering(s)
		if ok {
			sh, _, err = DecodeSequenceNumber(fn, s)
		}
		if !ok || err != nil {
			return 0, invalidArg("StartingSequenceNumber %s used in GetShardIterator on shard %s in stream %s under account %s is invalid.", s, ShardID(shard), streamName, account)
		}
	}
	if sh != shard {
		return 0, invalidArg("Invalid StartingSequenceNumber. It encodes %s, while it was used in a call to a shard with %s", ShardID(sh), ShardID(shard))
	}
	if !ours {
		return 0, invalidArg("StartingSequenceNumber %s used in GetShardIterator on shard %s in stream %s under account %s is invalid because it did not come from this stream.", s, ShardID(shard), streamName, account)
	}
	return q, nil
}

// foreignNumbering is the Numbering a sequence number of the shape of a
// stream's (LongSequenceDigits digits beginning with 49, or a short one
// with a 13-digit epoch) was written with.
func foreignNumbering(s string) (Numbering, bool) {
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return Numbering{}, false
		}
	}
	switch {
	case len(s) == LongSequenceDigits && s[:2] == "49":
		e, err := strconv.ParseInt(s[2:2+longEpochDigits], 10, 64)
		return Numbering{Epoch: e, Long: true}, err == nil
	case len(s) == 13+4+positionDigits && s[0] != '0':
		e, err := strconv.ParseInt(s[:13], 10, 64)
		return Numbering{Epoch: e}, err == nil
	}
	return Numbering{}, false
}
