package bench

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/runnel-dev/runnel/internal/testenv"
)

// TestRunFunctionsSmall runs the functions benchmark on one cold start
// and a few warm invocations: every runtime is measured through runnel
// and directly (a time above zero for each), and the report has a row
// for each.
func TestRunFunctionsSmall(t *testing.T) {
	for _, tool := range []string{"python3", "node"} {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.MissingTool(t, "%s is not installed: the functions benchmark runs a handler on it", tool)
		}
	}
	rep, err := RunFunctions(t.Context(), FunctionsConfig{Cold: 1, Warm: 5, WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Rows) != len(funcRuntimes) {
		t.Fatalf("rows %+v", rep.Rows)
	}
	md := rep.Markdown()
	for _, row := range rep.Rows {
		// The Go handler's calls may take less than the clock shows: its
		// times need only not be negative.
		measured := func(v float64) bool { return v > 0 || (v == 0 && row.Runtime == "in-process") }
		if row.Skipped != "" || !measured(row.ColdMs) || !measured(row.WarmUs) || !measured(row.DirectColdMs) || !measured(row.DirectWarmUs) {
			t.Errorf("row %+v: every time must be measured", row)
		}
		if !strings.Contains(md, "| "+row.Name+" | "+row.Runtime+" | ") {
			t.Errorf("no row for %s in\n%s", row.Name, md)
		}
	}
	t.Logf("\n%s", md)
}
