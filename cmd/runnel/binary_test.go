package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var built struct {
	once sync.Once
	bin  string
	err  error
	out  []byte
}

// runnelBinary builds the runnel binary once for the package's tests.
func runnelBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "runnel-bin-")
		if err != nil {
			built.err = err
			return
		}
		built.bin = filepath.Join(dir, "runnel")
		built.out, built.err = exec.Command("go", "build", "-o", built.bin, ".").CombinedOutput()
	})
	if built.err != nil {
		t.Fatalf("build: %v\n%s", built.err, built.out)
	}
	return built.bin
}
