package stream_test

// Helpers shared by the stream package's tests: the fake clock, stream
// creation, puts, iterators and reads.

import (
	"errors"
	"math/big"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/stream"
)

// ---- helpers ----

// epoch0 is the fake clock's start: sub-millisecond on purpose, so that the
// millisecond precision of arrival timestamps is exercised.
var epoch0 = time.Date(2025, 3, 1, 12, 0, 0, 123456789, time.UTC)

func newClock() *clockwork.FakeClock { return clockwork.NewFakeClockAt(epoch0) }

var (
	seqRE   = regexp.MustCompile(`^(0|[1-9]\d{0,128})$`)
	maxHash = new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 128), big.NewInt(1))
)

func fakeClock(t testing.TB, rn *runnel.Runnel) *clockwork.FakeClock {
	t.Helper()
	clk, ok := rn.Engine.Clock.(*clockwork.FakeClock)
	if !ok {
		t.Fatalf("engine clock is %T, want *clockwork.FakeClock", rn.Engine.Clock)
	}
	return clk
}

// wantErr fails unless err matches sentinel and its message holds every
// substring of want.
func wantErr(t testing.TB, err error, sentinel error, want ...string) {
	t.Helper()
	if !errors.Is(err, sentinel) {
		t.Errorf("error = %v, want %v", err, sentinel)
		return
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not mention %q", err, w)
		}
	}
}

func createStream(t testing.TB, rn *runnel.Runnel, name string, shards int) *stream.StreamDescription {
	t.Helper()
	d, err := rn.Streams.CreateStream(t.Context(), stream.CreateStreamInput{StreamName: name, ShardCount: shards})
	if err != nil {
		t.Fatalf("CreateStream %s: %v", name, err)
	}
	return d
}

func putRecord(t testing.TB, rn *runnel.Runnel, name, pk, data string) stream.PutRecordsResultEntry {
	t.Helper()
	r, err := rn.Streams.PutRecord(t.Context(), name, stream.PutRecordsRequestEntry{PartitionKey: pk, Data: []byte(data)})
	if err != nil {
		t.Fatalf("PutRecord %s: %v", name, err)
	}
	return r
}

// putToShard puts a record into shard i via ExplicitHashKey and returns its
// sequence number.
func putToShard(t testing.TB, rn *runnel.Runnel, name string, i int, data string) string {
	t.Helper()
	d, err := rn.Streams.DescribeStream(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	r, err := rn.Streams.PutRecord(t.Context(), name, stream.PutRecordsRequestEntry{PartitionKey: "k", ExplicitHashKey: d.Shards[i].HashKeyRange.StartingHashKey, Data: []byte(data)})
	if err != nil {
		t.Fatal(err)
	}
	if r.ShardId != stream.ShardID(i) {
		t.Fatalf("put to %s, want %s", r.ShardId, stream.ShardID(i))
	}
	return r.SequenceNumber
}

func shardIterator(t testing.TB, rn *runnel.Runnel, in stream.GetShardIteratorInput) string {
	t.Helper()
	it, err := rn.Streams.GetShardIterator(t.Context(), in)
	if err != nil {
		t.Fatalf("GetShardIterator %+v: %v", in, err)
	}
	return it
}

// readAll reads from it until a GetRecords call returns no records.
func readAll(t testing.TB, rn *runnel.Runnel, it string) []stream.Record {
	t.Helper()
	var out []stream.Record
	for range 1000 {
		o, err := rn.Streams.GetRecords(t.Context(), it, 0)
		if err != nil {
			t.Fatalf("GetRecords: %v", err)
		}
		if len(o.Records) == 0 {
			return out
		}
		out = append(out, o.Records...)
		it = o.NextShardIterator
	}
	t.Fatal("GetRecords never ran out of records")
	return nil
}

func readShard(t testing.TB, rn *runnel.Runnel, name string, shard int) []stream.Record {
	t.Helper()
	return readAll(t, rn, shardIterator(t, rn, stream.GetShardIteratorInput{StreamName: name, ShardID: stream.ShardID(shard), ShardIteratorType: stream.TrimHorizon}))
}

func countRecords(t testing.TB, rn *runnel.Runnel, name string) int {
	t.Helper()
	d, err := rn.Streams.DescribeStream(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for i := range d.Shards {
		n += len(readShard(t, rn, name, i))
	}
	return n
}

func dataOf(recs []stream.Record) string {
	s := make([]string, len(recs))
	for i, r := range recs {
		s[i] = string(r.Data)
	}
	return strings.Join(s, ",")
}

func seqBig(t testing.TB, s string) *big.Int {
	t.Helper()
	v, ok := new(big.Int).SetString(s, 10)
	if !ok {
		t.Fatalf("sequence number %q is not a decimal", s)
	}
	return v
}

func shardRange(t testing.TB, sh stream.Shard) (lo, hi *big.Int) {
	t.Helper()
	lo, ok1 := new(big.Int).SetString(sh.HashKeyRange.StartingHashKey, 10)
	hi, ok2 := new(big.Int).SetString(sh.HashKeyRange.EndingHashKey, 10)
	if !ok1 || !ok2 || lo.Cmp(hi) > 0 {
		t.Fatalf("%s has a bad hash key range %+v", sh.ShardID, sh.HashKeyRange)
	}
	return lo, hi
}

// ownerShard is the shard whose range holds hash key k, computed from the
// description alone.
func ownerShard(t testing.TB, d *stream.StreamDescription, k *big.Int) string {
	t.Helper()
	for _, sh := range d.Shards {
		lo, hi := shardRange(t, sh)
		if lo.Cmp(k) <= 0 && k.Cmp(hi) <= 0 {
			return sh.ShardID
		}
	}
	t.Fatalf("no shard owns %s", k)
	return ""
}
