package stream_test

import (
	"fmt"
	"testing"

	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/stream"
)

// TestAReplicaBehindTheLeaderMakesNoReadSkipRecords: on a replicated
// stream a direct get may be answered by a follower that has not applied
// the latest messages. Its "nothing there" must not be taken for records
// gone: GetRecords, ReadRange (the DLQ tools' read), CountRange and
// GetRecord all return every record the leader has. Here every direct get
// answers as such a follower; the reads go through a second process, whose
// cache of recent puts is empty, as on another node.
func TestAReplicaBehindTheLeaderMakesNoReadSkipRecords(t *testing.T) {
	ctx := t.Context()
	a := testenv.Start(t, testenv.Options{ListenAddr: "127.0.0.1:0"})
	b := testenv.Start(t, testenv.Options{NATSURL: a.Engine.ClientURL()})
	if _, err := a.Streams.CreateStream(ctx, stream.CreateStreamInput{StreamName: "lag", ShardCount: 1}); err != nil {
		t.Fatal(err)
	}
	var seqs []string
	for i := range 3 { // three stored messages of 4 records each
		var entries []stream.PutRecordsRequestEntry
		for j := range 4 {
			entries = append(entries, stream.PutRecordsRequestEntry{PartitionKey: "k", Data: fmt.Appendf(nil, "r%d", i*4+j)})
		}
		out, err := a.Streams.PutRecords(ctx, "lag", entries)
		if err != nil || out.FailedRecordCount != 0 {
			t.Fatalf("put: %v %+v", err, out)
		}
		for _, r := range out.Records {
			seqs = append(seqs, r.SequenceNumber)
		}
	}
	stream.SetStaleReads(b.Streams, func() bool { return true })
	shard := stream.ShardID(0)

	it, err := b.Streams.GetShardIterator(ctx, stream.GetShardIteratorInput{StreamName: "lag", ShardID: shard, ShardIteratorType: stream.TrimHorizon})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for range 5 {
		out, err := b.Streams.GetRecords(ctx, it, 5)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range out.Records {
			got = append(got, string(r.Data))
		}
		it = out.NextShardIterator
	}
	if want := "[r0 r1 r2 r3 r4 r5 r6 r7 r8 r9 r10 r11]"; fmt.Sprint(got) != want {
		t.Fatalf("GetRecords read %v, want %s", got, want)
	}

	numbering, err := b.Streams.Numbering(ctx, "lag")
	if err != nil {
		t.Fatal(err)
	}
	pos := func(seq string) uint64 {
		_, q, err := stream.DecodeSequenceNumber(numbering, seq)
		if err != nil {
			t.Fatal(err)
		}
		return q
	}
	first, last := pos(seqs[0]), pos(seqs[len(seqs)-1])
	recs, missing, err := b.Streams.ReadRange(ctx, "lag", shard, first, last)
	if err != nil || len(recs) != 12 || missing != 0 {
		t.Fatalf("ReadRange: %d records, %d messages missing, %v; want 12 and 0", len(recs), missing, err)
	}
	c, err := b.Streams.CountRange(ctx, "lag", shard, first, last)
	if err != nil || c.Records != 12 || c.MissingMessages != 0 {
		t.Fatalf("CountRange: %+v %v", c, err)
	}
	if r, err := b.Streams.GetRecord(ctx, "lag", shard, pos(seqs[6])); err != nil || string(r.Data) != "r6" {
		t.Fatalf("GetRecord: %q %v", r.Data, err)
	}
}
