package observe_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/mapping"
	"github.com/runnel-dev/runnel/observe"
)

func TestConfigValidate(t *testing.T) {
	c := observe.Config{}.WithDefaults()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.Interval != 10*time.Second || c.IteratorAge != time.Minute || c.ErrorRate != 0.01 || c.DLQDepth != 0 || c.Throttles != 0 || c.HookTimeout != 10*time.Second {
		t.Fatalf("defaults: %+v", c)
	}
	for _, bad := range []observe.Config{
		{Interval: -time.Second},
		{DLQDepth: -1},
		{IteratorAge: -time.Second},
		{ErrorRate: 1},
		{ErrorRate: -0.5},
		{Throttles: -1},
		{HookTimeout: -1},
		{DeadLetterPattern: "("},
		{Webhook: "ftp://example.com/x"},
		{Webhook: "not a url"},
	} {
		if err := bad.Validate(); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}

// hooks records the webhook's POSTs and the command's runs.
type hooks struct {
	t    *testing.T
	srv  *httptest.Server
	file string

	mu    sync.Mutex
	posts []observe.Change
}

func newHooks(t *testing.T) *hooks {
	h := &hooks{t: t, file: filepath.Join(t.TempDir(), "hook.log")}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var c observe.Change
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("webhook: %s %s", r.Method, r.Header.Get("Content-Type"))
		}
		if err := json.NewDecoder(r.Body).Decode(&c); err != nil {
			t.Errorf("webhook body: %v", err)
		}
		h.mu.Lock()
		h.posts = append(h.posts, c)
		h.mu.Unlock()
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hooks) config(c observe.Config) observe.Config {
	c.Webhook = h.srv.URL
	c.Command = `printf '%s|%s|%s|%s|%s\n' "$RUNNEL_ALARM_NAME" "$RUNNEL_ALARM_STATE" "$RUNNEL_ALARM_VALUE" "$RUNNEL_ALARM_PREVIOUS_STATE" "$RUNNEL_ALARM_MESSAGE" >> ` + h.file
	c.Logger = testenv.Logger(h.t)
	return c
}

// check asserts that the hooks fired exactly for want ("name STATE"), in
// order, once each: the webhook and the command alike.
func (h *hooks) check(want ...string) {
	h.t.Helper()
	h.mu.Lock()
	var got []string
	for _, p := range h.posts {
		got = append(got, p.Name+" "+string(p.State))
	}
	h.mu.Unlock()
	if strings.Join(got, ",") != strings.Join(want, ",") {
		h.t.Fatalf("webhook posts: %q, want %q", got, want)
	}
	b, _ := os.ReadFile(h.file)
	var ran []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if f := strings.Split(line, "|"); len(f) == 5 {
			ran = append(ran, f[0]+" "+f[1])
			if f[4] == "" || f[2] == "" {
				h.t.Errorf("command env incomplete: %q", line)
			}
		}
	}
	if strings.Join(ran, ",") != strings.Join(want, ",") {
		h.t.Fatalf("command runs: %q, want %q", ran, want)
	}
}

func (h *hooks) last() observe.Change {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.posts[len(h.posts)-1]
}

func names(cs []observe.Change) string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name+" "+string(c.State))
	}
	return strings.Join(out, ",")
}

func alarm(t *testing.T, a *observe.Alarms, name string) observe.Alarm {
	t.Helper()
	for _, al := range a.Alarms() {
		if al.Name == name {
			return al
		}
	}
	t.Fatalf("no alarm %s in %+v", name, a.Alarms())
	return observe.Alarm{}
}

// TestDLQDepthAlarmRunsOnTheEngineClock runs the evaluation loop on a fake
// clock: a message in a dead-letter queue fires the alarm at the next
// evaluation, draining it clears it, and each change runs the hooks once.
func TestDLQDepthAlarmRunsOnTheEngineClock(t *testing.T) {
	rn, clock := start(t)
	h := newHooks(t)
	dlq := createQueue(t, rn, "orders-dlq", nil)
	a, err := observe.NewAlarms(rn, h.config(observe.Config{Interval: 10 * time.Second}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); a.Run(ctx) }()
	defer func() { cancel(); <-done }()
	evaluated := func() {
		testenv.Eventually(t, wait, "an evaluation at "+clock.Now().String(), func() bool {
			last, _ := a.LastEvaluation()
			return last.Equal(clock.Now())
		})
	}
	// tick advances the clock by an interval and waits for the
	// evaluation; two ticks make sure the hooks of the first are done
	// (evaluations and their hooks run one at a time).
	tick := func() {
		clock.Advance(10 * time.Second)
		evaluated()
	}
	evaluated()
	tick()
	if al := alarm(t, a, "dlq-depth:orders-dlq"); al.State != observe.StateOK || !al.Since.Equal(t0) {
		t.Fatalf("empty DLQ: %+v", al)
	}
	h.check()

	send(t, rn, dlq, 3)
	tick()
	tick()
	al := alarm(t, a, "dlq-depth:orders-dlq")
	if al.State != observe.StateAlarm || al.Value != 3 || al.Threshold != 0 || !al.Since.Equal(t0.Add(20*time.Second)) ||
		!strings.Contains(al.Message, "named like a dead-letter queue") {
		t.Fatalf("DLQ with 3 messages: %+v", al)
	}
	h.check("dlq-depth:orders-dlq ALARM")
	if c := h.last(); c.Previous != observe.StateOK || c.Value != 3 {
		t.Fatalf("webhook payload: %+v", c)
	}
	tick()
	h.check("dlq-depth:orders-dlq ALARM") // no change, no hook

	drain(t, rn, dlq)
	tick()
	tick()
	if al := alarm(t, a, "dlq-depth:orders-dlq"); al.State != observe.StateOK || al.Value != 0 {
		t.Fatalf("drained DLQ: %+v", al)
	}
	h.check("dlq-depth:orders-dlq ALARM", "dlq-depth:orders-dlq OK")
	if c := h.last(); c.Previous != observe.StateAlarm {
		t.Fatalf("webhook payload: %+v", c)
	}
}

// TestIteratorAgeAlarm holds a record in a blocked invocation while the
// fake clock passes 60 s, then lets it through.
func TestIteratorAgeAlarm(t *testing.T) {
	rn, clock := start(t)
	h := newHooks(t)
	g := newGate()
	defer g.open()
	arn := createStream(t, rn, "s")
	fn := kinesisFunction(t, rn, function.Config{Timeout: 900}, func(ctx context.Context, ev events.KinesisEvent) error { return g.wait(ctx) })
	put(t, rn, "s", "r1")
	id := createMapping(t, rn, mapping.Config{EventSourceArn: arn, FunctionName: fn, BatchSize: 1})
	pending := func(n int64) func() bool {
		return func() bool {
			st, err := rn.Mappings.Status(id)
			return err == nil && len(st.Shards) == 1 && st.Shards[0].PendingRecords == n
		}
	}
	testenv.Eventually(t, wait, "the record in flight", pending(1))
	a, err := observe.NewAlarms(rn, h.config(observe.Config{}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if cs := a.Evaluate(ctx); len(cs) != 0 {
		t.Fatalf("first evaluation: %s", names(cs))
	}
	name := "iterator-age:" + id
	clock.Advance(30 * time.Second)
	if cs := a.Evaluate(ctx); len(cs) != 0 {
		t.Fatalf("at 30 s: %s", names(cs))
	}
	if al := alarm(t, a, name); al.Value != 30000 || al.Threshold != 60000 {
		t.Fatalf("at 30 s: %+v", al)
	}
	clock.Advance(31 * time.Second)
	if cs := a.Evaluate(ctx); names(cs) != name+" ALARM" {
		t.Fatalf("at 61 s: %s", names(cs))
	}
	if al := alarm(t, a, name); al.Value != 61000 || !strings.Contains(al.Message, "shardId-000000000000") {
		t.Fatalf("at 61 s: %+v", al)
	}
	h.check(name + " ALARM")

	g.open()
	testenv.Eventually(t, wait, "the record processed", pending(0))
	clock.Advance(10 * time.Second)
	if cs := a.Evaluate(ctx); names(cs) != name+" OK" {
		t.Fatalf("caught up: %s", names(cs))
	}
	if cs := a.Evaluate(ctx); len(cs) != 0 {
		t.Fatalf("again: %s", names(cs))
	}
	h.check(name+" ALARM", name+" OK")
}

// TestErrorRateAndThrottleAlarms checks the windowed rules: the error
// rate and the throttles counted between two evaluations.
func TestErrorRateAndThrottleAlarms(t *testing.T) {
	rn, clock := start(t)
	h := newHooks(t)
	fn := rawFunction(t, rn, function.Config{})
	throttled := rawFunction(t, rn, function.Config{ReservedConcurrentExecutions: ptr(0)})
	a, err := observe.NewAlarms(rn, h.config(observe.Config{}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	step := func(what, want string) {
		t.Helper()
		clock.Advance(10 * time.Second)
		if cs := a.Evaluate(ctx); names(cs) != want {
			t.Fatalf("%s: changes %q, want %q", what, names(cs), want)
		}
	}
	step("no invocations", "")

	for i := 0; i < 9; i++ {
		invoke(t, rn, fn, false)
	}
	invoke(t, rn, fn, true)
	step("1 error in 10", "error-rate:"+fn+" ALARM")
	if al := alarm(t, a, "error-rate:"+fn); al.Value != 0.1 || al.Threshold != 0.01 || !strings.Contains(al.Message, "1 errors in 10 invocations (10%) in the last 10s") {
		t.Fatalf("error rate: %+v", al)
	}
	step("no invocations in the window", "error-rate:"+fn+" OK")

	for i := 0; i < 5; i++ {
		invoke(t, rn, fn, true)
	}
	step("5 errors in 5", "error-rate:"+fn+" ALARM")
	for i := 0; i < 199; i++ {
		invoke(t, rn, fn, false)
	}
	invoke(t, rn, fn, true)
	step("1 error in 200 (0.5%)", "error-rate:"+fn+" OK")

	invoke(t, rn, throttled, false)
	invoke(t, rn, throttled, false)
	step("2 throttles", "throttles:"+throttled+" ALARM")
	if al := alarm(t, a, "throttles:"+throttled); al.Value != 2 {
		t.Fatalf("throttles: %+v", al)
	}
	if al := alarm(t, a, "error-rate:"+throttled); al.State != observe.StateOK {
		t.Fatalf("a throttle is not an error: %+v", al)
	}
	step("no throttles", "throttles:"+throttled+" OK")
	step("quiet", "")

	h.check("error-rate:"+fn+" ALARM", "error-rate:"+fn+" OK", "error-rate:"+fn+" ALARM", "error-rate:"+fn+" OK",
		"throttles:"+throttled+" ALARM", "throttles:"+throttled+" OK")
}

// TestStatusFromStoredState evaluates the rules once in a second, passive
// process view of the same data: counters come from the published mapping
// status, queues from the queue store.
func TestStatusFromStoredState(t *testing.T) {
	dir := t.TempDir()
	clock := clockwork.NewFakeClockAt(t0)
	rn := testenv.Start(t, testenv.Options{Dir: dir, Clock: clock})
	arn := createStream(t, rn, "s")
	fn := kinesisFunction(t, rn, function.Config{}, func(ctx context.Context, ev events.KinesisEvent) error { return nil })
	put(t, rn, "s", "a", "b")
	id := createMapping(t, rn, mapping.Config{EventSourceArn: arn, FunctionName: fn, BatchSize: 1})
	testenv.Eventually(t, wait, "processed", func() bool {
		st, _ := rn.Mappings.Status(id)
		return st.Shards[0].ProcessedRecords == 2
	})
	send(t, rn, createQueue(t, rn, "x-dlq", nil), 1)
	rn.Close() // publishes the final status

	clock.Advance(2 * time.Minute)
	passive := testenv.Start(t, testenv.Options{Dir: dir, Clock: clock, Mappings: mapping.Options{Passive: true}})
	report := statusOnce(t, passive)
	got := map[string]observe.State{}
	for _, al := range report.Alarms {
		got[al.Name] = al.State
	}
	if got["dlq-depth:x-dlq"] != observe.StateAlarm || got["iterator-age:"+id] != observe.StateOK || got["error-rate:"+fn] != observe.StateOK {
		t.Fatalf("alarms: %+v", report.Alarms)
	}
	if len(report.State.Functions) != 1 || report.State.Functions[0].Live || report.State.Functions[0].Invocations != 2 {
		t.Fatalf("functions: %+v", report.State.Functions)
	}
	var b strings.Builder
	observe.WriteText(&b, report)
	for _, want := range []string{"1 of 4 alarms in ALARM", "ALARM  dlq-depth:x-dlq", "stream s", "x-dlq", "sum of its mappings"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, b.String())
		}
	}
	t.Log("\n" + b.String())
}

func statusOnce(t *testing.T, rn *runnel.Runnel) *observe.Report {
	t.Helper()
	a, err := observe.NewAlarms(rn, observe.Config{Logger: testenv.Logger(t), Passive: true})
	if err != nil {
		t.Fatal(err)
	}
	return a.Report(context.Background())
}
