package main

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
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

// startServe runs the runnel binary bin with args (a `serve` command line)
// and returns once it prints "serving" (at most 60 s); onStderr, if not
// nil, gets each line of its standard error.
func startServe(t *testing.T, bin string, args []string, onStderr func(line string)) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin, args...)
	stdout, _ := cmd.StdoutPipe()
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "serving") {
				close(ready)
			}
		}
	}()
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if onStderr != nil {
				onStderr(sc.Text())
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatal("serve did not start")
	}
	return cmd
}

// freeAddr returns a local TCP address ("127.0.0.1:port") that was free a
// moment ago, for a serve process to listen on.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
