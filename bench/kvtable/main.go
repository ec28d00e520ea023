// Command kvtable measures one candidate design of issue 12: a table's
// items kept as a JetStream key-value bucket (a subject per item key),
// the engine embedded and on file storage, as runnel runs it.
//
//	go run ./bench/kvtable --items 2000000
//
// It prints, for --items items of --value-bytes bytes (keys are 32 hex
// characters, as a 16-byte key hash would be):
//   - load: items/s of an unconditional put of every item (async
//     publishes, up to 4,096 in flight), the way a bulk writer would;
//   - conditional: updates/s of a read-modify-write (Get, then Update on
//     the revision read: the server's expected-last-subject-sequence
//     check) by --callers goroutines on random existing keys, the shape of
//     UpdateItem with a condition; and gets/s of Get alone as its baseline;
//   - memory: the process's resident set (VmRSS, the embedded server
//     included) and the Go heap in use, after the load;
//   - reopen: the engine stopped cleanly and opened again: seconds until
//     the first Get of an existing key answers, and the resident set then;
//   - scan: items/s of one ordered consumer reading the bucket's stream
//     from its start without acks (history 1: the latest image of each
//     item only).
//
// Progress goes to stderr every 5 s; the figures go to stdout, one line
// each. Nothing here is used by runnel: it is the measurement behind the
// choice in docs/design.md ("Tables: where the items live").
package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math/big"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/engine"
)

func main() {
	items := flag.Int("items", 1_000_000, "items to write (1 or more)")
	valueBytes := flag.Int("value-bytes", 100, "bytes of each item's value (1 to 65536)")
	callers := flag.Int("callers", 8, "concurrent callers of the conditional and get phases (1 to 256)")
	ops := flag.Int("ops", 100_000, "operations of the conditional and get phases each (1 or more)")
	dir := flag.String("dir", "", "data directory (default: a new temporary one, removed at the end)")
	flag.Parse()
	if *items < 1 || *valueBytes < 1 || *valueBytes > 65536 || *callers < 1 || *callers > 256 || *ops < 1 {
		fmt.Fprintln(os.Stderr, "kvtable: --items >= 1, --value-bytes 1..65536, --callers 1..256, --ops >= 1")
		os.Exit(2)
	}
	if err := run(*items, *valueBytes, *callers, *ops, *dir); err != nil {
		fmt.Fprintln(os.Stderr, "kvtable:", err)
		os.Exit(1)
	}
}

const bucket = "kvtable"

func key(i int) string {
	var b [16]byte
	for k := 0; k < 8; k++ {
		b[k] = byte(uint64(i) >> (8 * k))
	}
	// Spread like a hash: the index's bytes mixed into the rest.
	x := uint64(i)*0x9E3779B97F4A7C15 + 1
	for k := 8; k < 16; k++ {
		b[k] = byte(x >> (8 * (k - 8)))
	}
	return hex.EncodeToString(b[:])
}

func open(ctx context.Context, dir string) (*engine.Engine, jetstream.KeyValue, error) {
	e, err := engine.Open(ctx, engine.Config{DataDir: dir, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, nil, err
	}
	kv, err := e.EnsureBucket(ctx, jetstream.KeyValueConfig{Bucket: bucket, History: 1, Storage: jetstream.FileStorage})
	if err != nil {
		e.Close()
		return nil, nil, err
	}
	return e, kv, nil
}

func run(items, valueBytes, callers, ops int, dir string) error {
	ctx := context.Background()
	if dir == "" {
		d, err := os.MkdirTemp("", "kvtable-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	e, kv, err := open(ctx, dir)
	if err != nil {
		return err
	}
	value := make([]byte, valueBytes)
	rand.Read(value)

	// Load.
	var done atomic.Int64
	stop := progress("load", &done, int64(items))
	start := time.Now()
	js := e.JS
	for i := 0; i < items; i++ {
		_, err := js.PublishAsync("$KV."+bucket+"."+key(i), value)
		for errors.Is(err, jetstream.ErrTooManyStalledMsgs) {
			// The server is behind: let the acks in flight come back.
			<-js.PublishAsyncComplete()
			_, err = js.PublishAsync("$KV."+bucket+"."+key(i), value)
		}
		if err != nil {
			stop()
			return fmt.Errorf("load: %w", err)
		}
		done.Add(1)
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(5 * time.Minute):
		stop()
		return fmt.Errorf("load: acks not complete after 5 minutes")
	}
	stop()
	fmt.Printf("load: %d items in %.1f s = %.0f items/s\n", items, time.Since(start).Seconds(), float64(items)/time.Since(start).Seconds())

	// Conditional read-modify-write, and gets alone.
	each := func(name string, f func(k string) error) error {
		var n atomic.Int64
		stop := progress(name, &n, int64(ops))
		defer stop()
		var wg sync.WaitGroup
		errs := make(chan error, callers)
		start := time.Now()
		for c := 0; c < callers; c++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for n.Add(1) <= int64(ops) {
					r, _ := rand.Int(rand.Reader, big.NewInt(int64(items)))
					if err := f(key(int(r.Int64()))); err != nil {
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
		fmt.Printf("%s: %d by %d callers in %.1f s = %.0f /s\n", name, ops, callers, time.Since(start).Seconds(), float64(ops)/time.Since(start).Seconds())
		return nil
	}
	if err := each("get", func(k string) error { _, err := kv.Get(ctx, k); return err }); err != nil {
		return err
	}
	if err := each("conditional", func(k string) error {
		for {
			en, err := kv.Get(ctx, k)
			if err != nil {
				return err
			}
			if _, err = kv.Update(ctx, k, value, en.Revision()); err == nil {
				return nil
			}
			// Another caller updated the key since the Get: read again.
			var apiErr *jetstream.APIError
			if !errors.Is(err, jetstream.ErrKeyExists) && !(errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence) {
				return err
			}
		}
	}); err != nil {
		return err
	}
	runtime.GC()
	fmt.Printf("memory after load: VmRSS %d MiB, Go heap in use after a GC %d MiB\n", rssMiB(), heapMiB())

	// Reopen.
	e.Close()
	runtime.GC()
	start = time.Now()
	e, kv, err = open(ctx, dir)
	if err != nil {
		return fmt.Errorf("reopen: %w", err)
	}
	defer e.Close()
	if _, err := kv.Get(ctx, key(items/2)); err != nil {
		return fmt.Errorf("reopen: first get: %w", err)
	}
	took := time.Since(start)
	runtime.GC() // the heap that stays: the server's state of the bucket
	fmt.Printf("reopen: first get %.2f s after the open began; VmRSS %d MiB, Go heap in use after a GC %d MiB\n", took.Seconds(), rssMiB(), heapMiB())

	// Scan.
	var read atomic.Int64
	stop = progress("scan", &read, int64(items))
	start = time.Now()
	oc, err := e.JS.OrderedConsumer(ctx, "KV_"+bucket, jetstream.OrderedConsumerConfig{})
	if err != nil {
		stop()
		return fmt.Errorf("scan: %w", err)
	}
	cc, err := oc.Consume(func(m jetstream.Msg) { read.Add(1) })
	if err != nil {
		stop()
		return fmt.Errorf("scan: %w", err)
	}
	for read.Load() < int64(items) && time.Since(start) < 10*time.Minute {
		time.Sleep(20 * time.Millisecond)
	}
	cc.Stop()
	stop()
	fmt.Printf("scan: %d items in %.1f s = %.0f items/s\n", read.Load(), time.Since(start).Seconds(), float64(read.Load())/time.Since(start).Seconds())
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
				fmt.Fprintf(os.Stderr, "%s: %d of %d, VmRSS %d MiB\n", name, min(n.Load(), total), total, rssMiB())
			}
		}
	}()
	return func() { once.Do(func() { close(done) }) }
}

func rssMiB() int64 {
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
