package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestDemoRefusesArgumentsAndOutOfRangeFlags: `runnel demo` and its
// subcommands take no arguments, so a typo'd subcommand is an unknown
// command (it used to run the flight demo); --failure-rate refuses NaN
// and ±Inf (flagAtMost let NaN through: every comparison with NaN is
// false) and values above 0.3, where a flaky record can spend its
// Retry-DLQ attempts on injected failures and the run cannot reconcile
// (1 was accepted and failed reconciliation every time); --nodes is
// 0..9; each error names the flag and its range. The README's flags
// (demo --records, -q) still parse.
func TestDemoRefusesArgumentsAndOutOfRangeFlags(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	run := func(args ...string) error {
		t.Helper()
		root := newRoot(&globals{})
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&out)
		root.SetArgs(append([]string{"--data-dir", dir, "--log-level", "error"}, args...))
		return root.ExecuteContext(context.Background())
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"demo", "tradez", "--records", "100", "-q"}, `unknown command "tradez" for "runnel demo"`},
		{[]string{"demo", "trades", "extra", "--messages", "100", "--quiet"}, `unknown command "extra" for "runnel demo trades"`},
		{[]string{"demo", "fanout", "extra"}, `unknown command "extra" for "runnel demo fanout"`},
		{[]string{"demo", "--failure-rate", "NaN", "--records", "100", "-q"}, `"--failure-rate" flag: out of range: must be a number at most 0.3`},
		{[]string{"demo", "--failure-rate", "+Inf", "--records", "100", "-q"}, `"--failure-rate" flag: out of range`},
		{[]string{"demo", "--failure-rate", "1", "--records", "100", "-q"}, `cannot reconcile`},
		{[]string{"demo", "--nodes", "10", "--records", "100", "-q"}, `"--nodes" flag: out of range: must be between 0 and 9`},
		{[]string{"demo", "trades", "--state-failure", "NaN", "--messages", "100"}, `"--state-failure" flag: out of range`},
		{[]string{"demo", "--kill-node-at", "NaN", "--records", "100", "-q"}, `"--kill-node-at" flag: out of range`},
	} {
		err := run(c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("runnel %s: err %v, want %q", strings.Join(c.args, " "), err, c.want)
		}
	}
	if err := run("demo", "--records", "2000", "--failure-rate", "0.3", "-q"); err != nil {
		t.Fatalf("runnel demo --records 2000 --failure-rate 0.3: %v", err)
	}
}
