package mapping

import (
	"context"
	"slices"
	"strings"
	"time"
)

// Balance by load (a difference from the Kinesis Client Library, which
// balances shard leases by count only).
//
// Every balance, each process reads how many bytes each shard unit's
// source shard has had appended (stream.Service.ShardAppended) and keeps
// these samples for loadWindow. A unit's load is its incoming byte rate
// over that window; a queue mapping's unit, and a shard with fewer than
// two samples, has none. When some unit has a load and more than one
// process is live, the units are balanced by load instead of by count:
//
//   - each unit weighs its rate plus a floor of a tenth of the mean rate,
//     so that idle shards still spread over the processes;
//   - the fair load is the total weight over the live processes;
//   - a free unit, heaviest first, is taken by this process when it fits
//     under the fair load plus loadHysteresis of it, when this process is
//     the least loaded (the others' loads computed from the leases they
//     hold, as every process reads them), or when it has been seen free at
//     freeTicks balances in a row (nobody else took it);
//   - this process hands a unit over when giving it to the least loaded
//     other process lowers the larger of the two loads by more than
//     loadHysteresis of the fair load. So a move always narrows the gap
//     between two processes by a margin, and moves cannot go back and
//     forth while the rates hold (the hysteresis absorbs their noise).
//
// Without any load (nothing put within the window, or a process that
// just started and has one sample) the count rule applies (balanceLocked).
// A unit changes hands exactly as under the count rule: the old holder
// stops its worker and stores its final checkpoint before it releases the
// lease, and every checkpoint write stays fenced by the lease.
const (
	// loadWindow is how far back a unit's rate is measured.
	loadWindow = 30 * time.Second
	// loadHysteresis is the share of the fair load by which a move must
	// lower the larger load of the two processes, and by which a free unit
	// may overfill a process that is not the least loaded.
	loadHysteresis = 0.05
	// freeTicks is how many balances in a row a free unit stays free
	// before any process takes it, whatever its load.
	freeTicks = 3
)

// loadSample is one reading of a shard's appended bytes.
type loadSample struct {
	at    time.Time
	bytes uint64
}

// unitRatesLocked reads each stream shard unit's appended bytes now (a
// sample), forgets samples older than loadWindow (but the newest of them,
// the window's base) and of units that are gone, and returns each unit's
// incoming rate in bytes per second over its samples. A unit with fewer
// than two samples, or whose samples span no time, has no rate.
func (s *Service) unitRatesLocked(ctx context.Context, units []unit) map[string]float64 {
	now := s.eng.Clock.Now()
	rates := map[string]float64{}
	keep := map[string]bool{}
	for _, u := range units {
		c, ok := s.configs[u.id]
		if !ok || u.shard == "" {
			continue
		}
		key := u.key()
		keep[key] = true
		if streams, name, _, err := s.sourceStreams(c); err == nil {
			if b, err := streams.ShardAppended(ctx, name, u.shard); err == nil {
				s.own.samples[key] = append(s.own.samples[key], loadSample{now, b})
			}
		}
		var rate float64
		if s.own.samples[key], rate, ok = windowRate(s.own.samples[key], now); ok {
			rates[key] = rate
		}
	}
	for key := range s.own.samples {
		if !keep[key] {
			delete(s.own.samples, key)
		}
	}
	return rates
}

// windowRate drops the samples older than loadWindow before now but the
// newest of them (the window's base) and returns the rest and the rate
// they show, in bytes per second; ok is false with fewer than two
// samples or none spanning time. Bytes that went down (a stream deleted
// and created again under the name) count as none appended.
func windowRate(ss []loadSample, now time.Time) (kept []loadSample, rate float64, ok bool) {
	for len(ss) > 2 && now.Sub(ss[1].at) >= loadWindow {
		ss = ss[1:]
	}
	if len(ss) < 2 {
		return ss, 0, false
	}
	first, last := ss[0], ss[len(ss)-1]
	dt := last.at.Sub(first.at).Seconds()
	if dt <= 0 {
		return ss, 0, false
	}
	if last.bytes > first.bytes {
		rate = float64(last.bytes-first.bytes) / dt
	}
	return ss, rate, true
}

// loadPlan is what a balance by load decides on: the units, their
// weights, who holds each, and the live processes.
type loadPlan struct {
	me     string
	units  []string           // unit keys
	weight map[string]float64 // unit key -> weight (rate plus the floor)
	holder map[string]string  // unit key -> process holding it
	nodes  []string           // the live processes, me among them
	fair   float64            // the total weight over the live processes
	load   map[string]float64 // process -> the weight of the units it holds
}

// newLoadPlan weighs units by rates (bytes/s; see the rule at the top of
// this file) and sums each live process's load; ok is false when no unit
// has a positive rate (the count rule applies).
func newLoadPlan(me string, units []string, rates map[string]float64, holder map[string]string, nodes []string) (p *loadPlan, ok bool) {
	var total float64
	for _, u := range units {
		total += rates[u]
	}
	if total <= 0 || len(units) == 0 {
		return nil, false
	}
	if !slices.Contains(nodes, me) {
		nodes = append(nodes, me)
	}
	slices.Sort(nodes)
	p = &loadPlan{me: me, units: units, weight: map[string]float64{}, holder: holder, nodes: nodes, load: map[string]float64{}}
	floor := total / float64(len(units)) / 10
	for _, u := range units {
		p.weight[u] = rates[u] + floor
		p.fair += p.weight[u]
	}
	p.fair /= float64(len(nodes))
	for _, n := range nodes {
		p.load[n] = 0
	}
	for _, u := range units {
		if h, ok := holder[u]; ok {
			if _, live := p.load[h]; live {
				p.load[h] += p.weight[u]
			}
		}
	}
	return p, true
}

// leastLoaded returns the live process with the least load (the first by
// name among equals), other than except.
func (p *loadPlan) leastLoaded(except string) string {
	best := ""
	for _, n := range p.nodes {
		if n != except && (best == "" || p.load[n] < p.load[best]) {
			best = n
		}
	}
	return best
}

// claims returns the free units this process takes, heaviest first:
// those that fit under the fair load plus the hysteresis, those for which
// it is the least loaded process, and those stale (seen free at
// freeTicks balances in a row). A free unit it does not take is counted
// as the least loaded process's, which is expected to take it.
func (p *loadPlan) claims(stale func(unit string) bool) []string {
	var free []string
	for _, u := range p.units {
		if _, held := p.holder[u]; !held {
			free = append(free, u)
		}
	}
	slices.SortStableFunc(free, func(a, b string) int {
		if p.weight[a] != p.weight[b] {
			if p.weight[a] > p.weight[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	var take []string
	for _, u := range free {
		w := p.weight[u]
		least := p.leastLoaded("")
		if p.load[p.me]+w <= p.fair*(1+loadHysteresis) || least == p.me || stale(u) {
			take = append(take, u)
			p.load[p.me] += w
			p.holder[u] = p.me
		} else {
			p.load[least] += w
		}
	}
	return take
}

// handOvers returns the units this process hands over, each to the least
// loaded other process, while a move lowers the larger of the two loads
// by more than the hysteresis; keep holds units it may not hand over now
// (taken in this balance).
func (p *loadPlan) handOvers(keep map[string]bool) []string {
	var give []string
	for {
		to := p.leastLoaded(p.me)
		if to == "" {
			return give
		}
		mine, other := p.load[p.me], p.load[to]
		best, bestMax := "", mine-loadHysteresis*p.fair
		for _, u := range p.units {
			if p.holder[u] != p.me || keep[u] || slices.Contains(give, u) {
				continue
			}
			w := p.weight[u]
			if m := max(mine-w, other+w); m < bestMax {
				best, bestMax = u, m
			}
		}
		if best == "" {
			return give
		}
		give = append(give, best)
		p.load[p.me] -= p.weight[best]
		p.load[to] += p.weight[best]
	}
}

// balanceByLoadLocked balances the units by load when there is some (see
// the top of this file) and reports whether it did; otherwise the count
// rule applies. isUnit names the units; a held unit that is not one is
// left to balanceLocked.
func (s *Service) balanceByLoadLocked(ctx context.Context, units []unit, isUnit map[string]bool) bool {
	rates := s.unitRatesLocked(ctx, units)
	nodeLeases, err := s.own.leases.HoldersOf(ctx, nodeLeasePrefix)
	if err != nil || len(nodeLeases) < 2 {
		return false
	}
	held, err := s.own.leases.HoldersOf(ctx, mappingLeasePrefix)
	if err != nil {
		return false
	}
	me := s.nodeName()
	keys := make([]string, len(units))
	for i, u := range units {
		keys[i] = u.key()
	}
	holder := map[string]string{}
	for k, n := range held {
		if key := strings.TrimPrefix(k, mappingLeasePrefix); isUnit[key] && n != me {
			holder[key] = n
		}
	}
	for key := range s.own.held { // this process's own view is the truth about itself
		if isUnit[key] {
			holder[key] = me
		}
	}
	var nodes []string
	for _, n := range nodeLeases {
		nodes = append(nodes, n)
	}
	p, ok := newLoadPlan(me, keys, rates, holder, nodes)
	if !ok {
		return false
	}
	for _, key := range keys {
		if _, isHeld := holder[key]; isHeld {
			delete(s.own.freeSeen, key)
		} else {
			s.own.freeSeen[key]++
		}
	}
	for key := range s.own.freeSeen {
		if !isUnit[key] {
			delete(s.own.freeSeen, key)
		}
	}
	taken := map[string]bool{}
	for _, key := range p.claims(func(u string) bool { return s.own.freeSeen[u] >= freeTicks }) {
		taken[key] = true
		if s.claimLocked(ctx, parseUnit(key)); s.own.held[key] != nil {
			delete(s.own.freeSeen, key)
		} else { // another process took it first
			p.load[me] -= p.weight[key]
			delete(p.holder, key)
		}
	}
	for _, key := range p.handOvers(taken) {
		s.eng.Logger.Info("handing a mapping's shard over to balance the cluster's load", "unit", key,
			"weight", p.weight[key], "fair", p.fair, "load", p.load[me])
		s.releaseUnitLocked(key)
	}
	return true
}
