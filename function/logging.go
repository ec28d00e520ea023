package function

// A function's log as Lambda writes it: the log group /aws/lambda/<name>,
// one log stream per execution environment (YYYY/MM/DD/[<version>]<32
// hex>), and around each invocation the platform's lines:
//
//	START RequestId: <id> Version: $LATEST
//	END RequestId: <id>
//	REPORT RequestId: <id>	Duration: 0.52 ms	Billed Duration: 1 ms	Memory Size: 128 MB	Max Memory Used: 0 MB
//
// An in-process function's environment is its Function (one stream per
// version, for the process's life); its handler's own output is the
// runnel process's, not captured. Max Memory Used is 0: an in-process
// handler shares runnel's memory. A process function (function/process)
// writes its own lines, with its process's output and Init Duration.
// https://docs.aws.amazon.com/lambda/latest/dg/monitoring-cloudwatchlogs.html

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// LogSink stores log events (package function/logs, in JetStream).
type LogSink interface {
	// PutLogEvent appends message to the log stream of group, now. It
	// reports its own failures (the sink logs them).
	PutLogEvent(group, stream, message string)
}

// SelfLogging is implemented by handlers that write their invocations'
// START, END and REPORT lines themselves (process functions): package
// function writes none for them.
type SelfLogging interface {
	WritesInvocationLog() bool
}

// SelfTimed is implemented by handlers that enforce the function's
// Timeout themselves (process functions: it starts when a ready runtime
// takes the invocation, after a cold start's init, as Lambda's Invoke
// phase does). For them Invoke sets no deadline at the Timeout, only a
// backstop at MaxInvocationTime plus a grace, and when its context ends
// it waits for the handler (a few seconds at most), which ends the
// invocation and writes its last log lines (the timeout's line, END and
// REPORT) before Invoke returns.
type SelfTimed interface {
	// MaxInvocationTime is the longest an invocation can take, waiting
	// for an environment and its init included.
	MaxInvocationTime() time.Duration
}

// selfLogged marks the invoker of a SelfLogging or SelfTimed handler.
type selfLogged struct {
	invoker
	logs  bool          // SelfLogging: writes its START, END and REPORT
	bound time.Duration // SelfTimed: its MaxInvocationTime (0: not self-timed)
}

// TailSize is how much of an invocation's log Invoke with LogType Tail
// returns: the last 4 KB.
const TailSize = 4096

// LogTail collects the log of one invocation (WithLogTail).
type LogTail struct {
	mu  sync.Mutex
	buf []byte
}

// Add appends a line of the invocation's log.
func (t *LogTail) Add(line string) {
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

// TailOf is the LogTail of ctx's invocation, or nil.
func TailOf(ctx context.Context) *LogTail {
	t, _ := ctx.Value(tailKey{}).(*LogTail)
	return t
}

// LogGroup is the log group of a function's log.
func LogGroup(functionName string) string { return "/aws/lambda/" + functionName }

// LogStreamName is a new environment's log stream name for version ("" or
// $LATEST, or a number), on day now.
func LogStreamName(now time.Time, version string) string {
	if version == "" {
		version = Latest
	}
	b := make([]byte, 16)
	rand.Read(b)
	return now.UTC().Format("2006/01/02") + "/[" + version + "]" + hex.EncodeToString(b)
}

// TimeoutLine is the line Lambda logs before END when invocation id
// timed out after timeout seconds.
func TimeoutLine(now time.Time, id string, timeout int) string {
	return fmt.Sprintf("%s %s Task timed out after %d.00 seconds", now.UTC().Format("2006-01-02T15:04:05.000Z"), id, timeout)
}

// ReportLine is the REPORT line of an invocation of d on memoryMB, with
// maxUsedMB and, for a cold start, its init duration (0: none).
func ReportLine(id string, d time.Duration, memoryMB int, maxUsedMB int64, init time.Duration) string {
	ms := float64(d.Microseconds()) / 1000
	s := fmt.Sprintf("REPORT RequestId: %s\tDuration: %.2f ms\tBilled Duration: %d ms\tMemory Size: %d MB\tMax Memory Used: %d MB\t",
		id, ms, int64(math.Ceil(ms)), memoryMB, maxUsedMB)
	if init > 0 {
		s += fmt.Sprintf("Init Duration: %.2f ms\t", float64(init.Microseconds())/1000)
	}
	return s
}

// sinkRef is the log sink of a service's functions, set once the log
// store is open (Service.SetLogSink).
type sinkRef struct{ v atomic.Pointer[LogSink] }

func (r *sinkRef) get() LogSink {
	if r == nil {
		return nil
	}
	if p := r.v.Load(); p != nil {
		return *p
	}
	return nil
}

// invocationLog writes an in-process invocation's platform lines to the
// service's sink and to the invocation's tail; nil when neither wants
// them, or when the handler writes its own.
type invocationLog struct {
	f    *Function
	sink LogSink
	tail *LogTail
	id   string
}

func (f *Function) invocationLog(ctx context.Context, id string) *invocationLog {
	if sl, self := f.inv.(selfLogged); self && sl.logs {
		return nil
	}
	l := &invocationLog{f: f, sink: f.sinks.get(), tail: TailOf(ctx), id: id}
	if l.sink == nil && l.tail == nil {
		return nil
	}
	return l
}

func (l *invocationLog) line(s string) {
	if l == nil {
		return
	}
	if l.sink != nil {
		l.f.streamOnce.Do(func() { l.f.stream = LogStreamName(l.f.clock.Now(), l.f.cfg.Version) })
		l.sink.PutLogEvent(LogGroup(l.f.cfg.FunctionName), l.f.stream, s)
	}
	if l.tail != nil {
		l.tail.Add(s)
	}
}

func (l *invocationLog) start() {
	if l != nil {
		l.line(fmt.Sprintf("START RequestId: %s Version: %s", l.id, l.f.cfg.ExecutedVersion()))
	}
}

func (l *invocationLog) end(d time.Duration) {
	if l != nil {
		l.line("END RequestId: " + l.id)
		l.line(ReportLine(l.id, d, l.f.cfg.MemorySize, 0, 0))
	}
}
