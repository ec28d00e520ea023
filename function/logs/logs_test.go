package logs_test

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel/function/logs"
	"github.com/runnel-dev/runnel/internal/testenv"
)

func TestPatterns(t *testing.T) {
	for _, c := range []struct {
		pattern, msg string
		want         bool
	}{
		{``, "anything", true},
		{`ERROR`, "an ERROR here", true},
		{`ERROR`, "an error here", false}, // case-sensitive
		{`ERROR Exception`, "ERROR: Exception thrown", true},
		{`ERROR Exception`, "ERROR only", false},
		{`?ERROR ?WARN`, "WARN: disk", true},
		{`?ERROR ?WARN`, "INFO: fine", false},
		{`ERROR -timeout`, "ERROR timeout", false},
		{`ERROR -timeout`, "ERROR refused", true},
		{`"processed item"`, "processed item 7", true},
		{`"processed item"`, "processed an item", false},
		{`processed "item 7"`, "processed item 7", true},
	} {
		p, err := logs.ParsePattern(c.pattern)
		if err != nil {
			t.Fatalf("%q: %v", c.pattern, err)
		}
		if got := p.Match(c.msg); got != c.want {
			t.Errorf("%q on %q: %v, want %v", c.pattern, c.msg, got, c.want)
		}
	}
	for _, bad := range []string{`{ $.level = "ERROR" }`, `[ip, user]`, `%ERR.*%`, `"open`} {
		if _, err := logs.ParsePattern(bad); err == nil {
			t.Errorf("%q: accepted", bad)
		}
	}
}

// Events are stamped by the engine clock, read back in order per stream
// and across a group's streams, and deleted with their group.
func TestStore(t *testing.T) {
	ctx := context.Background()
	clock := clockwork.NewFakeClockAt(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	rn := testenv.Start(t, testenv.Options{Clock: clock})
	s, err := logs.Open(ctx, rn.Engine, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, "/aws/lambda/f", "2026/01/02/[$LATEST]a", "one", "two"); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	s.PutLogEvent("/aws/lambda/f", "2026/01/02/[$LATEST]b", "three")
	s.PutLogEvent("/aws/lambda/other.fn", "s", "elsewhere")

	var all []logs.Event
	if err := s.Read(ctx, "/aws/lambda/f", "", 0, func(e logs.Event) bool { all = append(all, e); return true }); err != nil {
		t.Fatal(err)
	}
	if len(all) != 3 || all[0].Message != "one" || all[1].Message != "two" || all[2].Message != "three" ||
		all[2].Stream != "2026/01/02/[$LATEST]b" || all[0].Timestamp != clock.Now().Add(-time.Second).UnixMilli() || all[2].Timestamp != clock.Now().UnixMilli() {
		t.Fatalf("events %+v", all)
	}
	var one []logs.Event
	s.Read(ctx, "/aws/lambda/f", "2026/01/02/[$LATEST]a", all[1].Seq, func(e logs.Event) bool { one = append(one, e); return true })
	if len(one) != 1 || one[0].Message != "two" {
		t.Errorf("from the second event of stream a: %+v", one)
	}
	streams, err := s.Streams(ctx, "/aws/lambda/f", "")
	if err != nil || len(streams) != 2 || streams[1].FirstEventTimestamp != all[2].Timestamp || streams[0].LastEventTimestamp != all[0].Timestamp {
		t.Errorf("streams %+v, %v", streams, err)
	}
	groups, _ := s.Groups(ctx, "/aws/lambda/")
	if len(groups) != 2 || groups[0].Name != "/aws/lambda/f" || groups[1].Name != "/aws/lambda/other.fn" {
		t.Errorf("groups %+v", groups)
	}
	if ok, err := s.DeleteGroup(ctx, "/aws/lambda/f"); !ok || err != nil {
		t.Fatalf("delete: %v %v", ok, err)
	}
	n := 0
	s.Read(ctx, "/aws/lambda/f", "", 0, func(logs.Event) bool { n++; return true })
	if ok, _ := s.GroupExists(ctx, "/aws/lambda/f"); ok || n != 0 {
		t.Errorf("after delete: exists %v, %d events", ok, n)
	}
	// A group written again after its deletion is created again.
	s.PutLogEvent("/aws/lambda/f", "s", "again")
	if ok, _ := s.GroupExists(ctx, "/aws/lambda/f"); !ok {
		t.Errorf("group not created again")
	}
}
