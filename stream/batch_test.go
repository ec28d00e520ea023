package stream_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/stream"
)

// The records of one PutRecords call that go to one shard are stored as
// one JetStream message (stream.Position): these tests read such messages
// from every entry point, starting and stopping inside them.

// putBatch puts data as one PutRecords call routed to shard i and returns
// the sequence numbers.
func putBatch(t *testing.T, rn *runnel.Runnel, name string, i int, data ...string) []stream.PutRecordsResultEntry {
	t.Helper()
	d, err := rn.Streams.DescribeStream(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	var entries []stream.PutRecordsRequestEntry
	for _, s := range data {
		entries = append(entries, stream.PutRecordsRequestEntry{PartitionKey: "k", ExplicitHashKey: d.Shards[i].HashKeyRange.StartingHashKey, Data: []byte(s)})
	}
	out, err := rn.Streams.PutRecords(t.Context(), name, entries)
	if err != nil || out.FailedRecordCount != 0 {
		t.Fatalf("PutRecords = %+v, %v", out, err)
	}
	return out.Records
}

func position(t *testing.T, rn *runnel.Runnel, name, seq string) uint64 {
	t.Helper()
	numbering, err := rn.Streams.Numbering(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	_, q, err := stream.DecodeSequenceNumber(numbering, seq)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func TestPutRecordsStoresAShardsRecordsTogether(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{Clock: newClock()})
	createStream(t, rn, "b", 2)
	first := putBatch(t, rn, "b", 1, "a0", "a1", "a2", "a3", "a4")
	second := putBatch(t, rn, "b", 1, "b0", "b1")
	for k, r := range first {
		if got := position(t, rn, "b", r.SequenceNumber); got != stream.Position(1, k) {
			t.Errorf("first call, record %d at position %d, want message 1 index %d (%d)", k, got, k, stream.Position(1, k))
		}
	}
	for k, r := range second {
		if got := position(t, rn, "b", r.SequenceNumber); got != stream.Position(2, k) {
			t.Errorf("second call, record %d at position %d, want message 2 index %d", k, got, k)
		}
	}
	// Sequence numbers still increase through the shard as numbers.
	all := append(append([]stream.PutRecordsResultEntry{}, first...), second...)
	for i := 1; i < len(all); i++ {
		if a, b := all[i-1].SequenceNumber, all[i].SequenceNumber; len(a) != len(b) || a >= b {
			t.Errorf("sequence numbers not increasing: %s then %s", a, b)
		}
	}
	f, l, err := rn.Streams.ShardBounds(t.Context(), "b", stream.ShardID(1))
	if err != nil || f != stream.Position(1, 0) || l != stream.Position(2, 1) {
		t.Errorf("ShardBounds = %d..%d, %v; want the first record of message 1 and the last of message 2", f, l, err)
	}
	if got := dataOf(readShard(t, rn, "b", 1)); got != "a0,a1,a2,a3,a4,b0,b1" {
		t.Errorf("TRIM_HORIZON reads %q", got)
	}

	t.Run("GetRecords pages stop and resume inside a message", func(t *testing.T) {
		it := shardIterator(t, rn, stream.GetShardIteratorInput{StreamName: "b", ShardID: stream.ShardID(1), ShardIteratorType: stream.TrimHorizon})
		var pages []string
		for range 10 {
			out, err := rn.Streams.GetRecords(t.Context(), it, 3)
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Records) == 0 {
				break
			}
			pages = append(pages, dataOf(out.Records))
			it = out.NextShardIterator
		}
		if got := fmt.Sprint(pages); got != "[a0,a1,a2 a3,a4,b0 b1]" {
			t.Errorf("pages of 3 = %s", got)
		}
	})
	t.Run("AT and AFTER_SEQUENCE_NUMBER inside a message", func(t *testing.T) {
		at := shardIterator(t, rn, stream.GetShardIteratorInput{StreamName: "b", ShardID: stream.ShardID(1), ShardIteratorType: stream.AtSequenceNumber, StartingSequenceNumber: first[2].SequenceNumber})
		if got := dataOf(readAll(t, rn, at)); got != "a2,a3,a4,b0,b1" {
			t.Errorf("AT a2 reads %q", got)
		}
		after := shardIterator(t, rn, stream.GetShardIteratorInput{StreamName: "b", ShardID: stream.ShardID(1), ShardIteratorType: stream.AfterSequenceNumber, StartingSequenceNumber: first[4].SequenceNumber})
		if got := dataOf(readAll(t, rn, after)); got != "b0,b1" {
			t.Errorf("AFTER the last record of a message reads %q, want the next message", got)
		}
	})
	t.Run("ReadShard from inside a message and from past its end", func(t *testing.T) {
		for _, c := range []struct {
			from uint64
			want string
		}{
			{stream.Position(1, 3), "a3,a4,b0,b1"},
			{stream.Position(1, 5), "b0,b1"}, // the position after a4
			{stream.Position(2, 1), "b1"},
		} {
			r, err := rn.Streams.ReadShard(t.Context(), "b", stream.ShardID(1), c.from, stream.ReadShardOptions{})
			if err != nil {
				t.Fatal(err)
			}
			n := len(bytes.Split([]byte(c.want), []byte(",")))
			got := dataOf(receive(t, r, n))
			r.Stop()
			if got != c.want {
				t.Errorf("ReadShard from %d = %q, want %q", c.from, got, c.want)
			}
		}
	})
	t.Run("ReadRange, CountRange and GetRecord across messages", func(t *testing.T) {
		from, to := position(t, rn, "b", first[3].SequenceNumber), position(t, rn, "b", second[0].SequenceNumber)
		recs, missing, err := rn.Streams.ReadRange(t.Context(), "b", stream.ShardID(1), from, to)
		if err != nil || missing != 0 || dataOf(recs) != "a3,a4,b0" {
			t.Errorf("ReadRange(a3..b0) = %q, %d, %v", dataOf(recs), missing, err)
		}
		for i, r := range recs {
			if want := []string{first[3].SequenceNumber, first[4].SequenceNumber, second[0].SequenceNumber}[i]; r.SequenceNumber != want {
				t.Errorf("ReadRange record %d has %s, want %s", i, r.SequenceNumber, want)
			}
		}
		c, err := rn.Streams.CountRange(t.Context(), "b", stream.ShardID(1), from, to)
		if err != nil || c.Records != 3 || c.MissingMessages != 0 || c.First != from || c.Last != to {
			t.Errorf("CountRange(a3..b0) = %+v, %v; want 3 records", c, err)
		}
		if c, err := rn.Streams.CountRange(t.Context(), "b", stream.ShardID(1), 0, stream.Position(99, 0)); err != nil || c.Records != 7 {
			t.Errorf("CountRange(everything) = %+v, %v; want 7", c, err)
		}
		r, err := rn.Streams.GetRecord(t.Context(), "b", stream.ShardID(1), stream.Position(1, 4))
		if err != nil || string(r.Data) != "a4" {
			t.Errorf("GetRecord(1:4) = %q, %v", r.Data, err)
		}
		if _, err := rn.Streams.GetRecord(t.Context(), "b", stream.ShardID(1), stream.Position(1, 5)); err == nil {
			t.Error("GetRecord past a message's last record succeeded")
		}
	})
}

func TestPutRecordsSplitsABatchThatExceedsOneMessage(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{Clock: newClock()})
	createStream(t, rn, "big", 1)
	chunk := func(c byte, n int) string { return string(bytes.Repeat([]byte{c}, n)) }
	// Three records of 400 KiB do not fit in one message of about 1 MiB;
	// a record at the 1 MiB limit starts a message of its own, and a small
	// one after it still fits there.
	recs := putBatch(t, rn, "big", 0, chunk('a', 400<<10), chunk('b', 400<<10), chunk('c', 400<<10), chunk('d', stream.MaxRecordSize-1), "e")
	want := []uint64{stream.Position(1, 0), stream.Position(1, 1), stream.Position(2, 0), stream.Position(3, 0), stream.Position(3, 1)}
	for i, r := range recs {
		if got := position(t, rn, "big", r.SequenceNumber); got != want[i] {
			msg, idx := stream.MessageOf(got)
			t.Errorf("record %d at message %d index %d, want position %d", i, msg, idx, want[i])
		}
	}
	got := readShard(t, rn, "big", 0)
	if len(got) != 5 || got[0].Data[0] != 'a' || got[2].Data[0] != 'c' || len(got[3].Data) != stream.MaxRecordSize-1 || string(got[4].Data) != "e" {
		t.Errorf("read back %d records", len(got))
	}
}

func TestAtTimestampFindsTheFirstMessageAtOrAfter(t *testing.T) {
	clk := newClock()
	rn := testenv.Start(t, testenv.Options{Clock: clk})
	createStream(t, rn, "ts", 1)
	putBatch(t, rn, "ts", 0, "x0", "x1")
	clk.Advance(time.Second)
	mid := clk.Now().Truncate(time.Millisecond) // arrival times have millisecond precision
	putBatch(t, rn, "ts", 0, "y0", "y1", "y2")
	it := shardIterator(t, rn, stream.GetShardIteratorInput{StreamName: "ts", ShardID: stream.ShardID(0), ShardIteratorType: stream.AtTimestamp, Timestamp: mid})
	if got := dataOf(readAll(t, rn, it)); got != "y0,y1,y2" {
		t.Errorf("AT_TIMESTAMP reads %q", got)
	}
	if p, err := rn.Streams.PositionAtTime(t.Context(), "ts", stream.ShardID(0), mid); err != nil || p != stream.Position(2, 0) {
		t.Errorf("PositionAtTime = %d, %v", p, err)
	}
}

// TestAtTimestampFindsAMessageStoredBeforeAnEarlierStampedOne: arrival
// times only mostly increase along a shard (concurrent puts stamp, then
// publish on different connections). AT_TIMESTAMP starts at the first
// record in the shard that arrived at or after the timestamp, even when a
// record stamped earlier was stored after it. Here the arrivals are 100,
// 250, 150 and 300 ms, and the timestamp 200 ms: the read starts at the
// 250 ms record. (The binary search alone started at the 300 ms one.)
func TestAtTimestampFindsAMessageStoredBeforeAnEarlierStampedOne(t *testing.T) {
	clk := newClock()
	rn := testenv.Start(t, testenv.Options{Clock: clk})
	createStream(t, rn, "disorder", 1)
	t0 := clk.Now().Truncate(time.Second)
	for _, r := range []struct {
		ms   int
		data string
	}{{100, "a"}, {250, "b"}, {150, "c"}, {300, "d"}} {
		clk.Advance(t0.Add(time.Duration(r.ms) * time.Millisecond).Sub(clk.Now())) // backwards too: a put stamped earlier
		putBatch(t, rn, "disorder", 0, r.data)
	}
	at := t0.Add(200 * time.Millisecond)
	it := shardIterator(t, rn, stream.GetShardIteratorInput{StreamName: "disorder", ShardID: stream.ShardID(0), ShardIteratorType: stream.AtTimestamp, Timestamp: at})
	if got := dataOf(readAll(t, rn, it)); got != "b,c,d" {
		t.Errorf("AT_TIMESTAMP 200 ms reads %q, want b,c,d", got)
	}
}

// TestRangesCountPurgedMessages: a stored message deleted from the middle
// or the end of a range (an operator's purge) is counted as missing by
// ReadRange and CountRange alike, and its neighbours are still read.
func TestRangesCountPurgedMessages(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	ctx := t.Context()
	if _, err := rn.Streams.CreateStream(ctx, stream.CreateStreamInput{StreamName: "purge", ShardCount: 1}); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"m1", "m2", "m3", "m4"} {
		putBatch(t, rn, "purge", 0, d) // one stored message each: sequences 1..4
	}
	// The shard's JetStream stream is the only KDS_ stream of this engine.
	var name string
	for n := range rn.Engine.JS.StreamNames(ctx).Name() {
		if strings.HasPrefix(n, "KDS_") {
			name = n
		}
	}
	js, err := rn.Engine.JS.Stream(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteMsg(ctx, 3); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		from, to uint64
		data     string
		missing  uint64
	}{
		{stream.Position(1, 0), stream.Position(4, 0), "m1,m2,m4", 1}, // purged in the middle
		{stream.Position(2, 0), stream.Position(3, 0), "m2", 1},       // purged at the end of the range
		{stream.Position(3, 0), stream.Position(3, 0), "", 1},         // the range is only the purged message
	} {
		recs, missing, err := rn.Streams.ReadRange(ctx, "purge", stream.ShardID(0), c.from, c.to)
		if err != nil || dataOf(recs) != c.data || missing != c.missing {
			t.Errorf("ReadRange(%d, %d) = %q, %d missing, %v; want %q, %d", c.from, c.to, dataOf(recs), missing, err, c.data, c.missing)
		}
		cnt, err := rn.Streams.CountRange(ctx, "purge", stream.ShardID(0), c.from, c.to)
		if err != nil || cnt.Records != uint64(len(recs)) || cnt.MissingMessages != c.missing {
			t.Errorf("CountRange(%d, %d) = %+v, %v; want %d records, %d missing", c.from, c.to, cnt, err, len(recs), c.missing)
		}
	}
}
