package trades

import "testing"

// TestTheProducerKeepsAUniformSampleOfTrades: past its room, the trades
// kept for modifications are a uniform sample of every trade sent: the
// first and the second half of 100 trades are kept about equally often
// over many producers with room for 10 (each trade with probability 1/10).
func TestTheProducerKeepsAUniformSampleOfTrades(t *testing.T) {
	const sent, room, runs = 100, 10, 4000
	var early, late int
	for seed := range uint64(runs) {
		p := newProducer(seed, 0, 0)
		p.room = room
		for i := range sent {
			var tr trade
			tr.version = int32(i) // the trade's number
			p.keep(tr)
			p.news++
		}
		if len(p.trades) != room {
			t.Fatalf("%d trades kept, want %d", len(p.trades), room)
		}
		for _, tr := range p.trades {
			if tr.version < sent/2 {
				early++
			} else {
				late++
			}
		}
	}
	// Each half is kept 20,000 times in expectation (standard deviation
	// about 95 for a binomial share of 40,000).
	if early < 19400 || late < 19400 {
		t.Fatalf("kept %d of the first half and %d of the second; want about 20,000 each", early, late)
	}
}
