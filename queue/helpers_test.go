package queue_test

// Helpers shared by the queue package's tests: env, a runnel with the
// queue service on a fake clock, and its calls.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/queue"
)

// epoch is the fake clock's start.
var epoch = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

// env is a runnel with the queue service on a fake clock.
type env struct {
	t     testing.TB
	ctx   context.Context
	clock *clockwork.FakeClock
	dir   string
	rn    *runnel.Runnel
	svc   *queue.Service
}

func newEnv(t testing.TB) *env {
	t.Helper()
	e := &env{t: t, ctx: context.Background(), clock: clockwork.NewFakeClockAt(epoch), dir: t.TempDir()}
	e.open()
	return e
}

func (e *env) open() {
	e.t.Helper()
	e.rn = testenv.Start(e.t, testenv.Options{Clock: e.clock, Dir: e.dir})
	e.svc = e.rn.Queues
	e.t.Cleanup(e.svc.Close)
}

// restart closes runnel cleanly and opens it again on the same data.
func (e *env) restart() {
	e.t.Helper()
	e.svc.Close()
	if err := e.rn.Close(); err != nil {
		e.t.Fatalf("close: %v", err)
	}
	e.open()
}

func (e *env) create(name string, attrs map[string]string) string {
	e.t.Helper()
	url, err := e.svc.CreateQueue(e.ctx, name, attrs)
	if err != nil {
		e.t.Fatalf("CreateQueue %s: %v", name, err)
	}
	return url
}

func (e *env) send(url, body string) *queue.SendMessageOutput {
	e.t.Helper()
	out, err := e.svc.SendMessage(e.ctx, url, queue.SendMessageInput{MessageBody: body})
	if err != nil {
		e.t.Fatalf("SendMessage: %v", err)
	}
	return out
}

func (e *env) sendIn(url string, in queue.SendMessageInput) *queue.SendMessageOutput {
	e.t.Helper()
	out, err := e.svc.SendMessage(e.ctx, url, in)
	if err != nil {
		e.t.Fatalf("SendMessage: %v", err)
	}
	return out
}

func (e *env) receive(url string, in queue.ReceiveMessageInput) []queue.Message {
	e.t.Helper()
	if in.AttributeNames == nil {
		in.AttributeNames = []string{"All"}
	}
	msgs, err := e.svc.ReceiveMessage(e.ctx, url, in)
	if err != nil {
		e.t.Fatalf("ReceiveMessage: %v", err)
	}
	return msgs
}

// receiveAll receives up to 10 messages and returns their bodies.
func (e *env) bodies(url string, in queue.ReceiveMessageInput) []string {
	e.t.Helper()
	if in.MaxNumberOfMessages == 0 {
		in.MaxNumberOfMessages = 10
	}
	var out []string
	for _, m := range e.receive(url, in) {
		out = append(out, m.Body)
	}
	return out
}

func (e *env) delete(url, handle string) {
	e.t.Helper()
	if err := e.svc.DeleteMessage(e.ctx, url, handle); err != nil {
		e.t.Fatalf("DeleteMessage: %v", err)
	}
}

func (e *env) attrs(url string) map[string]string {
	e.t.Helper()
	a, err := e.svc.GetQueueAttributes(e.ctx, url, []string{"All"})
	if err != nil {
		e.t.Fatalf("GetQueueAttributes: %v", err)
	}
	return a
}

// counts returns visible, not visible, delayed.
func (e *env) counts(url string) [3]string {
	e.t.Helper()
	a := e.attrs(url)
	return [3]string{a["ApproximateNumberOfMessages"], a["ApproximateNumberOfMessagesNotVisible"], a["ApproximateNumberOfMessagesDelayed"]}
}

func ptr(i int) *int { return &i }

func str(s string) *string { return &s }

func wantErr(t testing.TB, err, sentinel error, contains ...string) {
	t.Helper()
	if !errors.Is(err, sentinel) {
		t.Fatalf("error = %v, want %v", err, sentinel)
	}
	for _, c := range contains {
		if !strings.Contains(err.Error(), c) {
			t.Fatalf("error %q does not mention %q", err, c)
		}
	}
}

func equal(a, b []string) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

func ms(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }
