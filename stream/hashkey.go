package stream

import (
	"crypto/md5"
	"encoding/binary"
	"math/big"
	"regexp"
)

// hashKey is a 128-bit unsigned hash key as two big-endian halves.
type hashKey struct{ hi, lo uint64 }

func (a hashKey) less(b hashKey) bool { return a.hi < b.hi || (a.hi == b.hi && a.lo < b.lo) }

func (a hashKey) big() *big.Int {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], a.hi)
	binary.BigEndian.PutUint64(b[8:], a.lo)
	return new(big.Int).SetBytes(b[:])
}

func hashKeyFromBig(v *big.Int) hashKey {
	var b [16]byte
	v.FillBytes(b[:])
	return hashKey{binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])}
}

// PartitionHashKey is the 128-bit hash key of a partition key: the MD5
// digest of its UTF-8 bytes read as a big-endian unsigned integer, as
// Kinesis computes it (API_PutRecord: "MD5 hash function is used to map
// partition keys to 128-bit integer values").
func PartitionHashKey(partitionKey string) *big.Int {
	return partitionHash(partitionKey).big()
}

func partitionHash(pk string) hashKey {
	d := md5.Sum([]byte(pk))
	return hashKey{binary.BigEndian.Uint64(d[:8]), binary.BigEndian.Uint64(d[8:])}
}

var explicitHashKeyRE = regexp.MustCompile(`^(0|[1-9]\d{0,38})$`)

var maxHashKey = new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 128), big.NewInt(1))

// HashKeyRange is the inclusive range of hash keys a shard owns, as decimal
// strings (Kinesis API_HashKeyRange).
type HashKeyRange struct {
	StartingHashKey string
	EndingHashKey   string
}

// splitHashKeySpace splits 0..2^128-1 into n contiguous, even ranges, the
// way CreateStream lays out a new stream's shards.
func splitHashKeySpace(n int) []HashKeyRange {
	out := make([]HashKeyRange, n)
	space := new(big.Int).Add(maxHashKey, big.NewInt(1))
	step := new(big.Int).Div(space, big.NewInt(int64(n)))
	for i := 0; i < n; i++ {
		start := new(big.Int).Mul(step, big.NewInt(int64(i)))
		end := new(big.Int).Sub(new(big.Int).Add(start, step), big.NewInt(1))
		if i == n-1 {
			end = maxHashKey
		}
		out[i] = HashKeyRange{start.String(), end.String()}
	}
	return out
}
