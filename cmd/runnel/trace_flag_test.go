package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestTheTraceFlagWritesAnExecutionTrace: `runnel --trace F <command>`
// leaves in F a runtime execution trace of the command (what `go tool
// trace` reads: it starts with "go 1.<minor> trace"), and the command's
// own output is unchanged.
func TestTheTraceFlagWritesAnExecutionTrace(t *testing.T) {
	bin := runnelBinary(t)
	dir := t.TempDir()
	f := filepath.Join(dir, "run.trace")
	out, err := exec.Command(bin, "--trace", f, "--data-dir", filepath.Join(dir, "data"), "streams", "create", "traced").CombinedOutput()
	if err != nil {
		t.Fatalf("runnel --trace: %v\n%s", err, out)
	}
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("go 1.")) || !bytes.Contains(b[:16], []byte(" trace")) || len(b) < 1024 {
		t.Fatalf("%s: %d bytes starting %q; want an execution trace", f, len(b), b[:min(len(b), 16)])
	}
}
