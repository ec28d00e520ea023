package process

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/runnel-dev/runnel/function"
)

var (
	buildOnce sync.Once
	buildDir  string
	echoZip   []byte
	buildErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// echoCode builds testdata/echo with aws-lambda-go (-tags lambda.norpc)
// and zips it as a deployment package, once per test binary.
func echoCode(t *testing.T) []byte {
	t.Helper()
	if testing.Short() {
		t.Skip("builds a Lambda function binary")
	}
	buildOnce.Do(func() {
		if buildDir, buildErr = os.MkdirTemp("", "runnel-process-test-"); buildErr != nil {
			return
		}
		bin := filepath.Join(buildDir, "bootstrap")
		cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-o", bin, "./function/process/testdata/echo")
		cmd.Dir = "../.."
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
			return
		}
		exe, err := os.ReadFile(bin)
		if err != nil {
			buildErr = err
			return
		}
		var buf bytes.Buffer
		zw := zip.NewWriter(&buf)
		h := &zip.FileHeader{Name: "bootstrap", Method: zip.Deflate}
		h.SetMode(0o755)
		w, _ := zw.CreateHeader(h)
		w.Write(exe)
		w, _ = zw.Create("data/config.json")
		w.Write([]byte(`{}`))
		zw.Close()
		echoZip = buf.Bytes()
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return echoZip
}

// logBuffer collects the function's log records.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) records() []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(l.buf.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

func newEcho(t *testing.T, mod func(*Config)) (*Function, *logBuffer) {
	t.Helper()
	code := echoCode(t)
	logs := &logBuffer{}
	cfg := Config{
		Config: function.Config{FunctionName: "echo", Timeout: 5, MemorySize: 256,
			Environment: map[string]string{"MY_VAR": "mine"}},
		Code:    code,
		WorkDir: t.TempDir(),
		Region:  "eu-west-1",
		Logger:  slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	return open(t, cfg, mod), logs
}

// open builds the function of cfg, changed by mod (when not nil), closed
// at the end of the test.
func open(t *testing.T, cfg Config, mod func(*Config)) *Function {
	t.Helper()
	if mod != nil {
		mod(&cfg)
	}
	f, err := Handler(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

type echoOut struct {
	Event       json.RawMessage   `json:"event"`
	RequestID   string            `json:"request_id"`
	FunctionArn string            `json:"function_arn"`
	DeadlineMs  int64             `json:"deadline_ms"`
	Pid         int               `json:"pid"`
	Count       int               `json:"count"`
	Env         map[string]string `json:"env"`
	Cwd         string            `json:"cwd"`
	Function    string            `json:"function"`
	Memory      int               `json:"memory"`
}

func invokeEcho(t *testing.T, f *Function, ctx context.Context, ev string) echoOut {
	t.Helper()
	out, err := f.Invoke(ctx, []byte(ev))
	if err != nil {
		t.Fatalf("invoke %s: %v", ev, err)
	}
	var o echoOut
	if err := json.Unmarshal(out, &o); err != nil {
		t.Fatalf("response %q: %v", out, err)
	}
	return o
}

func invokeErr(t *testing.T, f *Function, ev string) *function.InvokeError {
	t.Helper()
	out, err := f.Invoke(context.Background(), []byte(ev))
	var ie *function.InvokeError
	if !errors.As(err, &ie) {
		t.Fatalf("invoke %s: got %q, %v; want an InvokeError", ev, out, err)
	}
	return ie
}

func TestEchoAndRuntimeEnvironment(t *testing.T) {
	f, _ := newEcho(t, nil)
	start := time.Now()
	o := invokeEcho(t, f, context.Background(), `{"op":"echo","n":1}`)
	if string(o.Event) != `{"op":"echo","n":1}` {
		t.Errorf("event %s", o.Event)
	}
	if len(o.RequestID) != 36 {
		t.Errorf("request id %q, want a UUID", o.RequestID)
	}
	if want := "arn:aws:lambda:eu-west-1:000000000000:function:echo"; o.FunctionArn != want {
		t.Errorf("arn %q, want %q", o.FunctionArn, want)
	}
	if d := time.UnixMilli(o.DeadlineMs).Sub(start); d < 4*time.Second || d > 6*time.Second {
		t.Errorf("deadline %v after start, want about 5s", d)
	}
	want := map[string]string{
		"_HANDLER": "bootstrap", "AWS_LAMBDA_FUNCTION_NAME": "echo", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "256",
		"AWS_LAMBDA_FUNCTION_VERSION": "$LATEST", "AWS_REGION": "eu-west-1", "LAMBDA_TASK_ROOT": f.TaskRoot(),
		"LAMBDA_RUNTIME_DIR": f.TaskRoot(), "TZ": "UTC", "LANG": "en_US.UTF-8", "AWS_ACCESS_KEY_ID": "runnel",
		"MY_VAR": "mine", "AWS_LAMBDA_LOG_GROUP_NAME": "/aws/lambda/echo",
	}
	for k, v := range want {
		if o.Env[k] != v {
			t.Errorf("%s = %q, want %q", k, o.Env[k], v)
		}
	}
	if !strings.HasPrefix(o.Env["AWS_LAMBDA_RUNTIME_API"], "127.0.0.1:") {
		t.Errorf("AWS_LAMBDA_RUNTIME_API = %q", o.Env["AWS_LAMBDA_RUNTIME_API"])
	}
	if !strings.HasPrefix(o.Env["_X_AMZN_TRACE_ID"], "Root=1-") {
		t.Errorf("trace id %q", o.Env["_X_AMZN_TRACE_ID"])
	}
	if o.Env["PATH"] == "" || o.Env["TMPDIR"] == "" {
		t.Errorf("PATH %q TMPDIR %q", o.Env["PATH"], o.Env["TMPDIR"])
	}
	if o.Cwd != f.TaskRoot() || o.Function != "echo" || o.Memory != 256 {
		t.Errorf("cwd %q function %q memory %d", o.Cwd, o.Function, o.Memory)
	}
	if _, err := os.Stat(filepath.Join(f.TaskRoot(), "data", "config.json")); err != nil {
		t.Errorf("package not unpacked: %v", err)
	}

	// The request id and ARN package function puts in the context reach
	// the runtime.
	ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{
		AwsRequestID: "11111111-2222-3333-4444-555555555555", InvokedFunctionArn: "arn:aws:lambda:eu-west-1:000000000000:function:echo:$LATEST"})
	o2 := invokeEcho(t, f, ctx, `{"op":"echo"}`)
	if o2.RequestID != "11111111-2222-3333-4444-555555555555" || !strings.HasSuffix(o2.FunctionArn, ":$LATEST") {
		t.Errorf("from context: request id %q arn %q", o2.RequestID, o2.FunctionArn)
	}
	if o2.Pid != o.Pid || o2.Count != 2 {
		t.Errorf("warm start expected: pid %d→%d count %d", o.Pid, o2.Pid, o2.Count)
	}
	if s := f.Stats(); s.ColdStarts != 1 || s.Live != 1 || s.Idle != 1 {
		t.Errorf("stats %+v", s)
	}
}

func TestHandlerErrors(t *testing.T) {
	f, _ := newEcho(t, nil)
	ie := invokeErr(t, f, `{"op":"error","message":"bad thing"}`)
	if ie.Type != "errorString" || ie.Message != "bad thing" || len(ie.StackTrace) != 0 {
		t.Errorf("error: %+v", ie)
	}
	ie = invokeErr(t, f, `{"op":"wrap","message":"inner"}`)
	if ie.Type != "wrapError" || ie.Message != "wrapped: inner" {
		t.Errorf("wrapped error: %+v", ie)
	}
	o := invokeEcho(t, f, context.Background(), `{"op":"echo"}`)
	if o.Count != 3 || f.Stats().ColdStarts != 1 {
		t.Errorf("a handler error keeps the environment: count %d stats %+v", o.Count, f.Stats())
	}
}

func TestPanicReplacesEnvironment(t *testing.T) {
	f, _ := newEcho(t, nil)
	before := invokeEcho(t, f, context.Background(), `{"op":"echo"}`)
	ie := invokeErr(t, f, `{"op":"panic","message":"boom"}`)
	if ie.Type != "string" || ie.Message != "boom" || len(ie.StackTrace) == 0 {
		t.Errorf("panic: %+v", ie)
	}
	after := invokeEcho(t, f, context.Background(), `{"op":"echo"}`)
	if after.Pid == before.Pid || after.Count != 1 {
		t.Errorf("want a new environment after the panic: pid %d→%d count %d", before.Pid, after.Pid, after.Count)
	}
	if s := f.Stats(); s.ColdStarts != 2 || s.Live != 1 {
		t.Errorf("stats %+v", s)
	}
}

func TestExitWithoutReport(t *testing.T) {
	f, _ := newEcho(t, nil)
	ie := invokeErr(t, f, `{"op":"exit"}`)
	if ie.Type != "Runtime.ExitError" || !strings.Contains(ie.Message, "Runtime exited with error: exit status 3") {
		t.Errorf("exit: %+v", ie)
	}
	if o := invokeEcho(t, f, context.Background(), `{"op":"echo"}`); o.Count != 1 {
		t.Errorf("count %d", o.Count)
	}
}

func TestTimeoutKillsAndReplaces(t *testing.T) {
	f, _ := newEcho(t, func(c *Config) { c.Timeout = 1 })
	before := invokeEcho(t, f, context.Background(), `{"op":"echo"}`)
	start := time.Now()
	ie := invokeErr(t, f, `{"op":"sleep","sleep_ms":30000}`) // far past the bound below: only the kill ends it in time
	if el := time.Since(start); el < time.Second || el > 3*time.Second {
		t.Errorf("timed out after %v", el)
	}
	if ie.Type != function.TimeoutErrorType || ie.Message != "Task timed out after 1.00 seconds" {
		t.Errorf("timeout: %+v", ie)
	}
	after := invokeEcho(t, f, context.Background(), `{"op":"echo"}`)
	if after.Pid == before.Pid || f.Stats().ColdStarts != 2 {
		t.Errorf("want a new environment: pid %d→%d stats %+v", before.Pid, after.Pid, f.Stats())
	}
	// SIGKILL is sent when the invocation times out; the kernel ends the
	// process soon after, not at once (a CI run under load saw it still
	// running right after the next invocation): wait for that, bounded.
	for deadline := time.Now().Add(10 * time.Second); syscallAlive(before.Pid) == nil; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Errorf("timed-out process %d still running 10 s after its timeout", before.Pid)
			break
		}
	}
}

// syscallAlive reports nil if pid is a running process.
func syscallAlive(pid int) error {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return err
	}
	if fields := strings.Fields(string(b)); len(fields) > 2 && fields[2] == "Z" {
		return errors.New("zombie")
	}
	return nil
}

func TestConcurrencyAndReuse(t *testing.T) {
	f, _ := newEcho(t, nil)
	var wg sync.WaitGroup
	pids := make([]int, 2)
	for i := range 2 {
		wg.Go(func() { pids[i] = invokeEcho(t, f, context.Background(), `{"op":"sleep","sleep_ms":500}`).Pid })
	}
	wg.Wait()
	if pids[0] == pids[1] || f.Stats().ColdStarts != 2 {
		t.Fatalf("overlapping invocations: pids %v stats %+v", pids, f.Stats())
	}
	for range 4 {
		invokeEcho(t, f, context.Background(), `{"op":"echo"}`)
	}
	if s := f.Stats(); s.ColdStarts != 2 || s.Live != 2 || s.Idle != 2 {
		t.Errorf("sequential invocations should reuse: %+v", s)
	}
}

func TestReservedConcurrencyBoundsEnvironments(t *testing.T) {
	one := 1
	f, _ := newEcho(t, func(c *Config) { c.ReservedConcurrentExecutions = &one })
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() { invokeEcho(t, f, context.Background(), `{"op":"sleep","sleep_ms":200}`) })
	}
	wg.Wait()
	if s := f.Stats(); s.ColdStarts != 1 {
		t.Errorf("reserved concurrency 1: %+v", s)
	}
}

func TestInitErrors(t *testing.T) {
	f, logs := newEcho(t, func(c *Config) { c.Environment = map[string]string{"INIT_FAIL": "exit"} })
	ie := invokeErr(t, f, `{"op":"echo"}`)
	if ie.Type != "Runtime.ExitError" || !strings.Contains(ie.Message, "exit status 7") {
		t.Errorf("exit during init: %+v", ie)
	}
	found := false
	for _, r := range logs.records() {
		if r["msg"] == "init failing" && r["function"] == "echo" && r["stream"] == "stderr" {
			found = true
		}
	}
	if !found {
		t.Errorf("init output not logged: %v", logs.records())
	}

	f, _ = newEcho(t, func(c *Config) { c.Environment = map[string]string{"INIT_FAIL": "post"} })
	ie = invokeErr(t, f, `{"op":"echo"}`)
	if ie.Type != "InitFailed" || ie.Message != "no config" {
		t.Errorf("posted init error: %+v", ie)
	}
}

func TestLogsCarryRequestID(t *testing.T) {
	f, logs := newEcho(t, nil)
	ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "req-log-1"})
	if _, err := f.Invoke(ctx, []byte(`{"op":"log","message":"hello"}`)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		got := map[string]bool{}
		for _, r := range logs.records() {
			if r["request_id"] == "req-log-1" && r["function"] == "echo" {
				got[fmt.Sprint(r["stream"], ":", r["msg"])] = true
			}
		}
		if got["stdout:to stdout: hello"] && got["stderr:to stderr: hello"] {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("log records: %v", logs.records())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestResponseTooLarge(t *testing.T) {
	f, _ := newEcho(t, nil)
	ie := invokeErr(t, f, `{"op":"big","size":7000000}`)
	if ie.Type != "Function.ResponseSizeTooLarge" {
		t.Errorf("big response: %+v", ie)
	}
	// Just under the limit (the JSON string adds its quotes) passes.
	out, err := f.Invoke(context.Background(), []byte(`{"op":"big","size":6291000}`))
	if err != nil || len(out) != 6291002 {
		t.Errorf("response under the limit: %d bytes, %v", len(out), err)
	}
}

func TestRuntimeRejectsUnknownRequestID(t *testing.T) {
	f, _ := newEcho(t, nil)
	out, err := f.Invoke(context.Background(), []byte(`{"op":"probe"}`))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Status int               `json:"status"`
		Body   map[string]string `json:"body"`
	}
	json.Unmarshal(out, &got)
	if got.Status != 400 || got.Body["errorType"] != "InvalidRequestID" || got.Body["errorMessage"] != "Invalid request ID" {
		t.Errorf("probe: %s", out)
	}
}

// Through package function, as a registered handler would run.
func TestThroughFunctionPackage(t *testing.T) {
	pf, _ := newEcho(t, func(c *Config) { c.Timeout = 1 })
	fn, err := function.New(function.Config{FunctionName: "echo", Timeout: 1}, pf, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	res, err := fn.Invoke(ctx, map[string]string{"op": "echo"})
	if err != nil || res.Failed() {
		t.Fatalf("invoke: %+v %v", res, err)
	}
	var o echoOut
	json.Unmarshal(res.Payload, &o)
	if o.RequestID != res.RequestID {
		t.Errorf("runtime saw request id %q, Result has %q", o.RequestID, res.RequestID)
	}
	res, _ = fn.Invoke(ctx, []byte(`{"op":"error","message":"nope"}`))
	if res.Error == nil || res.Error.Type != "errorString" || res.Error.Message != "nope" || res.FunctionError != function.FunctionErrorUnhandled {
		t.Errorf("error: %+v", res.Error)
	}
	res, _ = fn.Invoke(ctx, []byte(`{"op":"sleep","sleep_ms":3000}`))
	if res.Error == nil || res.Error.Message != "Task timed out after 1.00 seconds" || res.Error.Type != "Sandbox.Timedout" {
		t.Errorf("timeout: %+v", res.Error)
	}
	if !strings.Contains(string(res.Payload), `"errorMessage":"Task timed out after 1.00 seconds"`) {
		t.Errorf("timeout payload %s", res.Payload)
	}
	// The timed-out environment is killed and replaced.
	res, _ = fn.Invoke(ctx, []byte(`{"op":"echo"}`))
	if res.Failed() {
		t.Errorf("after timeout: %+v", res.Error)
	}
	deadline := time.Now().Add(2 * time.Second)
	for pf.Stats().Live != 1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if s := pf.Stats(); s.ColdStarts != 2 || s.Live != 1 {
		t.Errorf("stats %+v", s)
	}
}

func TestHandlerNeedsBootstrap(t *testing.T) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, _ := zw.Create("main.js")
	w.Write([]byte("x"))
	zw.Close()
	_, err := Handler(Config{Config: function.Config{FunctionName: "f"}, Code: buf.Bytes(), WorkDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "bootstrap") {
		t.Errorf("no bootstrap: %v", err)
	}
	buf.Reset()
	zw = zip.NewWriter(&buf)
	w, _ = zw.Create("../bootstrap")
	w.Write([]byte("x"))
	zw.Close()
	if _, err := Handler(Config{Config: function.Config{FunctionName: "f"}, Code: buf.Bytes(), WorkDir: t.TempDir()}); err == nil {
		t.Error("zip slip accepted")
	}
}

// The Runtime API's status codes, driven over HTTP without a process.
func TestRuntimeAPIStates(t *testing.T) {
	f := &Function{cfg: Config{Config: function.Config{FunctionName: "api"}}, log: slog.New(slog.DiscardHandler)}
	e := f.newEnv()
	srv := httptest.NewServer(e.mux())
	defer srv.Close()
	base := srv.URL + "/2018-06-01/runtime/"
	post := func(path, body string) (int, string) {
		resp, err := http.Post(base+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(b))
	}
	next := func() *http.Response {
		resp, err := http.Get(base + "invocation/next")
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	if code, body := post("invocation/nope/response", "{}"); code != 400 || body != `{"errorMessage":"Invalid request ID","errorType":"InvalidRequestID"}` {
		t.Errorf("unknown id: %d %s", code, body)
	}

	deliver := func(id string) *invocation {
		inv := &invocation{id: id, payload: []byte(`{"a":1}`), arn: "arn:x", traceID: "Root=1-x", deadline: time.UnixMilli(1700000000123), done: make(chan result, 1)}
		if !e.offer(inv) {
			t.Fatal("offer")
		}
		resp := next()
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || string(b) != `{"a":1}` || resp.Header.Get(headerRequestID) != id ||
			resp.Header.Get(headerDeadline) != "1700000000123" || resp.Header.Get(headerFunctionArn) != "arn:x" ||
			resp.Header.Get(headerTraceID) != "Root=1-x" {
			t.Fatalf("next: %d %s %v", resp.StatusCode, b, resp.Header)
		}
		if _, ok := resp.Header[headerClientContext]; ok {
			t.Errorf("empty client context header sent")
		}
		return inv
	}
	inv := deliver("r1")
	if code, _ := post("init/error", `{}`); code != 403 {
		t.Errorf("init/error after next: %d", code)
	}
	if resp := next(); resp.StatusCode != 403 {
		t.Errorf("next before answering: %d", resp.StatusCode)
	}
	if code, body := post("invocation/r1/response", `"ok"`); code != 202 || body != `{"status":"OK"}` {
		t.Errorf("response: %d %s", code, body)
	}
	if r := <-inv.done; string(r.out) != `"ok"` || r.err != nil {
		t.Errorf("result %+v", r)
	}
	if code, body := post("invocation/r1/response", `"again"`); code != 403 || !strings.Contains(body, "InvalidStateTransition") {
		t.Errorf("second response: %d %s", code, body)
	}
	if code, _ := post("invocation/r1/error", `{}`); code != 403 {
		t.Errorf("error after response: %d", code)
	}

	// An error, with the type in the header only.
	inv = deliver("r2")
	req, _ := http.NewRequest("POST", base+"invocation/r2/error", strings.NewReader(`{"errorMessage":"m"}`))
	req.Header.Set(headerErrorType, "Runtime.Custom")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 202 {
		t.Fatalf("error: %v %v", resp, err)
	}
	resp.Body.Close()
	if r := <-inv.done; r.err == nil || r.err.Type != "Runtime.Custom" || r.err.Message != "m" {
		t.Errorf("error result %+v", r.err)
	}

	// A chunked response whose trailers carry an error.
	inv = deliver("r3")
	errBody := base64.StdEncoding.EncodeToString([]byte(`{"errorMessage":"stream broke","errorType":"errorString"}`))
	req, _ = http.NewRequest("POST", base+"invocation/r3/response", io.MultiReader(strings.NewReader("partial")))
	req.Trailer = http.Header{headerErrorType: {"errorString"}, headerErrorBody: {errBody}}
	resp, err = http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 202 {
		t.Fatalf("chunked: %v %v", resp, err)
	}
	resp.Body.Close()
	if r := <-inv.done; r.err == nil || r.err.Message != "stream broke" || r.err.Type != "errorString" {
		t.Errorf("trailer error %+v", r)
	}

	// A chunked response without error trailers is a response.
	inv = deliver("r4")
	req, _ = http.NewRequest("POST", base+"invocation/r4/response", io.MultiReader(strings.NewReader(`{"streamed":true}`)))
	req.Trailer = http.Header{headerErrorType: nil, headerErrorBody: nil}
	if resp, err = http.DefaultClient.Do(req); err != nil || resp.StatusCode != 202 {
		t.Fatalf("chunked ok: %v %v", resp, err)
	}
	resp.Body.Close()
	if r := <-inv.done; r.err != nil || string(r.out) != `{"streamed":true}` {
		t.Errorf("chunked result %+v", r)
	}

	// Over 6 MiB + 100 B.
	inv = deliver("r5")
	if code, body := post("invocation/r5/response", strings.Repeat("x", MaxResponseSize+1)); code != 413 || !strings.Contains(body, "RequestEntityTooLarge") {
		t.Errorf("too large: %d %s", code, body)
	}
	if r := <-inv.done; r.err == nil || r.err.Type != "Function.ResponseSizeTooLarge" {
		t.Errorf("too large result %+v", r)
	}
}

func TestInitErrorBeforeNext(t *testing.T) {
	f := &Function{cfg: Config{Config: function.Config{FunctionName: "api"}}, log: slog.New(slog.DiscardHandler)}
	e := f.newEnv()
	srv := httptest.NewServer(e.mux())
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/2018-06-01/runtime/init/error", "application/json", strings.NewReader(`{"errorMessage":"bad env","errorType":"Config"}`))
	if err != nil || resp.StatusCode != 202 {
		t.Fatalf("%v %v", resp, err)
	}
	resp.Body.Close()
	select {
	case <-e.initFailed:
	default:
		t.Fatal("initFailed not signalled")
	}
	if err := e.initError(); err == nil || err.Error() != "Config: bad env" {
		t.Errorf("init error %v", err)
	}
}

func TestBadEntrypoint(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "bootstrap"), []byte("not a program\n"), 0o755)
	f, err := Handler(Config{Config: function.Config{FunctionName: "bad"}, CodeDir: dir, WorkDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, err = f.Invoke(context.Background(), []byte(`{}`))
	var ie *function.InvokeError
	if !errors.As(err, &ie) || ie.Type != "Runtime.InvalidEntrypoint" {
		t.Errorf("bad entrypoint: %v", err)
	}
	if s := f.Stats(); s.Live != 0 || s.ColdStarts != 0 {
		t.Errorf("stats %+v", s)
	}
}

func TestCloseStopsEnvironments(t *testing.T) {
	f, _ := newEcho(t, nil)
	pid := invokeEcho(t, f, context.Background(), `{"op":"echo"}`).Pid
	root := f.TaskRoot()
	f.Close()
	if syscallAlive(pid) == nil {
		t.Errorf("process %d survives Close", pid)
	}
	if _, err := os.Stat(root); !os.IsNotExist(err) {
		t.Errorf("task root left behind: %v", err)
	}
	if _, err := f.Invoke(context.Background(), []byte(`{}`)); err == nil {
		t.Error("invoke after Close succeeded")
	}
}
