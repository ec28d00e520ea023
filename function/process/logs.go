package process

// A function's log as Lambda writes it: each environment is one log
// stream (YYYY/MM/DD/[<version>]<32 hex>, [$LATEST] or [3]) of the group /aws/lambda/<name>;
// its process's stdout and stderr, one event per line, between the START,
// END and REPORT lines of each invocation.

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/runnel-dev/runnel/function"
)

// The log types live in package function, which writes in-process
// functions' lines; these names keep process's API.
type (
	// LogSink stores log events (function.LogSink).
	LogSink = function.LogSink
	// LogTail collects the log of one invocation (function.LogTail).
	LogTail = function.LogTail
)

// TailSize is how much of an invocation's log Invoke with LogType Tail
// returns: the last 4 KB.
const TailSize = function.TailSize

// WithLogTail returns a context whose invocation collects its log lines
// into the returned LogTail (Invoke with LogType Tail).
func WithLogTail(ctx context.Context) (context.Context, *LogTail) { return function.WithLogTail(ctx) }

func tailOf(ctx context.Context) *LogTail { return function.TailOf(ctx) }

// LogGroup is the log group of a function's log.
func LogGroup(functionName string) string { return function.LogGroup(functionName) }

// WritesInvocationLog tells package function that a process function
// writes its own START, END and REPORT lines (function.SelfLogging).
func (f *Function) WritesInvocationLog() bool { return true }

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
			inv.tail.Add(line)
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
		e.logLine(inv, function.TimeoutLine(time.Now(), inv.id, e.f.cfg.Timeout))
	}
	var init time.Duration
	if cold {
		e.mu.Lock()
		init = e.readyAt.Sub(e.startedAt)
		e.mu.Unlock()
	}
	var b strings.Builder
	b.WriteString(function.ReportLine(inv.id, time.Since(inv.start), e.f.cfg.MemorySize, e.maxMemoryMB(), init))
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
