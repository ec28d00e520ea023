package trades

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strconv"

	json "github.com/goccy/go-json"
)

// Hierarchy levels of a risk message, as in the AWS sample.
var (
	RiskTypes  = []string{"Delta", "Gamma", "Vega", "Theta", "Rho"}
	Regions    = []string{"AMER", "EMEA", "APAC"}
	TradeDesks = []string{"FXSpot", "FXOptions", "Rates", "Credit", "Equity"}
)

// Hierarchy is a risk message's place in the aggregation tree.
type Hierarchy struct {
	RiskType  string `json:"RiskType"`
	Region    string `json:"Region"`
	TradeDesk string `json:"TradeDesk"`
}

// Message is the risk message of the AWS sample (seed 002):
// {TradeID, Version, Value, Hierarchy, Timestamp}. Value is a decimal with
// two places, sent as a JSON number; Timestamp is epoch seconds.
type Message struct {
	TradeID   string      `json:"TradeID"`
	Version   int         `json:"Version"`
	Value     json.Number `json:"Value"`
	Hierarchy Hierarchy   `json:"Hierarchy"`
	Timestamp json.Number `json:"Timestamp"`
}

// aggregateKeys are the aggregate-table keys a message contributes to.
func (h Hierarchy) aggregateKeys() [3]string {
	return [3]string{"RiskType:" + h.RiskType, "Region:" + h.Region, "TradeDesk:" + h.TradeDesk}
}

// Key of the aggregate item counting trades, and of the one counting
// state changes aggregated (the verifier's per-stage check).
const (
	KeyTrades  = "Trades"
	KeyChanges = "Changes"
	KeyTotal   = "Total"
)

// trade is the producer's memory of a trade: its latest version. It holds
// no pointers (10 million of them are kept).
type trade struct {
	id      [16]byte
	version int32
	cents   int64
	h       [3]uint8 // indexes into RiskTypes, Regions, TradeDesks
}

func (t *trade) tradeID() string {
	b := t.id
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func (t *trade) hierarchy() Hierarchy {
	return Hierarchy{RiskTypes[t.h[0]], Regions[t.h[1]], TradeDesks[t.h[2]]}
}

// producer generates the message sequence and the exact expected totals.
type producer struct {
	rng    *rand.Rand
	trades []trade // a sample of the trades sent, for modifications (keep)
	room   int     // how many trades it keeps: reservoirTrades
	// Expected is cents per aggregate key, from the latest version of
	// every trade.
	expected map[string]int64
	// Counters of what was generated.
	news, mods, outOfOrder, dups int64
	modRate, dupRate             float64
}

// reservoirTrades is how many trades the producer keeps to modify: a
// uniform sample of every trade sent (Algorithm R), 40 MB. Keeping every
// trade took 400 MB of the heap at 10 million messages (800 MB while its
// list doubled), which the collector of the same process paid for.
const reservoirTrades = 1 << 20

func newProducer(seed uint64, modRate, dupRate float64) *producer {
	return &producer{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), room: reservoirTrades,
		expected: map[string]int64{}, modRate: modRate, dupRate: dupRate}
}

func formatCents(c int64) string {
	neg := c < 0
	if neg {
		c = -c
	}
	s := strconv.FormatInt(c/100, 10) + "." + fmt.Sprintf("%02d", c%100)
	if neg {
		s = "-" + s
	}
	return s
}

func (p *producer) add(h Hierarchy, cents int64) {
	for _, k := range h.aggregateKeys() {
		p.expected[k] += cents
	}
	p.expected[KeyTotal] += cents
}

// next returns the messages of one step: a new trade, or (modRate of the
// time) a modification with a higher Version followed by an out-of-order
// message with an older Version; each message is duplicated dupRate of
// the time (in the same batch).
func (p *producer) next(nowSec float64) []Message {
	ts := json.Number(strconv.FormatFloat(nowSec, 'f', 3, 64))
	var out []Message
	if len(p.trades) > 100 && p.rng.Float64() < p.modRate {
		i := p.rng.IntN(len(p.trades))
		t := &p.trades[i]
		old := *t
		t.version++
		t.cents = p.rng.Int64N(20_000_000) - 10_000_000
		h, id := t.hierarchy(), t.tradeID()
		p.add(h, t.cents-old.cents)
		p.mods++
		p.outOfOrder++
		out = append(out,
			Message{TradeID: id, Version: int(t.version), Value: json.Number(formatCents(t.cents)), Hierarchy: h, Timestamp: ts},
			// The stale message: an older version with another value.
			Message{TradeID: id, Version: int(t.version) - 1, Value: json.Number(formatCents(p.rng.Int64N(1000))), Hierarchy: h, Timestamp: ts})
	} else {
		t := trade{
			cents: p.rng.Int64N(20_000_000) - 10_000_000,
			h:     [3]uint8{uint8(p.rng.IntN(len(RiskTypes))), uint8(p.rng.IntN(len(Regions))), uint8(p.rng.IntN(len(TradeDesks)))},
		}
		binary.BigEndian.PutUint64(t.id[:8], p.rng.Uint64())
		binary.BigEndian.PutUint64(t.id[8:], p.rng.Uint64())
		p.keep(t)
		h := t.hierarchy()
		p.add(h, t.cents)
		p.expected[KeyTrades]++
		p.news++
		out = append(out, Message{TradeID: t.tradeID(), Version: 0, Value: json.Number(formatCents(t.cents)), Hierarchy: h, Timestamp: ts})
	}
	if p.rng.Float64() < p.dupRate {
		p.dups++
		out = append(out, out[0])
	}
	return out
}

// keep adds the p.news-th trade sent (0-based) to the trades kept for
// modifications: every one while fewer than p.room are kept, then in the
// place of a random kept one with probability room/(news+1), so that
// every trade sent is kept equally likely.
func (p *producer) keep(t trade) {
	if len(p.trades) < p.room {
		p.trades = append(p.trades, t)
		return
	}
	if j := p.rng.Int64N(p.news + 1); j < int64(p.room) {
		p.trades[j] = t
	}
}

// encode returns a message's JSON and its partition key, the SHA-256 of
// the message (as the AWS sample's producer).
func encode(m *Message) ([]byte, string) {
	b, _ := json.Marshal(m)
	sum := sha256.Sum256(b)
	return b, hex.EncodeToString(sum[:])
}
