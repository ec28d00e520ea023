package awsapi

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/stream"
)

// recordEncoder writes, byte for byte, encoding/json's encoding of the
// same records as API_Record: Data empty (a record read is never nil,
// which encoding/json would write as null), of every length from 1 to 20,
// holding every byte value, and random-looking; partition keys of plain
// ASCII, of non-ASCII letters, emoji and characters encoding/json escapes;
// arrival times shared by neighbours, changing, and back to an earlier
// one; positions following each other (one message) and jumping (the
// next message), across a decimal carry.
func TestRecordEncoderMatchesEncodingJSON(t *testing.T) {
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	datas := [][]byte{{}, all, all[:255], all[1:], []byte("plain text \x00\xff")}
	for n := 1; n <= 20; n++ {
		datas = append(datas, all[256-n:])
	}
	keys := []string{"pk-1", "ünïcødé", "日本語のキー", "emoji 🎉", `"<&>\`, "tab\there", "line\u2028sep", "bad \xff utf-8"}
	arrivals := []int64{1764115200123, 1764115200123, 1764115200123, 1764115201000, 1764115201000, 1764115200123, 1764115299999}
	type apiRecord struct {
		SequenceNumber              string
		ApproximateArrivalTimestamp float64
		Data                        []byte
		PartitionKey                string
		EncryptionType              string
	}
	var want []apiRecord
	var recs []stream.Record
	var enc recordEncoder
	got := []byte{'['}
	seq := uint64(stream.Position(1, 0)) - 3 // …1021, …1022, …1023, then 1<<10 …
	for i, d := range datas {
		seq++
		if i%7 == 6 {
			seq = stream.Position(uint64(i), 0) // the next message
		}
		r := stream.PageRecord{Seq: seq, ArrivalMs: arrivals[i%len(arrivals)], PartitionKey: []byte(keys[i%len(keys)]), Data: d}
		got = enc.append(got, &r)
		want = append(want, apiRecord{stream.FormatSequenceNumber(stream.Numbering{}, 0, seq), float64(r.ArrivalMs) / 1000, d, keys[i%len(keys)], "NONE"})
		recs = append(recs, stream.Record{SequenceNumber: want[i].SequenceNumber, ApproximateArrivalTimestamp: time.UnixMilli(r.ArrivalMs), Data: d, PartitionKey: keys[i%len(keys)]})
	}
	got = append(got, ']')
	wb, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(wb) {
		t.Fatalf("recordEncoder:\n got  %s\n want %s", got, wb)
	}
	// appendRecords (SubscribeToShard's events) writes the same bytes.
	if ar := appendRecords(nil, recs); string(ar) != string(wb) {
		t.Fatalf("appendRecords:\n got  %s\n want %s", ar, wb)
	}
}

// appendJSONString writes encoding/json's bytes for a string holding any
// one byte value between plain letters.
func TestAppendJSONStringEveryByte(t *testing.T) {
	for c := range 256 {
		s := "a" + string([]byte{byte(c)}) + "z"
		want, _ := json.Marshal(s)
		if got := appendJSONString([]byte("x"), []byte(s)); string(got) != "x"+string(want) {
			t.Errorf("byte %#02x: %s, want %s", c, got[1:], want)
		}
	}
}

// BenchmarkGetRecordsEncoder is recordEncoder alone on a page of 1,000
// records of 100 random bytes with keys "pk-0" to "pk-999", in two
// stored messages of 500 (the positions of a message follow each other;
// its records share their arrival time), into a buffer kept from one
// page to the next. The sequence numbers are of epoch 0 (PageRecord's
// epoch cannot be set from here): 13 digits shorter than a real
// stream's. It reports ns per record.
func BenchmarkGetRecordsEncoder(b *testing.B) {
	const records = 1000
	rng := rand.New(rand.NewPCG(7, 8))
	page := make([]stream.PageRecord, records)
	for i := range page {
		d := make([]byte, 100)
		for k := range d {
			d[k] = byte(rng.Uint32())
		}
		page[i] = stream.PageRecord{Seq: stream.Position(uint64(1+i/500), i%500), ArrivalMs: 1764115200123 + int64(i/500)*7,
			PartitionKey: []byte(fmt.Sprint("pk-", i)), Data: d}
	}
	buf := make([]byte, 0, 256<<10)
	b.ReportAllocs()
	for b.Loop() {
		// One PageRecord for the page, as GetRecordsFunc hands them over.
		var enc recordEncoder
		var r stream.PageRecord
		buf = buf[:0]
		for i := range page {
			p := &page[i]
			r.Seq, r.ArrivalMs, r.PartitionKey, r.Data = p.Seq, p.ArrivalMs, p.PartitionKey, p.Data
			buf = enc.append(buf, &r)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*records), "ns/record")
}
