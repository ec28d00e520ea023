package stream

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Record is one data record of a shard, as GetRecords returns it and as an
// event source mapping hands it to a function (Kinesis API_Record).
type Record struct {
	// SequenceNumber is the record's position in its shard: a decimal string
	// of up to 129 digits, increasing over time within the shard and unique
	// there (Kinesis pattern 0|([1-9]\d{0,128})). runnel's are the stream's
	// creation time in Unix seconds followed by Seq in 20 digits, so they
	// compare as numbers and never repeat after a stream is re-created.
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

// FormatSequenceNumber builds the public sequence number of position seq in
// a stream created at epoch (Unix seconds).
func FormatSequenceNumber(epoch int64, seq uint64) string {
	return fmt.Sprintf("%d%020d", epoch, seq)
}

// ParseSequenceNumber returns the shard log position of a sequence number
// issued by a stream created at epoch. It fails with an error naming the
// field when s is not one of that stream's sequence numbers.
func ParseSequenceNumber(field string, epoch int64, s string) (uint64, error) {
	prefix := strconv.FormatInt(epoch, 10)
	if len(s) != len(prefix)+20 || s[:len(prefix)] != prefix {
		return 0, invalidArg("%s: %q is not a sequence number of this stream", field, s)
	}
	v, err := strconv.ParseUint(s[len(prefix):], 10, 64)
	if err != nil {
		return 0, invalidArg("%s: %q is not a sequence number of this stream", field, s)
	}
	return v, nil
}
