package stream

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/engine"
)

// TestInterruptedReshardIsCompleted: a reshard that stopped after writing
// its children (step 1, before sealing the parent) leaves the stream
// UPDATING; puts already go to the children, the parent reads as open;
// other reshards are refused until StaleUpdateAfter, after which the next
// one (or TrimExpired) seals the parent and the stream is ACTIVE again.
func TestInterruptedReshardIsCompleted(t *testing.T) {
	ctx := t.Context()
	clk := clockwork.NewFakeClockAt(time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC))
	eng, err := engine.Open(ctx, engine.Config{DataDir: t.TempDir(), Clock: clk, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	s, err := New(ctx, eng)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateStream(ctx, CreateStreamInput{StreamName: "crash", ShardCount: 2}); err != nil {
		t.Fatal(err)
	}
	before, err := s.PutRecord(ctx, "crash", PutRecordsRequestEntry{PartitionKey: "a", ExplicitHashKey: "0", Data: []byte("before")})
	if err != nil {
		t.Fatal(err)
	}

	// Step 1 of a split of shard 0, then a "crash".
	d, rev, err := s.loadForUpdate(ctx, "crash")
	if err != nil {
		t.Fatal(err)
	}
	p := &d.Shards[0]
	c := split(p, rangeStart(&d.Shards[1]).Rsh(rangeStart(&d.Shards[1]), 1))
	p.ClosedMs = clk.Now().UnixMilli()
	for k, ch := range c.children {
		ch.ShardID, ch.CreatedMs = ShardID(2+k), p.ClosedMs
		ch.SequenceNumberRange.StartingSequenceNumber = FormatSequenceNumber(d.Numbering(), 2+k, FirstPosition)
		if _, err := eng.JS.CreateOrUpdateStream(ctx, s.shardConfig(d, 2+k)); err != nil {
			t.Fatal(err)
		}
		d.Shards = append(d.Shards, ch)
	}
	d.StreamStatus, d.UpdatingMs = StatusUpdating, p.ClosedMs
	if _, err := s.writeDesc(ctx, d, rev); err != nil {
		t.Fatal(err)
	}

	r, err := s.PutRecord(ctx, "crash", PutRecordsRequestEntry{PartitionKey: "a", ExplicitHashKey: "0", Data: []byte("after")})
	if err != nil || r.ShardId != ShardID(2) {
		t.Fatalf("put during the interrupted reshard went to %s (%v), want the child", r.ShardId, err)
	}
	it, err := s.GetShardIterator(ctx, GetShardIteratorInput{StreamName: "crash", ShardID: ShardID(0), ShardIteratorType: TrimHorizon})
	if err != nil {
		t.Fatal(err)
	}
	o, err := s.GetRecords(ctx, it, 0)
	if err != nil || len(o.Records) != 1 || o.NextShardIterator == "" || o.ChildShards != nil {
		t.Fatalf("unsealed parent: %+v %v", o, err)
	}
	if _, err := s.SplitShard(ctx, "crash", ShardID(1), "300000000000000000000000000000000000000"); !awserrIs(err, awserr.ErrResourceInUse) {
		t.Fatalf("reshard while UPDATING: %v", err)
	}

	clk.Advance(StaleUpdateAfter + time.Second)
	if _, err := s.TrimExpired(ctx); err != nil {
		t.Fatal(err)
	}
	nd, err := s.DescribeStream(ctx, "crash")
	if err != nil {
		t.Fatal(err)
	}
	end := nd.Shards[0].SequenceNumberRange.EndingSequenceNumber
	if nd.StreamStatus != StatusActive || end == "" || end < before.SequenceNumber {
		t.Fatalf("after recovery: %+v", nd)
	}
	o, err = s.GetRecords(ctx, o.NextShardIterator, 0)
	if err != nil || len(o.Records) != 0 || o.NextShardIterator != "" || len(o.ChildShards) != 2 {
		t.Fatalf("sealed parent: %+v %v", o, err)
	}
	if _, err := s.SplitShard(ctx, "crash", ShardID(1), "300000000000000000000000000000000000000"); err != nil {
		t.Fatalf("reshard after recovery: %v", err)
	}
}

func awserrIs(err error, target *awserr.Error) bool {
	e, ok := err.(*awserr.Error)
	return ok && e.Code == target.Code
}

// TestReaderEndsAtAnExpiredSeal: a closed shard whose records and seal
// are gone (retention) ends a reader at once, reporting the gap.
func TestReaderEndsAtAnExpiredSeal(t *testing.T) {
	ctx := t.Context()
	eng, err := engine.Open(ctx, engine.Config{DataDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	s, err := New(ctx, eng)
	if err != nil {
		t.Fatal(err)
	}
	d, err := s.CreateStream(ctx, CreateStreamInput{StreamName: "gone", ShardCount: 1})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := s.PutRecord(ctx, "gone", PutRecordsRequestEntry{PartitionKey: "a", Data: []byte("x")}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.SplitShard(ctx, "gone", ShardID(0), "170141183460469231731687303715884105728"); err != nil {
		t.Fatal(err)
	}
	js, err := eng.JS.Stream(ctx, jsName(d.ID, 0))
	if err != nil {
		t.Fatal(err)
	}
	if err := js.Purge(ctx); err != nil {
		t.Fatal(err)
	}
	var gaps []Gap
	r, err := s.ReadShard(ctx, "gone", ShardID(0), FirstPosition, ReadShardOptions{OnGap: func(g Gap) { gaps = append(gaps, g) }})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := <-r.Records(); ok {
		t.Fatal("a record from a purged shard")
	}
	end, ok := r.End()
	if !ok || end != Position(4, 0) || len(gaps) != 1 || gaps[0].Messages != 3 {
		t.Fatalf("End = %d %v, gaps %+v", end, ok, gaps)
	}
}
