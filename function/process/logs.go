package process

// A function's log as Lambda writes it: each environment is one log
// stream (YYYY/MM/DD/[<version>]<32 hex>, [$LATEST] or [3]) of the group /aws/lambda/<name>;
// its process's stdout and stderr, one event per line, between the START,
// END and REPORT lines of each invocation.

import (
	"context"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// LogSink stores log events (package function/logs, in JetStream).
type LogSink interface {
	// PutLogEvent appends message to the log stream of group, now. It
	// reports its own failures (the sink logs them).
	PutLogEvent(group, stream, message string)
}

// TailSize is how much of an invocation's log Invoke with LogType Tail
// returns: the last 4 KB.
const TailSize = 4096

// LogTail collects the log of one invocation (WithLogTail).
type LogTail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *LogTail) add(line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, line...)
	t.buf = append(t.buf, '\n')
	if len(t.buf) > 2*TailSize {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-TailSize:]...)
	}
}

// Bytes returns the last TailSize bytes of the invocation's log.
func (t *LogTail) Bytes() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.buf
	if len(b) > TailSize {
		b = b[len(b)-TailSize:]
	}
	return append([]byte(nil), b...)
}

type tailKey struct{}

// WithLogTail returns a context whose invocation collects its log lines
// into the returned LogTail (Invoke with LogType Tail).
func WithLogTail(ctx context.Context) (context.Context, *LogTail) {
	t := &LogTail{}
	return context.WithValue(ctx, tailKey{}, t), t
}

func tailOf(ctx context.Context) *LogTail {
	t, _ := ctx.Value(tailKey{}).(*LogTail)
	return t
}

// LogGroup is the log group of a function's log.
func LogGroup(functionName string) string { return "/aws/lambda/" + functionName }

// logLine writes a line of the environment's log stream: to the sink, to
// the tail of the invocation it belongs to (inv, nil for none), and to the
// function's logger (with attrs: the process's stream of a line it wrote).
func (e *env) logLine(inv *invocation, line string, attrs ...any) {
	f := e.f
	if f.cfg.Logs != nil {
		f.cfg.Logs.PutLogEvent(LogGroup(f.cfg.FunctionName), e.logStream, line)
	}
	id := ""
	if inv != nil {
		id = inv.id
		if inv.tail != nil {
			inv.tail.add(line)
		}
	}
	f.log.Info(line, append([]any{"function", f.cfg.FunctionName, "request_id", id, "log_stream", e.logStream}, attrs...)...)
}

// logStart writes START before inv is offered to e.
func (e *env) logStart(inv *invocation) {
	inv.start = time.Now()
	e.logLine(inv, fmt.Sprintf("START RequestId: %s Version: %s", inv.id, e.f.cfg.ExecutedVersion()))
}

// logEnd writes END and REPORT once inv has its outcome (after a timeout's
// line). cold: e was started for inv, so REPORT has its Init Duration.
func (e *env) logEnd(inv *invocation, cold bool, timedOut bool) {
	if timedOut {
		e.logLine(inv, fmt.Sprintf("%s %s Task timed out after %d.00 seconds", time.Now().UTC().Format("2006-01-02T15:04:05.000Z"), inv.id, e.f.cfg.Timeout))
	}
	d := time.Since(inv.start)
	ms := float64(d.Microseconds()) / 1000
	var b strings.Builder
	fmt.Fprintf(&b, "REPORT RequestId: %s\tDuration: %.2f ms\tBilled Duration: %d ms\tMemory Size: %d MB\tMax Memory Used: %d MB\t",
		inv.id, ms, int64(math.Ceil(ms)), e.f.cfg.MemorySize, e.maxMemoryMB())
	if cold {
		e.mu.Lock()
		init := e.readyAt.Sub(e.startedAt)
		e.mu.Unlock()
		if init > 0 {
			fmt.Fprintf(&b, "Init Duration: %.2f ms\t", float64(init.Microseconds())/1000)
		}
	}
	if timedOut {
		b.WriteString("Status: timeout")
	}
	e.logLine(inv, "END RequestId: "+inv.id)
	e.logLine(inv, b.String())
}

// maxMemoryMB is the peak resident size of the environment's process
// (VmHWM, Linux), 0 where it cannot be read.
func (e *env) maxMemoryMB() int64 {
	e.mu.Lock()
	cmd := e.cmd
	e.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return 0
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return (kb + 1023) / 1024
		}
	}
	return 0
}

// awaitFlush waits until a managed runtime's client has written the flush
// mark on stdout and stderr after inv's handler returned (so its output is
// logged before END), or the process exited, or a second passed (a
// client that printed no mark: the output still reaches the log, after
// END).
func (e *env) awaitFlush() {
	if e.f.interp == nil {
		return
	}
	timer := time.NewTimer(time.Second)
	defer timer.Stop()
	for range 2 {
		select {
		case <-e.flushed:
		case <-e.exited:
			return
		case <-timer.C:
			e.f.log.Warn("function runtime client did not mark the end of its output in time", "function", e.f.cfg.FunctionName)
			return
		}
	}
}
