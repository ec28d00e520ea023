package awsapi

// Standard base64 for the Data of GetRecords' records, the largest part
// of the page's encoding.

import (
	"encoding/base64"
	"encoding/binary"
	"slices"
)

// b64Pairs[v] is the two characters of standard base64 for the 12 bits
// v, the first in the low byte.
var b64Pairs = func() (t [4096]uint16) {
	for v := range t {
		t[v] = uint16(b64Alphabet[v>>6]) | uint16(b64Alphabet[v&63])<<8
	}
	return t
}()

const b64Alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

// appendBase64 appends src in standard base64 with padding, the bytes
// base64.StdEncoding.AppendEncode appends, about twice as fast: 6 bytes
// of src at a time become 8 characters through 4 lookups of 12 bits
// (an 8 KiB table) and one 8-byte store; then 3 bytes at a time through
// 2 lookups; then the last 1 or 2 bytes with their padding.
func appendBase64(b, src []byte) []byte {
	n := base64.StdEncoding.EncodedLen(len(src))
	b = slices.Grow(b, n)
	dst := b[len(b) : len(b)+n]
	// An 8-byte load of src needs 8 bytes; it uses the first 6.
	for len(src) >= 8 && len(dst) >= 8 {
		u := binary.BigEndian.Uint64(src)
		binary.LittleEndian.PutUint64(dst, uint64(b64Pairs[u>>52])|
			uint64(b64Pairs[u>>40&0xfff])<<16|
			uint64(b64Pairs[u>>28&0xfff])<<32|
			uint64(b64Pairs[u>>16&0xfff])<<48)
		src, dst = src[6:], dst[8:]
	}
	for len(src) >= 3 && len(dst) >= 4 {
		v := uint(src[0])<<16 | uint(src[1])<<8 | uint(src[2])
		binary.LittleEndian.PutUint32(dst, uint32(b64Pairs[v>>12&0xfff])|uint32(b64Pairs[v&0xfff])<<16)
		src, dst = src[3:], dst[4:]
	}
	switch {
	case len(src) == 2 && len(dst) == 4:
		v := uint(src[0])<<10 | uint(src[1])<<2 // 18 bits, the last 2 zero
		binary.LittleEndian.PutUint32(dst, uint32(b64Pairs[v>>6&0xfff])|uint32(b64Alphabet[v&63])<<16|'='<<24)
	case len(src) == 1 && len(dst) == 4:
		binary.LittleEndian.PutUint32(dst, uint32(b64Pairs[uint(src[0])<<4&0xfff])|'='<<16|'='<<24)
	}
	return b[:len(b)+n]
}
