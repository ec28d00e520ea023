// Command pebble measures the other candidate design of issue 12 beside
// bench/kvtable (a JetStream key-value bucket): a table's items in an
// embedded ordered key-value store on local disk (Pebble, CockroachDB's
// LSM), kept by the process serving the table as a materialized view of
// the table's JetStream change log, memory bounded by its block cache.
//
//	cd bench/kvtable/pebble && go run . --items 2000000
//
// A module of its own, so that runnel's build does not carry Pebble
// before the choice is made (docs/design.md, "Tables: where the items
// live"). The phases are package phase's. Here puts go in batches of
// 1,000, not synced (the log is the durable copy); a conditional update
// holds a lock of one of 256 key stripes (one process serves a table)
// around a Get and a Set; the reopen flushes, closes and opens; the scan
// is one iterator in key order.
package main

import (
	"flag"
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"

	"github.com/runnel-dev/runnel/bench/kvtable/phase"
)

func main() {
	cacheMiB := flag.Int64("cache-mib", 256, "block cache in MiB (8 or more)")
	phase.Main("pebble", func(dir string) (phase.Store, error) {
		if *cacheMiB < 8 {
			return nil, fmt.Errorf("--cache-mib %d: must be at least 8", *cacheMiB)
		}
		s := &store{dir: dir, cache: pebble.NewCache(*cacheMiB << 20)}
		return s, s.open()
	})
}

type store struct {
	dir     string
	cache   *pebble.Cache
	db      *pebble.DB
	batch   *pebble.Batch
	stripes [256]sync.Mutex
}

func (s *store) open() (err error) {
	s.db, err = pebble.Open(s.dir, &pebble.Options{Cache: s.cache, MemTableSize: 64 << 20, Logger: quiet{}})
	return err
}

// quiet drops Pebble's informational lines (the WALs it replays).
type quiet struct{}

func (quiet) Infof(string, ...any)      {}
func (quiet) Errorf(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) }
func (quiet) Fatalf(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...); os.Exit(1) }

func (s *store) Put(key string, value []byte) error {
	if s.batch == nil {
		s.batch = s.db.NewBatch()
	}
	if err := s.batch.Set([]byte(key), value, nil); err != nil {
		return err
	}
	if s.batch.Count() < 1000 {
		return nil
	}
	return s.Flush()
}

func (s *store) Flush() error {
	if s.batch == nil {
		return nil
	}
	err := s.batch.Commit(pebble.NoSync)
	s.batch.Close()
	s.batch = nil
	return err
}

func (s *store) get(key []byte) ([]byte, error) {
	v, closer, err := s.db.Get(key)
	if err != nil {
		return nil, err
	}
	out := append([]byte(nil), v...)
	return out, closer.Close()
}

func (s *store) Get(key string) error {
	_, err := s.get([]byte(key))
	return err
}

func (s *store) Update(key string, value []byte) error {
	k := []byte(key)
	m := &s.stripes[k[0]^k[len(k)-1]]
	m.Lock()
	defer m.Unlock()
	old, err := s.get(k)
	if err != nil {
		return err
	}
	if len(old) != len(value) { // the condition
		return fmt.Errorf("item %s: %d bytes, want %d", key, len(old), len(value))
	}
	return s.db.Set(k, value, pebble.NoSync)
}

// Reopen is a clean stop (the memtables flushed: the open replays no WAL)
// and a start.
func (s *store) Reopen() error {
	if err := s.db.Flush(); err != nil {
		return err
	}
	if err := s.db.Close(); err != nil {
		return err
	}
	return s.open()
}

func (s *store) Close() error {
	defer s.cache.Unref()
	return s.db.Close()
}

func (s *store) Scan(n *atomic.Int64) error {
	it, err := s.db.NewIter(nil)
	if err != nil {
		return err
	}
	for it.First(); it.Valid(); it.Next() {
		_ = it.Value()
		n.Add(1)
	}
	return it.Close()
}
