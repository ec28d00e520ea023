package stream

import (
	"encoding/binary"
	"testing"
)

// Messages stored before records were batched hold one record in the
// version-1 envelope; they are still read.
func TestEnvelopeVersions(t *testing.T) {
	v1 := []byte{envelopeV1}
	v1 = binary.BigEndian.AppendUint64(v1, 1234)
	v1 = binary.AppendUvarint(v1, 2)
	v1 = append(v1, "pkdata-one"...)
	e, err := openEnvelope(v1)
	if err != nil || e.count != 1 || e.arrivalMs != 1234 {
		t.Fatalf("v1: %+v, %v", e, err)
	}
	if pk, data, err := e.next(); err != nil || string(pk) != "pk" || string(data) != "data-one" {
		t.Fatalf("v1 record = %q %q %v", pk, data, err)
	}

	v2 := appendEnvelopeHead(nil, 99, 3)
	for _, r := range [][2]string{{"a", "1"}, {"", ""}, {"ccc", "three"}} {
		v2 = appendEnvelopeRecord(v2, r[0], []byte(r[1]))
	}
	e, err = openEnvelope(v2)
	if err != nil || e.count != 3 || e.arrivalMs != 99 {
		t.Fatalf("v2: %+v, %v", e, err)
	}
	var got []string
	for range 3 {
		pk, data, err := e.next()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(pk)+"="+string(data))
	}
	if len(got) != 3 || got[0] != "a=1" || got[1] != "=" || got[2] != "ccc=three" {
		t.Errorf("v2 records = %q", got)
	}
	for _, bad := range [][]byte{nil, {3, 0, 0, 0, 0, 0, 0, 0, 0, 1}, v2[:len(v2)-2], appendEnvelopeHead(nil, 1, 0)} {
		e, err := openEnvelope(bad)
		if err == nil {
			_, _, err = e.next()
			for err == nil && len(e.rest) > 0 {
				_, _, err = e.next()
			}
		}
		if err == nil && len(bad) > 0 && bad[0] == envelopeV2 && len(bad) < len(v2) && len(bad) > 12 {
			t.Errorf("truncated envelope %x decoded", bad)
		}
		if len(bad) < 10 && err == nil {
			t.Errorf("short envelope %x accepted", bad)
		}
	}
	if _, err := openEnvelope(appendEnvelopeHead(nil, 1, 0)); err == nil {
		t.Error("an envelope of 0 records was accepted")
	}
	if _, err := openEnvelope([]byte{3, 0, 0, 0, 0, 0, 0, 0, 0, 1}); err == nil {
		t.Error("an unknown version was accepted")
	}
}

// PageRecord.AppendSequenceNumber, which counts the previous record's
// text up when positions follow each other, writes FormatSequenceNumber's
// text for every position: across carries of one digit and of all 20
// (…0999 → …1000, 9,999 → 10,000, one below 10^19), when a position
// repeats or goes back, across a message boundary (the position jumps),
// for shard indexes of 1 to 5 digits and the largest position.
func TestPageRecordSequenceNumber(t *testing.T) {
	var seqs []uint64
	for _, start := range []uint64{0, 1, 995, 9995, 1e19 - 5, Position(7, 1020), Position(1<<40, 0) - 3, 1<<64 - 4} {
		for i := range uint64(8) {
			if start+i >= start { // stop at the largest position
				seqs = append(seqs, start+i)
			}
		}
	}
	seqs = append(seqs, 42, 42, 41, 1<<64-1, 0, 1)
	for _, long := range []bool{false, true} {
		for _, shard := range []int{0, 7, 9999, 12345} {
			r := PageRecord{numbering: Numbering{Epoch: 1764115200000, Long: long}, shard: shard}
			for _, seq := range seqs {
				r.Seq = seq
				got := string(r.AppendSequenceNumber([]byte("x")))
				if want := "x" + FormatSequenceNumber(r.numbering, shard, seq); got != want {
					t.Fatalf("long %v, shard %d, position %d: %s, want %s", long, shard, seq, got, want)
				}
			}
		}
	}
}
