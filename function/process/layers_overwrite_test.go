package process

import (
	"archive/zip"
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func zipWithMode(t *testing.T, name, body string, mode os.FileMode) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	h := &zip.FileHeader{Name: name, Method: zip.Deflate}
	h.SetMode(mode)
	w, err := zw.CreateHeader(h)
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte(body))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// A later layer's file replaces an earlier layer's at the same path with
// its own content and mode: Lambda merges the layers' content into the
// execution environment in the order they were added (adding-layers.html),
// so the last one's file is the one in /opt. Before, the file was rewritten in place
// (O_TRUNC), keeping the earlier file's mode: a later layer's 0755 tool
// stayed 0644 (not executable), and a read-only earlier file could not be
// rewritten at all (as a user other than root).
func TestALaterLayerReplacesAnEarlierFileWithItsMode(t *testing.T) {
	dir := t.TempDir()
	if err := unzip(zipWithMode(t, "bin/tool", "one", 0o444), dir); err != nil {
		t.Fatal(err)
	}
	if err := unzip(zipWithMode(t, "bin/tool", "two", 0o755), dir); err != nil {
		t.Fatalf("a later layer over a read-only file: %v", err)
	}
	p := filepath.Join(dir, "bin", "tool")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != "two" || st.Mode().Perm() != 0o755 {
		t.Fatalf("bin/tool holds %q with mode %o, want \"two\" with 0755", b, st.Mode().Perm())
	}
	if err := unzip(zipWithMode(t, "bin/tool", "three", 0o600), dir); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(p); st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %o after a third layer's 0600 file, want 0600", st.Mode().Perm())
	}
}
