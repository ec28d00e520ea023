package table

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Filling a table's cleared keys from a snapshot object (storeFromObject)
// by Pebble's ingestion: the entries, which a store holder's object lists
// in the store's key order, are written straight into sstable files that
// Pebble then adds to its tree whole. Written through batches instead,
// every entry went through a memtable's skiplist, a flush and compactions:
// at 10 million items the open spent 7.3 to 9.3 s there
// (docs/benchmarks/handover.md).

// ingestDirPattern names the directories, inside the store's, where the
// files to ingest are written (Pebble links them into its own directory,
// so they must be on the same file system): one a fill, removed after it;
// the store's open removes those a crash left (removeIngestDirs).
const ingestDirPattern = "ingest-*"

// ingestFileBytes is the size at which a file to ingest is closed and the
// next begun: Pebble's files at the tree's bottom level are of this order.
const ingestFileBytes = 64 << 20

// storeIngest writes keys in strictly increasing order into sstable files
// for one ingestion (ingest).
type storeIngest struct {
	st    *store
	dir   string
	files []string
	w     *sstable.Writer
}

// newIngest starts an ingestion; its files go into the store at ingest.
func (st *store) newIngest() (*storeIngest, error) {
	dir, err := os.MkdirTemp(st.dir, ingestDirPattern)
	if err != nil {
		return nil, err
	}
	return &storeIngest{st: st, dir: dir}, nil
}

// add writes k and v; k must follow the last key added (Pebble's writer
// fails otherwise).
func (in *storeIngest) add(k, v []byte) error {
	if in.w != nil && in.w.Raw().EstimatedSize() >= ingestFileBytes {
		if err := in.closeFile(); err != nil {
			return err
		}
	}
	if in.w == nil {
		if err := in.openFile(); err != nil {
			return err
		}
	}
	return in.w.Set(k, v)
}

func (in *storeIngest) openFile() error {
	path := filepath.Join(in.dir, fmt.Sprintf("%06d.sst", len(in.files)))
	// Through the store's buffered file system (storeFS): Pebble's
	// writer writes a 4 KB block at a time.
	f, err := in.st.opts.FS.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	in.files = append(in.files, path)
	st := in.st
	in.w = sstable.NewWriter(objstorageprovider.NewFileWritable(f),
		st.opts.MakeWriterOptions(0, st.db.FormatMajorVersion().MaxTableFormat()))
	return nil
}

func (in *storeIngest) closeFile() error {
	if in.w == nil {
		return nil
	}
	err := in.w.Close()
	in.w = nil
	return err
}

// ingest adds the files written to the store (Pebble flushes a memtable
// that overlaps them first, so they sit above a clear's range deletion)
// and removes the directory. An ingestion with no key written does
// nothing.
func (in *storeIngest) ingest(ctx context.Context) error {
	defer os.RemoveAll(in.dir)
	if err := in.closeFile(); err != nil {
		return err
	}
	if len(in.files) == 0 {
		return nil
	}
	in.st.mu.RLock()
	defer in.st.mu.RUnlock()
	if in.st.closed {
		return errStoreClosed
	}
	return in.st.db.Ingest(ctx, in.files)
}

// removeIngestDirs removes the ingestion directories in the store's
// directory dir (at its open: files a crash left mid-fill).
func removeIngestDirs(dir string) error {
	left, err := filepath.Glob(filepath.Join(dir, ingestDirPattern))
	if err != nil {
		return err
	}
	for _, d := range left {
		if err := os.RemoveAll(d); err != nil {
			return err
		}
	}
	return nil
}

// abort removes the files written (a failed fill).
func (in *storeIngest) abort() {
	_ = in.closeFile()
	_ = os.RemoveAll(in.dir)
}

// diskFill fills a table's cleared keys in the store with entries (a
// snapshot object's): by ingestion while they come in the store's key
// order, as a store holder's object lists them, and through batches from
// the first that does not (an object of the heap's indexes may not). The
// caller's goroutine decodes and encodes the entries, another writes the
// files. The key filter is built after the fill, beside the table's work
// (buildFilter: until then every lookup reads the store): added during the
// fill, its keys took more CPU than the files' writing (a bloom filter's
// random bit sets, about 200 ns a key), and the open of 10 million items
// 4.2 s.
type diskFill struct {
	x            *diskIndex
	n            int64
	in           *storeIngest // nil once the entries left the key order
	last         []byte
	chunk        []fillKV
	buf          []byte // the chunk's keys and values
	toWriter     chan []fillKV
	written      chan error
	b            *diskBatch
	count, bytes int64
}

type fillKV struct{ k, v []byte }

// fillChunkKeys is how many entries go to the writer at a time, and
// fillEntryBytes the room a chunk's buffer starts with for each (a
// hash-only table's key and value take about 45 bytes).
const (
	fillChunkKeys  = 4096
	fillEntryBytes = 48
)

// newFill starts a fill of x with about n entries; the caller has
// cleared x's keys.
func (x *diskIndex) newFill(n int64) (*diskFill, error) {
	in, err := x.st.newIngest()
	if err != nil {
		return nil, err
	}
	d := &diskFill{x: x, n: n, in: in, toWriter: make(chan []fillKV, 4), written: make(chan error, 1),
		chunk: make([]fillKV, 0, fillChunkKeys), buf: make([]byte, 0, fillChunkKeys*fillEntryBytes)}
	go func() {
		var err error
		for c := range d.toWriter {
			for _, kv := range c {
				if err == nil {
					err = in.add(kv.k, kv.v)
				}
			}
		}
		d.written <- err
	}()
	return d, nil
}

// add writes e (without an image).
func (d *diskFill) add(e entry) error {
	if d.in != nil {
		// The chunk's keys and values are slices of one buffer (the
		// writer copies them into its blocks). With two allocations an
		// entry, a 10M open took 3.0 s of CPU instead of 2.4, and 1.8–2.1
		// s instead of 1.6–1.8 (docs/benchmarks/handover.md, "Session
		// 20"). A buffer that grows moves on to a new array; the slices
		// taken stay valid in the old one.
		n := len(d.buf)
		d.buf = d.x.appendKey(d.buf, e.h, e.rk)
		k := d.buf[n:len(d.buf):len(d.buf)]
		if d.last == nil || bytes.Compare(k, d.last) > 0 {
			d.last = k
			d.count++
			d.bytes += int64(e.size)
			n = len(d.buf)
			d.buf = appendSlot(d.buf, e, nil)
			if d.chunk = append(d.chunk, fillKV{k, d.buf[n:len(d.buf):len(d.buf)]}); len(d.chunk) == fillChunkKeys {
				d.send()
			}
			return nil
		}
		if err := d.ingest(); err != nil {
			return err
		}
		d.x.st.log.Info("table index store: the snapshot object's entries are not in key order; the rest is written through batches", "entries ingested", d.count)
	}
	if d.b == nil {
		d.b = d.x.newBatch()
	}
	d.b.set(e, entry{}, false, nil)
	if len(d.b.ops) >= snapBlockItems {
		d.b.commit()
		d.b = nil
		return d.x.Err()
	}
	return nil
}

// send hands the chunk to the writer.
func (d *diskFill) send() {
	if len(d.chunk) > 0 {
		d.toWriter <- d.chunk
		d.chunk = make([]fillKV, 0, fillChunkKeys)
		d.buf = make([]byte, 0, fillChunkKeys*fillEntryBytes)
	}
}

// ingest waits for the writer, ingests its files, sets the table's count
// and starts the key filter's build.
func (d *diskFill) ingest() error {
	in := d.in
	d.in = nil
	d.send()
	close(d.toWriter)
	if err := <-d.written; err != nil {
		in.abort()
		return err
	}
	if err := in.ingest(context.Background()); err != nil {
		return err
	}
	x := d.x
	if err := x.commitOps(nil, encodeCount(d.count, d.bytes)); err != nil {
		return err
	}
	x.count, x.bytes = d.count, d.bytes
	if d.count > 0 {
		x.filter.rebuild(d.n)
		go x.buildFilter()
	}
	return nil
}

// finish writes what is left; err (the caller's failure) aborts the fill.
func (d *diskFill) finish(err error) error {
	if d.in != nil {
		if err == nil {
			return d.ingest()
		}
		close(d.toWriter)
		<-d.written
		d.in.abort()
		return err
	}
	if err == nil && d.b != nil {
		d.b.commit()
		err = d.x.Err()
	}
	return err
}
