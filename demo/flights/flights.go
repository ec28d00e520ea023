// Package flights reads the demo's real input data set, 3,000,000 US domestic
// flights from January to June 2001 (data/flights-3m.parquet, see
// data/README.md), and provides what the demo needs around it: a compact
// JSON record encoding (the payload pushed through a stream), a parser for
// it, and per-origin-airport statistics that the demo computes both
// through its pipeline and independently from the file to check the result.
//
// Records in JSON look exactly like the rows of vega-datasets'
// flights-20k.json:
//
//	{"date":"2001/01/01 00:47","delay":66,"distance":1750,"origin":"DTW","destination":"LAS"}
//
// optionally followed by the demo's poison marker, ,"poison":true.
package flights

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/runnel-dev/runnel/data"
)

// Flight is one row of the data set.
//
// The parquet tags match the file's schema exactly (all five columns are
// optional in the file, none holds a null), so parquet-go reads rows without
// a schema conversion.
type Flight struct {
	// Date is the scheduled departure as a wall-clock time in microseconds
	// since 1970-01-01 00:00, read as if it were UTC. The file stores a
	// TIMESTAMP(MICROS) that is not adjusted to UTC: local airport time, no
	// time zone. Every value in the file is a whole minute.
	Date int64 `parquet:"date,optional,timestamp(microsecond:local)"`
	// Delay is the arrival delay in minutes; negative means early.
	Delay int64 `parquet:"delay,optional"`
	// Distance is the flown distance in statute miles.
	Distance int64 `parquet:"distance,optional"`
	// Origin is the IATA code of the departure airport, e.g. "ORD".
	Origin string `parquet:"origin,optional"`
	// Destination is the IATA code of the arrival airport.
	Destination string `parquet:"destination,optional"`
}

// Time returns f.Date as a time.Time in UTC whose clock reads the flight's
// local wall-clock time.
func (f *Flight) Time() time.Time { return time.UnixMicro(f.Date).UTC() }

// BatchSize is the number of rows Read passes to its callback at a time
// (every batch but the last is full).
const BatchSize = 4096

// EmbeddedPath is the path that names the copy of data/flights-3m.parquet
// embedded in the binary (package data): Read, Count and ComputeStats read
// it when given "", from any working directory.
const EmbeddedPath = ""

// Read streams the flights of the parquet file at path (EmbeddedPath: the
// embedded file), in file order, to fn
// in batches of BatchSize rows (the last batch may be shorter). It stops after
// limit rows; limit <= 0 means the whole file. Memory use is one batch, not
// the file.
//
// The batch slice is reused: fn must not keep it (or sub-slices of it) after
// returning, but it may copy Flight values out, strings included; they do not
// share memory with the reader. If fn returns an error, Read stops and
// returns that error unchanged (errors.Is works on it).
func Read(path string, limit int, fn func(batch []Flight) error) error {
	file, pf, err := open(path)
	if err != nil {
		return err
	}
	defer file.Close()

	r, err := newReader(pf)
	if err != nil {
		return fmt.Errorf("flights: %s: %w", path, err)
	}
	defer r.Close()

	remaining := pf.NumRows()
	if limit > 0 && int64(limit) < remaining {
		remaining = int64(limit)
	}
	buf := make([]Flight, min(int64(BatchSize), remaining))
	for remaining > 0 {
		want := min(int64(len(buf)), remaining)
		n, rerr := r.Read(buf[:want])
		if n > 0 {
			remaining -= int64(n)
			if ferr := fn(buf[:n]); ferr != nil {
				return ferr
			}
		}
		switch {
		case rerr == io.EOF:
			return nil
		case rerr != nil:
			return fmt.Errorf("flights: %s: %w", path, rerr)
		case n == 0:
			return fmt.Errorf("flights: %s: %w", path, io.ErrNoProgress)
		}
	}
	return nil
}

// Count returns the number of rows of the parquet file at path
// (EmbeddedPath: the embedded file), taken from
// the file's metadata (no rows are read).
func Count(path string) (int64, error) {
	file, pf, err := open(path)
	if err != nil {
		return 0, err
	}
	defer file.Close()
	return pf.NumRows(), nil
}

// open opens path as a parquet file, or the embedded
// data/flights-3m.parquet when path is "" (EmbeddedPath). The caller
// closes the io.Closer.
func open(path string) (io.Closer, *parquet.File, error) {
	if path == EmbeddedPath {
		pf, err := parquet.OpenFile(bytes.NewReader(data.Flights), int64(len(data.Flights)), parquet.SkipBloomFilters(true))
		if err != nil {
			return nil, nil, fmt.Errorf("flights: embedded %s: %w", data.FlightsName, err)
		}
		return io.NopCloser(nil), pf, nil
	}
	file, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	st, err := file.Stat()
	if err != nil {
		file.Close()
		return nil, nil, err
	}
	pf, err := parquet.OpenFile(file, st.Size(), parquet.SkipBloomFilters(true))
	if err != nil {
		file.Close()
		return nil, nil, fmt.Errorf("flights: %s: %w", path, err)
	}
	return file, pf, nil
}

var errSchema = errors.New("schema does not fit flights.Flight")

// newReader wraps parquet.NewGenericReader, which panics when the file's
// schema cannot be converted to Flight's, so that a wrong file is an error.
func newReader(pf *parquet.File) (r *parquet.GenericReader[Flight], err error) {
	defer func() {
		if p := recover(); p != nil {
			r, err = nil, fmt.Errorf("%w: %v", errSchema, p)
		}
	}()
	for _, col := range []string{"date", "delay", "distance", "origin", "destination"} {
		if _, ok := pf.Schema().Lookup(col); !ok {
			return nil, fmt.Errorf("%w: no column %q", errSchema, col)
		}
	}
	return parquet.NewGenericReader[Flight](pf), nil
}
