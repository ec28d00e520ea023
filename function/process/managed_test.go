package process

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/testenv"
)

// lines is a LogSink keeping every event, by stream.
type lines struct {
	mu     sync.Mutex
	events []string // "<group> <stream>|<message>"
}

func (l *lines) PutLogEvent(group, stream, message string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, group+" "+stream+"|"+message)
}

// messages returns the messages of the group's events, in order.
func (l *lines) messages(group string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, e := range l.events {
		if g, rest, _ := strings.Cut(e, " "); g == group {
			_, msg, _ := strings.Cut(rest, "|")
			out = append(out, msg)
		}
	}
	return out
}

// needInterpreter skips (fails in CI) without the runtime's interpreter.
func needInterpreter(t *testing.T, runtime string) {
	t.Helper()
	name := "python3"
	if strings.HasPrefix(runtime, "nodejs") {
		name = "node"
	}
	if _, err := exec.LookPath(name); err != nil {
		testenv.MissingTool(t, "%s is not installed: runtime %s runs on it", name, runtime)
	}
}

// managed builds a function of runtime whose code is files (name →
// content), with handler and a 5-second timeout (mod changes the
// configuration).
func managed(t *testing.T, runtime, handler string, files map[string]string, mod func(*Config)) (*Function, *lines) {
	t.Helper()
	needInterpreter(t, runtime)
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sink := &lines{}
	cfg := Config{
		Config:  function.Config{FunctionName: "fn", Handler: handler, Timeout: 5, MemorySize: 128, Environment: map[string]string{"MY_VAR": "mine"}},
		CodeDir: dir, WorkDir: t.TempDir(), Runtime: runtime, Region: "eu-west-1",
		Endpoint: "http://127.0.0.1:4566", Logs: sink,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	return open(t, cfg, mod), sink
}

func invokeJSON(t *testing.T, f *Function, id, event string) map[string]any {
	t.Helper()
	ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: id})
	out, err := f.Invoke(ctx, []byte(event))
	if err != nil {
		t.Fatalf("invoke: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatalf("response %s: %v", out, err)
	}
	return m
}

// invokeError invokes f and returns its error, which must be a function
// error, and the payload it is written as.
func invokeError(t *testing.T, f *Function, event string) (*function.InvokeError, map[string]any) {
	t.Helper()
	_, err := f.Invoke(context.Background(), []byte(event))
	var ie *function.InvokeError
	if !errors.As(err, &ie) {
		t.Fatalf("error %v (%T), want a function error", err, err)
	}
	b, _ := json.Marshal(ie)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("error payload %s: %v", b, err)
	}
	return ie, m
}

const pyEcho = `import os, sys
print("init")
def handler(event, context):
    print("hello", event.get("n"))
    print("to stderr", file=sys.stderr)
    env = {k: os.environ.get(k) for k in ("AWS_LAMBDA_FUNCTION_NAME", "_HANDLER", "LAMBDA_TASK_ROOT", "AWS_REGION",
        "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL", "AWS_EXECUTION_ENV", "AWS_ACCESS_KEY_ID", "MY_VAR", "AWS_LAMBDA_LOG_GROUP_NAME")}
    return {"event": event, "request_id": context.aws_request_id, "function_name": context.function_name,
        "remaining": context.get_remaining_time_in_millis(), "env": env}
`

// A python3.x function with a handler in a nested path gets its event,
// its context and Lambda's environment, and its output is its log stream
// between START and END, with REPORT (Init Duration on the cold start
// only).
func TestPythonHandlerContextEnvironmentAndLog(t *testing.T) {
	f, sink := managed(t, "python3.12", "app/handlers/echo.handler", map[string]string{"app/handlers/echo.py": pyEcho}, nil)
	for i, id := range []string{"req-1", "req-2"} {
		m := invokeJSON(t, f, id, `{"n":`+string(rune('1'+i))+`}`)
		env, _ := m["env"].(map[string]any)
		if m["request_id"] != id || m["function_name"] != "fn" || m["remaining"].(float64) <= 0 {
			t.Fatalf("context: %v", m)
		}
		want := map[string]any{"AWS_LAMBDA_FUNCTION_NAME": "fn", "_HANDLER": "app/handlers/echo.handler", "LAMBDA_TASK_ROOT": f.TaskRoot(),
			"AWS_REGION": "eu-west-1", "AWS_DEFAULT_REGION": "eu-west-1", "AWS_ENDPOINT_URL": "http://127.0.0.1:4566",
			"AWS_EXECUTION_ENV": "AWS_Lambda_python3.12", "AWS_ACCESS_KEY_ID": "runnel", "MY_VAR": "mine", "AWS_LAMBDA_LOG_GROUP_NAME": "/aws/lambda/fn"}
		for k, v := range want {
			if env[k] != v {
				t.Errorf("%s = %v, want %v", k, env[k], v)
			}
		}
	}
	log := strings.Join(sink.messages("/aws/lambda/fn"), "\n")
	re := regexp.MustCompile(`(?s)init\nSTART RequestId: req-1 Version: \$LATEST\n(hello 1\nto stderr|to stderr\nhello 1)\nEND RequestId: req-1\n` +
		`REPORT RequestId: req-1\tDuration: [0-9.]+ ms\tBilled Duration: \d+ ms\tMemory Size: 128 MB\tMax Memory Used: \d+ MB\tInit Duration: [0-9.]+ ms\t\n` +
		`START RequestId: req-2 Version: \$LATEST\n(hello 2\nto stderr|to stderr\nhello 2)\nEND RequestId: req-2\n` +
		`REPORT RequestId: req-2\tDuration: [0-9.]+ ms\tBilled Duration: \d+ ms\tMemory Size: 128 MB\tMax Memory Used: \d+ MB\t$`)
	if !re.MatchString(strings.TrimPrefix(log, f.RuntimeWarning()+"\n")) {
		t.Errorf("log:\n%s", log)
	}
	if st := f.Stats(); st.ColdStarts != 1 {
		t.Errorf("cold starts %d, want 1", st.ColdStarts)
	}
}

// An exception in a Python handler is the invocation's error as AWS
// reports it: errorType the class, errorMessage, stackTrace of the
// user's frames; the log has it as one [ERROR] event. The environment
// stays.
func TestPythonHandlerException(t *testing.T) {
	f, sink := managed(t, "python3.12", "fail.handler", map[string]string{"fail.py": "def handler(event, context):\n    raise ValueError('bad input ' + str(event['n']))\n"}, nil)
	ie, payload := invokeError(t, f, `{"n":7}`)
	if ie.Type != "ValueError" || ie.Message != "bad input 7" {
		t.Fatalf("error %+v", ie)
	}
	trace, _ := payload["stackTrace"].([]any)
	if len(trace) != 1 || !strings.Contains(trace[0].(string), "raise ValueError") || payload["errorType"] != "ValueError" {
		t.Errorf("payload %v", payload)
	}
	found := false
	for _, m := range sink.messages("/aws/lambda/fn") {
		if strings.HasPrefix(m, "[ERROR] ValueError: bad input 7\rTraceback (most recent call last):\r") {
			found = true
		}
	}
	if !found {
		t.Errorf("no [ERROR] event in %q", sink.messages("/aws/lambda/fn"))
	}
	invokeError(t, f, `{"n":8}`)
	if st := f.Stats(); st.ColdStarts != 1 {
		t.Errorf("cold starts %d: an exception must not replace the environment", st.ColdStarts)
	}
}

// A handler that cannot be loaded is an init error with AWS's errorType
// and errorMessage.
func TestPythonInitErrors(t *testing.T) {
	files := map[string]string{"ok.py": "def handler(e, c):\n    return 1\n", "broken.py": "def handler(e, c)\n    return 1\n"}
	for _, c := range []struct{ handler, typ, msg string }{
		{"nodot", "Runtime.MalformedHandlerName", "Bad handler 'nodot': not enough values to unpack (expected 2, got 1)"},
		{"nosuch.handler", "Runtime.ImportModuleError", "Unable to import module 'nosuch': No module named 'nosuch'"},
		{"ok.missing", "Runtime.HandlerNotFound", "Handler 'missing' missing on module 'ok'"},
		{"broken.handler", "Runtime.UserCodeSyntaxError", "Syntax error in module 'broken': "},
		{"sys.handler", "Runtime.BuiltInModuleConflict", "Cannot use built-in module sys as a handler module"},
	} {
		f, _ := managed(t, "python3.12", c.handler, files, nil)
		ie, _ := invokeError(t, f, `{}`)
		if ie.Type != c.typ || !strings.HasPrefix(ie.Message, c.msg) {
			t.Errorf("%s: %s: %s, want %s: %s", c.handler, ie.Type, ie.Message, c.typ, c.msg)
		}
	}
}

// A Python handler past its timeout is stopped: Sandbox.Timedout, and
// the log says so before END.
func TestPythonTimeout(t *testing.T) {
	f, sink := managed(t, "python3.12", "slow.handler", map[string]string{"slow.py": "import time\ndef handler(e, c):\n    print('sleeping')\n    time.sleep(30)\n"},
		func(c *Config) { c.Timeout = 1 })
	ie, _ := invokeError(t, f, `{}`)
	if ie.Type != function.TimeoutErrorType || ie.Message != "Task timed out after 1.00 seconds" {
		t.Fatalf("error %+v", ie)
	}
	log := strings.Join(sink.messages("/aws/lambda/fn"), "\n")
	if !regexp.MustCompile(`sleeping\n\S+ \S+ Task timed out after 1.00 seconds\nEND RequestId: \S+\nREPORT .*Status: timeout`).MatchString(log) {
		t.Errorf("log:\n%s", log)
	}
}

// Another minor version of Python 3 (or major of Node.js) than the
// runtime's runs, with a warning that CreateFunction reports and the log
// begins with; no interpreter is an error that says so.
func TestRuntimeVersionsAndMissingInterpreter(t *testing.T) {
	f, sink := managed(t, "python3.99", "m.handler", map[string]string{"m.py": "def handler(e, c):\n    return {}\n"}, nil)
	if w := f.RuntimeWarning(); !strings.Contains(w, "Runtime python3.99 runs on this machine's Python 3.") || !strings.HasSuffix(w, "not Python 3.99") {
		t.Errorf("warning %q", w)
	}
	invokeJSON(t, f, "r", `{}`)
	if m := sink.messages("/aws/lambda/fn"); len(m) == 0 || m[0] != f.RuntimeWarning() {
		t.Errorf("log %q", m)
	}
	t.Setenv("PATH", t.TempDir())
	_, err := Handler(Config{Config: function.Config{FunctionName: "fn", Handler: "m.handler"}, CodeDir: t.TempDir(), WorkDir: t.TempDir(), Runtime: "python3.12"})
	if err == nil || !strings.Contains(err.Error(), "Runtime python3.12: runnel runs it with this machine's interpreter and found none (python3.12: not on PATH; python3: not on PATH)") {
		t.Errorf("error %v", err)
	}
}

// Node.js handlers as AWS resolves them: CommonJS, ES modules (.mjs, and
// .js under "type":"module", in a nested directory), async handlers and
// callbacks (a sync handler that never calls back answers null). console's lines are the Node.js runtime's.
func TestNodeHandlers(t *testing.T) {
	files := map[string]string{
		"index.js":               "exports.handler = async (event, context) => { console.log('hi', event.n, '\\nthere'); return { got: event, id: context.awsRequestId, fn: context.functionName, env: process.env.AWS_EXECUTION_ENV }; };",
		"esm.mjs":                "export const handler = async (event) => ({ esm: event.n });",
		"lib/package.json":       `{"type":"module"}`,
		"lib/mod.js":             "export async function handler(event) { return { lib: event.n }; }",
		"cb.js":                  "exports.handler = (event, context, callback) => { setTimeout(() => callback(null, { cb: event.n }), 10); };",
		"nested/obj.js":          "module.exports = { api: { handler: async () => 'deep' } };",
		"sync.js":                "exports.handler = (event) => 42;",
		"node_modules/dep/index": "",
	}
	for _, c := range []struct{ runtime, handler, want string }{
		{"nodejs20.x", "index.handler", `"got":{"n":1}`},
		{"nodejs20.x", "esm.handler", `{"esm":1}`},
		{"nodejs20.x", "lib/mod.handler", `{"lib":1}`},
		{"nodejs20.x", "cb.handler", `{"cb":1}`},
		{"nodejs20.x", "nested/obj.api.handler", `"deep"`},
		{"nodejs20.x", "sync.handler", `null`}, // returns without calling back: null, as Lambda
	} {
		f, sink := managed(t, c.runtime, c.handler, files, nil)
		ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "node-1"})
		out, err := f.Invoke(ctx, []byte(`{"n":1}`))
		if err != nil || !strings.Contains(string(out), c.want) {
			t.Errorf("%s: %s, %v; want %s", c.handler, out, err, c.want)
		}
		if c.handler == "index.handler" && !strings.Contains(string(out), `"id":"node-1","fn":"fn","env":"AWS_Lambda_nodejs20.x"`) {
			t.Errorf("context: %s", out)
		}
		if c.handler == "index.handler" && !slices.ContainsFunc(sink.messages("/aws/lambda/fn"), regexp.MustCompile(`^\d{4}-\d\d-\d\dT[0-9:.]+Z\tnode-1\tINFO\thi 1 \rthere$`).MatchString) {
			t.Errorf("console.log line not found in %q", sink.messages("/aws/lambda/fn"))
		}
	}
}

// A Node.js error is reported as the Node.js runtime does (errorType,
// errorMessage, trace); a handler that is not exported is an init error.
func TestNodeErrors(t *testing.T) {
	files := map[string]string{"index.js": "exports.handler = async () => { throw new TypeError('no way'); };\nexports.notfn = 3;"}
	f, _ := managed(t, "nodejs20.x", "index.handler", files, nil)
	ie, payload := invokeError(t, f, `{}`)
	if ie.Type != "TypeError" || ie.Message != "no way" {
		t.Fatalf("error %+v", ie)
	}
	if trace, _ := payload["trace"].([]any); len(trace) < 2 || trace[0] != "TypeError: no way" {
		t.Errorf("payload %v", payload)
	}
	for _, c := range []struct{ handler, typ, msg string }{
		{"index.missing", "Runtime.HandlerNotFound", "index.missing is undefined or not exported"},
		{"index.notfn", "Runtime.HandlerNotFound", "index.notfn is not a function"},
		{"nosuch.handler", "Runtime.ImportModuleError", "Error: Cannot find module 'nosuch'"},
	} {
		f, _ := managed(t, "nodejs20.x", c.handler, files, nil)
		ie, _ := invokeError(t, f, `{}`)
		if ie.Type != c.typ || ie.Message != c.msg {
			t.Errorf("%s: %s: %s, want %s: %s", c.handler, ie.Type, ie.Message, c.typ, c.msg)
		}
	}
}
