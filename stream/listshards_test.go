package stream_test

import (
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/stream"
)

func ids(shards []stream.Shard) string {
	var out []string
	for _, sh := range shards {
		out = append(out, strings.TrimPrefix(sh.ShardID, "shardId-0000000000"))
	}
	return strings.Join(out, ",")
}

// TestListShardsFilters builds a lineage on a fake clock (t0: shards 00
// and 01; t0+1h: 00 split into 02 and 03; t0+2h: 02 and 03 merged into
// 04) and checks each ShardFilter type, paging and DescribeStream.
func TestListShardsFilters(t *testing.T) {
	clk := newClock()
	rn := testenv.Start(t, testenv.Options{Clock: clk})
	ctx := t.Context()
	createStream(t, rn, "ls", 2)
	t0 := clk.Now()
	clk.Advance(time.Hour)
	d := describe(t, rn, "ls")
	mid := new(big.Int).Rsh(seqBig(t, d.Shards[0].HashKeyRange.EndingHashKey), 1)
	if _, err := rn.Streams.SplitShard(ctx, "ls", stream.ShardID(0), mid.String()); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Hour)
	if _, err := rn.Streams.MergeShards(ctx, "ls", stream.ShardID(2), stream.ShardID(3)); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Hour) // now t0+3h; retention 24h
	list := func(f *stream.ShardFilter) string {
		t.Helper()
		out, err := rn.Streams.ListShardsPage(ctx, stream.ListShardsInput{StreamName: "ls", ShardFilter: f})
		if err != nil {
			t.Fatalf("ListShards %+v: %v", f, err)
		}
		if out.NextToken != "" {
			t.Errorf("NextToken on a single page")
		}
		return ids(out.Shards)
	}
	cases := []struct {
		f    *stream.ShardFilter
		want string
	}{
		{nil, "00,01,02,03,04"},
		{&stream.ShardFilter{Type: stream.FromTrimHorizon}, "00,01,02,03,04"},
		{&stream.ShardFilter{Type: stream.AtLatest}, "01,04"},
		{&stream.ShardFilter{Type: stream.AtTrimHorizon}, "00,01"},
		{&stream.ShardFilter{Type: stream.AfterShardID, ShardID: stream.ShardID(2)}, "03,04"},
		{&stream.ShardFilter{Type: stream.FilterAtTime, Timestamp: t0.Add(30 * time.Minute)}, "00,01"},
		{&stream.ShardFilter{Type: stream.FilterAtTime, Timestamp: t0.Add(90 * time.Minute)}, "01,02,03"},
		{&stream.ShardFilter{Type: stream.FilterAtTime, Timestamp: t0.Add(150 * time.Minute)}, "01,04"},
		{&stream.ShardFilter{Type: stream.FromTimestamp, Timestamp: t0.Add(30 * time.Minute)}, "00,01,02,03,04"},
		{&stream.ShardFilter{Type: stream.FromTimestamp, Timestamp: t0.Add(90 * time.Minute)}, "01,02,03,04"},
		{&stream.ShardFilter{Type: stream.FromTimestamp, Timestamp: t0.Add(150 * time.Minute)}, "01,04"},
	}
	for _, c := range cases {
		if got := list(c.f); got != c.want {
			t.Errorf("ShardFilter %+v: %s, want %s", c.f, got, c.want)
		}
	}
	// DescribeStream agrees with the default filter.
	if got := ids(describe(t, rn, "ls").Shards); got != list(nil) {
		t.Errorf("DescribeStream shards %s, ListShards %s", got, list(nil))
	}

	// Paging: MaxResults 2, then NextToken alone; ExclusiveStartShardId.
	var pages []string
	in := stream.ListShardsInput{StreamName: "ls", MaxResults: 2}
	for {
		out, err := rn.Streams.ListShardsPage(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, ids(out.Shards))
		if out.NextToken == "" {
			break
		}
		in = stream.ListShardsInput{NextToken: out.NextToken}
	}
	if strings.Join(pages, "|") != "00,01|02,03|04" {
		t.Errorf("pages %q", pages)
	}
	out, err := rn.Streams.ListShardsPage(ctx, stream.ListShardsInput{StreamName: "ls", ExclusiveStartShardID: stream.ShardID(1), ShardFilter: &stream.ShardFilter{Type: stream.AtLatest}})
	if err != nil || ids(out.Shards) != "04" {
		t.Errorf("ExclusiveStartShardId with AT_LATEST: %+v %v", out, err)
	}

	// A NextToken lives 300 seconds, and comes alone.
	out, err = rn.Streams.ListShardsPage(ctx, stream.ListShardsInput{StreamName: "ls", MaxResults: 1})
	if err != nil || out.NextToken == "" {
		t.Fatal(out, err)
	}
	_, err = rn.Streams.ListShardsPage(ctx, stream.ListShardsInput{StreamName: "ls", NextToken: out.NextToken})
	wantErr(t, err, awserr.ErrInvalidArgument, "NextToken", "StreamName")
	clk.Advance(301 * time.Second)
	_, err = rn.Streams.ListShardsPage(ctx, stream.ListShardsInput{NextToken: out.NextToken})
	wantErr(t, err, stream.ErrExpiredNextToken, "300 seconds")

	// Bad filters name the field.
	for _, c := range []struct {
		f    stream.ShardFilter
		want string
	}{
		{stream.ShardFilter{Type: "SIDEWAYS"}, "ShardFilter.Type"},
		{stream.ShardFilter{Type: stream.AfterShardID}, "ShardFilter.ShardId: required"},
		{stream.ShardFilter{Type: stream.AtLatest, ShardID: stream.ShardID(0)}, "ShardFilter.ShardId: only allowed"},
		{stream.ShardFilter{Type: stream.FilterAtTime}, "ShardFilter.Timestamp: required"},
		{stream.ShardFilter{Type: stream.AtLatest, Timestamp: t0}, "ShardFilter.Timestamp: only allowed"},
	} {
		_, err := rn.Streams.ListShardsPage(ctx, stream.ListShardsInput{StreamName: "ls", ShardFilter: &c.f})
		wantErr(t, err, awserr.ErrInvalidArgument, c.want)
	}
	_, err = rn.Streams.ListShardsPage(ctx, stream.ListShardsInput{StreamName: "ls", MaxResults: 10001})
	wantErr(t, err, awserr.ErrInvalidArgument, "MaxResults", "between 1 and 10000")
	_, err = rn.Streams.ListShardsPage(ctx, stream.ListShardsInput{})
	wantErr(t, err, awserr.ErrInvalidArgument, "StreamName")
	_, err = rn.Streams.ListShardsPage(ctx, stream.ListShardsInput{StreamName: "missing"})
	wantErr(t, err, awserr.ErrResourceNotFound, "missing")

	// After the retention period the closed shards are expired: not listed,
	// and, once TrimExpired ran, gone from DescribeStream and unreadable.
	clk.Advance(23 * time.Hour)
	if got := list(nil); got != "01,04" {
		t.Errorf("after retention: %s, want 01,04", got)
	}
	if _, err := rn.Streams.TrimExpired(ctx); err != nil {
		t.Fatal(err)
	}
	if got := ids(describe(t, rn, "ls").Shards); got != "01,04" {
		t.Errorf("DescribeStream after retention: %s", got)
	}
	_, err = rn.Streams.GetShardIterator(ctx, stream.GetShardIteratorInput{StreamName: "ls", ShardID: stream.ShardID(2), ShardIteratorType: stream.TrimHorizon})
	wantErr(t, err, awserr.ErrResourceNotFound, "shardId-000000000002")
	// A later reshard does not reuse the ids of expired shards.
	if _, err := rn.Streams.UpdateShardCount(ctx, "ls", 3, stream.UniformScaling); err != nil {
		t.Fatal(err)
	}
	if got := list(&stream.ShardFilter{Type: stream.AtLatest}); !strings.HasPrefix(got, "05,") && !strings.Contains(got, ",05") {
		t.Errorf("after scaling: open %s", got)
	}
	if got := list(&stream.ShardFilter{Type: stream.AtTrimHorizon}); got != "01,04" {
		t.Errorf("AT_TRIM_HORIZON after retention: %s, want 01,04", got)
	}
}
