package mapping

import (
	"math/rand/v2"
	"testing"

	"github.com/runnel-dev/runnel/stream"
)

// TestLaneQueueKeepsOrderWhileReusingItsArray: records pushed in bursts and
// taken in batches of other sizes come out once each, in order, while the
// queue moves to the front of its array (enqueue) instead of growing; the
// array stays within a small multiple of the most records waiting.
func TestLaneQueueKeepsOrderWhileReusingItsArray(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var l lane
	next, want := uint64(0), uint64(0)
	most, arrays := 0, 0
	var last *stream.Record
	for range 20000 {
		if rng.IntN(2) == 0 {
			recs := make([]stream.Record, 1+rng.IntN(40))
			for i := range recs {
				recs[i].Seq = next
				next++
			}
			l.enqueue(recs)
			most = max(most, len(l.queue))
			if p := &l.qbuf[:1][0]; p != last {
				arrays, last = arrays+1, p
			}
			continue
		}
		k := min(len(l.queue), 1+rng.IntN(50))
		for _, r := range l.queue[:k] {
			if r.Seq != want {
				t.Fatalf("took record %d, want %d", r.Seq, want)
			}
			want++
		}
		l.queue = l.queue[k:] // as take does
	}
	for _, r := range l.queue {
		if r.Seq != want {
			t.Fatalf("left record %d, want %d", r.Seq, want)
		}
		want++
	}
	if want != next {
		t.Fatalf("%d records came out of %d pushed", want, next)
	}
	if c := cap(l.qbuf); c > 4*most+64 {
		t.Fatalf("the queue's array holds %d records; at most %d waited", c, most)
	}
	// New arrays only while the most waiting grows (doubling), not after
	// every take.
	if arrays > 64 {
		t.Fatalf("the queue moved to a new array %d times (at most %d records waited)", arrays, most)
	}
	t.Logf("%d arrays, at most %d records waiting, %d records", arrays, most, next)
}
