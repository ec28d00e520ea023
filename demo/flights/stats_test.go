package flights

import (
	"fmt"
	"strings"
	"testing"
)

func TestStatsAdd(t *testing.T) {
	var s Stats // zero value is usable
	for _, d := range []int64{-5, -20, -3, 16, 15} {
		s.Add(Flight{Delay: d, Origin: "XYZ"})
	}
	s.Add(Flight{Delay: -7, Origin: "ABC"})
	want := AirportStats{Airport: "XYZ", Flights: 5, TotalDelay: 3, MaxDelay: 16, Delayed15: 1}
	if got := *s.Airports["XYZ"]; got != want {
		t.Errorf("XYZ = %+v, want %+v", got, want)
	}
	if got := *s.Airports["ABC"]; got.MaxDelay != -7 {
		t.Errorf("MaxDelay of a single early flight = %d, want -7", got.MaxDelay)
	}
	if a := want.AvgDelay(); a != 0.6 {
		t.Errorf("AvgDelay = %v", a)
	}
	if sh := want.ShareDelayed(); sh != 0.2 {
		t.Errorf("ShareDelayed = %v", sh)
	}
	if (AirportStats{}).AvgDelay() != 0 || (AirportStats{}).ShareDelayed() != 0 {
		t.Errorf("empty AirportStats averages not 0")
	}
	if s.Flights() != 6 || s.Len() != 2 {
		t.Errorf("Flights %d Len %d", s.Flights(), s.Len())
	}
}

func TestStatsMergeEqualTop(t *testing.T) {
	_, flights := loadSample(t)
	whole := NewStats()
	parts := []*Stats{NewStats(), NewStats(), {}}
	for i, f := range flights {
		whole.Add(f)
		parts[i%3].Add(f)
	}
	merged := &Stats{}
	for _, p := range parts {
		merged.Merge(p)
	}
	merged.Merge(nil)
	merged.Merge(&Stats{})
	if ok, diff := merged.Equal(whole); !ok {
		t.Fatalf("merged != whole: %s", diff)
	}
	if ok, diff := whole.Equal(merged); !ok {
		t.Fatalf("whole != merged: %s", diff)
	}
	// Merge copies: changing the result leaves the parts alone.
	before := *parts[0].Airports["ORD"]
	merged.Airports["ORD"].Flights++
	if *parts[0].Airports["ORD"] != before {
		t.Errorf("Merge aliased other's entries")
	}
	n := whole.Airports["ORD"].Flights
	if ok, diff := merged.Equal(whole); ok || diff != fmt.Sprintf("ORD: Flights %d != %d", n+1, n) {
		t.Errorf("Equal after change = %v, %q", ok, diff)
	}
	merged.Airports["ORD"].Flights--

	extra := NewStats()
	extra.Add(Flight{Origin: "AAA", Delay: 1})
	if ok, diff := whole.Equal(extra); ok || !strings.HasPrefix(diff, "AAA: missing from receiver") {
		t.Errorf("Equal with extra airport = %v, %q", ok, diff)
	}
	if ok, diff := extra.Equal(nil); ok || !strings.HasPrefix(diff, "AAA: missing from other") {
		t.Errorf("Equal(nil) = %v, %q", ok, diff)
	}
	if ok, _ := (*Stats)(nil).Equal(&Stats{}); !ok {
		t.Errorf("nil != empty")
	}
	// MaxDelay merges as a maximum even when all delays are negative.
	a, b := NewStats(), NewStats()
	a.Add(Flight{Origin: "NEG", Delay: -9})
	b.Add(Flight{Origin: "NEG", Delay: -4})
	a.Merge(b)
	if got := a.Airports["NEG"].MaxDelay; got != -4 {
		t.Errorf("merged MaxDelay = %d, want -4", got)
	}

	top := whole.Top(0)
	if len(top) != whole.Len() {
		t.Fatalf("Top(0) has %d of %d", len(top), whole.Len())
	}
	for i := 1; i < len(top); i++ {
		p, q := top[i-1], top[i]
		if p.Flights < q.Flights || p.Flights == q.Flights && p.Airport >= q.Airport {
			t.Fatalf("Top order: %+v before %+v", p, q)
		}
	}
	if t3 := whole.Top(3); len(t3) != 3 || t3[0] != top[0] || t3[2] != top[2] {
		t.Errorf("Top(3) = %+v", t3)
	}
	ties := NewStats()
	for _, c := range []string{"CCC", "BBB", "AAA", "BBB"} {
		ties.Add(Flight{Origin: c})
	}
	if got := ties.Top(5); len(got) != 3 || got[0].Airport != "BBB" || got[1].Airport != "AAA" || got[2].Airport != "CCC" {
		t.Errorf("ties: %+v", got)
	}
}
