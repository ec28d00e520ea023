package mapping

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runnel-dev/runnel/stream"
)

// Balance by load (a difference from the Kinesis Client Library, which
// balances shard leases by count only).
//
// Every balance, each process reads how many bytes each shard unit's
// source shard has had appended (stream.Service.ShardAppended) and keeps
// these samples for loadWindow. The readings are taken all at once and
// each within loadReadTimeout (readLoads): a reading is a JetStream API
// request (STREAM.INFO) that, sent while the shard's stream has no
// leader (a node just died), is never answered and waited out the
// client's timeout (30 s in a cluster) under Service.mu, holding every
// balance, status and API call of the mapping service, so a surviving
// node took over none of a dead node's shards until the dead node was
// back.
//
// A unit's load is its incoming byte rate over that window; a queue
// mapping's unit, and a shard with fewer than two samples, has none.
// When some unit has a load and more than one process is live, the
// units are balanced by load instead of by count:
//
//   - each unit weighs its rate plus a floor of a hundredth of the mean rate,
//     so that idle shards still spread over the processes;
//   - the fair load is the total weight over the live processes;
//   - a free unit, heaviest first, is taken by this process when it fits
//     under the fair load plus loadHysteresis of it, when this process is
//     the least loaded (the others' loads computed from the leases they
//     hold, as every process reads them), or when it has been free for
//     freeTicks balance intervals (nobody else took it); a unit this
//     process handed over itself only in that last case;
//   - this process hands a unit over when giving it to the least loaded
//     other process lowers the larger of the two loads by more than
//     loadHysteresis of the fair load, and then publishes on
//     balanceSubject, so that the others balance at once and the least
//     loaded takes it; after any such message every process hands
//     nothing over for settleAfterHandOver. So a move always narrows the gap
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
	// loadReadTimeout bounds one reading of a shard's appended bytes; a
	// reading not answered in time is skipped (the unit's rate comes from
	// its other samples).
	loadReadTimeout = balanceInterval / 2
	// loadHysteresis is the share of the fair load by which a move must
	// lower the larger load of the two processes, and by which a free unit
	// may overfill a process that is not the least loaded.
	loadHysteresis = 0.05
	// freeTicks is how many balance intervals a free unit stays free
	// before any process takes it, whatever its load.
	freeTicks = 3
	// settleAfterHandOver is how long a process hands nothing over for
	// load after it heard of a hand-over (its own included) that names
	// another process as the receiver: every
	// process balances at once on that message, each on its own reading
	// of the leases, and hand-overs decided together on views that do not
	// show each other's moves yet sent shards back and forth (seen in the
	// demo: a 6-shard mapping whose shards changed hands 9 times in 1.3
	// s). Taking the units handed over is not delayed, and the receiver
	// may hand a unit on in the same balance (a swap's second move).
	settleAfterHandOver = balanceInterval
)

// loadSample is one reading of a shard's appended bytes.
type loadSample struct {
	at    time.Time
	bytes uint64
}

// loadTarget is a stream shard unit whose load readLoads reads.
type loadTarget struct {
	key, name, shard string
	streams          *stream.Service
}

// requestStalls, set by tests only, runs before each load reading
// (kind "load") and checkpoint write (kind "checkpoint") with its
// context; an error it returns is the request's (a stream with no
// leader: unanswered until ctx ends).
var requestStalls atomic.Pointer[func(ctx context.Context, kind string) error]

// stalled runs requestStalls, if set, for a request of kind.
func stalled(ctx context.Context, kind string) error {
	if hook := requestStalls.Load(); hook != nil {
		return (*hook)(ctx, kind)
	}
	return nil
}

// readLoads reads the appended bytes of targets, all at once, each
// within loadReadTimeout (real time, as the request's: a fake engine
// clock in a test counts no timer of it); a reading that failed or timed
// out is left out.
func (s *Service) readLoads(ctx context.Context, targets []loadTarget) map[string]uint64 {
	var mu sync.Mutex
	var wg sync.WaitGroup
	read := map[string]uint64{}
	for _, t := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, cancel := context.WithTimeout(ctx, loadReadTimeout)
			defer cancel()
			if err := stalled(c, "load"); err != nil {
				return
			}
			if b, err := t.streams.ShardAppended(c, t.name, t.shard); err == nil {
				mu.Lock()
				read[t.key] = b
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return read
}

// unitRatesLocked reads each stream shard unit's appended bytes now (a
// sample, readLoads), forgets samples older than loadWindow (but the
// newest of them, the window's base) and of units that are gone, and
// returns each unit's incoming rate in bytes per second over its
// samples. A unit with fewer than two samples, or whose samples span no
// time, has no rate.
func (s *Service) unitRatesLocked(ctx context.Context, units []unit) map[string]float64 {
	var targets []loadTarget
	for _, u := range units {
		if c, ok := s.configs[u.id]; ok && u.shard != "" {
			if streams, name, _, err := s.sourceStreams(c); err == nil {
				targets = append(targets, loadTarget{u.key(), name, u.shard, streams})
			}
		}
	}
	read := s.readLoads(ctx, targets)
	now := s.eng.Clock.Now()
	rates := map[string]float64{}
	keep := map[string]bool{}
	for _, u := range units {
		if _, ok := s.configs[u.id]; !ok || u.shard == "" {
			continue
		}
		key := u.key()
		keep[key] = true
		if b, ok := read[key]; ok {
			s.own.samples[key] = append(s.own.samples[key], loadSample{now, b})
		}
		var rate float64
		var ok bool
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
	to     map[string]string  // unit key -> the process it is handed over to (handOvers)
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
	p = &loadPlan{me: me, to: map[string]string{}, units: units, weight: map[string]float64{}, holder: holder, nodes: nodes, load: map[string]float64{}}
	floor := total / float64(len(units)) / 100
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
// it is the least loaded process, and those stale (free for freeTicks
// balance intervals). given says who handed a unit over for load and to
// whom, when known: a unit meant for a process is taken by that one only
// (until stale); the giver is not counted as the least loaded for it, and
// does not take it back itself, so that a unit does not bounce between
// its giver and the process it was meant for. A free unit this process
// does not take is counted as the load of the process expected to take
// it.
func (p *loadPlan) claims(stale func(unit string) bool, given func(unit string) handedOver) []string {
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
		g := given(u)
		next := p.leastLoaded(g.By)
		if g.To != "" {
			next = g.To
		}
		ours := next == p.me || (g.To == "" && g.By != p.me && p.load[p.me]+w <= p.fair*(1+loadHysteresis))
		if ours || stale(u) {
			take = append(take, u)
			p.load[p.me] += w
			p.holder[u] = p.me
		} else {
			p.load[next] += w
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
			if len(give) == 0 {
				return p.swap(keep)
			}
			return give
		}
		give = append(give, best)
		p.to[best] = to
		p.load[p.me] -= p.weight[best]
		p.load[to] += p.weight[best]
	}
}

// swap returns, when no single move helps and this process is the most
// loaded, the unit u whose exchange with a lighter unit v of a less
// loaded process lowers the larger of the two loads the most, by more
// than the hysteresis: u is handed over to that process (p.to), which
// then holds both, and its own next balance hands the best of its units
// on (v, or one better still). Few heavy shards need this: with 6 shards
// of 72/26/43/30/65/64 thousand records, the count rule's {72, 65}
// against {43, 30} can be mended by no single move.
func (p *loadPlan) swap(keep map[string]bool) []string {
	mine := p.load[p.me]
	for _, n := range p.nodes {
		if p.load[n] > mine {
			return nil
		}
	}
	best, to, bestMax := "", "", mine-loadHysteresis*p.fair
	for _, u := range p.units {
		if p.holder[u] != p.me || keep[u] {
			continue
		}
		for _, v := range p.units {
			n, held := p.holder[v]
			if !held || n == p.me || p.weight[v] >= p.weight[u] {
				continue
			}
			d := p.weight[u] - p.weight[v]
			if m := max(mine-d, p.load[n]+d); m < bestMax {
				best, to, bestMax = u, n, m
			}
		}
	}
	if best == "" {
		return nil
	}
	p.to[best] = to
	p.load[p.me] -= p.weight[best]
	p.load[to] += p.weight[best]
	return []string{best}
}

// balanceByLoadLocked balances the units by load when there is some (see
// the top of this file) and reports whether it did; otherwise the count
// rule applies. isUnit names the units; a held unit that is not one is
// left to balanceLocked.
func (s *Service) balanceByLoadLocked(ctx context.Context, units []unit, isUnit map[string]bool) bool {
	rates := s.unitRatesLocked(ctx, units)
	lctx, cancel := leaseCtx(ctx)
	nodeLeases, err := s.own.leases.HoldersOf(lctx, nodeLeasePrefix)
	cancel()
	if s.leaseFailed(err); err != nil || len(nodeLeases) < 2 {
		return false
	}
	lctx, cancel = leaseCtx(ctx)
	held, err := s.own.leases.HoldersOf(lctx, mappingLeasePrefix)
	cancel()
	if err != nil {
		s.leaseFailed(err)
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
	if !ok { // the count rule now; what was free or handed over before is forgotten
		clear(s.own.freeSince)
		clear(s.own.given)
		return false
	}
	now := s.eng.Clock.Now()
	for _, key := range keys {
		if _, isHeld := holder[key]; isHeld {
			delete(s.own.freeSince, key)
			delete(s.own.given, key)
		} else if _, seen := s.own.freeSince[key]; !seen {
			s.own.freeSince[key] = now
		}
	}
	for key := range s.own.freeSince {
		if !isUnit[key] {
			delete(s.own.freeSince, key)
		}
	}
	for key := range s.own.given {
		if !isUnit[key] {
			delete(s.own.given, key)
		}
	}
	stale := func(u string) bool {
		at, ok := s.own.freeSince[u]
		return ok && now.Sub(at) >= freeTicks*balanceInterval
	}
	taken := map[string]bool{}
	for _, key := range p.claims(stale, func(u string) handedOver { return s.own.given[u] }) {
		if s.own.leaseTrouble {
			return true // the leases bucket did not answer: no more of this balance
		}
		taken[key] = true
		if s.claimLocked(ctx, parseUnit(key)); s.own.held[key] != nil {
			delete(s.own.freeSince, key)
			delete(s.own.given, key)
		} else { // another process took it first
			p.load[me] -= p.weight[key]
			delete(p.holder, key)
		}
	}
	var give []string
	if s.own.mayHandOver(now) && !s.own.leaseTrouble {
		give = p.handOvers(taken)
	}
	msg := handOver{Node: me}
	for _, key := range give {
		s.eng.Logger.Info("handing a mapping's shard over to balance the cluster's load", "unit", key,
			"weight", p.weight[key], "fair", p.fair, "load", p.load[me])
		s.handOverLocked(key)
		s.own.given[key] = handedOver{By: me, To: p.to[key]}
		msg.Units, msg.To = append(msg.Units, key), append(msg.To, p.to[key])
	}
	if len(give) > 0 { // best effort: without it the units go stale and are taken anyway
		b, _ := json.Marshal(msg)
		s.eng.NC.Publish(balanceSubject, b)
	}
	return true
}

// handedOver says which process handed a unit over for load (By) and
// which one it meant it for (To).
type handedOver struct{ By, To string }

// handOver is the message on balanceSubject: Node handed Units[i] over
// to To[i].
type handOver struct {
	Node  string   `json:"node"`
	Units []string `json:"units"`
	To    []string `json:"to"`
}

// heardHandOver records who handed which units over, and to whom (a
// message on balanceSubject), and kicks a balance, so that the process
// named takes them at once.
func (s *Service) heardHandOver(data []byte) {
	var h handOver
	if json.Unmarshal(data, &h) == nil && h.Node != "" {
		s.mu.Lock()
		s.own.heard(h, s.nodeName(), s.eng.Clock.Now())
		s.mu.Unlock()
	}
	signal(s.own.kick)
}

// heard records hand-over h, heard by process me at now: who gave each
// unit to whom, and, unless me is a receiver (which may pass a unit on
// at once: a swap's second move), no hand-over here for
// settleAfterHandOver.
func (o *owner) heard(h handOver, me string, now time.Time) {
	if !slices.Contains(h.To, me) {
		o.settled = now.Add(settleAfterHandOver)
	}
	for i, u := range h.Units {
		if i < len(h.To) {
			o.given[u] = handedOver{By: h.Node, To: h.To[i]}
		}
	}
}

// mayHandOver reports whether this process may hand units over for load
// at now (see settleAfterHandOver).
func (o *owner) mayHandOver(now time.Time) bool { return !now.Before(o.settled) }
