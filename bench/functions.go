package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/function/process"
)

// FunctionsConfig configures RunFunctions. The zero value runs the
// defaults.
type FunctionsConfig struct {
	// Cold starts measured per runtime, each on a new function (and, for
	// the direct baseline, a new interpreter process). Default 10.
	Cold int
	// Warm invocations measured per runtime on one environment after a
	// first, untimed one. Default 2000.
	Warm int
	// WorkDir holds the functions' code and environments. Default
	// os.TempDir().
	WorkDir string
	// Progress, when set, receives one line per runtime as it finishes.
	Progress io.Writer
}

// FunctionRow is one runtime's measurement: runnel's invocation of a
// handler that does nothing, and the same handler run directly.
type FunctionRow struct {
	Name, Runtime string
	// Cold: a new function's first invocation through runnel, and a new
	// interpreter process that imports the handler, calls it once and
	// exits (Go: the handler's first direct call), in milliseconds.
	ColdMs, DirectColdMs float64
	// Warm: one invocation of a started environment through runnel, and
	// one call of the handler in a loop inside the interpreter, in
	// microseconds.
	WarmUs, DirectWarmUs float64
	// Skipped says why the runtime was not measured (its interpreter is
	// missing).
	Skipped string
}

// FunctionsReport is the result of RunFunctions.
type FunctionsReport struct {
	Machine    string
	Cold, Warm int
	Rows       []FunctionRow
}

// The handlers that do nothing, in each runtime, and the deployment
// package holding them.
const (
	pyNoop   = "def handler(event, context):\n    return None\n"
	nodeNoop = "exports.handler = async (event, context) => null;\n"
)

// The direct baselines: the interpreter imports the handler from the code
// directory (argv[1]), calls it once ("cold", argv[2] = 0), or calls it
// once untimed and then argv[2] times, printing the nanoseconds of those.
const (
	pyDirect = `import sys, time
sys.path.insert(0, sys.argv[1])
import app
n = int(sys.argv[2])
app.handler({}, None)
if n:
    t = time.perf_counter_ns()
    for _ in range(n):
        app.handler({}, None)
    print(time.perf_counter_ns() - t)
`
	nodeDirect = `const h = require(require("path").join(process.argv[1], "index.js")).handler;
(async () => {
  const n = Number(process.argv[2]);
  await h({}, {});
  if (n) {
    const t = process.hrtime.bigint();
    for (let i = 0; i < n; i++) await h({}, {});
    console.log(String(process.hrtime.bigint() - t));
  }
})();
`
)

// funcRuntime is one runtime of RunFunctions.
type funcRuntime struct {
	name, runtime, handler, interpreter, flag, direct string
	files                                             map[string]string
}

var funcRuntimes = []funcRuntime{
	{name: "go (in-process)"},
	{name: "python", runtime: "python3.12", handler: "app.handler", interpreter: "python3", flag: "-c", direct: pyDirect, files: map[string]string{"app.py": pyNoop}},
	{name: "node.js", runtime: "nodejs20.x", handler: "index.handler", interpreter: "node", flag: "-e", direct: nodeDirect, files: map[string]string{"index.js": nodeNoop}},
}

// goNoop is the Go handler that does nothing.
func goNoop(context.Context, json.RawMessage) (json.RawMessage, error) { return nil, nil }

// RunFunctions measures, for a Go (in-process), a Python and a Node.js
// function whose handler does nothing, the cold start and the warm
// invocation through runnel's function layer (package function invoking
// the handler; for Python and Node.js the managed runtime's environment,
// its runtime client and the Runtime API), against the same handler run
// directly by its interpreter in the same run. A runtime whose
// interpreter is missing is reported as skipped.
func RunFunctions(ctx context.Context, cfg FunctionsConfig) (*FunctionsReport, error) {
	orDefault(&cfg.Cold, 10)
	orDefault(&cfg.Warm, 2000)
	if cfg.WorkDir == "" {
		cfg.WorkDir = os.TempDir()
	}
	dir, err := os.MkdirTemp(cfg.WorkDir, "runnel-bench-functions-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	rep := &FunctionsReport{Machine: Machine(), Cold: cfg.Cold, Warm: cfg.Warm}
	for i, rt := range funcRuntimes {
		row, err := rt.measure(ctx, cfg, filepath.Join(dir, strconv.Itoa(i)))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", rt.name, err)
		}
		rep.Rows = append(rep.Rows, row)
		if cfg.Progress != nil {
			fmt.Fprintf(cfg.Progress, "%s: cold %.1f ms (direct %.1f ms), warm %.1f µs (direct %.2f µs) %s\n",
				row.Name, row.ColdMs, row.DirectColdMs, row.WarmUs, row.DirectWarmUs, row.Skipped)
		}
	}
	return rep, nil
}

func (rt funcRuntime) measure(ctx context.Context, cfg FunctionsConfig, dir string) (FunctionRow, error) {
	row := FunctionRow{Name: rt.name, Runtime: rt.runtime}
	if row.Runtime == "" {
		row.Runtime = "in-process"
	}
	var interp string
	if rt.interpreter != "" {
		var err error
		if interp, err = exec.LookPath(rt.interpreter); err != nil {
			row.Skipped = rt.interpreter + " is not installed"
			return row, nil
		}
	}
	code := filepath.Join(dir, "code")
	if err := os.MkdirAll(code, 0o755); err != nil {
		return row, err
	}
	for name, body := range rt.files {
		if err := os.WriteFile(filepath.Join(code, name), []byte(body), 0o644); err != nil {
			return row, err
		}
	}
	// Cold: a new function's first invocation, Cold times.
	var cold time.Duration
	for i := range cfg.Cold {
		start := time.Now()
		fn, closeFn, err := rt.open(code, filepath.Join(dir, "env"+strconv.Itoa(i)))
		if err != nil {
			return row, err
		}
		err = invokeOK(ctx, fn)
		cold += time.Since(start)
		closeFn()
		if err != nil {
			return row, err
		}
	}
	row.ColdMs = ms(cold) / float64(cfg.Cold)
	// Warm: Warm invocations of one started environment.
	fn, closeFn, err := rt.open(code, filepath.Join(dir, "warm"))
	if err != nil {
		return row, err
	}
	defer closeFn()
	if err := invokeOK(ctx, fn); err != nil {
		return row, err
	}
	start := time.Now()
	for range cfg.Warm {
		if err := invokeOK(ctx, fn); err != nil {
			return row, err
		}
	}
	row.WarmUs = us(time.Since(start)) / float64(cfg.Warm)
	return row, rt.measureDirect(ctx, cfg, interp, code, &row)
}

// measureDirect runs the handler without runnel: Go's called in this
// process, the others by their interpreter.
func (rt funcRuntime) measureDirect(ctx context.Context, cfg FunctionsConfig, interp, code string, row *FunctionRow) error {
	if interp == "" {
		in := json.RawMessage(`{}`)
		start := time.Now()
		goNoop(ctx, in)
		row.DirectColdMs = ms(time.Since(start))
		start = time.Now()
		for range cfg.Warm {
			goNoop(ctx, in)
		}
		row.DirectWarmUs = us(time.Since(start)) / float64(cfg.Warm)
		return nil
	}
	var cold time.Duration
	for range cfg.Cold {
		start := time.Now()
		if out, err := exec.CommandContext(ctx, interp, rt.flag, rt.direct, code, "0").CombinedOutput(); err != nil {
			return fmt.Errorf("%s directly: %v: %s", rt.interpreter, err, out)
		}
		cold += time.Since(start)
	}
	row.DirectColdMs = ms(cold) / float64(cfg.Cold)
	out, err := exec.CommandContext(ctx, interp, rt.flag, rt.direct, code, strconv.Itoa(cfg.Warm)).Output()
	if err != nil {
		return fmt.Errorf("%s directly: %v", rt.interpreter, err)
	}
	ns, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
	if err != nil {
		return fmt.Errorf("%s directly printed %q", rt.interpreter, out)
	}
	row.DirectWarmUs = ns / 1e3 / float64(cfg.Warm)
	return nil
}

// open builds the runtime's function as runnel runs it: package
// function's Function around the Go handler, or around the managed
// runtime's process function (its environments under work).
func (rt funcRuntime) open(code, work string) (*function.Function, func(), error) {
	fc := function.Config{FunctionName: "noop", Handler: rt.handler, Timeout: 30, MemorySize: 128}
	discard := slog.New(slog.NewTextHandler(io.Discard, nil))
	if rt.runtime == "" {
		fn, err := function.New(fc, goNoop, nil, discard)
		return fn, func() {}, err
	}
	if err := os.MkdirAll(work, 0o755); err != nil {
		return nil, nil, err
	}
	pf, err := process.Handler(process.Config{Config: fc, CodeDir: code, WorkDir: work, Runtime: rt.runtime, Logger: discard})
	if err != nil {
		return nil, nil, err
	}
	fn, err := function.New(fc, pf, nil, discard)
	if err != nil {
		pf.Close()
		return nil, nil, err
	}
	return fn, func() { pf.Close() }, nil
}

// invokeOK invokes fn with {} and fails on any error.
func invokeOK(ctx context.Context, fn *function.Function) error {
	res, err := fn.Invoke(ctx, []byte(`{}`))
	if err != nil {
		return err
	}
	if res.FunctionError != "" {
		return fmt.Errorf("function error: %s", res.Payload)
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// Markdown is the report as docs/benchmarks/functions.md shows it.
func (r *FunctionsReport) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Machine: %s\n\n", r.Machine)
	fmt.Fprintf(&b, "A handler that does nothing, invoked with {}: cold = a new function's first invocation (mean of %d), "+
		"warm = one invocation of a started environment (mean of %d); direct = the same handler run by its interpreter "+
		"(cold: a new process that imports it, calls it once and exits; warm: a loop in one process; Go: called in this process).\n\n", r.Cold, r.Warm)
	b.WriteString("| function | runtime | cold ms | direct cold ms | cold overhead ms | warm µs | direct warm µs | warm overhead µs |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|\n")
	for _, row := range r.Rows {
		if row.Skipped != "" {
			fmt.Fprintf(&b, "| %s | %s | not measured: %s | | | | | |\n", row.Name, row.Runtime, row.Skipped)
			continue
		}
		fmt.Fprintf(&b, "| %s | %s | %.2f | %.2f | %.2f | %.2f | %.3f | %.2f |\n", row.Name, row.Runtime,
			row.ColdMs, row.DirectColdMs, row.ColdMs-row.DirectColdMs, row.WarmUs, row.DirectWarmUs, row.WarmUs-row.DirectWarmUs)
	}
	return b.String()
}
