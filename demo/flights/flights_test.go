package flights

import (
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"os"
	"sync"
	"testing"
	"time"
)

const parquetPath = "../../data/flights-3m.parquet"

// sampleLastDate is the last date of testdata/flights-20k.json.
var sampleLastDate = time.Date(2001, 3, 31, 22, 27, 0, 0, time.UTC).UnixMicro()

type sampleData struct {
	raw     []json.RawMessage // exact bytes of each object in the file
	flights []Flight          // decoded with encoding/json and time.Parse
	err     error
}

var (
	sampleOnce sync.Once
	sample     sampleData
)

// loadSample reads testdata/flights-20k.json.gz (vega-datasets'
// flights-20k.json) with the standard library only, as an oracle
// independent of this package's code.
func loadSample(t testing.TB) ([]json.RawMessage, []Flight) {
	t.Helper()
	sampleOnce.Do(func() {
		f, err := os.Open("testdata/flights-20k.json.gz")
		if err != nil {
			sample.err = err
			return
		}
		defer f.Close()
		zr, err := gzip.NewReader(f)
		if err != nil {
			sample.err = err
			return
		}
		b, err := io.ReadAll(zr)
		if err != nil {
			sample.err = err
			return
		}
		if err := json.Unmarshal(b, &sample.raw); err != nil {
			sample.err = err
			return
		}
		var rows []struct {
			Date        string `json:"date"`
			Delay       int64  `json:"delay"`
			Distance    int64  `json:"distance"`
			Origin      string `json:"origin"`
			Destination string `json:"destination"`
		}
		if err := json.Unmarshal(b, &rows); err != nil {
			sample.err = err
			return
		}
		for _, r := range rows {
			tm, err := time.Parse("2006/01/02 15:04", r.Date)
			if err != nil {
				sample.err = err
				return
			}
			sample.flights = append(sample.flights, Flight{tm.UnixMicro(), r.Delay, r.Distance, r.Origin, r.Destination})
		}
	})
	if sample.err != nil {
		t.Fatal(sample.err)
	}
	if len(sample.raw) != 20000 || len(sample.flights) != 20000 {
		t.Fatalf("sample has %d/%d rows, want 20000", len(sample.raw), len(sample.flights))
	}
	return sample.raw, sample.flights
}

func TestCount(t *testing.T) {
	n, err := Count(parquetPath)
	if err != nil || n != 3_000_000 {
		t.Fatalf("Count = %d, %v; want 3000000", n, err)
	}
	if _, err := Count("testdata/nope.parquet"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Count(missing) err = %v", err)
	}
}

func TestReadLimitAndBatches(t *testing.T) {
	for _, tc := range []struct {
		limit int
		want  []int
	}{
		{5, []int{5}},
		{BatchSize, []int{BatchSize}},
		{10_000, []int{BatchSize, BatchSize, 10_000 - 2*BatchSize}},
	} {
		var sizes []int
		var rows []Flight
		err := Read(parquetPath, tc.limit, func(batch []Flight) error {
			sizes = append(sizes, len(batch))
			rows = append(rows, batch...)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if !equalInts(sizes, tc.want) {
			t.Errorf("limit %d: batch sizes %v, want %v", tc.limit, sizes, tc.want)
		}
		// Rows are in date order, start with the file's first row, and the
		// strings kept from earlier batches are intact (not reused buffers).
		first := Flight{time.Date(2001, 1, 1, 0, 1, 0, 0, time.UTC).UnixMicro(), 33, 2176, "LAS", "PHL"}
		if rows[0] != first {
			t.Errorf("first row %+v, want %+v", rows[0], first)
		}
		for i := 1; i < len(rows); i++ {
			if rows[i].Date < rows[i-1].Date || len(rows[i].Origin) != 3 || len(rows[i].Destination) != 3 {
				t.Fatalf("limit %d: row %d %+v after %+v", tc.limit, i, rows[i], rows[i-1])
			}
		}
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestReadErrors(t *testing.T) {
	stop := errors.New("stop")
	calls := 0
	err := Read(parquetPath, 0, func([]Flight) error { calls++; return stop })
	if err != stop || calls != 1 {
		t.Errorf("callback error: got %v after %d calls", err, calls)
	}
	if err := Read("testdata/nope.parquet", 1, func([]Flight) error { return nil }); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	if err := Read("testdata/flights-20k.json.gz", 1, func([]Flight) error { return nil }); err == nil {
		t.Errorf("non-parquet file: no error")
	}
}

// TestParquetMatchesJSONSample cross-checks the parquet decoding (column
// mapping, timestamp unit and wall-clock reading) field by field against
// vega-datasets' flights-20k.json, an independent export of the same
// source data. That file is NOT a prefix of flights-3m.parquet: it is a
// 20,000-row sample spanning 2001-01-01 00:47 .. 2001-03-31 22:27, of which
// 19,968 rows occur in the 3M file and 32 do not. The test then checks
// ComputeStats, with exclude, over exactly the matched rows against the
// stats of the matched sample rows.
func TestParquetMatchesJSONSample(t *testing.T) {
	_, want := loadSample(t)
	pending := make(map[Flight]int, len(want))
	for _, f := range want {
		pending[f]++
	}
	matched := make(map[int64]bool, len(want))
	var index, firstMatch int64 = 0, -1
	done := errors.New("past the sample")
	err := Read(parquetPath, 0, func(batch []Flight) error {
		for _, f := range batch {
			if f.Date > sampleLastDate {
				return done
			}
			if pending[f] > 0 {
				pending[f]--
				matched[index] = true
				if firstMatch < 0 {
					firstMatch = index
				}
			}
			index++
		}
		return nil
	})
	if err != done {
		t.Fatalf("Read: %v", err)
	}
	if len(matched) != 19_968 {
		t.Errorf("%d of 20000 sample rows found in the parquet file, want 19968", len(matched))
	}
	if firstMatch < 0 || pending[want[0]] != 0 {
		t.Fatalf("first sample row %+v not found", want[0])
	}

	wantStats := NewStats()
	for _, f := range want {
		if pending[f] > 0 {
			pending[f]-- // one of the 32 rows not in the parquet file
			continue
		}
		wantStats.Add(f)
	}
	got, n, err := ComputeStats(parquetPath, int(index), func(i int64) bool { return !matched[i] })
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(len(matched)) || got.Flights() != n {
		t.Errorf("ComputeStats counted %d (stats %d), want %d", n, got.Flights(), len(matched))
	}
	if ok, diff := got.Equal(wantStats); !ok {
		t.Errorf("ComputeStats over matched rows != sample stats: %s", diff)
	}
}

// TestComputeStatsPrefix checks ComputeStats on the first 20,000 rows of
// the file, with rows excluded, against stats built from those rows after a
// trip through AppendJSON and the standard library's JSON decoder.
func TestComputeStatsPrefix(t *testing.T) {
	const limit = 20_000
	exclude := func(i int64) bool { return i%7 == 3 }
	want := NewStats()
	var index int64
	var buf []byte
	err := Read(parquetPath, limit, func(batch []Flight) error {
		for i := range batch {
			buf = batch[i].AppendJSON(buf[:0])
			f, poison, err := parseJSONStd(buf)
			if err != nil || poison || f != batch[i] {
				t.Fatalf("row %d: %s decodes to %+v, %v, %v", index, buf, f, poison, err)
			}
			if !exclude(index) {
				want.Add(f)
			}
			index++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got, n, err := ComputeStats(parquetPath, limit, exclude)
	if err != nil {
		t.Fatal(err)
	}
	if wantN := int64(limit - (limit+3)/7); n != wantN || index != limit {
		t.Errorf("counted %d of %d rows, want %d of %d", n, index, wantN, limit)
	}
	if ok, diff := got.Equal(want); !ok {
		t.Errorf("ComputeStats != JSON-derived stats: %s", diff)
	}
	all, n, err := ComputeStats(parquetPath, limit, nil)
	if err != nil || n != limit || all.Flights() != limit {
		t.Errorf("ComputeStats(nil exclude): n=%d flights=%d err=%v", n, all.Flights(), err)
	}
}

// TestFullFile reads the whole file once.
func TestFullFile(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 3M rows")
	}
	start := time.Now()
	s, n, err := ComputeStats(parquetPath, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("ComputeStats over %d rows: %v", n, time.Since(start))
	if n != 3_000_000 || s.Flights() != n {
		t.Errorf("counted %d rows (stats %d), want 3000000", n, s.Flights())
	}
	if s.Len() != 229 {
		t.Errorf("%d origins, want 229", s.Len())
	}
	top := s.Top(3)
	for i, want := range []struct {
		code string
		n    int64
	}{{"ORD", 166_341}, {"DFW", 157_162}, {"ATL", 124_711}} {
		if top[i].Airport != want.code || top[i].Flights != want.n {
			t.Errorf("Top[%d] = %s %d, want %s %d", i, top[i].Airport, top[i].Flights, want.code, want.n)
		}
	}
	for _, a := range top {
		t.Logf("%s flights=%d avg=%.2f max=%d delayed>15=%.1f%%", a.Airport, a.Flights, a.AvgDelay(), a.MaxDelay, 100*a.ShareDelayed())
	}
}

// BenchmarkRead reads the whole file (3M rows) per iteration.
func BenchmarkRead(b *testing.B) {
	for b.Loop() {
		var n int64
		if err := Read(parquetPath, 0, func(batch []Flight) error { n += int64(len(batch)); return nil }); err != nil {
			b.Fatal(err)
		}
		if n != 3_000_000 {
			b.Fatal(n)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/3e6, "ns/row")
}
