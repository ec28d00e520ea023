package flights

import (
	"cmp"
	"fmt"
	"slices"
)

// DelayedThreshold is the delay, in minutes, a flight must exceed to count
// in AirportStats.Delayed15.
const DelayedThreshold = 15

// AirportStats aggregates the flights departing from one airport.
type AirportStats struct {
	// Airport is the origin IATA code.
	Airport string `json:"airport"`
	// Flights is the number of flights aggregated.
	Flights int64 `json:"flights"`
	// TotalDelay is the sum of their delays in minutes (early flights
	// subtract).
	TotalDelay int64 `json:"totalDelay"`
	// MaxDelay is the largest delay in minutes; it starts at the first
	// flight's delay, so it may be negative.
	MaxDelay int64 `json:"maxDelay"`
	// Delayed15 is the number of flights delayed by more than
	// DelayedThreshold (15) minutes.
	Delayed15 int64 `json:"delayed15"`
}

// ShareDelayed returns Delayed15/Flights, a fraction in [0, 1] (0 if there
// are no flights).
func (s AirportStats) ShareDelayed() float64 {
	if s.Flights == 0 {
		return 0
	}
	return float64(s.Delayed15) / float64(s.Flights)
}

// AvgDelay returns the mean delay in minutes (0 if there are no flights).
func (s AirportStats) AvgDelay() float64 {
	if s.Flights == 0 {
		return 0
	}
	return float64(s.TotalDelay) / float64(s.Flights)
}

// add folds one delay into s.
func (s *AirportStats) add(delay int64) {
	if s.Flights == 0 || delay > s.MaxDelay {
		s.MaxDelay = delay
	}
	s.Flights++
	s.TotalDelay += delay
	if delay > DelayedThreshold {
		s.Delayed15++
	}
}

// merge folds o into s.
func (s *AirportStats) merge(o *AirportStats) {
	if o.Flights == 0 {
		return
	}
	if s.Flights == 0 || o.MaxDelay > s.MaxDelay {
		s.MaxDelay = o.MaxDelay
	}
	s.Flights += o.Flights
	s.TotalDelay += o.TotalDelay
	s.Delayed15 += o.Delayed15
}

// Stats aggregates flights per origin airport. The result does not depend
// on the order of Add and Merge calls, so partial Stats (per shard, per
// batch) can be merged into the total.
//
// The zero value is ready to use. A Stats is not safe for concurrent use:
// give each goroutine its own and Merge them afterwards, or lock around it.
type Stats struct {
	// Airports maps an origin IATA code to its aggregate; entries are
	// never nil and Airports[code].Airport == code.
	Airports map[string]*AirportStats `json:"airports"`
}

// NewStats returns an empty Stats.
func NewStats() *Stats {
	return &Stats{Airports: make(map[string]*AirportStats, 256)}
}

// entry returns the aggregate for code, creating it.
func (s *Stats) entry(code string) *AirportStats {
	a := s.Airports[code]
	if a == nil {
		if s.Airports == nil {
			s.Airports = make(map[string]*AirportStats, 256)
		}
		a = &AirportStats{Airport: code}
		s.Airports[code] = a
	}
	return a
}

// Add counts one flight under its origin airport.
func (s *Stats) Add(f Flight) {
	s.entry(f.Origin).add(f.Delay)
}

// Merge adds every aggregate of other into s. other is not modified and
// shares no memory with s afterwards; a nil other is a no-op.
func (s *Stats) Merge(other *Stats) {
	if other == nil {
		return
	}
	for code, o := range other.Airports {
		if o.Flights == 0 {
			continue
		}
		s.entry(code).merge(o)
	}
}

// Flights returns the number of flights counted over all airports.
func (s *Stats) Flights() int64 {
	var n int64
	if s != nil {
		for _, a := range s.Airports {
			n += a.Flights
		}
	}
	return n
}

// Len returns the number of airports with at least one flight.
func (s *Stats) Len() int {
	n := 0
	if s != nil {
		for _, a := range s.Airports {
			if a.Flights > 0 {
				n++
			}
		}
	}
	return n
}

// Equal reports whether s and other hold the same aggregates. If not, the
// string describes the first difference in airport-code order, e.g.
// "ORD: Flights 166341 != 166340". A nil Stats equals an empty one, and
// airports with no flights are ignored.
func (s *Stats) Equal(other *Stats) (bool, string) {
	for _, code := range unionCodes(s, other) {
		a, b := s.lookup(code), other.lookup(code)
		switch {
		case a == nil:
			return false, fmt.Sprintf("%s: missing from receiver (other has %d flights)", code, b.Flights)
		case b == nil:
			return false, fmt.Sprintf("%s: missing from other (receiver has %d flights)", code, a.Flights)
		case a.Airport != b.Airport:
			return false, fmt.Sprintf("%s: Airport %q != %q", code, a.Airport, b.Airport)
		case a.Flights != b.Flights:
			return false, fmt.Sprintf("%s: Flights %d != %d", code, a.Flights, b.Flights)
		case a.TotalDelay != b.TotalDelay:
			return false, fmt.Sprintf("%s: TotalDelay %d != %d", code, a.TotalDelay, b.TotalDelay)
		case a.MaxDelay != b.MaxDelay:
			return false, fmt.Sprintf("%s: MaxDelay %d != %d", code, a.MaxDelay, b.MaxDelay)
		case a.Delayed15 != b.Delayed15:
			return false, fmt.Sprintf("%s: Delayed15 %d != %d", code, a.Delayed15, b.Delayed15)
		}
	}
	return true, ""
}

// lookup returns the non-empty aggregate for code, or nil.
func (s *Stats) lookup(code string) *AirportStats {
	if s == nil {
		return nil
	}
	if a := s.Airports[code]; a != nil && a.Flights > 0 {
		return a
	}
	return nil
}

func unionCodes(a, b *Stats) []string {
	var codes []string
	for _, s := range []*Stats{a, b} {
		if s == nil {
			continue
		}
		for code, st := range s.Airports {
			if st.Flights > 0 {
				codes = append(codes, code)
			}
		}
	}
	slices.Sort(codes)
	return slices.Compact(codes)
}

// Top returns copies of the n airports with the most flights, by Flights
// descending and, for equal counts, by code ascending. n <= 0 or n larger
// than the number of airports returns them all, in that order.
func (s *Stats) Top(n int) []AirportStats {
	if s == nil {
		return nil
	}
	all := make([]AirportStats, 0, len(s.Airports))
	for _, a := range s.Airports {
		if a.Flights > 0 {
			all = append(all, *a)
		}
	}
	slices.SortFunc(all, func(a, b AirportStats) int {
		if c := cmp.Compare(b.Flights, a.Flights); c != 0 {
			return c
		}
		return cmp.Compare(a.Airport, b.Airport)
	})
	if n > 0 && n < len(all) {
		all = all[:n:n]
	}
	return all
}

// ComputeStats computes the per-origin statistics straight from the parquet
// file at path (EmbeddedPath: the embedded file), independently of any pipeline, over the first limit rows
// (limit <= 0: all rows). Rows whose 0-based index in the file satisfies
// exclude are skipped; exclude may be nil. It also returns the number of
// flights counted (rows read minus rows excluded).
func ComputeStats(path string, limit int, exclude func(index int64) bool) (*Stats, int64, error) {
	s := NewStats()
	var index, counted int64
	err := Read(path, limit, func(batch []Flight) error {
		for i := range batch {
			if exclude == nil || !exclude(index) {
				s.Add(batch[i])
				counted++
			}
			index++
		}
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	return s, counted, nil
}
