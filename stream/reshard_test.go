package stream_test

import (
	"fmt"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/stream"
)

// ---- resharding helpers ----

func describe(t testing.TB, rn *runnel.Runnel, name string) *stream.StreamDescription {
	t.Helper()
	d, err := rn.Streams.DescribeStream(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func shardByID(t testing.TB, d *stream.StreamDescription, id string) stream.Shard {
	t.Helper()
	for _, sh := range d.Shards {
		if sh.ShardID == id {
			return sh
		}
	}
	t.Fatalf("no shard %s in %s", id, d.StreamName)
	return stream.Shard{}
}

// assertTiling checks that the open shards cover 0..2^128-1 exactly, with
// neither gap nor overlap, and that closed shards have an
// EndingSequenceNumber.
func assertTiling(t testing.TB, d *stream.StreamDescription) []stream.Shard {
	t.Helper()
	var open []stream.Shard
	for _, sh := range d.Shards {
		if sh.Open() {
			if sh.SequenceNumberRange.EndingSequenceNumber != "" {
				t.Errorf("open %s has EndingSequenceNumber %s", sh.ShardID, sh.SequenceNumberRange.EndingSequenceNumber)
			}
			open = append(open, sh)
		} else if sh.SequenceNumberRange.EndingSequenceNumber == "" {
			t.Errorf("closed %s has no EndingSequenceNumber", sh.ShardID)
		}
	}
	sort.Slice(open, func(a, b int) bool {
		la, _ := shardRange(t, open[a])
		lb, _ := shardRange(t, open[b])
		return la.Cmp(lb) < 0
	})
	next := big.NewInt(0)
	for _, sh := range open {
		lo, hi := shardRange(t, sh)
		if lo.Cmp(next) != 0 {
			t.Fatalf("open shards do not tile the hash key space: %s starts at %s, want %s", sh.ShardID, lo, next)
		}
		next = new(big.Int).Add(hi, big.NewInt(1))
	}
	if new(big.Int).Sub(next, big.NewInt(1)).Cmp(maxHash) != 0 {
		t.Fatalf("open shards end at %s, want 2^128-1", new(big.Int).Sub(next, big.NewInt(1)))
	}
	if d.OpenShardCount() != len(open) {
		t.Errorf("OpenShardCount = %d, want %d", d.OpenShardCount(), len(open))
	}
	return open
}

// readToEnd reads a shard from TRIM_HORIZON until GetRecords returns no
// NextShardIterator (a closed shard) and returns its records and children;
// for an open shard it stops at the first empty page.
func readToEnd(t testing.TB, rn *runnel.Runnel, name, shardID string) ([]stream.Record, []stream.ChildShard) {
	t.Helper()
	it := shardIterator(t, rn, stream.GetShardIteratorInput{StreamName: name, ShardID: shardID, ShardIteratorType: stream.TrimHorizon})
	var recs []stream.Record
	for range 10000 {
		o, err := rn.Streams.GetRecords(t.Context(), it, 0)
		if err != nil {
			t.Fatalf("GetRecords %s: %v", shardID, err)
		}
		recs = append(recs, o.Records...)
		if o.NextShardIterator == "" {
			return recs, o.ChildShards
		}
		if len(o.ChildShards) > 0 {
			t.Fatalf("ChildShards %+v with a NextShardIterator", o.ChildShards)
		}
		if len(o.Records) == 0 {
			return recs, nil
		}
		it = o.NextShardIterator
	}
	t.Fatal("GetRecords never ended")
	return nil, nil
}

func dec(v *big.Int) string { return v.String() }

// ---- tests ----

func TestSplitShardLineageAndRouting(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	ctx := t.Context()
	d0 := createStream(t, rn, "split", 1)
	before := []string{putRecord(t, rn, "split", "a", "1").SequenceNumber, putRecord(t, rn, "split", "b", "2").SequenceNumber}

	mid := new(big.Int).Lsh(big.NewInt(1), 127)
	d, err := rn.Streams.SplitShard(ctx, "split", stream.ShardID(0), dec(mid))
	if err != nil {
		t.Fatal(err)
	}
	if d.StreamStatus != stream.StatusActive || describe(t, rn, "split").StreamStatus != stream.StatusActive {
		t.Errorf("status after SplitShard = %s", d.StreamStatus)
	}
	d = describe(t, rn, "split")
	assertTiling(t, d)
	p, lo, hi := shardByID(t, d, stream.ShardID(0)), shardByID(t, d, stream.ShardID(1)), shardByID(t, d, stream.ShardID(2))
	if p.Open() || p.SequenceNumberRange.StartingSequenceNumber != d0.Shards[0].SequenceNumberRange.StartingSequenceNumber {
		t.Errorf("parent = %+v", p)
	}
	for _, c := range []stream.Shard{lo, hi} {
		if c.ParentShardID != stream.ShardID(0) || c.AdjacentParentShardID != "" || !c.Open() {
			t.Errorf("child = %+v", c)
		}
	}
	if lo.HashKeyRange != (stream.HashKeyRange{StartingHashKey: "0", EndingHashKey: dec(new(big.Int).Sub(mid, big.NewInt(1)))}) ||
		hi.HashKeyRange != (stream.HashKeyRange{StartingHashKey: dec(mid), EndingHashKey: dec(maxHash)}) {
		t.Errorf("children ranges %+v %+v", lo.HashKeyRange, hi.HashKeyRange)
	}
	end := seqBig(t, p.SequenceNumberRange.EndingSequenceNumber)
	for _, s := range before {
		if seqBig(t, s).Cmp(end) > 0 {
			t.Errorf("record %s after the parent's EndingSequenceNumber %s", s, end)
		}
	}

	// ExplicitHashKey at the boundary goes to the upper child, one below
	// to the lower one; nothing goes to the closed parent.
	put := func(k *big.Int) string {
		r, err := rn.Streams.PutRecord(ctx, "split", stream.PutRecordsRequestEntry{PartitionKey: "x", ExplicitHashKey: dec(k), Data: []byte("x")})
		if err != nil {
			t.Fatal(err)
		}
		return r.ShardId
	}
	if got := put(mid); got != hi.ShardID {
		t.Errorf("hash key %s went to %s, want %s", mid, got, hi.ShardID)
	}
	if got := put(new(big.Int).Sub(mid, big.NewInt(1))); got != lo.ShardID {
		t.Errorf("hash key mid-1 went to %s, want %s", got, lo.ShardID)
	}
	for i := range 20 {
		r := putRecord(t, rn, "split", "k"+strconv.Itoa(i), "after")
		if r.ShardId == p.ShardID {
			t.Fatalf("record put after the split went to the closed parent")
		}
		if want := ownerShard(t, &stream.StreamDescription{Shards: []stream.Shard{lo, hi}}, stream.PartitionHashKey("k"+strconv.Itoa(i))); r.ShardId != want {
			t.Errorf("key k%d went to %s, want %s", i, r.ShardId, want)
		}
		if seqBig(t, r.SequenceNumber).Cmp(end) <= 0 {
			t.Errorf("child sequence number %s not above the parent's end %s", r.SequenceNumber, end)
		}
	}

	// GetRecords on the closed parent: its records, then ChildShards and
	// no NextShardIterator.
	recs, children := readToEnd(t, rn, "split", p.ShardID)
	if dataOf(recs) != "1,2" {
		t.Errorf("parent records = %q", dataOf(recs))
	}
	if len(children) != 2 || children[0].ShardID != lo.ShardID || children[1].ShardID != hi.ShardID ||
		len(children[0].ParentShards) != 1 || children[0].ParentShards[0] != p.ShardID || children[1].HashKeyRange != hi.HashKeyRange {
		t.Errorf("ChildShards = %+v", children)
	}
	// LATEST and AT_SEQUENCE_NUMBER of the end on a closed shard are at its end.
	for _, in := range []stream.GetShardIteratorInput{
		{ShardIteratorType: stream.Latest},
		{ShardIteratorType: stream.AtSequenceNumber, StartingSequenceNumber: p.SequenceNumberRange.EndingSequenceNumber},
		{ShardIteratorType: stream.AfterSequenceNumber, StartingSequenceNumber: before[1]},
	} {
		in.StreamName, in.ShardID = "split", p.ShardID
		o, err := rn.Streams.GetRecords(ctx, shardIterator(t, rn, in), 0)
		if err != nil || len(o.Records) != 0 || o.NextShardIterator != "" || len(o.ChildShards) != 2 {
			t.Errorf("%s on a closed shard: %+v, %v", in.ShardIteratorType, o, err)
		}
	}
}

func TestSplitShardRefusesBadInput(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	ctx := t.Context()
	createStream(t, rn, "s", 2)
	d := describe(t, rn, "s")
	lo, hi := shardRange(t, d.Shards[1])
	one := big.NewInt(1)
	// Past 2^128-1 is past the shard's end: refused in the same words, as Kinesis does.
	for _, k := range []*big.Int{lo, new(big.Int).Add(lo, one), hi, new(big.Int).Sub(lo, one), new(big.Int).Add(maxHash, one)} {
		_, err := rn.Streams.SplitShard(ctx, "s", d.Shards[1].ShardID, dec(k))
		wantErr(t, err, awserr.ErrInvalidArgument, "NewStartingHashKey "+dec(k), "greater than one plus the shard's StartingHashKey "+dec(lo), "less than the shard's EndingHashKey "+dec(hi))
	}
	for _, k := range []string{"", "-1", "01", "x"} {
		_, err := rn.Streams.SplitShard(ctx, "s", d.Shards[1].ShardID, k)
		wantErr(t, err, awserr.ErrInvalidArgument, "NewStartingHashKey", "0..2^128-1")
	}
	_, err := rn.Streams.SplitShard(ctx, "s", stream.ShardID(7), "5")
	wantErr(t, err, awserr.ErrResourceNotFound, "Could not find shard shardId-000000000007 in stream s")
	_, err = rn.Streams.SplitShard(ctx, "nope", stream.ShardID(0), "5")
	wantErr(t, err, awserr.ErrResourceNotFound, "nope")
	// A closed shard cannot be split or merged again.
	mid := new(big.Int).Add(lo, new(big.Int).Rsh(new(big.Int).Sub(hi, lo), 1))
	if _, err := rn.Streams.SplitShard(ctx, "s", d.Shards[1].ShardID, dec(mid)); err != nil {
		t.Fatal(err)
	}
	_, err = rn.Streams.SplitShard(ctx, "s", d.Shards[1].ShardID, dec(mid))
	wantErr(t, err, awserr.ErrInvalidArgument, "has already been merged or split")
	_, err = rn.Streams.MergeShards(ctx, "s", d.Shards[0].ShardID, d.Shards[1].ShardID)
	wantErr(t, err, awserr.ErrInvalidArgument, "has already been merged or split")
	assertTiling(t, describe(t, rn, "s"))
}

func TestMergeShards(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	ctx := t.Context()
	createStream(t, rn, "m", 3)
	a := putToShard(t, rn, "m", 1, "in-1")
	b := putToShard(t, rn, "m", 2, "in-2")

	_, err := rn.Streams.MergeShards(ctx, "m", stream.ShardID(0), stream.ShardID(2))
	wantErr(t, err, awserr.ErrInvalidArgument, "Shards shardId-000000000000 and shardId-000000000002 in stream m", "not an adjacent pair of shards eligible for merging")
	_, err = rn.Streams.MergeShards(ctx, "m", stream.ShardID(1), stream.ShardID(1))
	wantErr(t, err, awserr.ErrInvalidArgument, "not an adjacent pair")
	_, err = rn.Streams.MergeShards(ctx, "m", stream.ShardID(1), stream.ShardID(9))
	wantErr(t, err, awserr.ErrResourceNotFound, "shardId-000000000009")

	// The higher shard first is refused, as Kinesis does (kinesalite's
	// test "adjacency is inverted", written against AWS).
	_, err = rn.Streams.MergeShards(ctx, "m", stream.ShardID(2), stream.ShardID(1))
	wantErr(t, err, awserr.ErrInvalidArgument, "Shards shardId-000000000002 and shardId-000000000001 in stream m", "not an adjacent pair")
	// ParentShardId is ShardToMerge.
	if _, err := rn.Streams.MergeShards(ctx, "m", stream.ShardID(1), stream.ShardID(2)); err != nil {
		t.Fatal(err)
	}
	d := describe(t, rn, "m")
	assertTiling(t, d)
	c := shardByID(t, d, stream.ShardID(3))
	lo1, _ := shardRange(t, d.Shards[1])
	_, hi2 := shardRange(t, d.Shards[2])
	if c.ParentShardID != stream.ShardID(1) || c.AdjacentParentShardID != stream.ShardID(2) ||
		c.HashKeyRange != (stream.HashKeyRange{StartingHashKey: dec(lo1), EndingHashKey: dec(hi2)}) {
		t.Errorf("merged child = %+v", c)
	}
	for i, seq := range []string{a, b} {
		sh := shardByID(t, d, stream.ShardID(i+1))
		if sh.Open() || seqBig(t, seq).Cmp(seqBig(t, sh.SequenceNumberRange.EndingSequenceNumber)) > 0 {
			t.Errorf("parent %s = %+v", sh.ShardID, sh)
		}
		recs, children := readToEnd(t, rn, "m", sh.ShardID)
		if len(recs) != 1 || len(children) != 1 || children[0].ShardID != c.ShardID ||
			fmt.Sprint(children[0].ParentShards) != fmt.Sprint([]string{stream.ShardID(1), stream.ShardID(2)}) {
			t.Errorf("%s: records %d, children %+v", sh.ShardID, len(recs), children)
		}
	}
	if r := putToShard(t, rn, "m", 3, "merged"); r == "" {
		t.Fatal("no sequence number")
	}
}

func TestUpdateShardCountUniformScaling(t *testing.T) {
	clk := newClock()
	rn := testenv.Start(t, testenv.Options{Clock: clk})
	ctx := t.Context()
	createStream(t, rn, "u", 4)
	uniform := func(n int) {
		t.Helper()
		open := assertTiling(t, describe(t, rn, "u"))
		if len(open) != n {
			t.Fatalf("%d open shards, want %d", len(open), n)
		}
		size := new(big.Int).Div(new(big.Int).Lsh(big.NewInt(1), 128), big.NewInt(int64(n)))
		for i, sh := range open[:n-1] {
			lo, hi := shardRange(t, sh)
			if got := new(big.Int).Sub(hi, lo); got.Add(got, big.NewInt(1)).Cmp(size) != 0 {
				t.Errorf("open shard %d of %d has %s hash keys, want %s", i, n, got, size)
			}
		}
	}
	_, err := rn.Streams.UpdateShardCount(ctx, "u", 9, stream.UniformScaling)
	wantErr(t, err, awserr.ErrLimitExceeded, "UpdateShardCount cannot scale up over double your current open shard count. Current open shard count: 4, Target shard count: 9")
	_, err = rn.Streams.UpdateShardCount(ctx, "u", 1, stream.UniformScaling)
	wantErr(t, err, awserr.ErrLimitExceeded, "UpdateShardCount cannot scale down below half your current open shard count. Current open shard count: 4, Target shard count: 1")
	_, err = rn.Streams.UpdateShardCount(ctx, "u", 0, stream.UniformScaling)
	wantErr(t, err, awserr.ErrInvalidArgument, "TargetShardCount", "between 1 and 100000")
	_, err = rn.Streams.UpdateShardCount(ctx, "u", 4, "NONUNIFORM")
	wantErr(t, err, awserr.ErrInvalidArgument, "ScalingType", "UNIFORM_SCALING")

	steps := []int{8, 5, 3, 6, 4, 2, 3, 4, 7, 5}
	for _, n := range steps {
		cur := describe(t, rn, "u").OpenShardCount()
		out, err := rn.Streams.UpdateShardCount(ctx, "u", n, stream.UniformScaling)
		if err != nil {
			t.Fatalf("UpdateShardCount %d -> %d: %v", cur, n, err)
		}
		if out.CurrentShardCount != cur || out.TargetShardCount != n || out.StreamName != "u" || out.StreamARN == "" {
			t.Errorf("output %+v", out)
		}
		uniform(n)
		// Every closed shard's children are listed and name it.
		d := describe(t, rn, "u")
		for _, sh := range d.Shards {
			for _, p := range []string{sh.ParentShardID, sh.AdjacentParentShardID} {
				if p != "" && shardByID(t, d, p).Open() {
					t.Errorf("%s has an open parent %s", sh.ShardID, p)
				}
			}
		}
		clk.Advance(time.Minute)
	}
	// Ten scalings in 24 hours: the eleventh is refused until the first is
	// 24 hours old.
	_, err = rn.Streams.UpdateShardCount(ctx, "u", 4, stream.UniformScaling)
	wantErr(t, err, awserr.ErrLimitExceeded, "at most 10 scaling operations per rolling 24 hours")
	clk.Advance(24*time.Hour - 9*time.Minute)
	if _, err := rn.Streams.UpdateShardCount(ctx, "u", 4, stream.UniformScaling); err != nil {
		t.Fatalf("after 24 hours: %v", err)
	}
	uniform(4)
}

// TestPutRacingReshardLosesNothing: producers put while shards are split,
// merged and scaled. Every acknowledged record is in exactly the shard
// its result named, at or before that shard's EndingSequenceNumber once
// closed, and each producer's records of a key are in order along the
// shard lineage.
func TestPutRacingReshardLosesNothing(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	ctx := t.Context()
	createStream(t, rn, "race", 2)
	// A second service on the same engine: its cached routing goes stale
	// with every reshard the first one makes, like another process's.
	other, err := stream.New(ctx, rn.Engine)
	if err != nil {
		t.Fatal(err)
	}
	type acked struct{ shard, seq string }
	var mu sync.Mutex
	got := map[string]acked{} // data -> where the put said it is
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for p := range 4 {
		svc := rn.Streams
		if p%2 == 1 {
			svc = other
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				var entries []stream.PutRecordsRequestEntry
				for k := range 5 {
					entries = append(entries, stream.PutRecordsRequestEntry{PartitionKey: fmt.Sprintf("p%d-k%d", p, k), Data: []byte(fmt.Sprintf("p%d-k%d-%06d", p, k, n))})
				}
				out, err := svc.PutRecords(ctx, "race", entries)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for i, r := range out.Records {
					if r.ErrorCode != "" {
						// An entry whose acknowledgement did not come within
						// stream.AckTimeout (a loaded 3-server cluster) is
						// failed as Kinesis fails one, and may still be
						// stored: it is simply not acknowledged. Any other
						// failure (a put routed to a closed shard and not
						// routed again) breaks the rule.
						if !strings.Contains(r.ErrorMessage, "no acknowledgement") {
							t.Errorf("entry failed: %+v", r)
						}
						continue
					}
					got[string(entries[i].Data)] = acked{r.ShardId, r.SequenceNumber}
				}
				mu.Unlock()
			}
		}()
	}
	pause := func() { time.Sleep(30 * time.Millisecond) } // let puts interleave; no assertion depends on it
	pause()
	d := describe(t, rn, "race")
	lo, hi := shardRange(t, d.Shards[0])
	if _, err := rn.Streams.SplitShard(ctx, "race", stream.ShardID(0), dec(new(big.Int).Add(lo, new(big.Int).Rsh(new(big.Int).Sub(hi, lo), 1)))); err != nil {
		t.Fatal(err)
	}
	pause()
	if _, err := rn.Streams.MergeShards(ctx, "race", stream.ShardID(3), stream.ShardID(1)); err != nil {
		t.Fatal(err)
	}
	pause()
	if _, err := rn.Streams.UpdateShardCount(ctx, "race", 4, stream.UniformScaling); err != nil {
		t.Fatal(err)
	}
	pause()
	if _, err := other.UpdateShardCount(ctx, "race", 3, stream.UniformScaling); err != nil {
		t.Fatal(err)
	}
	pause()
	close(stop)
	wg.Wait()

	d = describe(t, rn, "race")
	assertTiling(t, d)
	found := map[string]acked{}
	var order []stream.Record // by lineage: parents before children
	done := map[string]bool{}
	for len(done) < len(d.Shards) {
		progressed := false
		for _, sh := range d.Shards {
			if done[sh.ShardID] || (sh.ParentShardID != "" && !done[sh.ParentShardID]) || (sh.AdjacentParentShardID != "" && !done[sh.AdjacentParentShardID]) {
				continue
			}
			recs, _ := readToEnd(t, rn, "race", sh.ShardID)
			for _, r := range recs {
				if _, dup := found[string(r.Data)]; dup {
					t.Errorf("record %s stored twice", r.Data)
				}
				found[string(r.Data)] = acked{r.ShardID, r.SequenceNumber}
				if e := sh.SequenceNumberRange.EndingSequenceNumber; e != "" && seqBig(t, r.SequenceNumber).Cmp(seqBig(t, e)) > 0 {
					t.Errorf("record %s in %s after its EndingSequenceNumber", r.Data, sh.ShardID)
				}
			}
			order = append(order, recs...)
			done[sh.ShardID], progressed = true, true
		}
		if !progressed {
			t.Fatal("lineage has a cycle or a missing parent")
		}
	}
	if len(got) < 100 {
		t.Fatalf("only %d records acknowledged", len(got))
	}
	for data, a := range got {
		if f, ok := found[data]; !ok {
			t.Errorf("acknowledged record %s (%s %s) is lost", data, a.shard, a.seq)
		} else if f != a {
			t.Errorf("record %s acknowledged as %+v, stored as %+v", data, a, f)
		}
	}
	// Order per key along the lineage: a key's records come in the order
	// of their counters when shards are read parents first.
	last := map[string]string{}
	for _, r := range order {
		key := string(r.Data[:len(r.Data)-7])
		if prev, ok := last[key]; ok && prev > string(r.Data) {
			t.Errorf("key %s: %s read after %s", key, r.Data, prev)
		}
		last[key] = string(r.Data)
	}
}
