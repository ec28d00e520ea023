package table

import (
	"bufio"
	"bytes"
	"crypto/md5"
	"encoding/binary"
	"testing"
)

// BenchmarkSnapshotDecode: decoding a snapshot of a hash-keyed table of
// 1,000,000 items into a new index, without the object store's read
// (ns/op is per snapshot).
func BenchmarkSnapshotDecode(b *testing.B) {
	const n = 1_000_000
	sn := &snapshot{hdr: snapHeader{HashOnly: true, Count: n}, byHash: make(map[[16]byte]slot, n)}
	for i := range n {
		sn.byHash[md5.Sum(binary.AppendUvarint(nil, uint64(i)))] = slot{pos: uint64(i) << 10, size: 80, shard: uint16(i % 4)}
	}
	var buf bytes.Buffer
	if err := sn.encode(&buf); err != nil {
		b.Fatal(err)
	}
	sc, _ := newSchema([]KeySchemaElement{{AttributeName: "pk", KeyType: KeyTypeHash}}, []AttributeDefinition{{AttributeName: "pk", AttributeType: TypeS}})
	t := &Table{schema: sc}
	b.SetBytes(int64(buf.Len()))
	b.ResetTimer()
	for b.Loop() {
		br := bufio.NewReaderSize(bytes.NewReader(buf.Bytes()), 1<<20)
		hdr, err := readSnapshotHeader(br)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := t.readEntries(br, &hdr); err != nil {
			b.Fatal(err)
		}
	}
}
