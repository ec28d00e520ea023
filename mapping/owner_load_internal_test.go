package mapping

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"
)

// The records of each of the 24 shards of `runnel demo --nodes 3
// --shards 24 --records 300000` (partition key: the origin airport), as
// the demo's records_by_shard reported them.
var demoShards = []float64{21440, 15861, 21643, 13053, 1858, 6360, 8882, 9041, 11550, 14308, 5133, 11712,
	5432, 6899, 12008, 5319, 17798, 740, 29846, 17004, 12943, 15571, 24198, 11391}

// round lets every node, in turn, run one balance by load on holder (as
// balanceByLoadLocked applies it: its claims, then its hand-overs) and
// returns how many leases changed hands.
func round(rates map[string]float64, units []string, holder map[string]string, nodes []string) int {
	moves := 0
	for _, n := range nodes {
		p, ok := newLoadPlan(n, units, rates, maps.Clone(holder), slices.Clone(nodes))
		if !ok {
			return moves
		}
		taken := map[string]bool{}
		for _, u := range p.claims(func(string) bool { return false }) {
			holder[u], taken[u] = n, true
			moves++
		}
		for _, u := range p.handOvers(taken) {
			delete(holder, u)
			moves++
		}
	}
	return moves
}

// loadsOf sums each node's rates.
func loadsOf(rates map[string]float64, holder map[string]string) map[string]float64 {
	out := map[string]float64{}
	for u, n := range holder {
		out[n] += rates[u]
	}
	return out
}

// The demo's 24 shards taken by count (8 each, as the count rule left
// them in a measured run: 30.3/43.6/26.1 %) are balanced by load within a
// few balances: every node within 10% of a third of the records, every
// lease held, and then nothing moves any more (no flapping).
func TestShardLeasesAreBalancedByTheirLoadNotTheirCount(t *testing.T) {
	nodes := []string{"node-0", "node-1", "node-2"}
	rates := map[string]float64{}
	var units []string
	var total float64
	for i, r := range demoShards {
		u := fmt.Sprintf("m.shardId-%012d", i)
		units, rates[u] = append(units, u), r
		total += r
	}
	// The run of 30.3/43.6/26.1 %: shard -> node.
	byCount := []int{2, 1, 0, 2, 0, 2, 0, 1, 0, 2, 0, 2, 2, 0, 1, 2, 0, 2, 1, 0, 1, 1, 1, 1}
	holder := map[string]string{}
	for i, n := range byCount {
		holder[units[i]] = nodes[n]
	}
	if l := loadsOf(rates, holder); l["node-1"]/total < 0.40 {
		t.Fatalf("the starting point is not the skewed one measured: %v", l)
	}
	rounds := 0
	for ; rounds < 10 && round(rates, units, holder, nodes) > 0; rounds++ {
	}
	if rounds > 4 {
		t.Errorf("balance by load took %d rounds of every node's balance; want at most 4", rounds)
	}
	if len(holder) != len(units) {
		t.Errorf("%d of %d leases held after balancing: %v", len(holder), len(units), holder)
	}
	for n, l := range loadsOf(rates, holder) {
		if share := l / total; share < 0.9/3 || share > 1.1/3 {
			t.Errorf("%s carries %.1f%% of the load; want within 10%% of a third (loads %v)", n, 100*share, loadsOf(rates, holder))
		}
	}
	if moves := round(rates, units, holder, nodes); moves != 0 {
		t.Errorf("a balanced cluster moved %d leases in one more round", moves)
	}
}

// A joining node takes load at once: the others hand it their units
// until it carries its share, and it takes freed units first as the
// least loaded node.
func TestAJoiningNodeTakesItsShareOfTheLoad(t *testing.T) {
	rates := map[string]float64{}
	holder := map[string]string{}
	var units []string
	for i, r := range demoShards {
		u := fmt.Sprintf("m.shardId-%012d", i)
		units, rates[u] = append(units, u), r
		holder[u] = []string{"a", "b"}[i%2]
	}
	nodes := []string{"a", "b", "c"}
	round(rates, units, holder, nodes)
	round(rates, units, holder, nodes)
	var total float64
	for _, r := range demoShards {
		total += r
	}
	if c := loadsOf(rates, holder)["c"] / total; c < 0.9/3 {
		t.Errorf("the joining node carries %.1f%% after two rounds; want at least 30%% (loads %v)", 100*c, loadsOf(rates, holder))
	}
}

// Hysteresis: a node hands a unit over only when the move lowers the
// larger of the two loads by more than 5% of the fair load. Rates
// 100+3 against 97: moving the 3 would even them out, but by less than
// that: it stays. 100+10 against 90: the 10 moves. (Each unit weighs a
// floor more, a tenth of the mean rate.)
func TestALeaseMovesForLoadOnlyBeyondTheHysteresis(t *testing.T) {
	for _, c := range []struct {
		big, small, unit float64
		moves            bool
	}{{100, 97, 3, false}, {100, 90, 10, true}} {
		rates := map[string]float64{"u-big": c.big, "u-small": c.small, "u-unit": c.unit}
		holder := map[string]string{"u-big": "a", "u-unit": "a", "u-small": "b"}
		units := slices.Sorted(maps.Keys(rates))
		p, ok := newLoadPlan("a", units, rates, holder, []string{"a", "b"})
		if !ok {
			t.Fatal("no plan with positive rates")
		}
		give := p.handOvers(nil)
		if moved := slices.Equal(give, []string{"u-unit"}); moved != c.moves || (!c.moves && len(give) > 0) {
			t.Errorf("loads %v+%v against %v: handed over %v; want a move: %v", c.big, c.unit, c.small, give, c.moves)
		}
	}
}

// Without any rate (nothing put within the window), there is no plan by
// load: the count rule applies.
func TestWithoutRatesTheCountRuleApplies(t *testing.T) {
	if _, ok := newLoadPlan("a", []string{"u1", "u2"}, map[string]float64{"u1": 0}, map[string]string{}, []string{"a", "b"}); ok {
		t.Error("a plan by load without any rate")
	}
}

// A shard's rate is measured over the last loadWindow: a burst counts
// while it is within the window, and no longer once the window has moved
// past it.
func TestAShardsRateIsMeasuredOverTheWindow(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 6, 0, 0, 0, time.UTC)
	var ss []loadSample
	var rate float64
	var ok bool
	if ss, _, ok = windowRate(append(ss, loadSample{t0, 100}), t0); ok {
		t.Error("a rate from one sample")
	}
	at := t0.Add(2 * time.Second)
	if ss, rate, ok = windowRate(append(ss, loadSample{at, 1100}), at); !ok || rate != 500 {
		t.Errorf("rate after 1000 bytes in 2 s: %v (ok %v); want 500 B/s", rate, ok)
	}
	at = t0.Add(loadWindow)
	if ss, rate, _ = windowRate(append(ss, loadSample{at, 1100}), at); rate == 0 {
		t.Error("a burst within the window no longer counts")
	}
	at = t0.Add(2*time.Second + loadWindow)
	if ss, rate, ok = windowRate(append(ss, loadSample{at, 1100}), at); !ok || rate != 0 {
		t.Errorf("rate once the burst left the window: %v (ok %v); want 0; samples %v", rate, ok, ss)
	}
}
