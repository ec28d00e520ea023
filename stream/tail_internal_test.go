package stream

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel/engine"
)

// The cache keeps at most max bytes of bodies, dropping the oldest first;
// a body larger than max is not kept, and a second put of a key keeps the
// first body.
func TestTailCacheEvictsOldest(t *testing.T) {
	c := newTailCache(100)
	body := func(n int, b byte) []byte { return []byte(strings.Repeat(string(b), n)) }
	c.put("s", 0, 1, body(40, 'a'))
	c.put("s", 1, 1, body(40, 'b'))
	c.put("s", 0, 1, body(40, 'x')) // already there
	if b, ok := c.get("s", 0, 1); !ok || b[0] != 'a' {
		t.Fatalf("get 0/1 = %q, %v; want the first body", b, ok)
	}
	c.put("s", 0, 2, body(40, 'c')) // 120 bytes: the oldest goes
	if _, ok := c.get("s", 0, 1); ok {
		t.Error("the oldest entry is still there past the cache's size")
	}
	for _, k := range []tailKey{{"s", 1, 1}, {"s", 0, 2}} {
		if _, ok := c.get(k.id, k.shard, k.seq); !ok {
			t.Errorf("entry %+v evicted, want kept", k)
		}
	}
	c.put("s", 0, 3, body(101, 'd'))
	if _, ok := c.get("s", 0, 3); ok {
		t.Error("a body larger than the cache is kept")
	}
	if c.size != 80 || len(c.msgs) != 2 || len(c.order) != 2 {
		t.Errorf("size %d, %d entries, order %d; want 80 bytes in 2", c.size, len(c.msgs), len(c.order))
	}
	var nilCache *tailCache
	nilCache.put("s", 0, 1, body(1, 'a'))
	if _, ok := nilCache.get("s", 0, 1); ok {
		t.Error("a nil cache returned a body")
	}
}

func tailService(t *testing.T) (*Service, *engine.Engine, *clockwork.FakeClock) {
	t.Helper()
	clk := clockwork.NewFakeClockAt(time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC))
	eng, err := engine.Open(t.Context(), engine.Config{DataDir: t.TempDir(), Clock: clk, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	s, err := New(t.Context(), eng)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateStream(t.Context(), CreateStreamInput{StreamName: "tail", ShardCount: 1}); err != nil {
		t.Fatal(err)
	}
	return s, eng, clk
}

func tailPut(t *testing.T, s *Service, data ...string) {
	t.Helper()
	var entries []PutRecordsRequestEntry
	for _, d := range data {
		entries = append(entries, PutRecordsRequestEntry{PartitionKey: "k", Data: []byte(d)})
	}
	o, err := s.PutRecords(t.Context(), "tail", entries)
	if err != nil || o.FailedRecordCount != 0 {
		t.Fatalf("PutRecords: %+v, %v", o, err)
	}
}

// tailRead reads the shard from it, limit records a call, until a call
// returns none, and returns the data read, comma-separated.
func tailRead(t *testing.T, s *Service, it string, limit int) string {
	t.Helper()
	var got []string
	for range 100 {
		o, err := s.GetRecords(t.Context(), it, limit)
		if err != nil {
			t.Fatal(err)
		}
		if len(o.Records) == 0 {
			return strings.Join(got, ",")
		}
		for _, r := range o.Records {
			got = append(got, string(r.Data))
		}
		it = o.NextShardIterator
	}
	t.Fatal("no end after 100 calls")
	return ""
}

func trimHorizon(t *testing.T, s *Service) string {
	t.Helper()
	it, err := s.GetShardIterator(t.Context(), GetShardIteratorInput{StreamName: "tail", ShardID: ShardID(0), ShardIteratorType: TrimHorizon})
	if err != nil {
		t.Fatal(err)
	}
	return it
}

// GetRecords reads a message this service put from the cache (a body
// swapped in the cache is what it returns), and reads it from JetStream
// once the cache no longer has it.
func TestGetRecordsReadsTheTail(t *testing.T) {
	s, _, clk := tailService(t)
	tailPut(t, s, "a", "b")
	tailPut(t, s, "c")
	h, err := s.handle(t.Context(), "tail")
	if err != nil {
		t.Fatal(err)
	}
	k := tailKey{h.desc.ID, 0, 1}
	if _, ok := s.tail.get(k.id, k.shard, k.seq); !ok {
		t.Fatal("the first message put is not in the cache")
	}
	swapped := appendEnvelopeHead(nil, clk.Now().UnixMilli(), 2)
	swapped = appendEnvelopeRecord(swapped, "k", []byte("A"))
	swapped = appendEnvelopeRecord(swapped, "k", []byte("B"))
	s.tail.mu.Lock()
	s.tail.msgs[k] = swapped
	s.tail.mu.Unlock()
	if got := tailRead(t, s, trimHorizon(t, s), 0); got != "A,B,c" {
		t.Errorf("with the first message swapped in the cache: read %q, want A,B,c", got)
	}
	s.tail.mu.Lock()
	delete(s.tail.msgs, k)
	s.tail.mu.Unlock()
	for _, limit := range []int{1, 2, 0} {
		if got := tailRead(t, s, trimHorizon(t, s), limit); got != "a,b,c" {
			t.Errorf("limit %d, the first message not cached: read %q, want a,b,c", limit, got)
		}
	}
}

// A message trimmed by retention is not read from the cache, even with an
// iterator taken before the trim.
func TestGetRecordsTailAfterTrim(t *testing.T) {
	s, _, clk := tailService(t)
	tailPut(t, s, "old0", "old1")
	clk.Advance(23 * time.Hour)
	tailPut(t, s, "new0")
	clk.Advance(time.Hour + time.Millisecond) // the old ones are past 24 h
	if n, err := s.TrimExpired(t.Context()); err != nil || n != 1 {
		t.Fatalf("TrimExpired = %d, %v; want 1 (the message of both old records)", n, err)
	}
	h, err := s.handle(t.Context(), "tail")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.tail.get(h.desc.ID, 0, 1); !ok {
		t.Fatal("the trimmed message is not in the cache: the test would prove nothing")
	}
	// An iterator at the first record, as one issued before the trim (and
	// still within its 5 minutes) is.
	it := iterator{Stream: "tail", ID: h.desc.ID, Next: FirstPosition, Issued: clk.Now().UnixMilli()}.encode()
	for _, limit := range []int{1, 0} {
		if got := tailRead(t, s, it, limit); got != "new0" {
			t.Errorf("limit %d: an iterator at the trimmed records reads %q, want new0", limit, got)
		}
	}
}

// Messages other writers put (another service on the same JetStream: what
// another process's puts are to this one) are not in this service's
// cache; GetRecords reads them from JetStream, in order with its own.
func TestGetRecordsTailWithOtherWriters(t *testing.T) {
	s, eng, _ := tailService(t)
	other, err := New(t.Context(), eng)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range 6 {
		w := s
		if i%3 == 1 {
			w = other
		}
		d := []string{fmt.Sprint(i, "a"), fmt.Sprint(i, "b")}
		tailPut(t, w, d...)
		want = append(want, d...)
	}
	for _, limit := range []int{1, 3, 0} {
		if got := tailRead(t, s, trimHorizon(t, s), limit); got != strings.Join(want, ",") {
			t.Errorf("limit %d: read %q, want %q", limit, got, strings.Join(want, ","))
		}
	}
}
