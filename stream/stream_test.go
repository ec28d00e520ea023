package stream_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/stream"
)

// The Kinesis rules that need a restart, the retention trimmer or the
// shard reader live here; the core API rules are in conformance_test.go.

// ---- input validation (no engine) ----

func TestCreateStreamInputDefaults(t *testing.T) {
	cases := []struct {
		name             string
		in               stream.CreateStreamInput
		shards, hours    int
		wantErr, mention string
	}{
		{"ShardCount omitted defaults to 1", stream.CreateStreamInput{StreamName: "s"}, 1, 24, "", ""},
		{"RetentionPeriodHours omitted defaults to 24", stream.CreateStreamInput{StreamName: "s", ShardCount: 3}, 3, 24, "", ""},
		{"ShardCount 1024 is the maximum", stream.CreateStreamInput{StreamName: "s", ShardCount: 1024, RetentionPeriodHours: 8760}, 1024, 8760, "", ""},
		{"ShardCount 1025 is refused", stream.CreateStreamInput{StreamName: "s", ShardCount: 1025}, 0, 0, "InvalidArgumentException", "ShardCount"},
		{"negative RetentionPeriodHours is refused", stream.CreateStreamInput{StreamName: "s", RetentionPeriodHours: -24}, 0, 0, "InvalidArgumentException", "RetentionPeriodHours"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := c.in.WithDefaults()
			err := in.Validate()
			if c.wantErr != "" {
				wantErr(t, err, awserr.ErrInvalidArgument, c.mention)
				return
			}
			if err != nil || in.ShardCount != c.shards || in.RetentionPeriodHours != c.hours {
				t.Errorf("Validate: %v, ShardCount %d, RetentionPeriodHours %d; want nil, %d, %d", err, in.ShardCount, in.RetentionPeriodHours, c.shards, c.hours)
			}
		})
	}
}

// Both layouts (stream.Numbering) round-trip every shard index and
// position, refuse another stream's or another shard's numbers, and order
// numerically as the log does: by position within a shard, by index
// across shards. A Kinesis stream's are 56 digits beginning "49", as
// AWS's are; a table's change log keeps at most 40 characters, DynamoDB
// Streams' limit (API_streams_StreamRecord).
func TestSequenceNumberFormat(t *testing.T) {
	cases := []struct {
		name  string
		epoch int64
		shard int
		seq   uint64
	}{
		{"first record", 1740830400000, 0, 1},
		{"large position", 1740830400000, 3, 1<<63 + 5},
		{"largest position and shard", 1740830400000, 1023, ^uint64(0)},
	}
	for _, long := range []bool{false, true} {
		for _, c := range cases {
			t.Run(fmt.Sprintf("%s long=%v", c.name, long), func(t *testing.T) {
				n := stream.Numbering{Epoch: c.epoch, Long: long}
				s := stream.FormatSequenceNumber(n, c.shard, c.seq)
				if !seqRE.MatchString(s) {
					t.Errorf("%q does not match %s", s, seqRE)
				}
				if long && (len(s) != 56 || s[:2] != "49") {
					t.Errorf("%q: %d digits, want AWS's 56 beginning 49", s, len(s))
				}
				if !long && len(s) > 40 {
					t.Errorf("%q: %d digits, DynamoDB Streams allows 40", s, len(s))
				}
				q, err := stream.ParseSequenceNumber("F", n, c.shard, s)
				if err != nil || q != c.seq {
					t.Errorf("ParseSequenceNumber(%q) = %d, %v; want %d", s, q, err, c.seq)
				}
				_, err = stream.ParseSequenceNumber("F", stream.Numbering{Epoch: c.epoch + 1, Long: long}, c.shard, s)
				wantErr(t, err, awserr.ErrInvalidArgument, "F")
				_, err = stream.ParseSequenceNumber("F", stream.Numbering{Epoch: c.epoch, Long: !long}, c.shard, s)
				wantErr(t, err, awserr.ErrInvalidArgument, "F")
				_, err = stream.ParseSequenceNumber("F", n, c.shard+1, s)
				wantErr(t, err, awserr.ErrInvalidArgument, "F")
				sh, q2, err := stream.DecodeSequenceNumber(n, s)
				if err != nil || sh != c.shard || q2 != c.seq {
					t.Errorf("DecodeSequenceNumber(%q) = %d, %d, %v", s, sh, q2, err)
				}
			})
		}
		// Numeric order equals log order, and a later shard's numbers are
		// above an earlier one's.
		n := stream.Numbering{Epoch: 1740830400000, Long: long}
		nums := []string{stream.FormatSequenceNumber(n, 2, 9), stream.FormatSequenceNumber(n, 2, 10),
			stream.FormatSequenceNumber(n, 2, ^uint64(0)), stream.FormatSequenceNumber(n, 3, 0)}
		for i := 1; i < len(nums); i++ {
			if seqBig(t, nums[i-1]).Cmp(seqBig(t, nums[i])) >= 0 {
				t.Errorf("long=%v: %s is not below %s", long, nums[i-1], nums[i])
			}
		}
	}
}

// ---- iterators: robustness ----

func TestForgedIteratorIsRefused(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{Clock: newClock()})
	createStream(t, rn, "forge", 2)
	putToShard(t, rn, "forge", 1, "x")
	it := shardIterator(t, rn, stream.GetShardIteratorInput{StreamName: "forge", ShardID: stream.ShardID(1), ShardIteratorType: stream.TrimHorizon})
	raw, err := base64.RawURLEncoding.DecodeString(it)
	var m map[string]any
	if err == nil {
		err = json.Unmarshal(raw, &m)
	}
	if err != nil {
		t.Skipf("iterator is no longer base64 JSON (%v); nothing to forge", err)
	}
	for _, shard := range []int{2, 99, -1} {
		t.Run(fmt.Sprint("shard index ", shard), func(t *testing.T) {
			m["h"] = shard
			b, _ := json.Marshal(m)
			forged := base64.RawURLEncoding.EncodeToString(b)
			var err error
			func() {
				defer func() {
					if p := recover(); p != nil {
						err = fmt.Errorf("panic: %v", p)
					}
				}()
				_, err = rn.Streams.GetRecords(t.Context(), forged, 0)
			}()
			if !errors.Is(err, awserr.ErrInvalidArgument) && !errors.Is(err, awserr.ErrResourceNotFound) {
				t.Errorf("forged iterator for shard %d: %v, want InvalidArgumentException", shard, err)
			}
		})
	}
}

func TestSequenceNumberOfStreamCreatedInTheSameSecondIsRefused(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{Clock: newClock()})
	createStream(t, rn, "one", 2)
	createStream(t, rn, "two", 1)
	foreign := putRecord(t, rn, "one", "k", "x").SequenceNumber
	_, err := rn.Streams.GetShardIterator(t.Context(), stream.GetShardIteratorInput{StreamName: "two", ShardID: stream.ShardID(0), ShardIteratorType: stream.AtSequenceNumber, StartingSequenceNumber: foreign})
	wantErr(t, err, awserr.ErrInvalidArgument, "StartingSequenceNumber")
	s0 := putToShard(t, rn, "one", 0, "a")
	_, err = rn.Streams.GetShardIterator(t.Context(), stream.GetShardIteratorInput{StreamName: "one", ShardID: stream.ShardID(1), ShardIteratorType: stream.AtSequenceNumber, StartingSequenceNumber: s0})
	wantErr(t, err, awserr.ErrInvalidArgument, "StartingSequenceNumber")
}

func TestInvalidStreamNameIsNotAServiceError(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{Clock: newClock()})
	for _, name := range []string{"", "bad name", "a*b", "a>b"} {
		t.Run(fmt.Sprintf("%q", name), func(t *testing.T) {
			calls := map[string]error{}
			_, calls["DescribeStream"] = rn.Streams.DescribeStream(t.Context(), name)
			calls["DeleteStream"] = rn.Streams.DeleteStream(t.Context(), name)
			_, calls["PutRecord"] = rn.Streams.PutRecord(t.Context(), name, stream.PutRecordsRequestEntry{PartitionKey: "k"})
			_, calls["GetShardIterator"] = rn.Streams.GetShardIterator(t.Context(), stream.GetShardIteratorInput{StreamName: name, ShardID: stream.ShardID(0), ShardIteratorType: stream.TrimHorizon})
			for call, err := range calls {
				if !errors.Is(err, awserr.ErrResourceNotFound) && !errors.Is(err, awserr.ErrInvalidArgument) {
					t.Errorf("%s(%q) = %v, want ResourceNotFoundException or InvalidArgumentException", call, name, err)
				}
			}
		})
	}
}

func TestGetRecordsResponseNeverExceedsTenMiB(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{Clock: newClock()})
	createStream(t, rn, "big", 1)
	const size = 700 << 10
	putBigRecords(t, rn, "big", 16, size-1)
	o, err := rn.Streams.GetRecords(t.Context(), shardIterator(t, rn, stream.GetShardIteratorInput{StreamName: "big", ShardID: stream.ShardID(0), ShardIteratorType: stream.TrimHorizon}), 0)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, r := range o.Records {
		total += len(r.Data) + len(r.PartitionKey)
	}
	if total > 10<<20 || len(o.Records) != 14 {
		t.Errorf("one response holds %d records, %d bytes; want 14 records, at most %d bytes", len(o.Records), total, 10<<20)
	}
}

// ---- retention ----

// secondProcess is a second stream service on rn's engine: another
// process's view of the same streams, with its own caches.
func secondProcess(t *testing.T, rn *runnel.Runnel) *stream.Service {
	t.Helper()
	other, err := stream.New(t.Context(), rn.Engine)
	if err != nil {
		t.Fatal(err)
	}
	return other
}

// TestAChildShardsIteratorReadsInAProcessThatCachedTheParent: a shard
// iterator is good in any process until it expires. A process that cached
// the stream before another one split its shard reads a child's iterator
// (the client follows ChildShards). It answered "not a valid shard
// iterator".
func TestAChildShardsIteratorReadsInAProcessThatCachedTheParent(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	ctx := t.Context()
	other := secondProcess(t, rn)
	createStream(t, rn, "s", 1)
	putRecord(t, rn, "s", "k", "before")
	if _, err := other.GetRecords(ctx, shardIterator(t, rn, stream.GetShardIteratorInput{StreamName: "s", ShardID: stream.ShardID(0), ShardIteratorType: stream.TrimHorizon}), 10); err != nil {
		t.Fatal(err) // caches the stream with its one shard
	}
	if _, err := rn.Streams.SplitShard(ctx, "s", stream.ShardID(0), "170141183460469231731687303715884105728"); err != nil {
		t.Fatal(err)
	}
	for _, child := range []int{1, 2} {
		it := shardIterator(t, rn, stream.GetShardIteratorInput{StreamName: "s", ShardID: stream.ShardID(child), ShardIteratorType: stream.TrimHorizon})
		if _, err := other.GetRecords(ctx, it, 10); err != nil {
			t.Errorf("GetRecords of child %d in the other process: %v", child, err)
		}
	}
}

// TestARetentionRaisedThroughAnotherProcessHoldsInEveryProcess: every
// process trims the streams each minute; one that cached a stream's
// description before another process raised its retention period
// (IncreaseStreamRetentionPeriod) must trim by the new period. It trimmed
// by the old one and deleted records the stream had to keep.
func TestARetentionRaisedThroughAnotherProcessHoldsInEveryProcess(t *testing.T) {
	clk := newClock()
	rn := testenv.Start(t, testenv.Options{Clock: clk})
	ctx := t.Context()
	other := secondProcess(t, rn)
	createStream(t, rn, "s", 1)
	putRecord(t, rn, "s", "k", "kept")
	if _, err := other.TrimExpired(ctx); err != nil { // caches the description (24 h)
		t.Fatal(err)
	}
	if err := rn.Streams.UpdateRetentionPeriod(ctx, "s", 48); err != nil {
		t.Fatal(err)
	}
	clk.Advance(25 * time.Hour)
	if n, err := other.TrimExpired(ctx); err != nil || n != 0 {
		t.Fatalf("TrimExpired in the other process = %d, %v; want 0 (the record is 25 h old of 48)", n, err)
	}
	if got := dataOf(readShard(t, rn, "s", 0)); got != "kept" {
		t.Fatalf("shard 0 = %q, want kept", got)
	}
}

func TestRetention(t *testing.T) {
	clk := newClock()
	rn := testenv.Start(t, testenv.Options{Clock: clk})
	ctx := t.Context()
	createStream(t, rn, "short", 2)
	if _, err := rn.Streams.CreateStream(ctx, stream.CreateStreamInput{StreamName: "long", RetentionPeriodHours: 48}); err != nil {
		t.Fatal(err)
	}
	var old []string
	for i := range 3 {
		old = append(old, putToShard(t, rn, "short", 0, fmt.Sprint("old", i)))
		putRecord(t, rn, "long", "k", fmt.Sprint("old", i))
	}
	clk.Advance(12 * time.Hour)
	var fresh []string
	for i := range 2 {
		fresh = append(fresh, putToShard(t, rn, "short", 0, fmt.Sprint("new", i)))
		putToShard(t, rn, "short", 1, fmt.Sprint("other", i))
	}
	clk.Advance(12*time.Hour - time.Second) // old records are 24h-1s old

	t.Run("records younger than RetentionPeriodHours stay", func(t *testing.T) {
		n, err := rn.Streams.TrimExpired(ctx)
		if err != nil || n != 0 {
			t.Fatalf("TrimExpired = %d, %v; want 0", n, err)
		}
		if got := dataOf(readShard(t, rn, "short", 0)); got != "old0,old1,old2,new0,new1" {
			t.Errorf("shard 0 = %q", got)
		}
	})

	clk.Advance(time.Second + time.Millisecond) // old records are now older than 24 h
	t.Run("records older than RetentionPeriodHours are trimmed", func(t *testing.T) {
		n, err := rn.Streams.TrimExpired(ctx)
		if err != nil || n != 3 {
			t.Fatalf("TrimExpired = %d, %v; want 3", n, err)
		}
		recs := readShard(t, rn, "short", 0)
		if dataOf(recs) != "new0,new1" || recs[0].SequenceNumber != fresh[0] || recs[1].SequenceNumber != fresh[1] {
			t.Errorf("TRIM_HORIZON reads %q %v, want new0,new1 with sequence numbers %v", dataOf(recs), recs, fresh)
		}
		if got := dataOf(readShard(t, rn, "short", 1)); got != "other0,other1" {
			t.Errorf("shard 1 = %q, want untouched", got)
		}
		first, last, err := rn.Streams.ShardBounds(ctx, "short", stream.ShardID(0))
		if err != nil || first != stream.Position(4, 0) || last != stream.Position(5, 0) {
			t.Errorf("ShardBounds = %d..%d, %v; want positions 4:0..5:0", first, last, err)
		}
		// An iterator at a trimmed sequence number starts at the trim horizon.
		it := shardIterator(t, rn, stream.GetShardIteratorInput{StreamName: "short", ShardID: stream.ShardID(0), ShardIteratorType: stream.AtSequenceNumber, StartingSequenceNumber: old[0]})
		if got := dataOf(readAll(t, rn, it)); got != "new0,new1" {
			t.Errorf("AT_SEQUENCE_NUMBER of a trimmed record reads %q", got)
		}
	})
	t.Run("each stream keeps its own RetentionPeriodHours", func(t *testing.T) {
		if got := countRecords(t, rn, "long"); got != 3 {
			t.Errorf("48 h stream holds %d records after 24 h, want 3", got)
		}
		clk.Advance(24 * time.Hour)
		n, err := rn.Streams.TrimExpired(ctx)
		if err != nil || n != 3+2+2 {
			t.Errorf("TrimExpired after 48 h = %d, %v; want 7", n, err)
		}
		if got := countRecords(t, rn, "long"); got != 0 {
			t.Errorf("48 h stream holds %d records after 48 h, want 0", got)
		}
		if got := countRecords(t, rn, "short"); got != 0 {
			t.Errorf("24 h stream holds %d records, want 0", got)
		}
	})
	t.Run("new records after a full trim continue the sequence", func(t *testing.T) {
		s := putToShard(t, rn, "short", 0, "later")
		if seqBig(t, s).Cmp(seqBig(t, fresh[1])) <= 0 {
			t.Errorf("sequence number %s after trim is not above %s", s, fresh[1])
		}
		if got := dataOf(readShard(t, rn, "short", 0)); got != "later" {
			t.Errorf("shard 0 = %q, want later", got)
		}
	})
}

func TestUpdateRetentionPeriod(t *testing.T) {
	clk := newClock()
	rn := testenv.Start(t, testenv.Options{Clock: clk})
	ctx := t.Context()
	createStream(t, rn, "ret", 1)
	for _, h := range []int{23, 8761, 0} {
		t.Run(fmt.Sprintf("%d hours is refused", h), func(t *testing.T) {
			wantErr(t, rn.Streams.UpdateRetentionPeriod(ctx, "ret", h), awserr.ErrInvalidArgument, "RetentionPeriodHours", "24 and 8760")
		})
	}
	wantErr(t, rn.Streams.UpdateRetentionPeriod(ctx, "missing", 48), awserr.ErrResourceNotFound)

	putRecord(t, rn, "ret", "k", "a")
	if err := rn.Streams.UpdateRetentionPeriod(ctx, "ret", 48); err != nil {
		t.Fatal(err)
	}
	if d, _ := rn.Streams.DescribeStream(ctx, "ret"); d == nil || d.RetentionPeriodHours != 48 {
		t.Fatalf("RetentionPeriodHours after update = %+v, want 48", d)
	}
	clk.Advance(30 * time.Hour)
	if n, err := rn.Streams.TrimExpired(ctx); err != nil || n != 0 {
		t.Errorf("increased retention: TrimExpired after 30 h = %d, %v; want 0", n, err)
	}
	if err := rn.Streams.UpdateRetentionPeriod(ctx, "ret", 24); err != nil {
		t.Fatal(err)
	}
	if n, err := rn.Streams.TrimExpired(ctx); err != nil || n != 1 {
		t.Errorf("decreased retention: TrimExpired after 30 h = %d, %v; want 1", n, err)
	}
}

// ---- durability ----

func TestRecordsSurviveRestart(t *testing.T) {
	for _, how := range []string{"Close", "Crash"} {
		t.Run("after "+how, func(t *testing.T) {
			dir, clk := t.TempDir(), newClock()
			rn := testenv.Start(t, testenv.Options{Dir: dir, Clock: clk})
			d := createStream(t, rn, "durable", 3)
			var entries []stream.PutRecordsRequestEntry
			for i := range 120 {
				entries = append(entries, stream.PutRecordsRequestEntry{PartitionKey: fmt.Sprint("pk", i), Data: fmt.Appendf(nil, "rec-%d", i)})
			}
			out, err := rn.Streams.PutRecords(t.Context(), "durable", entries)
			if err != nil || out.FailedRecordCount != 0 {
				t.Fatalf("PutRecords: %v %+v", err, out)
			}
			clk.Advance(time.Minute)
			single := putRecord(t, rn, "durable", "single", "single")
			before := map[string]stream.Record{}
			for sh := range 3 {
				for _, r := range readShard(t, rn, "durable", sh) {
					before[r.ShardID+"/"+r.SequenceNumber] = r
				}
			}
			if len(before) != 121 {
				t.Fatalf("read %d records before restart, want 121", len(before))
			}
			if how == "Close" {
				if err := rn.Close(); err != nil {
					t.Fatal(err)
				}
			} else {
				rn.Crash()
			}

			rn2 := testenv.Start(t, testenv.Options{Dir: dir, Clock: clk})
			d2, err := rn2.Streams.DescribeStream(t.Context(), "durable")
			if err != nil || fmt.Sprint(d2) != fmt.Sprint(d) {
				t.Fatalf("description after restart = %+v, %v; want %+v", d2, err, d)
			}
			after := 0
			for sh := range 3 {
				for _, r := range readShard(t, rn2, "durable", sh) {
					b, ok := before[r.ShardID+"/"+r.SequenceNumber]
					if !ok || string(b.Data) != string(r.Data) || b.PartitionKey != r.PartitionKey || !b.ApproximateArrivalTimestamp.Equal(r.ApproximateArrivalTimestamp) {
						t.Errorf("after restart %s %s = %q/%q, before %+v", r.ShardID, r.SequenceNumber, r.PartitionKey, r.Data, b)
					}
					after++
				}
			}
			if after != len(before) {
				t.Errorf("%d records after restart, want %d", after, len(before))
			}
			for i, r := range out.Records {
				if b := before[r.ShardId+"/"+r.SequenceNumber]; string(b.Data) != string(entries[i].Data) {
					t.Errorf("PutRecords result %d (%s %s) reads %q, want %q", i, r.ShardId, r.SequenceNumber, b.Data, entries[i].Data)
				}
			}
			next := putRecord(t, rn2, "durable", "single", "next")
			if next.ShardId != single.ShardId || seqBig(t, next.SequenceNumber).Cmp(seqBig(t, single.SequenceNumber)) <= 0 {
				t.Errorf("put after restart got %s %s, want a sequence number above %s", next.ShardId, next.SequenceNumber, single.SequenceNumber)
			}
		})
	}
}

func TestSequenceNumbersNotReusedAfterTrimAndRestart(t *testing.T) {
	dir, clk := t.TempDir(), newClock()
	rn := testenv.Start(t, testenv.Options{Dir: dir, Clock: clk})
	createStream(t, rn, "trimmed", 1)
	var last string
	for i := range 3 {
		last = putRecord(t, rn, "trimmed", "k", fmt.Sprint(i)).SequenceNumber
	}
	clk.Advance(25 * time.Hour)
	if n, err := rn.Streams.TrimExpired(t.Context()); err != nil || n != 3 {
		t.Fatalf("TrimExpired = %d, %v; want 3", n, err)
	}
	if err := rn.Close(); err != nil {
		t.Fatal(err)
	}
	rn2 := testenv.Start(t, testenv.Options{Dir: dir, Clock: clk})
	if got := countRecords(t, rn2, "trimmed"); got != 0 {
		t.Errorf("%d trimmed records back after restart", got)
	}
	s := putRecord(t, rn2, "trimmed", "k", "after").SequenceNumber
	if seqBig(t, s).Cmp(seqBig(t, last)) <= 0 {
		t.Errorf("sequence number %s after trim+restart reuses/precedes %s", s, last)
	}
}

// ---- ReadShard / ReadRange ----

func receive(t *testing.T, r *stream.ShardReader, n int) []stream.Record {
	t.Helper()
	var out []stream.Record
	timeout := time.After(10 * time.Second)
	for len(out) < n {
		select {
		case rec, ok := <-r.Records():
			if !ok {
				t.Fatalf("reader closed after %d of %d records: %v", len(out), n, r.Err())
			}
			out = append(out, rec)
		case <-timeout:
			t.Fatalf("received %d of %d records", len(out), n)
		}
	}
	return out
}

func TestReadShard(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{Clock: newClock()})
	createStream(t, rn, "rs", 2)
	var seqs []string
	for i := range 5 {
		seqs = append(seqs, putToShard(t, rn, "rs", 1, fmt.Sprint(i)))
	}
	putToShard(t, rn, "rs", 0, "elsewhere")

	t.Run("delivers records in order from the start position, then new ones", func(t *testing.T) {
		var gaps []stream.Gap
		r, err := rn.Streams.ReadShard(t.Context(), "rs", stream.ShardID(1), stream.Position(3, 0), stream.ReadShardOptions{OnGap: func(g stream.Gap) { gaps = append(gaps, g) }})
		if err != nil {
			t.Fatal(err)
		}
		got := receive(t, r, 3)
		if dataOf(got) != "2,3,4" || got[0].SequenceNumber != seqs[2] || got[0].Seq != stream.Position(3, 0) || got[0].ShardID != stream.ShardID(1) {
			t.Errorf("from position 3 got %q (%+v)", dataOf(got), got[0])
		}
		putToShard(t, rn, "rs", 1, "5")
		putToShard(t, rn, "rs", 0, "not-mine")
		putToShard(t, rn, "rs", 1, "6")
		if got := dataOf(receive(t, r, 2)); got != "5,6" {
			t.Errorf("live records = %q, want 5,6", got)
		}
		r.Stop()
		if _, ok := <-r.Records(); ok {
			t.Error("Records() still open after Stop")
		}
		if r.Err() != nil || len(gaps) != 0 {
			t.Errorf("Err = %v, gaps = %v; want none", r.Err(), gaps)
		}
	})
	t.Run("position 0 means the first record", func(t *testing.T) {
		r, err := rn.Streams.ReadShard(t.Context(), "rs", stream.ShardID(1), 0, stream.ReadShardOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Stop()
		if got := dataOf(receive(t, r, 7)); got != "0,1,2,3,4,5,6" {
			t.Errorf("got %q", got)
		}
	})
	t.Run("unknown stream or shard", func(t *testing.T) {
		_, err := rn.Streams.ReadShard(t.Context(), "nope", stream.ShardID(0), 1, stream.ReadShardOptions{})
		wantErr(t, err, awserr.ErrResourceNotFound)
		_, err = rn.Streams.ReadShard(t.Context(), "rs", stream.ShardID(2), 1, stream.ReadShardOptions{})
		wantErr(t, err, awserr.ErrResourceNotFound)
	})
}

func seqAt(t *testing.T, rn *runnel.Runnel, streamName string, pos uint64) string {
	t.Helper()
	s, err := rn.Streams.SequenceNumber(t.Context(), streamName, stream.ShardID(0), pos)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestReadShardReportsTrimmedGap(t *testing.T) {
	clk := newClock()
	rn := testenv.Start(t, testenv.Options{Clock: clk})
	createStream(t, rn, "gap", 1)
	var seqs []string
	for i := range 3 {
		seqs = append(seqs, putRecord(t, rn, "gap", "k", fmt.Sprint("old", i)).SequenceNumber)
	}
	clk.Advance(25 * time.Hour)
	for i := range 2 {
		seqs = append(seqs, putRecord(t, rn, "gap", "k", fmt.Sprint("new", i)).SequenceNumber)
	}
	if n, err := rn.Streams.TrimExpired(t.Context()); err != nil || n != 3 {
		t.Fatalf("TrimExpired = %d, %v; want 3", n, err)
	}
	cases := []struct {
		name string
		from uint64
		gap  *stream.Gap
	}{
		// A lost message's record count is gone with it: the gap ends at
		// the last position its range can hold (the message before the
		// first one still there, index 1023), and counts messages.
		{"start at a trimmed position reports the trimmed range", stream.Position(1, 0), &stream.Gap{ShardID: stream.ShardID(0), FromSequence: seqs[0], ToSequence: seqAt(t, rn, "gap", stream.Position(4, 0)-1), Messages: 3}},
		{"start in the middle of the trimmed range", stream.Position(2, 0), &stream.Gap{ShardID: stream.ShardID(0), FromSequence: seqs[1], ToSequence: seqAt(t, rn, "gap", stream.Position(4, 0)-1), Messages: 2}},
		{"a single trimmed message is a gap of 1", stream.Position(3, 0), &stream.Gap{ShardID: stream.ShardID(0), FromSequence: seqs[2], ToSequence: seqAt(t, rn, "gap", stream.Position(4, 0)-1), Messages: 1}},
		{"start at the trim horizon reports no gap", stream.Position(4, 0), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			gaps := make(chan stream.Gap, 10)
			r, err := rn.Streams.ReadShard(t.Context(), "gap", stream.ShardID(0), c.from, stream.ReadShardOptions{OnGap: func(g stream.Gap) { gaps <- g }})
			if err != nil {
				t.Fatal(err)
			}
			got := receive(t, r, 2)
			r.Stop()
			close(gaps)
			if dataOf(got) != "new0,new1" {
				t.Errorf("records = %q, want new0,new1", dataOf(got))
			}
			var all []stream.Gap
			for g := range gaps {
				all = append(all, g)
			}
			switch {
			case c.gap == nil && len(all) != 0:
				t.Errorf("gaps = %+v, want none", all)
			case c.gap != nil && (len(all) != 1 || all[0] != *c.gap):
				t.Errorf("gaps = %+v, want [%+v]", all, *c.gap)
			}
		})
	}
	t.Run("ReadRange returns retained records and counts missing ones", func(t *testing.T) {
		ranges := []struct {
			from, to uint64
			data     string
			missing  uint64
		}{
			{stream.Position(1, 0), stream.Position(5, 0), "new0,new1", 3},
			{stream.Position(2, 0), stream.Position(4, 0), "new0", 2},
			{stream.Position(4, 0), stream.Position(5, 0), "new0,new1", 0},
			{stream.Position(1, 0), stream.Position(3, 0), "", 3},
			{0, stream.Position(3, 0), "", 3},
		}
		for _, rg := range ranges {
			recs, missing, err := rn.Streams.ReadRange(t.Context(), "gap", stream.ShardID(0), rg.from, rg.to)
			if err != nil || dataOf(recs) != rg.data || missing != rg.missing {
				t.Errorf("ReadRange(%d, %d) = %q, %d missing, %v; want %q, %d", rg.from, rg.to, dataOf(recs), missing, err, rg.data, rg.missing)
			}
			for _, r := range recs {
				if msg, _ := stream.MessageOf(r.Seq); r.SequenceNumber != seqs[msg-1] {
					t.Errorf("ReadRange record at %d has sequence number %s, want %s", r.Seq, r.SequenceNumber, seqs[msg-1])
				}
			}
		}
		_, _, err := rn.Streams.ReadRange(t.Context(), "gap", stream.ShardID(1), 1, 2)
		wantErr(t, err, awserr.ErrResourceNotFound)
	})
}

// TestPutRecordsTakesAtMostFiveMiB: one PutRecords call takes "up to a
// limit of 5 MiB for the entire request, including partition keys"
// (API_PutRecords): six records of 1 MiB are refused whole, five are
// stored. (Only the count and each record's 1 MiB were checked.)
func TestPutRecordsTakesAtMostFiveMiB(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	createStream(t, rn, "big", 1)
	entries := make([]stream.PutRecordsRequestEntry, 6)
	for i := range entries {
		pk := fmt.Sprint("k", i)
		entries[i] = stream.PutRecordsRequestEntry{PartitionKey: pk, Data: bytes.Repeat([]byte("x"), stream.MaxRecordSize-len(pk))}
	}
	_, err := rn.Streams.PutRecords(t.Context(), "big", entries)
	wantErr(t, err, awserr.ErrInvalidArgument, "5 MB")
	if n := countRecords(t, rn, "big"); n != 0 {
		t.Fatalf("%d records stored from a refused call", n)
	}
	out, err := rn.Streams.PutRecords(t.Context(), "big", entries[:5])
	if err != nil || out.FailedRecordCount != 0 {
		t.Fatalf("five records of 1 MiB: %v %+v", err, out)
	}
}

// ---- benchmarks ----

func BenchmarkPutRecords(b *testing.B) {
	rn := testenv.Start(b, testenv.Options{})
	createStream(b, rn, "bench", 4)
	entries := make([]stream.PutRecordsRequestEntry, stream.MaxPutRecords)
	for i := range entries {
		entries[i] = stream.PutRecordsRequestEntry{PartitionKey: fmt.Sprint("pk-", i), Data: []byte(strings.Repeat("x", 90) + fmt.Sprintf("%010d", i))}
	}
	b.SetBytes(int64(len(entries) * 100))
	b.ResetTimer()
	for b.Loop() {
		out, err := rn.Streams.PutRecords(b.Context(), "bench", entries)
		if err != nil || out.FailedRecordCount != 0 {
			b.Fatalf("PutRecords: %v %+v", err, out)
		}
	}
	b.ReportMetric(float64(b.N*len(entries))/b.Elapsed().Seconds(), "records/s")
}

func BenchmarkGetRecords(b *testing.B) {
	const total, limit = 5000, 1000
	rn := testenv.Start(b, testenv.Options{})
	createStream(b, rn, "bench", 1)
	entries := make([]stream.PutRecordsRequestEntry, stream.MaxPutRecords)
	for i := range entries {
		entries[i] = stream.PutRecordsRequestEntry{PartitionKey: fmt.Sprint("pk-", i), Data: []byte(strings.Repeat("y", 100))}
	}
	for range total / len(entries) {
		if _, err := rn.Streams.PutRecords(b.Context(), "bench", entries); err != nil {
			b.Fatal(err)
		}
	}
	th := stream.GetShardIteratorInput{StreamName: "bench", ShardID: stream.ShardID(0), ShardIteratorType: stream.TrimHorizon}
	it := shardIterator(b, rn, th)
	read := 0
	b.ResetTimer()
	for b.Loop() {
		o, err := rn.Streams.GetRecords(b.Context(), it, limit)
		if err != nil {
			b.Fatal(err)
		}
		read += len(o.Records)
		it = o.NextShardIterator
		if len(o.Records) < limit {
			it = shardIterator(b, rn, th)
		}
	}
	b.ReportMetric(float64(read)/b.Elapsed().Seconds(), "records/s")
}
