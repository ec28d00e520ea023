package process

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runnel-dev/runnel/function"
)

// A relative WorkDir (the CLI's default --data-dir is ./runnel-data) is
// taken against the current directory: the bootstrap's path must not be
// resolved by exec against the task root it runs in, where it is never
// found.
func TestRelativeWorkDirRuns(t *testing.T) {
	code := echoCode(t)
	t.Chdir(t.TempDir())
	if err := os.Mkdir("functions", 0o755); err != nil {
		t.Fatal(err)
	}
	logs := &logBuffer{}
	f := open(t, Config{Config: function.Config{FunctionName: "rel", Timeout: 5}, Code: code, WorkDir: "functions",
		Logger: slog.New(slog.NewJSONHandler(logs, nil))}, nil)
	if !filepath.IsAbs(f.TaskRoot()) {
		t.Errorf("task root %q is relative", f.TaskRoot())
	}
	out := invokeEcho(t, f, context.Background(), `{"op":"echo"}`)
	if string(out.Event) != `{"op":"echo"}` {
		t.Errorf("event %s", out.Event)
	}
	if wd, _ := os.Getwd(); !strings.HasPrefix(out.Cwd, filepath.Join(wd, "functions")+string(filepath.Separator)) {
		t.Errorf("cwd %q, want below %s/functions", out.Cwd, wd)
	}
}

// A runtime that cannot be started is logged (WARN, with the function and
// the bootstrap's path), not only returned to the invocation.
func TestStartErrorIsLogged(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "bootstrap"), []byte("not a program\n"), 0o755)
	logs := &logBuffer{}
	f := open(t, Config{Config: function.Config{FunctionName: "bad"}, CodeDir: dir, WorkDir: t.TempDir(),
		Logger: slog.New(slog.NewJSONHandler(logs, nil))}, nil)
	if _, err := f.Invoke(context.Background(), []byte(`{}`)); err == nil {
		t.Fatal("invoke of a bad entrypoint succeeded")
	}
	for _, r := range logs.records() {
		if r["level"] == "WARN" && r["function"] == "bad" && r["path"] == filepath.Join(dir, "bootstrap") && r["error"] != nil {
			return
		}
	}
	t.Errorf("no WARN naming the function and its bootstrap; logs:\n%s", logs.buf.String())
}
