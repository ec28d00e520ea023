package process

// Managed runtimes without containers: a python3.x or nodejs* function runs
// on the host's interpreter behind a runtime client shipped in this
// package (runtimes/bootstrap.py, runtimes/bootstrap.cjs), which does what
// AWS's runtime interface clients do: load the handler (init errors as
// AWS names them), then loop on the Runtime API. The interpreter is just
// another bootstrap: pools, timeouts and crash replacement are the
// process function's.

import (
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/runnel-dev/runnel/awserr"
)

var (
	//go:embed runtimes/bootstrap.py
	pythonClient []byte
	//go:embed runtimes/bootstrap.cjs
	nodeClient []byte
)

// flushMark is the line a managed runtime's client writes to stdout and
// stderr once an invocation's handler has returned, before it posts the
// outcome: the environment waits for both before writing END, so the
// invocation's output is in its log before END.
const flushMark = "\x1erunnel-flush\x1e"

// interpreter is the host program a managed runtime runs on.
type interpreter struct {
	runtime string // the function's Runtime: python3.12, nodejs20.x
	path    string // the executable's absolute path
	version string // its version: 3.11.7, 20.20.2
	client  string // the runtime client's file name under the work directory
	code    []byte // the runtime client
	// warning is set when the interpreter's version differs from the
	// runtime's (a different minor version of Python 3, a different
	// Node.js major version): the function runs, and its log says so.
	warning string
}

// IsManagedRuntime reports whether runtime is one process.Handler runs on
// the host's interpreter (python3.x, nodejs*).
func IsManagedRuntime(runtime string) bool {
	return strings.HasPrefix(runtime, "python3.") || strings.HasPrefix(runtime, "nodejs")
}

// findInterpreter looks for the interpreter of runtime on PATH: for
// python3.12, python3.12 then python3; for nodejs20.x, node. Missing, or
// of another major version, is an InvalidParameterValue error that says
// so; another minor version of Python 3 (or major of Node.js) is accepted
// with a warning.
func findInterpreter(runtime string) (*interpreter, error) {
	var want string
	var candidates, probe []string
	in := &interpreter{runtime: runtime}
	switch {
	case strings.HasPrefix(runtime, "python3."):
		want = strings.TrimPrefix(runtime, "python")
		candidates = []string{"python" + want, "python3"}
		probe = []string{"-c", "import sys; print(sys.executable); print('%d.%d.%d' % sys.version_info[:3])"}
		in.client, in.code = "bootstrap.py", pythonClient
	case strings.HasPrefix(runtime, "nodejs"):
		want = strings.TrimSuffix(strings.TrimPrefix(runtime, "nodejs"), ".x")
		candidates = []string{"node", "nodejs"}
		probe = []string{"-e", "console.log(process.execPath); console.log(process.versions.node)"}
		in.client, in.code = "bootstrap.cjs", nodeClient
	default:
		return nil, awserr.New(awserr.ErrInvalidParameterValue, "Runtime: %q is not a managed runtime runnel runs (python3.x, nodejs*)", runtime)
	}
	var tried []string
	for _, name := range candidates {
		p, err := exec.LookPath(name)
		if err != nil {
			tried = append(tried, name+": not on PATH")
			continue
		}
		out, err := exec.Command(p, probe...).Output()
		lines := strings.Fields(string(out))
		if err != nil || len(lines) != 2 {
			tried = append(tried, fmt.Sprintf("%s: does not run (%v)", p, err))
			continue
		}
		in.path, in.version = lines[0], lines[1]
		break
	}
	if in.path == "" {
		return nil, awserr.New(awserr.ErrInvalidParameterValue,
			"Runtime %s: runnel runs it with this machine's interpreter and found none (%s); install it, or use provided.al2023", runtime, strings.Join(tried, "; "))
	}
	have := majorMinor(in.version)
	switch {
	case strings.HasPrefix(runtime, "python3.") && !strings.HasPrefix(in.version, "3."):
		return nil, awserr.New(awserr.ErrInvalidParameterValue, "Runtime %s: this machine's python3 (%s) is Python %s, not Python 3", runtime, in.path, in.version)
	case strings.HasPrefix(runtime, "python3.") && have != want:
		in.warning = fmt.Sprintf("runnel: Runtime %s runs on this machine's Python %s (%s), not Python %s", runtime, in.version, in.path, want)
	case strings.HasPrefix(runtime, "nodejs") && strings.Split(in.version, ".")[0] != want:
		in.warning = fmt.Sprintf("runnel: Runtime %s runs on this machine's Node.js %s (%s), not Node.js %s", runtime, in.version, in.path, want)
	}
	return in, nil
}

// majorMinor is "3.11" of "3.11.7".
func majorMinor(v string) string {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return v
	}
	if _, err := strconv.Atoi(parts[1]); err != nil {
		return v
	}
	return parts[0] + "." + parts[1]
}

// install writes the runtime client into dir and returns the command line
// of an environment: the interpreter and the client.
func (in *interpreter) install(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	p := filepath.Join(dir, in.client)
	if err := os.WriteFile(p, in.code, 0o444); err != nil {
		return nil, err
	}
	return []string{in.path, p}, nil
}

// environ adds the runtime's variables (AWS_EXECUTION_ENV, the flush
// mark) to vars.
func (in *interpreter) environ(vars map[string]string) {
	vars["AWS_EXECUTION_ENV"] = "AWS_Lambda_" + in.runtime
	vars["_RUNNEL_FLUSH_MARK"] = flushMark
	if strings.HasPrefix(in.runtime, "python") {
		vars["PYTHONUNBUFFERED"] = "1"
	}
}
