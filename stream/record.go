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
	// pattern 0|([1-9]\d{0,128})). runnel's are the stream's creation time in
	// Unix milliseconds, the shard index in 4 digits and Seq in 20 digits:
	// they compare as numbers within a shard and are unique across the
	// shards of a stream and across re-creations of a stream name.
	SequenceNumber string
	// ApproximateArrivalTimestamp is when the record was accepted, with
	// millisecond precision.
	ApproximateArrivalTimestamp time.Time
	// Data is the record's blob, up to 1 MiB together with the partition key.
	Data []byte
	// PartitionKey is the key the producer gave (1..256 characters).
	PartitionKey string
	// ShardID is the shard the record belongs to ("shardId-000000000000").
	ShardID string
	// Seq is the record's position in the shard's JetStream log (1, 2, 3...).
	// SequenceNumber is derived from it.
	Seq uint64
}

// envelope layout of a stored record (the JetStream message body):
//
//	byte 0      format version (1)
//	bytes 1..8  arrival, Unix milliseconds, big-endian
//	uvarint     partition key length, then the key
//	rest        data
const envelopeV1 = 1

func encodeEnvelope(dst []byte, arrivalMs int64, pk string, data []byte) []byte {
	dst = append(dst, envelopeV1)
	dst = binary.BigEndian.AppendUint64(dst, uint64(arrivalMs))
	dst = binary.AppendUvarint(dst, uint64(len(pk)))
	dst = append(dst, pk...)
	return append(dst, data...)
}

var errBadEnvelope = errors.New("stream: stored record has an unknown format")

func decodeEnvelope(b []byte) (arrivalMs int64, pk string, data []byte, err error) {
	if len(b) < 10 || b[0] != envelopeV1 {
		return 0, "", nil, errBadEnvelope
	}
	arrivalMs = int64(binary.BigEndian.Uint64(b[1:9]))
	n, w := binary.Uvarint(b[9:])
	if w <= 0 || uint64(len(b)-9-w) < n {
		return 0, "", nil, errBadEnvelope
	}
	off := 9 + w
	return arrivalMs, string(b[off : off+int(n)]), b[off+int(n):], nil
}

// FormatSequenceNumber builds the public sequence number of log position
// seq of shard index shard in a stream whose Epoch is epoch.
func FormatSequenceNumber(epoch int64, shard int, seq uint64) string {
	b := make([]byte, 0, 40)
	b = strconv.AppendInt(b, epoch, 10)
	b = appendPadded(b, uint64(shard), 4)
	b = appendPadded(b, seq, 20)
	return string(b)
}

func appendPadded(b []byte, v uint64, width int) []byte {
	var tmp [20]byte
	d := strconv.AppendUint(tmp[:0], v, 10)
	for i := len(d); i < width; i++ {
		b = append(b, '0')
	}
	return append(b, d...)
}

// DecodeSequenceNumber splits a sequence number of the stream whose Epoch
// is epoch into its shard index and log position. It fails with
// ErrInvalidArgument when s was not issued by that stream.
func DecodeSequenceNumber(epoch int64, s string) (shard int, seq uint64, err error) {
	prefix := strconv.FormatInt(epoch, 10)
	if len(s) != len(prefix)+24 || s[:len(prefix)] != prefix {
		return 0, 0, errNotOurs
	}
	sh, err1 := strconv.ParseUint(s[len(prefix):len(prefix)+4], 10, 16)
	q, err2 := strconv.ParseUint(s[len(prefix)+4:], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, errNotOurs
	}
	return int(sh), q, nil
}

var errNotOurs = errors.New("not a sequence number of this stream")

// ParseSequenceNumber returns the log position of a sequence number of
// shard index shard of the stream whose Epoch is epoch. It fails with an
// InvalidArgumentException naming the field when s is not one of that
// shard's sequence numbers.
func ParseSequenceNumber(field string, epoch int64, shard int, s string) (uint64, error) {
	sh, q, err := DecodeSequenceNumber(epoch, s)
	if err != nil {
		return 0, invalidArg("%s: %q is not a sequence number of this stream", field, s)
	}
	if sh != shard {
		return 0, invalidArg("%s: %q is a sequence number of %s, not of %s", field, s, ShardID(sh), ShardID(shard))
	}
	return q, nil
}
