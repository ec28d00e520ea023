package observe

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/function/async"
	"github.com/runnel-dev/runnel/mapping"
)

// State is an alarm's state.
type State string

const (
	StateOK    State = "OK"
	StateAlarm State = "ALARM"
	// StateInsufficientData: the alarm's resource is gone (a deleted
	// queue or function, a disabled or deleted mapping), so its metric
	// has no data. CloudWatch's default for missing data ("missing") moves
	// such an alarm to INSUFFICIENT_DATA rather than deleting it
	// (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/AlarmThatSendsEmail.html#alarms-and-missing-data);
	// the hooks hear that change once, and the alarm's next state when the
	// resource returns.
	StateInsufficientData State = "INSUFFICIENT_DATA"
)

// forgetAfter is how long an alarm stays in INSUFFICIENT_DATA before it
// is forgotten (so that alarms of deleted resources do not pile up); a
// resource back after that is a new alarm (Previous "").
const forgetAfter = 24 * time.Hour

// The rules, from the alarms table of the failure playbook
// (../shared/seeds/004): "alarms worth wiring before the next incident".
const (
	// RuleDLQDepth: a dead-letter queue holds messages (events are leaving
	// the happy path). One alarm per dead-letter queue; the value is the
	// queue's depth: visible, in flight and delayed messages.
	RuleDLQDepth = "dlq-depth"
	// RuleIteratorAge: a stream mapping's IteratorAge is above the
	// threshold (a shard falling behind, or a poison record blocking it).
	// One alarm per enabled stream mapping; the value is the largest
	// iterator age of its shards, in milliseconds.
	RuleIteratorAge = "iterator-age"
	// RuleErrorRate: a function's Errors over its Invocations in the
	// evaluation window is above the threshold. One alarm per function. A
	// window without invocations is not breaching (OK).
	RuleErrorRate = "error-rate"
	// RuleThrottles: a function was throttled in the evaluation window.
	// One alarm per function.
	RuleThrottles = "throttles"
	// RuleAsyncEventAge: a function's asynchronous backlog is not
	// draining: the oldest event waiting in its internal queue (accepted
	// by Invoke with InvocationType Event, not yet run) is older than the
	// threshold (the seed's "AsyncEventAge climbing toward 6 h"; events
	// older than MaximumEventAgeInSeconds, 6 h by default, leave as
	// EventAgeExceeded). One alarm per function with such a queue; the
	// value is the age in milliseconds. Trap: an event retried after a
	// failure or a throttle is queued again, so its age counts from its
	// last retry here; the runnel_function_async_event_age_seconds gauge
	// shows the age at invocation.
	RuleAsyncEventAge = "async-event-age"
)

// Alarm is the state of one rule on one resource.
type Alarm struct {
	// Name is "<rule>:<resource>".
	Name     string `json:"name"`
	Rule     string `json:"rule"`
	Resource string `json:"resource"`
	State    State  `json:"state"`
	// Since is when the alarm entered State (the evaluation that saw it
	// first, for an alarm seen for the first time).
	Since     time.Time `json:"since"`
	Value     float64   `json:"value"`
	Threshold float64   `json:"threshold"`
	// Unit of Value and Threshold: "messages", "ms", "ratio", "throttles".
	Unit    string `json:"unit"`
	Message string `json:"message"`
}

// Change is an alarm that changed state at an evaluation. Previous is ""
// for an alarm seen for the first time (a change only when it is seen in
// ALARM). An alarm whose resource is gone changes to INSUFFICIENT_DATA
// once (not when a part of the state could not be read: it keeps its
// state then), and from INSUFFICIENT_DATA to OK or ALARM when the
// resource is back.
type Change struct {
	Alarm
	Previous State `json:"previousState"`
}

// Config configures the alarm rules and their hooks. The zero value is
// the defaults of seed 004's table.
type Config struct {
	// Interval between evaluations, and so the window of the error-rate
	// and throttle rules. Default 10s.
	Interval time.Duration
	// DLQDepth: a dead-letter queue with more messages than this is in
	// ALARM. Default 0.
	DLQDepth int64
	// IteratorAge: a mapping whose iterator age is above this is in ALARM.
	// Default 60s.
	IteratorAge time.Duration
	// ErrorRate: a function whose errors/invocations in the window is
	// above this fraction is in ALARM. Default 0.01 (1%); 0 means the
	// default (to alarm on any error, give a tiny value such as 1e-9).
	ErrorRate float64
	// Throttles: a function with more throttles than this in the window
	// is in ALARM. Default 0.
	Throttles int64
	// AsyncEventAge: a function whose oldest waiting asynchronous event is
	// older than this is in ALARM. Default 1h.
	AsyncEventAge time.Duration
	// DeadLetterPattern matches the names of queues that are dead-letter
	// queues by name (besides RedrivePolicy and on-failure targets).
	// Default DefaultDeadLetterPattern.
	DeadLetterPattern string

	// Passive: this process only reads runnel's state while another
	// runs the functions (`runnel status`); see TakeOptions.Passive.
	Passive bool

	// AllowedHosts are host names (without port) the HTTP handler answers
	// to on a loopback connection besides localhost, *.localhost, IP
	// addresses and this machine's host name: a reverse proxy's or a
	// scraper's name for this server (see Handler's DNS rebinding check).
	AllowedHosts []string

	// Command, when set, is run with /bin/sh -c at every state change,
	// with the environment variables RUNNEL_ALARM_NAME, RUNNEL_ALARM_STATE,
	// RUNNEL_ALARM_PREVIOUS_STATE, RUNNEL_ALARM_VALUE,
	// RUNNEL_ALARM_THRESHOLD, RUNNEL_ALARM_RULE, RUNNEL_ALARM_RESOURCE and
	// RUNNEL_ALARM_MESSAGE.
	Command string
	// Webhook, when set, receives a POST of the Change as JSON
	// (Content-Type application/json) at every state change.
	Webhook string
	// HookTimeout bounds each run of Command and each POST. Default 10s.
	HookTimeout time.Duration
	// Logger; default slog.Default(). State changes are logged (WARN into
	// ALARM, INFO back to OK), as are hook failures.
	Logger *slog.Logger
	// HTTPClient posts to Webhook; default http.DefaultClient.
	HTTPClient *http.Client
}

// WithDefaults returns a copy of c with every zero field set to its
// default (see each field).
func (c Config) WithDefaults() Config {
	if c.Interval == 0 {
		c.Interval = 10 * time.Second
	}
	if c.IteratorAge == 0 {
		c.IteratorAge = 60 * time.Second
	}
	if c.ErrorRate == 0 {
		c.ErrorRate = 0.01
	}
	if c.AsyncEventAge == 0 {
		c.AsyncEventAge = time.Hour
	}
	if c.DeadLetterPattern == "" {
		c.DeadLetterPattern = DefaultDeadLetterPattern
	}
	if c.HookTimeout == 0 {
		c.HookTimeout = 10 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.HTTPClient == nil {
		c.HTTPClient = http.DefaultClient
	}
	return c
}

// Validate checks the thresholds, the interval, the pattern and the
// webhook URL of c with its defaults applied; c itself is not changed.
func (c Config) Validate() error {
	c = c.WithDefaults()
	switch {
	case c.Interval < 0:
		return fmt.Errorf("alarm interval: %v must be positive", c.Interval)
	case c.DLQDepth < 0:
		return fmt.Errorf("alarm DLQ depth threshold: %d must be >= 0", c.DLQDepth)
	case c.IteratorAge < 0:
		return fmt.Errorf("alarm iterator age threshold: %v must be positive", c.IteratorAge)
	case c.ErrorRate < 0 || c.ErrorRate >= 1:
		return fmt.Errorf("alarm error rate threshold: %v must be a fraction in (0, 1) (0.01 is 1%%)", c.ErrorRate)
	case c.Throttles < 0:
		return fmt.Errorf("alarm throttles threshold: %d must be >= 0", c.Throttles)
	case c.AsyncEventAge < 0:
		return fmt.Errorf("alarm async event age threshold: %v must be positive", c.AsyncEventAge)
	case c.HookTimeout < 0:
		return fmt.Errorf("alarm hook timeout: %v must be positive", c.HookTimeout)
	}
	if _, err := regexp.Compile(c.DeadLetterPattern); err != nil {
		return fmt.Errorf("dead-letter queue name pattern: %v", err)
	}
	if c.Webhook != "" {
		u, err := url.Parse(c.Webhook)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("alarm webhook: %q is not an http(s) URL", c.Webhook)
		}
	}
	return nil
}

// counts are a function's counters at an evaluation.
type counts struct{ invocations, errors, throttles int64 }

// Alarms evaluates the rules on runnel's state (a Snapshot) every
// Interval of the engine's clock, keeps each alarm's state, and runs the
// hooks when one changes. Safe for concurrent use.
type Alarms struct {
	rn  *runnel.Runnel
	cfg Config
	dlq *regexp.Regexp
	log *slog.Logger

	evalMu sync.Mutex // one evaluation (and its hooks) at a time

	mu       sync.Mutex
	alarms   map[string]*Alarm
	prev     map[string]counts
	last     time.Time // the previous evaluation; zero before the first
	lastSnap *Snapshot
}

// NewAlarms validates cfg and returns the alarms of rn; call Run (or
// Evaluate) to evaluate them.
func NewAlarms(rn *runnel.Runnel, cfg Config) (*Alarms, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Alarms{rn: rn, cfg: cfg, dlq: regexp.MustCompile(cfg.DeadLetterPattern), log: cfg.Logger.With("component", "alarms"),
		alarms: map[string]*Alarm{}, prev: map[string]counts{}}, nil
}

// Config returns the configuration, with its defaults.
func (a *Alarms) Config() Config { return a.cfg }

func (a *Alarms) takeOptions() TakeOptions {
	return TakeOptions{DeadLetter: a.dlq, Passive: a.cfg.Passive}
}

// Run evaluates the rules at once and then every Interval of the engine's
// clock until ctx ends.
func (a *Alarms) Run(ctx context.Context) {
	t := a.rn.Engine.Clock.NewTicker(a.cfg.Interval)
	defer t.Stop()
	for {
		a.Evaluate(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.Chan():
		}
	}
}

// Evaluate takes a Snapshot, evaluates every rule on it, runs the hooks of
// the alarms that changed state, and returns those changes.
//
// The error-rate and throttle rules compare the functions' counters with
// those of the previous evaluation; at the first one, with zero: its
// window is everything since the counters started (for `runnel status`,
// since the serving process started).
func (a *Alarms) Evaluate(ctx context.Context) []Change {
	a.evalMu.Lock()
	defer a.evalMu.Unlock()
	snap := Take(ctx, a.rn, a.takeOptions())
	changes := a.apply(snap)
	for _, c := range changes {
		if c.State == StateAlarm {
			a.log.Warn("alarm", "alarm", c.Name, "state", c.State, "value", c.Value, "threshold", c.Threshold, "message", c.Message)
		} else {
			a.log.Info("alarm", "alarm", c.Name, "state", c.State, "value", c.Value, "threshold", c.Threshold, "message", c.Message)
		}
		a.runHooks(ctx, c)
	}
	return changes
}

// apply evaluates the rules on snap and updates the alarms.
func (a *Alarms) apply(snap *Snapshot) []Change {
	now := snap.Time
	a.mu.Lock()
	defer a.mu.Unlock()
	window := "since the counters started"
	if !a.last.IsZero() {
		window = "in the last " + now.Sub(a.last).Round(time.Millisecond).String()
	}
	var seen []Alarm

	for _, q := range snap.Queues {
		if !q.DeadLetter {
			continue
		}
		d := q.Depth()
		seen = append(seen, Alarm{Rule: RuleDLQDepth, Resource: q.Name, Value: float64(d), Threshold: float64(a.cfg.DLQDepth), Unit: "messages",
			State:   state(d > a.cfg.DLQDepth),
			Message: fmt.Sprintf("dead-letter queue %s holds %d messages (%d visible, %d in flight, %d delayed); %s", q.Name, d, q.Visible, q.NotVisible, q.Delayed, joinReasons(q.DeadLetterFor))})
	}

	thr := a.cfg.IteratorAge.Milliseconds()
	for _, m := range snap.Mappings {
		if m.SourceKind != "stream" || m.State != mapping.StateEnabled || len(m.Shards) == 0 {
			continue
		}
		age, shard := m.MaxIteratorAge()
		seen = append(seen, Alarm{Rule: RuleIteratorAge, Resource: m.UUID, Value: float64(age), Threshold: float64(thr), Unit: "ms",
			State: state(age > thr),
			Message: fmt.Sprintf("mapping %s (stream %s -> %s): iterator age %s on %s (%d records pending), threshold %s",
				m.UUID, m.Source, m.Function, time.Duration(age)*time.Millisecond, shard, m.PendingRecords(), a.cfg.IteratorAge)})
	}

	asyncThr := a.cfg.AsyncEventAge.Milliseconds()
	for _, q := range snap.Queues {
		fn, ok := strings.CutPrefix(q.Name, async.QueuePrefix)
		if !ok {
			continue
		}
		age := int64(q.OldestAgeSeconds * 1000)
		seen = append(seen, Alarm{Rule: RuleAsyncEventAge, Resource: fn, Value: float64(age), Threshold: float64(asyncThr), Unit: "ms",
			State: state(age > asyncThr),
			Message: fmt.Sprintf("function %s: the oldest asynchronous event waiting to run was accepted %s ago (%d events waiting), threshold %s",
				fn, (time.Duration(age) * time.Millisecond).Round(time.Second), q.Depth(), a.cfg.AsyncEventAge)})
	}

	cur := map[string]counts{}
	for _, f := range snap.Functions {
		c := counts{f.Invocations, f.Errors, f.Throttles}
		cur[f.Name] = c
		p := a.prev[f.Name]
		if c.invocations < p.invocations || c.errors < p.errors || c.throttles < p.throttles {
			p = counts{} // the counters restarted (a new process, a re-created function)
		}
		inv, errs, throttles := c.invocations-p.invocations, c.errors-p.errors, c.throttles-p.throttles
		rate := 0.0
		if inv > 0 {
			rate = float64(errs) / float64(inv)
		}
		seen = append(seen, Alarm{Rule: RuleErrorRate, Resource: f.Name, Value: rate, Threshold: a.cfg.ErrorRate, Unit: "ratio",
			State: state(inv > 0 && rate > a.cfg.ErrorRate),
			Message: fmt.Sprintf("function %s: %d errors in %d invocations (%s) %s, threshold %s",
				f.Name, errs, inv, percent(rate), window, percent(a.cfg.ErrorRate))})
		seen = append(seen, Alarm{Rule: RuleThrottles, Resource: f.Name, Value: float64(throttles), Threshold: float64(a.cfg.Throttles), Unit: "throttles",
			State:   state(throttles > a.cfg.Throttles),
			Message: fmt.Sprintf("function %s: %d throttles %s, threshold %d", f.Name, throttles, window, a.cfg.Throttles)})
	}
	a.prev = cur
	a.last = now
	a.lastSnap = snap

	var changes []Change
	present := map[string]bool{}
	for _, n := range seen {
		n.Name = n.Rule + ":" + n.Resource
		present[n.Name] = true
		old := a.alarms[n.Name]
		switch {
		case old == nil:
			n.Since = now
			if n.State == StateAlarm {
				changes = append(changes, Change{Alarm: n})
			}
		case old.State != n.State:
			n.Since = now
			changes = append(changes, Change{Alarm: n, Previous: old.State})
		default:
			n.Since = old.Since
		}
		a.alarms[n.Name] = &n
	}
	for name, old := range a.alarms {
		switch {
		case present[name]:
		case len(snap.Errors) > 0:
			// Part of the state could not be read: the resource may be
			// there. The alarm keeps its state until a snapshot without
			// errors says it is gone.
		case old.State != StateInsufficientData:
			// Its queue, mapping or function is gone: no data.
			n := *old
			n.State, n.Since = StateInsufficientData, now
			n.Message = "no data: " + vanished(n.Rule, n.Resource) + " (was " + string(old.State) + ": " + old.Message + ")"
			changes = append(changes, Change{Alarm: n, Previous: old.State})
			a.alarms[name] = &n
		case now.Sub(old.Since) >= forgetAfter:
			delete(a.alarms, name)
		}
	}
	sort.Slice(changes, func(i, j int) bool { return changes[i].Name < changes[j].Name })
	return changes
}

// vanished says why an alarm's resource has no data.
func vanished(rule, resource string) string {
	switch rule {
	case RuleDLQDepth:
		return "queue " + resource + " is gone or no longer a dead-letter queue"
	case RuleIteratorAge:
		return "mapping " + resource + " is disabled, deleted or has no shard"
	default:
		return "function " + resource + " is gone"
	}
}

func state(breaching bool) State {
	if breaching {
		return StateAlarm
	}
	return StateOK
}

func percent(f float64) string { return strconv.FormatFloat(f*100, 'g', 4, 64) + "%" }

func joinReasons(rs []string) string {
	out := ""
	for i, r := range rs {
		if i > 0 {
			out += "; "
		}
		out += r
	}
	return out
}

// Alarms returns every alarm as of the last evaluation: those in ALARM
// first, then by name.
func (a *Alarms) Alarms() []Alarm {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]Alarm, 0, len(a.alarms))
	for _, al := range a.alarms {
		out = append(out, *al)
	}
	SortAlarms(out)
	return out
}

// SortAlarms sorts alarms in ALARM first, then by name.
func SortAlarms(as []Alarm) {
	sort.Slice(as, func(i, j int) bool {
		if (as[i].State == StateAlarm) != (as[j].State == StateAlarm) {
			return as[i].State == StateAlarm
		}
		return as[i].Name < as[j].Name
	})
}

// LastEvaluation is when the rules were last evaluated (zero before the
// first evaluation) and the Snapshot they were evaluated on.
func (a *Alarms) LastEvaluation() (time.Time, *Snapshot) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.last, a.lastSnap
}

func (a *Alarms) runHooks(ctx context.Context, c Change) {
	if a.cfg.Command != "" {
		if err := a.runCommand(ctx, c); err != nil {
			a.log.Error("alarm command failed", "alarm", c.Name, "state", c.State, "err", err)
		}
	}
	if a.cfg.Webhook != "" {
		if err := a.post(ctx, c); err != nil {
			a.log.Error("alarm webhook failed", "alarm", c.Name, "state", c.State, "url", a.cfg.Webhook, "err", err)
		}
	}
}

func (a *Alarms) runCommand(ctx context.Context, c Change) error {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.HookTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", a.cfg.Command)
	cmd.Env = append(os.Environ(),
		"RUNNEL_ALARM_NAME="+c.Name,
		"RUNNEL_ALARM_STATE="+string(c.State),
		"RUNNEL_ALARM_PREVIOUS_STATE="+string(c.Previous),
		"RUNNEL_ALARM_VALUE="+strconv.FormatFloat(c.Value, 'g', -1, 64),
		"RUNNEL_ALARM_THRESHOLD="+strconv.FormatFloat(c.Threshold, 'g', -1, 64),
		"RUNNEL_ALARM_RULE="+c.Rule,
		"RUNNEL_ALARM_RESOURCE="+c.Resource,
		"RUNNEL_ALARM_MESSAGE="+c.Message,
	)
	out, err := cmd.CombinedOutput()
	if err != nil {
		if len(out) > 1024 {
			out = out[:1024]
		}
		return fmt.Errorf("%v: %s", err, bytes.TrimSpace(out))
	}
	return nil
}

func (a *Alarms) post(ctx context.Context, c Change) error {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.HookTimeout)
	defer cancel()
	body, err := json.Marshal(c)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.cfg.Webhook, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.cfg.HTTPClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 != 2 {
		return errors.New(resp.Status + ": " + string(bytes.TrimSpace(msg)))
	}
	return nil
}
