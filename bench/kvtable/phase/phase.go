// Package phase runs issue 12's measurement of a candidate store for a
// table's items (bench/kvtable: a JetStream key-value bucket;
// bench/kvtable/pebble: an embedded LSM on local disk), the same phases
// with the same keys for each, so that their figures compare:
//   - load: Options.Items unconditional puts of Options.ValueBytes bytes;
//   - get: Options.Ops reads of random existing keys by Options.Callers
//     goroutines;
//   - conditional: as many read-modify-writes, each a read and a write
//     conditional on what was read (UpdateItem with a condition);
//   - memory: the process's resident set (VmRSS: an embedded server
//     included) and the Go heap after a GC;
//   - reopen: the store closed cleanly and opened again: seconds until the
//     first read of an existing key answers, and the memory then;
//   - scan: every item read once, items/s.
//
// Progress goes to stderr every 5 s; each phase's figure to stdout.
package phase

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"math/big"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Store is one candidate. Keys are Key(i) for i in [0, Options.Items).
type Store interface {
	// Put writes an item unconditionally; it may return before the write
	// is durable (Flush waits for all).
	Put(key string, value []byte) error
	// Flush waits until every Put is stored.
	Flush() error
	// Get reads an existing item.
	Get(key string) error
	// Update reads the item and writes value conditionally on what it
	// read, again while another writer got in between.
	Update(key string, value []byte) error
	// Reopen closes the store cleanly and opens it again.
	Reopen() error
	// Scan reads every item once, adding each to n.
	Scan(n *atomic.Int64) error
	// Close closes the store.
	Close() error
}

// Main is a candidate's command: it reads the flags (--items,
// --value-bytes, --callers, --ops, --dir, and any the caller defined
// before), opens the store in --dir (default: a new temporary directory,
// removed at the end), runs the phases and closes it. It exits 1 with
// the error, 2 on bad flags.
func Main(name string, open func(dir string) (Store, error)) {
	var o Options
	flag.IntVar(&o.Items, "items", 1_000_000, "items to write (1 or more)")
	flag.IntVar(&o.ValueBytes, "value-bytes", 100, "bytes of each item's value (1 or more)")
	flag.IntVar(&o.Callers, "callers", 8, "concurrent callers of the get and conditional phases (1 or more)")
	flag.IntVar(&o.Ops, "ops", 100_000, "calls of the get and conditional phases each (1 or more)")
	dir := flag.String("dir", "", "data directory (default: a new temporary one, removed at the end)")
	flag.Parse()
	if err := main(name, o, *dir, open); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
}

func main(name string, o Options, dir string, open func(string) (Store, error)) error {
	if dir == "" {
		d, err := os.MkdirTemp("", name+"-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	s, err := open(dir)
	if err != nil {
		return err
	}
	if err := Run(s, o); err != nil {
		s.Close()
		return err
	}
	return s.Close()
}

// Options of Run; every count at least 1.
type Options struct {
	Items, ValueBytes, Callers, Ops int
}

// Key is item i's key: 32 hex characters spread like a 16-byte hash.
func Key(i int) string {
	var b [16]byte
	for k := 0; k < 8; k++ {
		b[k] = byte(uint64(i) >> (8 * k))
	}
	x := uint64(i)*0x9E3779B97F4A7C15 + 1
	for k := 8; k < 16; k++ {
		b[k] = byte(x >> (8 * (k - 8)))
	}
	return hex.EncodeToString(b[:])
}

// Run runs the phases on s and prints their figures.
func Run(s Store, o Options) error {
	if o.Items < 1 || o.ValueBytes < 1 || o.Callers < 1 || o.Ops < 1 {
		return fmt.Errorf("phase: Items, ValueBytes, Callers and Ops must be at least 1: %+v", o)
	}
	value := make([]byte, o.ValueBytes)
	rand.Read(value)

	var done atomic.Int64
	stop := progress("load", &done, int64(o.Items))
	start := time.Now()
	for i := 0; i < o.Items; i++ {
		if err := s.Put(Key(i), value); err != nil {
			stop()
			return fmt.Errorf("load: %w", err)
		}
		done.Add(1)
	}
	err := s.Flush()
	stop()
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}
	rate("load", o.Items, "items", time.Since(start))

	if err := each(o, "get", s.Get); err != nil {
		return err
	}
	if err := each(o, "conditional", func(k string) error { return s.Update(k, value) }); err != nil {
		return err
	}
	runtime.GC()
	fmt.Printf("memory after load: VmRSS %d MiB, Go heap in use after a GC %d MiB\n", RSSMiB(), heapMiB())

	start = time.Now()
	if err := s.Reopen(); err != nil {
		return fmt.Errorf("reopen: %w", err)
	}
	if err := s.Get(Key(o.Items / 2)); err != nil {
		return fmt.Errorf("reopen: first get: %w", err)
	}
	took := time.Since(start)
	runtime.GC()
	fmt.Printf("reopen: first get %.2f s after the open began; VmRSS %d MiB, Go heap in use after a GC %d MiB\n", took.Seconds(), RSSMiB(), heapMiB())

	var read atomic.Int64
	stop = progress("scan", &read, int64(o.Items))
	start = time.Now()
	err = s.Scan(&read)
	stop()
	if err != nil {
		return fmt.Errorf("scan: %w", err)
	}
	rate("scan", int(read.Load()), "items", time.Since(start))
	return nil
}

func rate(name string, n int, unit string, d time.Duration) {
	fmt.Printf("%s: %d %s in %.1f s = %.0f %s/s\n", name, n, unit, d.Seconds(), float64(n)/d.Seconds(), unit)
}

// each runs f on random existing keys, o.Ops times by o.Callers
// goroutines.
func each(o Options, name string, f func(k string) error) error {
	var n atomic.Int64
	stop := progress(name, &n, int64(o.Ops))
	defer stop()
	var wg sync.WaitGroup
	errs := make(chan error, o.Callers)
	start := time.Now()
	for c := 0; c < o.Callers; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n.Add(1) <= int64(o.Ops) {
				r, _ := rand.Int(rand.Reader, big.NewInt(int64(o.Items)))
				if err := f(Key(int(r.Int64()))); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	rate(fmt.Sprintf("%s (%d callers)", name, o.Callers), o.Ops, "calls", time.Since(start))
	return nil
}

// progress prints name's count every 5 s to stderr until stop is called.
func progress(name string, n *atomic.Int64, total int64) (stop func()) {
	done := make(chan struct{})
	var once sync.Once
	go func() {
		t := time.NewTicker(5 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				fmt.Fprintf(os.Stderr, "%s: %d of %d, VmRSS %d MiB\n", name, min(n.Load(), total), total, RSSMiB())
			}
		}
	}()
	return func() { once.Do(func() { close(done) }) }
}

// RSSMiB is the process's resident set in MiB (VmRSS), -1 when unknown.
func RSSMiB() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return -1
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "VmRSS:"); ok {
			var kb int64
			fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), &kb)
			return kb / 1024
		}
	}
	return -1
}

func heapMiB() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse >> 20
}
