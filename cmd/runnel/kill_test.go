package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestKillMidBatchResumesAtCheckpoint builds the runnel binary, runs
// `runnel serve` with a stack whose function logs every record and takes
// 20 ms a batch, puts records through the serve's NATS listener, kills the
// serve process with SIGKILL mid-processing, starts it again on the same
// data directory, and checks that every record was processed (nothing
// skipped) and that the second run resumed from a checkpoint rather than
// from the start.
func TestKillMidBatchResumesAtCheckpoint(t *testing.T) {
	bin := runnelBinary(t)
	dir := t.TempDir()
	stackFile := filepath.Join(dir, "stack.yaml")
	os.WriteFile(stackFile, []byte(`
Streams:
  - {StreamName: s, ShardCount: 2}
Functions:
  - {FunctionName: f, Handler: slow-log}
EventSourceMappings:
  - {EventSourceArn: s, FunctionName: f, StartingPosition: TRIM_HORIZON, BatchSize: 50}
`), 0o644)
	data := filepath.Join(dir, "data")
	const n = 3000
	addr := freeAddr(t)
	url := "nats://" + addr

	var mu sync.Mutex
	seen := [2]map[string]int{{}, {}}
	recordRE := regexp.MustCompile(`msg=record .*data=(r\d+)`)
	start := func(run int) *exec.Cmd {
		return startServe(t, bin, []string{"--data-dir", data, "--log-level", "info", "serve", "-f", stackFile, "--listen", addr}, func(line string) {
			if m := recordRE.FindStringSubmatch(line); m != nil {
				mu.Lock()
				seen[run][m[1]]++
				mu.Unlock()
			}
		})
	}
	count := func(run int) int {
		mu.Lock()
		defer mu.Unlock()
		return len(seen[run])
	}

	first := start(0)
	var lines strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&lines, "r%d\n", i)
	}
	input := filepath.Join(dir, "records.txt")
	os.WriteFile(input, []byte(lines.String()), 0o644)
	put := exec.Command(bin, "--nats-url", url, "put", "--stream", "s", "--partition-key", "k", "--file", input)
	if out, err := put.CombinedOutput(); err != nil {
		t.Fatalf("put: %v\n%s", err, out)
	}
	// Kill once a good share, but not all, was processed.
	deadline := time.Now().Add(60 * time.Second)
	for count(0) < n/4 {
		if time.Now().After(deadline) {
			t.Fatalf("first run processed only %d records", count(0))
		}
		time.Sleep(10 * time.Millisecond)
	}
	first.Process.Signal(syscall.SIGKILL)
	first.Wait()
	killedAt := count(0)
	if killedAt >= n {
		t.Fatalf("the first run finished before the kill (%d records); make the function slower", killedAt)
	}

	second := start(1)
	defer func() { second.Process.Signal(syscall.SIGTERM); second.Wait() }()
	// A bound for a loaded machine (the race detector's CI run took over
	// a minute here under other suites' load): a skipped record never
	// arrives, a slow one does.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for {
		mu.Lock()
		union := 0
		for i := 0; i < n; i++ {
			k := fmt.Sprintf("r%d", i)
			if seen[0][k] > 0 || seen[1][k] > 0 {
				union++
			}
		}
		mu.Unlock()
		if union == n {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("3 minutes after the restart only %d of %d records were processed: records were skipped (or the machine is far too slow)", union, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	again := count(1)
	if again >= n {
		t.Fatalf("the second run processed all %d records again: it did not resume from a checkpoint", again)
	}
	t.Logf("first run processed %d before SIGKILL; second run processed %d (of them redelivered: %d)", killedAt, again, again-(n-killedAt))
}
