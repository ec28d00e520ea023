package table

import (
	"bufio"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// storeWriteBuffer is the buffer in front of each file the index store
// writes (storeFS).
const storeWriteBuffer = 256 << 10

// storeFS is the index store's file system: the operating system's, with
// each file Pebble creates written through a buffer of storeWriteBuffer
// bytes.
//
// Why: Pebble writes an sstable a block at a time (4 KB) through a 4 KB
// bufio.Writer, so every block of every flush and compaction was a write
// system call of its own. In a saturated trades run those calls were
// 6.5 % of the CPU, a call in this VM costing far more than the copy it
// makes (docs/benchmarks/trades-cpu.md, "Session 23"). Larger blocks cut
// the calls too, but made a read past the block cache read and search a
// larger block: 32 KB blocks cost a GetItem of a table larger than its
// caches 3 µs more.
//
// The trap is data still in the buffer: every method that syncs, reads,
// sizes or closes the file writes the buffer out first, so Pebble sees
// the file it wrote. A process killed with bytes in a buffer loses
// nothing Pebble relies on: Pebble syncs a file (which writes its buffer
// out) before its MANIFEST names it, so the file cut short is one it
// never recorded and removes at the next open. The store keeps no
// write-ahead log either way (the change log is its source of truth).
type storeFS struct{ vfs.FS }

func (fs storeFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, category)
	if err != nil {
		return nil, err
	}
	return &bufferedFile{File: f, w: bufio.NewWriterSize(f, storeWriteBuffer)}, nil
}

// bufferedFile is a file created by storeFS.
type bufferedFile struct {
	vfs.File
	w *bufio.Writer
}

func (f *bufferedFile) Write(p []byte) (int, error) { return f.w.Write(p) }

func (f *bufferedFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.w.Flush(); err != nil {
		return 0, err
	}
	return f.File.WriteAt(p, off)
}

func (f *bufferedFile) Read(p []byte) (int, error) {
	if err := f.w.Flush(); err != nil {
		return 0, err
	}
	return f.File.Read(p)
}

func (f *bufferedFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.w.Flush(); err != nil {
		return 0, err
	}
	return f.File.ReadAt(p, off)
}

func (f *bufferedFile) Stat() (vfs.FileInfo, error) {
	if err := f.w.Flush(); err != nil {
		return nil, err
	}
	return f.File.Stat()
}

func (f *bufferedFile) Sync() error {
	if err := f.w.Flush(); err != nil {
		return err
	}
	return f.File.Sync()
}

func (f *bufferedFile) SyncData() error {
	if err := f.w.Flush(); err != nil {
		return err
	}
	return f.File.SyncData()
}

func (f *bufferedFile) SyncTo(length int64) (bool, error) {
	if err := f.w.Flush(); err != nil {
		return false, err
	}
	return f.File.SyncTo(length)
}

func (f *bufferedFile) Close() error {
	err := f.w.Flush()
	if cerr := f.File.Close(); err == nil {
		err = cerr
	}
	return err
}
