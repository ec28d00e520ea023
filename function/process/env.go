package process

import (
	"archive/zip"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/runnel-dev/runnel/function"
)

// state is where an environment's runtime is in the Runtime API's state
// machine.
type state int

const (
	stInit      state = iota // started, has not yet called /next
	stWaiting                // called /next, waiting for an invocation
	stInvoked                // received an invocation, has not answered it
	stResponded              // answered, has not yet called /next again
)

func (s state) String() string {
	return [...]string{"Init", "Ready", "Invoke", "Response"}[s]
}

// invocation is one invocation on its way through an environment.
type invocation struct {
	id, arn, traceID, tenantID string
	payload                    []byte
	deadline                   time.Time
	clientContext              lambdacontext.ClientContext
	rawClientContext           []byte // Invoke's ClientContext JSON as sent (nil: none)
	identity                   lambdacontext.CognitoIdentity
	done                       chan result // buffered 1; one send at most
	tail                       *LogTail    // Invoke with LogType Tail; nil otherwise
	start                      time.Time   // when START was written
}

type result struct {
	out []byte
	err *function.InvokeError
}

// env is one execution environment: a bootstrap process and its Runtime
// API server.
type env struct {
	f      *Function
	n      int64
	dir    string // per-environment directory (its TMPDIR below it)
	cmd    *exec.Cmd
	srv    *http.Server
	stdout *lineWriter
	stderr *lineWriter

	logStream string        // the environment's log stream
	flushed   chan struct{} // a managed runtime's flush marks (awaitFlush)
	readyCh   chan struct{} // closed at the runtime's first /next

	queue      chan *invocation // the invocation for the next /next
	exited     chan struct{}    // closed when the process has exited
	initFailed chan struct{}    // closed when the runtime posts init/error
	initOnce   sync.Once

	mu      sync.Mutex
	state   state
	cur     *invocation // the invocation since /next delivered it
	logInv  *invocation // the invocation log lines belong to: the last delivered
	ready   bool        // has called /next at least once
	killed  bool
	dead    bool
	exitErr error
	initErr *function.InvokeError

	startedAt, readyAt time.Time // process started; first /next (Init Duration)
	// provisioned: started ahead of any invocation by Prestart
	// (AWS_LAMBDA_INITIALIZATION_TYPE provisioned-concurrency).
	provisioned bool
}

func (f *Function) newEnv() *env {
	n := f.nextEnv.Add(1)
	return &env{f: f, n: n, dir: filepath.Join(f.base, fmt.Sprintf("env-%d", n)),
		queue: make(chan *invocation, 1), exited: make(chan struct{}), initFailed: make(chan struct{}),
		logStream: function.LogStreamName(time.Now(), f.cfg.Version), flushed: make(chan struct{}, 2), readyCh: make(chan struct{})}
}

// start starts the environment's Runtime API server and its process. On
// failure the environment is dead (exited closed).
func (e *env) start() (err error) {
	f := e.f
	defer func() {
		if err != nil {
			f.log.Warn("function runtime could not start", "function", f.cfg.FunctionName, "path", f.command[0], "error", err)
			if e.srv != nil {
				e.srv.Close()
			}
			os.RemoveAll(e.dir)
			e.mu.Lock()
			e.dead = true
			e.exitErr = err
			e.mu.Unlock()
			close(e.exited)
		}
	}()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	e.srv = &http.Server{Handler: e.mux(), ReadHeaderTimeout: 30 * time.Second}
	go e.srv.Serve(ln)
	tmp := filepath.Join(e.dir, "tmp")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return err
	}
	if w := f.RuntimeWarning(); w != "" {
		e.logLine(nil, w)
	}
	cmd := exec.Command(f.command[0], f.command[1:]...)
	cmd.Dir = f.root
	cmd.Env = e.environ(ln.Addr().String(), tmp)
	e.stdout = &lineWriter{e: e, stream: "stdout"}
	e.stderr = &lineWriter{e: e, stream: "stderr"}
	cmd.Stdout, cmd.Stderr = e.stdout, e.stderr
	cmd.WaitDelay = 2 * time.Second
	setProcAttr(cmd)
	if err := cmd.Start(); err != nil {
		return err
	}
	e.mu.Lock()
	e.cmd = cmd
	e.startedAt = time.Now()
	killed := e.killed // by Close, while starting
	e.mu.Unlock()
	if killed {
		killProcess(cmd)
	}
	f.log.Debug("function environment started", "function", f.cfg.FunctionName, "env", e.n, "pid", cmd.Process.Pid, "runtime_api", ln.Addr().String())
	go e.reap()
	return nil
}

// reap waits for the process to exit and forgets the environment.
func (e *env) reap() {
	err := e.cmd.Wait()
	e.stdout.flush()
	e.stderr.flush()
	e.mu.Lock()
	e.dead = true
	e.exitErr = err
	killed := e.killed
	e.mu.Unlock()
	close(e.exited)
	e.srv.Close()
	os.RemoveAll(e.dir)
	e.f.remove(e)
	lvl := "function environment exited"
	if killed {
		lvl = "function environment stopped"
	}
	e.f.log.Debug(lvl, "function", e.f.cfg.FunctionName, "env", e.n, "exit", fmt.Sprint(err))
}

// environ is the process environment of SPEC 4. The function's own
// variables may override the dummy credentials and the endpoint, and the
// variables Lambda sets but does not reserve: "The following additional
// environment variables aren't reserved and can be extended in your
// function configuration": LANG, PATH, LD_LIBRARY_PATH, NODE_PATH,
// PYTHONPATH (configuration-envvars.html), where the function's value
// replaces Lambda's (and a layer's directories); and TZ, which
// CreateFunction accepts and the function's runtime honours on Lambda
// (TZ=Asia/Tokyo is the common idiom), default UTC. Not the rest, which
// Lambda reserves (CreateFunction refuses them: function.Config.Validate).
// Trap: before, the function's LANG, PATH, LD_LIBRARY_PATH, NODE_PATH,
// PYTHONPATH and TZ were accepted and then silently replaced by runnel's.
func (e *env) environ(api, tmp string) []string {
	cfg := e.f.cfg
	root := e.f.root
	vars := map[string]string{
		"AWS_ACCESS_KEY_ID":     "runnel",
		"AWS_SECRET_ACCESS_KEY": "runnel",
		"AWS_SESSION_TOKEN":     "runnel",
		"LANG":                  "en_US.UTF-8",
		"PATH":                  "/usr/local/bin:/usr/bin/:/bin:/opt/bin",
		"LD_LIBRARY_PATH":       root + ":" + root + "/lib:/opt/lib",
		"TZ":                    "UTC",
	}
	if cfg.Endpoint != "" {
		vars["AWS_ENDPOINT_URL"] = endpointCredentials(cfg.Endpoint, vars)
	}
	if e.f.interp != nil {
		e.f.interp.environ(vars)
	}
	if opt := e.f.opt; opt != "" {
		vars["PATH"] = opt + "/bin:" + vars["PATH"]
		vars["LD_LIBRARY_PATH"] += ":" + opt + "/lib"
		vars["PYTHONPATH"] = opt + "/python"
		if e.f.interp != nil {
			if v, ok := strings.CutPrefix(e.f.interp.runtime, "python"); ok {
				vars["PYTHONPATH"] += ":" + opt + "/python/lib/python" + v + "/site-packages"
			}
		}
		vars["NODE_PATH"] = opt + "/nodejs/node_modules"
	}
	if e.f.interp != nil && strings.HasPrefix(e.f.interp.runtime, "nodejs") {
		vars["NODE_PATH"] = nodePath(e.f.interp.runtime, e.f.opt, root)
	}
	for k, v := range cfg.Environment {
		vars[k] = v
	}
	initType := "on-demand"
	if e.provisioned {
		initType = "provisioned-concurrency"
	}
	for k, v := range map[string]string{
		"AWS_LAMBDA_RUNTIME_API":          api,
		"_HANDLER":                        cfg.Handler,
		"AWS_REGION":                      cfg.Region,
		"AWS_DEFAULT_REGION":              cfg.Region,
		"AWS_LAMBDA_FUNCTION_NAME":        cfg.FunctionName,
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": strconv.Itoa(cfg.MemorySize),
		"AWS_LAMBDA_FUNCTION_VERSION":     cfg.ExecutedVersion(),
		"AWS_LAMBDA_INITIALIZATION_TYPE":  initType,
		"AWS_LAMBDA_LOG_GROUP_NAME":       "/aws/lambda/" + cfg.FunctionName,
		"AWS_LAMBDA_LOG_STREAM_NAME":      e.logStream,
		"LAMBDA_TASK_ROOT":                root,
		"LAMBDA_RUNTIME_DIR":              root,
		"TMPDIR":                          tmp,
	} {
		vars[k] = v
	}
	out := make([]string, 0, len(vars))
	for k, v := range vars {
		out = append(out, k+"="+v)
	}
	return out
}

// nodePath is the NODE_PATH of a nodejs* runtime, Lambda's
// "/opt/nodejs/nodeNN/node_modules:/opt/nodejs/node_modules:
// /var/runtime/node_modules:/var/runtime:/var/task" for runtime nodejsNN.x
// (packaging-layers.html#packaging-layers-paths lists the layer paths
// nodejs/node_modules and nodejs/nodeNN/node_modules; the order is the
// runtime's): opt is the layers' directory ("" without layers: no /opt
// entries) and root the task root. runnel's runtime client has no
// node_modules of its own, so /var/runtime has no counterpart.
func nodePath(runtime, opt, root string) string {
	var dirs []string
	if opt != "" {
		major := strings.TrimSuffix(strings.TrimPrefix(runtime, "nodejs"), ".x")
		dirs = append(dirs, opt+"/nodejs/node"+major+"/node_modules", opt+"/nodejs/node_modules")
	}
	return strings.Join(append(dirs, root), ":")
}

// offer queues inv for the runtime's next /next; false if the environment
// is gone.
func (e *env) offer(inv *invocation) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.dead || e.killed {
		return false
	}
	select {
	case e.queue <- inv:
		return true
	default:
		return false
	}
}

// withdraw takes inv back if no /next has taken it.
func (e *env) withdraw(inv *invocation) bool {
	select {
	case x := <-e.queue:
		return x == inv
	default:
		return false
	}
}

func (e *env) alive() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return !e.dead && !e.killed
}

func (e *env) wasReady() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.ready
}

func (e *env) initError() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.initErr == nil {
		return nil
	}
	return e.initErr
}

// kill stops the process (and its process group); reap forgets the
// environment when it has exited.
func (e *env) kill() {
	e.mu.Lock()
	if e.killed || e.dead {
		e.mu.Unlock()
		return
	}
	e.killed = true
	cmd := e.cmd
	e.mu.Unlock()
	if cmd != nil {
		killProcess(cmd)
	}
}

// current is the invocation the runtime is handling, or last handled
// (output read after the runtime answered still belongs to it), until the
// next one is delivered; nil before the first.
func (e *env) current() *invocation {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.logInv
}

// exitError is the error of an invocation whose runtime exited without
// reporting one, as Lambda words it.
func exitError(id string, err error) *function.InvokeError {
	reason := "Runtime exited without providing a reason"
	if err != nil {
		reason = "Runtime exited with error: " + err.Error()
	}
	return &function.InvokeError{Message: fmt.Sprintf("RequestId: %s Error: %s", id, reason), Type: "Runtime.ExitError"}
}

// lineWriter sends a process's output to the logger a line at a time.
type lineWriter struct {
	e      *env
	stream string
	mu     sync.Mutex
	buf    []byte
}

const maxLine = 256 << 10

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			if len(w.buf) >= maxLine {
				w.emit(w.buf)
				w.buf = w.buf[:0]
			}
			break
		}
		w.emit(w.buf[:i])
		w.buf = w.buf[i+1:]
	}
	if len(w.buf) == 0 {
		w.buf = nil
	}
	return len(p), nil
}

func (w *lineWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.emit(w.buf)
		w.buf = nil
	}
}

func (w *lineWriter) emit(line []byte) {
	s := strings.TrimSuffix(string(line), "\r")
	if s == flushMark && w.e.f.interp != nil {
		select {
		case w.e.flushed <- struct{}{}:
		default:
		}
		return
	}
	w.e.logLine(w.e.current(), s, "stream", w.stream)
}

// Lambda's limit on a function's unzipped deployment package.
const maxUnzipped = 250 << 20

// unzip unpacks a deployment package into dir, refusing paths that leave
// it; bootstrap is made executable whatever its recorded mode. Each file
// gets its entry's mode (plus owner read), also over a file an earlier
// zip put there: layers unpacked into one /opt in order, a later layer's
// file replaces an earlier one's (read-only or not) with its own mode.
func unzip(code []byte, dir string) error {
	zr, err := zip.NewReader(bytes.NewReader(code), int64(len(code)))
	if err != nil {
		return fmt.Errorf("not a zip file: %v", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var total int64
	for _, zf := range zr.File {
		name := filepath.FromSlash(zf.Name)
		if !filepath.IsLocal(name) {
			return fmt.Errorf("zip entry %q leaves the package", zf.Name)
		}
		dst := filepath.Join(dir, name)
		if zf.FileInfo().IsDir() {
			if err := os.MkdirAll(dst, 0o755); err != nil {
				return err
			}
			continue
		}
		if zf.Mode()&os.ModeSymlink != 0 {
			return fmt.Errorf("zip entry %q is a symbolic link", zf.Name)
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		mode := zf.Mode().Perm() | 0o400
		if zf.Name == "bootstrap" {
			mode |= 0o555
		}
		// A file an earlier zip (layer) put there is replaced, not
		// rewritten: it may be read-only, and OpenFile would keep its mode.
		if err := os.Remove(dst); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("zip entry %q: replace %v", zf.Name, err)
		}
		rc, err := zf.Open()
		if err != nil {
			return err
		}
		out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_EXCL, mode)
		if err == nil {
			err = out.Chmod(mode) // the entry's mode, whatever the umask
		}
		if err != nil {
			if out != nil {
				out.Close()
			}
			rc.Close()
			return err
		}
		n, err := io.Copy(out, io.LimitReader(rc, maxUnzipped-total+1))
		rc.Close()
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		if total += n; total > maxUnzipped {
			return errors.New("unzipped size exceeds 262144000 bytes")
		}
	}
	return nil
}

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// newTraceID is an X-Ray trace header as Lambda passes it.
func newTraceID() string {
	return fmt.Sprintf("Root=1-%08x-%s;Parent=%s;Sampled=0", time.Now().Unix(), randHex(12), randHex(8))
}

// endpointCredentials returns endpoint without its userinfo, and puts
// that userinfo (http://KEY:SECRET@host:port), when there is one, into
// vars as the function's AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY
// (without a session token): the credentials runnel's endpoint accepts
// from its functions under --auth (awsapi's functionCredentials).
// Trap: the dummy runnel/runnel credentials are refused there, so every
// SDK call from a function back to runnel failed.
func endpointCredentials(endpoint string, vars map[string]string) string {
	u, err := url.Parse(endpoint)
	if err != nil || u.User == nil {
		return endpoint
	}
	if secret, ok := u.User.Password(); ok {
		vars["AWS_ACCESS_KEY_ID"], vars["AWS_SECRET_ACCESS_KEY"] = u.User.Username(), secret
		delete(vars, "AWS_SESSION_TOKEN")
	}
	u.User = nil
	return u.String()
}
