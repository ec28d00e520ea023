package table

import (
	"bytes"
	"io"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestStoreFSShowsBufferedBytesToEveryReader: what a file of the index
// store holds in its write buffer is written out before the file is
// sized, read, synced or closed, so Pebble never sees a short file.
func TestStoreFSShowsBufferedBytesToEveryReader(t *testing.T) {
	dir := t.TempDir()
	fs := storeFS{vfs.Default}
	name := filepath.Join(dir, "000001.sst")
	f, err := fs.Create(name, vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("0123456789"), 1000) // far below storeWriteBuffer
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	st, err := f.Stat()
	if err != nil || st.Size() != int64(len(data)) {
		t.Fatalf("Stat after a buffered write: size %v, %v; want %d", st.Size(), err, len(data))
	}
	if _, err := f.Write([]byte("tail")); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 4)
	if _, err := f.ReadAt(got, int64(len(data))); err != nil || string(got) != "tail" {
		t.Fatalf("ReadAt after a buffered write: %q, %v; want \"tail\"", got, err)
	}
	if _, err := f.Write([]byte("more")); err != nil {
		t.Fatal(err)
	}
	if _, err := f.SyncTo(int64(len(data)) + 8); err != nil {
		t.Fatal(err)
	}
	if st, err := vfs.Default.Stat(name); err != nil || st.Size() != int64(len(data))+8 {
		t.Fatalf("the file after SyncTo: size %v, %v; want %d", st.Size(), err, len(data)+8)
	}
	if _, err := f.Write([]byte("last")); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := vfs.Default.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	all, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if want := string(data) + "tailmorelast"; string(all) != want {
		t.Fatalf("the closed file holds %d bytes ending %q; want %d ending \"tailmorelast\"", len(all), all[max(0, len(all)-12):], len(want))
	}
}
