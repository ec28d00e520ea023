package demo

import "math/bits"

// positions is a growable bitset over a shard's log positions (1, 2, ...):
// the demo's record of which records it has processed or seen discarded.
type positions struct{ words []uint64 }

func (p *positions) set(pos uint64) bool {
	w := pos / 64
	for uint64(len(p.words)) <= w {
		p.words = append(p.words, make([]uint64, max(1024, len(p.words)))...)
	}
	bit := uint64(1) << (pos % 64)
	if p.words[w]&bit != 0 {
		return false
	}
	p.words[w] |= bit
	return true
}

func (p *positions) has(pos uint64) bool {
	w := pos / 64
	return w < uint64(len(p.words)) && p.words[w]&(1<<(pos%64)) != 0
}

// count is how many positions are set.
func (p *positions) count() int {
	n := 0
	for _, w := range p.words {
		n += bits.OnesCount64(w)
	}
	return n
}
