package stream_test

import (
	"crypto/md5"
	"encoding/base64"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/stream"
)

// The conformance suite's reading rules (runConformance, in
// conformance_test.go, runs them against each engine): iterator types,
// timestamps, limits and continuation, the 10 MiB response, the lag,
// the iterator's expiry, bad iterator requests.

func confIteratorTypes(t *testing.T, rn *runnel.Runnel, _ *clockwork.FakeClock) {
	createStream(t, rn, "iters", 2)
	sh := stream.ShardID(1)
	var seqs []string
	for i := range 5 {
		seqs = append(seqs, putToShard(t, rn, "iters", 1, fmt.Sprint(i)))
	}
	latest := shardIterator(t, rn, stream.GetShardIteratorInput{StreamName: "iters", ShardID: sh, ShardIteratorType: stream.Latest})
	out, err := rn.Streams.GetRecords(t.Context(), latest, 0)
	if err != nil || len(out.Records) != 0 {
		t.Fatalf("LATEST before new puts read %d records, %v; want 0", len(out.Records), err)
	}
	for i := 5; i < 7; i++ {
		seqs = append(seqs, putToShard(t, rn, "iters", 1, fmt.Sprint(i)))
	}
	all := "0,1,2,3,4,5,6"
	cases := []struct {
		name string
		in   stream.GetShardIteratorInput
		want string
	}{
		{"TRIM_HORIZON starts at the oldest record", stream.GetShardIteratorInput{ShardIteratorType: stream.TrimHorizon}, all},
		{"AT_SEQUENCE_NUMBER starts at that record", stream.GetShardIteratorInput{ShardIteratorType: stream.AtSequenceNumber, StartingSequenceNumber: seqs[2]}, "2,3,4,5,6"},
		{"AFTER_SEQUENCE_NUMBER starts after that record", stream.GetShardIteratorInput{ShardIteratorType: stream.AfterSequenceNumber, StartingSequenceNumber: seqs[2]}, "3,4,5,6"},
		{"AT_SEQUENCE_NUMBER of the first record", stream.GetShardIteratorInput{ShardIteratorType: stream.AtSequenceNumber, StartingSequenceNumber: seqs[0]}, all},
		{"AFTER_SEQUENCE_NUMBER of the newest record reads nothing yet", stream.GetShardIteratorInput{ShardIteratorType: stream.AfterSequenceNumber, StartingSequenceNumber: seqs[6]}, ""},
		{"LATEST reads nothing yet", stream.GetShardIteratorInput{ShardIteratorType: stream.Latest}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.in.StreamName, c.in.ShardID = "iters", sh
			if got := dataOf(readAll(t, rn, shardIterator(t, rn, c.in))); got != c.want {
				t.Errorf("read %q, want %q", got, c.want)
			}
		})
	}
	t.Run("LATEST reads only records put after the iterator", func(t *testing.T) {
		if got := dataOf(readAll(t, rn, latest)); got != "5,6" {
			t.Errorf("read %q, want %q", got, "5,6")
		}
	})
	// The other shard is empty.
	if got := readAll(t, rn, shardIterator(t, rn, stream.GetShardIteratorInput{StreamName: "iters", ShardID: stream.ShardID(0), ShardIteratorType: stream.TrimHorizon})); len(got) != 0 {
		t.Errorf("shard 0 holds %d records, want 0", len(got))
	}
}

func confAtTimestamp(t *testing.T, rn *runnel.Runnel, clk *clockwork.FakeClock) {
	createStream(t, rn, "ts", 1)
	t0 := clk.Now().Truncate(time.Millisecond)
	clk.Advance(t0.Add(time.Millisecond).Sub(clk.Now())) // whole ms
	t0 = clk.Now()
	for i := range 4 {
		putRecord(t, rn, "ts", "k", fmt.Sprint(i)) // record i arrives at t0+i s
		clk.Advance(time.Second)
	}
	cases := []struct {
		name string
		at   time.Time
		want string
	}{
		{"before every record reads all", t0.Add(-time.Hour), "0,1,2,3"},
		{"exactly a record's arrival starts at it", t0.Add(2 * time.Second), "2,3"},
		{"between two arrivals starts at the later", t0.Add(1500 * time.Millisecond), "2,3"},
		{"1 ms after a record's arrival skips it", t0.Add(time.Millisecond), "1,2,3"},
		{"after every record reads nothing yet", t0.Add(time.Hour), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			it := shardIterator(t, rn, stream.GetShardIteratorInput{StreamName: "ts", ShardID: stream.ShardID(0), ShardIteratorType: stream.AtTimestamp, Timestamp: c.at})
			if got := dataOf(readAll(t, rn, it)); got != c.want {
				t.Errorf("read %q, want %q", got, c.want)
			}
		})
	}
	_, err := rn.Streams.GetShardIterator(t.Context(), stream.GetShardIteratorInput{StreamName: "ts", ShardID: stream.ShardID(0), ShardIteratorType: stream.AtTimestamp})
	wantErr(t, err, awserr.ErrInvalidArgument, "Timestamp")
}

func confLimitAndContinuation(t *testing.T, rn *runnel.Runnel, _ *clockwork.FakeClock) {
	createStream(t, rn, "limit", 1)
	var want []string
	entries := make([]stream.PutRecordsRequestEntry, 25)
	for i := range entries {
		entries[i] = stream.PutRecordsRequestEntry{PartitionKey: fmt.Sprint(i), Data: []byte(fmt.Sprint(i))}
	}
	out, err := rn.Streams.PutRecords(t.Context(), "limit", entries)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range out.Records {
		want = append(want, r.SequenceNumber)
	}
	it := shardIterator(t, rn, stream.GetShardIteratorInput{StreamName: "limit", ShardID: stream.ShardID(0), ShardIteratorType: stream.TrimHorizon})

	var got []string
	var sizes []int
	cur := it
	for range 4 {
		o, err := rn.Streams.GetRecords(t.Context(), cur, 10)
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, len(o.Records))
		for _, r := range o.Records {
			got = append(got, r.SequenceNumber)
		}
		if o.NextShardIterator == "" {
			t.Fatal("NextShardIterator is empty on an open shard")
		}
		cur = o.NextShardIterator
	}
	if fmt.Sprint(sizes) != "[10 10 5 0]" {
		t.Errorf("batch sizes with Limit 10 = %v, want [10 10 5 0]", sizes)
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("chained reads returned\n%v\nwant\n%v", got, want)
	}
	// The exhausted iterator picks up new records.
	r := putRecord(t, rn, "limit", "new", "new")
	o, err := rn.Streams.GetRecords(t.Context(), cur, 10)
	if err != nil || len(o.Records) != 1 || o.Records[0].SequenceNumber != r.SequenceNumber {
		t.Errorf("after a new put, read %+v, %v; want the new record", o, err)
	}

	t.Run("Limit 0 means the default (10000)", func(t *testing.T) {
		o, err := rn.Streams.GetRecords(t.Context(), it, 0)
		if err != nil || len(o.Records) != 26 {
			t.Errorf("Limit 0 read %d records, %v; want 26", len(o.Records), err)
		}
	})
	t.Run("Limit 10000 is allowed", func(t *testing.T) {
		if _, err := rn.Streams.GetRecords(t.Context(), it, stream.MaxGetRecordsLimit); err != nil {
			t.Error(err)
		}
	})
	for _, l := range []int{10001, -1} {
		t.Run(fmt.Sprintf("Limit %d is refused", l), func(t *testing.T) {
			_, err := rn.Streams.GetRecords(t.Context(), it, l)
			wantErr(t, err, awserr.ErrInvalidArgument, "Limit", "1 and 10000")
		})
	}
}

func confTenMiB(t *testing.T, rn *runnel.Runnel, _ *clockwork.FakeClock) {
	createStream(t, rn, "big", 1)
	// 12 records of exactly 1 MiB (data + key): 10 fit in one response.
	putBigRecords(t, rn, "big", 12, stream.MaxRecordSize-1)
	it := shardIterator(t, rn, stream.GetShardIteratorInput{StreamName: "big", ShardID: stream.ShardID(0), ShardIteratorType: stream.TrimHorizon})
	var sizes []int
	for range 3 {
		o, err := rn.Streams.GetRecords(t.Context(), it, 0)
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, len(o.Records))
		it = o.NextShardIterator
	}
	if fmt.Sprint(sizes) != "[10 2 0]" {
		t.Errorf("records per call = %v, want [10 2 0]", sizes)
	}
}

// putBigRecords puts n records of size data bytes with the key "k".
func putBigRecords(t testing.TB, rn *runnel.Runnel, name string, n, size int) {
	t.Helper()
	data := make([]byte, size)
	for i := range n {
		data[0] = byte(i)
		if _, err := rn.Streams.PutRecord(t.Context(), name, stream.PutRecordsRequestEntry{PartitionKey: "k", Data: data}); err != nil {
			t.Fatal(err)
		}
	}
}

func confMillisBehind(t *testing.T, rn *runnel.Runnel, clk *clockwork.FakeClock) {
	createStream(t, rn, "behind", 1)
	for i := range 3 {
		putRecord(t, rn, "behind", "k", fmt.Sprint(i))
	}
	clk.Advance(10 * time.Second)
	it := shardIterator(t, rn, stream.GetShardIteratorInput{StreamName: "behind", ShardID: stream.ShardID(0), ShardIteratorType: stream.TrimHorizon})
	o, err := rn.Streams.GetRecords(t.Context(), it, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Records) != 1 || o.MillisBehindLatest <= 0 {
		t.Errorf("1 of 3 records read: MillisBehindLatest = %d, want > 0", o.MillisBehindLatest)
	}
	if o.MillisBehindLatest != 10000 {
		t.Errorf("MillisBehindLatest = %d, want 10000 (age of the next unread record)", o.MillisBehindLatest)
	}
	o, err = rn.Streams.GetRecords(t.Context(), o.NextShardIterator, 0)
	if err != nil || len(o.Records) != 2 || o.MillisBehindLatest != 0 {
		t.Errorf("caught up: %d records, MillisBehindLatest %d, %v; want 2, 0", len(o.Records), o.MillisBehindLatest, err)
	}
	o, err = rn.Streams.GetRecords(t.Context(), o.NextShardIterator, 0)
	if err != nil || len(o.Records) != 0 || o.MillisBehindLatest != 0 {
		t.Errorf("at the tip: %d records, MillisBehindLatest %d, %v; want 0, 0", len(o.Records), o.MillisBehindLatest, err)
	}
}

func confIteratorExpiry(t *testing.T, rn *runnel.Runnel, clk *clockwork.FakeClock) {
	createStream(t, rn, "expiry", 1)
	putRecord(t, rn, "expiry", "k", "0")
	it := shardIterator(t, rn, stream.GetShardIteratorInput{StreamName: "expiry", ShardID: stream.ShardID(0), ShardIteratorType: stream.TrimHorizon})
	clk.Advance(stream.IteratorLifetime - time.Millisecond)
	o, err := rn.Streams.GetRecords(t.Context(), it, 0)
	if err != nil || len(o.Records) != 1 {
		t.Fatalf("iterator 1 ms before expiry: %v, %+v", err, o)
	}
	clk.Advance(2 * time.Millisecond)
	_, err = rn.Streams.GetRecords(t.Context(), it, 0)
	wantErr(t, err, awserr.ErrExpiredIterator)
	// NextShardIterator is a fresh iterator with its own 5 minutes.
	if _, err := rn.Streams.GetRecords(t.Context(), o.NextShardIterator, 0); err != nil {
		t.Errorf("NextShardIterator issued 2 ms ago: %v", err)
	}
	clk.Advance(stream.IteratorLifetime)
	_, err = rn.Streams.GetRecords(t.Context(), o.NextShardIterator, 0)
	wantErr(t, err, awserr.ErrExpiredIterator)
}

func confInvalidIteratorRequests(t *testing.T, rn *runnel.Runnel, _ *clockwork.FakeClock) {
	createStream(t, rn, "inv", 2)
	seq := putToShard(t, rn, "inv", 0, "x")
	cases := []struct {
		name string
		in   stream.GetShardIteratorInput
		want error
	}{
		{"unknown stream", stream.GetShardIteratorInput{StreamName: "nope", ShardID: stream.ShardID(0), ShardIteratorType: stream.TrimHorizon}, awserr.ErrResourceNotFound},
		{"unknown shard", stream.GetShardIteratorInput{StreamName: "inv", ShardID: stream.ShardID(2), ShardIteratorType: stream.TrimHorizon}, awserr.ErrResourceNotFound},
		{"malformed shard id", stream.GetShardIteratorInput{StreamName: "inv", ShardID: "shardId-1", ShardIteratorType: stream.TrimHorizon}, awserr.ErrResourceNotFound},
		{"unknown iterator type", stream.GetShardIteratorInput{StreamName: "inv", ShardID: stream.ShardID(0), ShardIteratorType: "OLDEST"}, awserr.ErrInvalidArgument},
		{"AT_SEQUENCE_NUMBER without a sequence number", stream.GetShardIteratorInput{StreamName: "inv", ShardID: stream.ShardID(0), ShardIteratorType: stream.AtSequenceNumber}, awserr.ErrInvalidArgument},
		{"AFTER_SEQUENCE_NUMBER with a non-number", stream.GetShardIteratorInput{StreamName: "inv", ShardID: stream.ShardID(0), ShardIteratorType: stream.AfterSequenceNumber, StartingSequenceNumber: "abc"}, awserr.ErrInvalidArgument},
		{"AT_SEQUENCE_NUMBER with a truncated sequence number", stream.GetShardIteratorInput{StreamName: "inv", ShardID: stream.ShardID(0), ShardIteratorType: stream.AtSequenceNumber, StartingSequenceNumber: seq[:len(seq)-1]}, awserr.ErrInvalidArgument},
	}
	for _, c := range cases {
		t.Run("GetShardIterator "+c.name, func(t *testing.T) {
			it, err := rn.Streams.GetShardIterator(t.Context(), c.in)
			wantErr(t, err, c.want)
			if it != "" {
				t.Errorf("refused call returned iterator %q", it)
			}
		})
	}
	for _, it := range []string{"", "garbage!!", "AAAA", base64.RawURLEncoding.EncodeToString([]byte("{}")), base64.RawURLEncoding.EncodeToString([]byte("[1,2]"))} {
		t.Run(fmt.Sprintf("GetRecords with iterator %q", it), func(t *testing.T) {
			_, err := rn.Streams.GetRecords(t.Context(), it, 0)
			wantErr(t, err, awserr.ErrInvalidArgument, "ShardIterator")
		})
	}
}

func confForeignSequenceNumber(t *testing.T, rn *runnel.Runnel, clk *clockwork.FakeClock) {
	createStream(t, rn, "first", 1)
	clk.Advance(time.Second)
	createStream(t, rn, "second", 1)
	foreign := putRecord(t, rn, "first", "k", "x").SequenceNumber
	own := putRecord(t, rn, "second", "k", "y").SequenceNumber
	for _, typ := range []string{stream.AtSequenceNumber, stream.AfterSequenceNumber} {
		_, err := rn.Streams.GetShardIterator(t.Context(), stream.GetShardIteratorInput{StreamName: "second", ShardID: stream.ShardID(0), ShardIteratorType: typ, StartingSequenceNumber: foreign})
		wantErr(t, err, awserr.ErrInvalidArgument, "StartingSequenceNumber")
	}
	if _, err := rn.Streams.GetShardIterator(t.Context(), stream.GetShardIteratorInput{StreamName: "second", ShardID: stream.ShardID(0), ShardIteratorType: stream.AtSequenceNumber, StartingSequenceNumber: own}); err != nil {
		t.Errorf("own sequence number refused: %v", err)
	}
}

// md5Key is this test's own computation of a partition key's hash key.
func md5Key(pk string) *big.Int {
	d := md5.Sum([]byte(pk))
	return new(big.Int).SetBytes(d[:])
}
