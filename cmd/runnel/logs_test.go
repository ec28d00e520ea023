package main

import (
	"bytes"
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/function/logs"
	"github.com/runnel-dev/runnel/internal/testenv"
)

// runnel logs prints an in-process function's START, END and REPORT lines
// as aws logs tail does; --filter-pattern keeps the matching ones.
func TestLogsCommandPrintsAFunctionsLog(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "data")
	rn := testenv.Start(t, testenv.Options{Dir: dir})
	store, err := logs.Open(ctx, rn.Engine, nil)
	if err != nil {
		t.Fatal(err)
	}
	rn.Functions.SetLogSink(store)
	function.Register("logscmd-noop", func(context.Context, []byte) error { return nil })
	f, err := rn.Functions.CreateFunction(ctx, function.Config{FunctionName: "noop", Handler: "logscmd-noop"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := f.Invoke(ctx, []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	rn.Close()

	run := func(args ...string) (string, error) {
		g := &globals{dataDir: dir, logLevel: "error"}
		cmd := logsCmd(g)
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetArgs(args)
		err := cmd.ExecuteContext(ctx)
		return out.String(), err
	}
	out, err := run("noop")
	line := `\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00 \d{4}/\d\d/\d\d/\[\$LATEST\][0-9a-f]{32} `
	want := regexp.MustCompile(`^` + line + `START RequestId: ` + res.RequestID + ` Version: \$LATEST\n` + line + `END RequestId: ` + res.RequestID + `\n` + line + `REPORT RequestId: ` + res.RequestID + `\tDuration: .*\n$`)
	if err != nil || !want.MatchString(out) {
		t.Fatalf("runnel logs noop: %v\n%s", err, out)
	}
	if out, _ := run("noop", "--filter-pattern", "REPORT", "--format", "short"); strings.Count(out, "\n") != 1 || !strings.Contains(out, " REPORT RequestId") {
		t.Fatalf("runnel logs --filter-pattern REPORT --format short:\n%s", out)
	}
	if _, err := run("nosuch"); err == nil || !strings.Contains(err.Error(), "/aws/lambda/nosuch does not exist") {
		t.Fatalf("runnel logs nosuch: %v", err)
	}
}

// --follow prints the events stored after it started, polling on the
// engine's clock (a fake one here: no sleep), and only those of --since.
func TestLogsFollowPrintsNewEvents(t *testing.T) {
	clock := clockwork.NewFakeClockAt(time.Now())
	rn := testenv.Start(t, testenv.Options{Clock: clock})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	store, err := logs.Open(ctx, rn.Engine, nil)
	if err != nil {
		t.Fatal(err)
	}
	group := function.LogGroup("f")
	store.Put(ctx, group, "s1", "old line")
	clock.Advance(time.Hour)
	store.Put(ctx, group, "s1", "recent line")
	var out lockedBuffer
	done := make(chan error, 1)
	go func() {
		done <- tailLogs(ctx, store, clock, group, tailOptions{Since: 10 * time.Minute, Follow: true, Format: "short", Interval: time.Second}, &out)
	}()
	testenv.Eventually(t, 5*time.Second, "the recent line", func() bool { return strings.Contains(out.String(), "recent line") })
	store.Put(ctx, group, "s2", "new line")
	clock.BlockUntilContext(ctx, 1)
	clock.Advance(time.Second)
	testenv.Eventually(t, 5*time.Second, "the new line", func() bool { return strings.Contains(out.String(), "new line") })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := out.String(); strings.Contains(got, "old line") || strings.Count(got, "\n") != 2 {
		t.Fatalf("followed output:\n%s", got)
	}
}
