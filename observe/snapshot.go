// Package observe is runnel's operator's view: Prometheus metrics, alarm
// rules, and the status summary `runnel status` and `runnel serve --http`
// show.
//
// Nothing here keeps counters of its own. Every reader (a Prometheus
// scrape, an alarm evaluation, the /status page, `runnel status`) takes a
// Snapshot of runnel's live state at that moment: function.Function.Stats,
// async.Service.Stats, mapping.Service.Status (live for mappings running
// in this process, the stored checkpoints and last published counters for
// the others) and queue.Service.GetQueueAttributes.
//
// Time is read from the engine's clock (engine.Engine.Clock), so alarm
// rules run on a fake clock in tests.
//
// The age of a queue's oldest message comes from
// queue.Service.ApproximateAgeOfOldestMessage, and Lambda's AsyncEventAge
// from async.Stats.AsyncEventAgeMs.
package observe

import (
	"context"
	"errors"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/function/async"
	"github.com/runnel-dev/runnel/mapping"
	"github.com/runnel-dev/runnel/queue"
	"github.com/runnel-dev/runnel/sns"
	"github.com/runnel-dev/runnel/stream"
)

// Snapshot is runnel's state at one moment, as every reader of this
// package sees it.
type Snapshot struct {
	Time      time.Time       `json:"time"`
	Functions []FunctionState `json:"functions"`
	Mappings  []MappingState  `json:"mappings"`
	Queues    []QueueState    `json:"queues"`
	// Topics are the SNS topics with their delivery counters (this
	// process's, since it started).
	Topics []TopicState `json:"topics,omitempty"`
	// Rules are the EventBridge rules' counters, Schedules the
	// Scheduler schedules'.
	Rules     []RuleState     `json:"rules,omitempty"`
	Schedules []ScheduleState `json:"schedules,omitempty"`
	// Errors are the parts of the state that could not be read (a queue
	// deleted during the snapshot, an unreachable bucket); the rest is
	// still reported.
	Errors []string `json:"errors,omitempty"`
}

// TopicState is an SNS topic's counters.
type TopicState struct {
	Name string `json:"name"`
	sns.Stats
}

// FunctionState is a function's counters.
type FunctionState struct {
	Name string `json:"name"`
	// Live is true when the counters are this process's function.Stats
	// (since the process started). When false (the function's handler is
	// not registered in this process, or TakeOptions.Passive), Invocations,
	// Errors and Throttles are the sums of its mappings' counters as
	// published by the process running them, and the other fields are 0.
	Live                 bool    `json:"live"`
	Invocations          int64   `json:"invocations"`
	Errors               int64   `json:"errors"`
	Throttles            int64   `json:"throttles"`
	ConcurrentExecutions int64   `json:"concurrentExecutions"`
	DurationSeconds      float64 `json:"durationSeconds"`
	Abandoned            int64   `json:"abandoned"`
	// Async holds the asynchronous invocation counters (live functions
	// only).
	Async *async.Stats `json:"async,omitempty"`
}

// MappingState is an event source mapping's configuration summary and
// status.
type MappingState struct {
	UUID     string `json:"uuid"`
	Function string `json:"function"`
	// Source is the stream's or queue's name; SourceKind "stream" or
	// "queue".
	Source      string                `json:"source"`
	SourceKind  string                `json:"sourceKind"`
	SourceArn   string                `json:"sourceArn"`
	State       string                `json:"state"`
	Live        bool                  `json:"live"`
	PublishedAt time.Time             `json:"publishedAt,omitzero"`
	Shards      []mapping.ShardStatus `json:"shards,omitempty"`
	Queue       *mapping.QueueStatus  `json:"queue,omitempty"`
	// OnFailure is the on-failure destination's ARN, "" if none.
	OnFailure string `json:"onFailure,omitempty"`
}

// MaxIteratorAge is the largest iterator age of the mapping's shards, in
// milliseconds, and that shard's id ("" for a queue mapping or no shard).
func (m MappingState) MaxIteratorAge() (ms int64, shard string) {
	for i, s := range m.Shards {
		if i == 0 || s.IteratorAgeMs > ms {
			ms, shard = s.IteratorAgeMs, s.ShardID
		}
	}
	return ms, shard
}

// PendingRecords is the sum of the shards' pending records.
func (m MappingState) PendingRecords() int64 {
	var n int64
	for _, s := range m.Shards {
		n += s.PendingRecords
	}
	return n
}

// QueueState is a queue's depth (GetQueueAttributes' Approximate*
// attributes, counted by the engine clock).
type QueueState struct {
	Name       string `json:"name"`
	URL        string `json:"url"`
	Visible    int64  `json:"visible"`
	NotVisible int64  `json:"notVisible"`
	Delayed    int64  `json:"delayed"`
	// OldestAgeSeconds is the age of the oldest message
	// (ApproximateAgeOfOldestMessage).
	OldestAgeSeconds float64 `json:"oldestAgeSeconds"`
	// DeadLetter is true for a dead-letter queue: the RedrivePolicy target
	// of some queue, the on-failure destination of a mapping, a function's
	// asynchronous OnFailure destination or DeadLetterConfig queue, an SNS
	// subscription's or an EventBridge/Scheduler target's dead-letter
	// queue, runnel's
	// built-in asynchronous dead-letter store, or a queue whose name
	// matches the dead-letter name pattern. DeadLetterFor says why.
	DeadLetter    bool     `json:"deadLetter"`
	DeadLetterFor []string `json:"deadLetterFor,omitempty"`
	// Expired is how many messages this process deleted for their
	// MessageRetentionPeriod since it started (queue.ExpiredMessages).
	Expired int64 `json:"expired"`
}

// Depth is every message the queue holds: visible, in flight and delayed.
func (q QueueState) Depth() int64 { return q.Visible + q.NotVisible + q.Delayed }

// DefaultDeadLetterPattern matches queue names that look like dead-letter
// queues: "orders-dlq", "DLQ-orders", "orders_dead_letter",
// "orders-deadletter".
const DefaultDeadLetterPattern = `(?i)(^|[-_.])dlq($|[-_.])|dead[-_]?letter`

var defaultDeadLetterRE = regexp.MustCompile(DefaultDeadLetterPattern)

// TakeOptions tune Take.
type TakeOptions struct {
	// DeadLetter matches dead-letter queue names; nil:
	// DefaultDeadLetterPattern.
	DeadLetter *regexp.Regexp
	// Passive is for a process that only reads runnel's state (`runnel
	// status`) while another process runs the functions: its own function
	// counters are all zero, so every function's counters are summed from
	// its mappings' published counters (FunctionState.Live false).
	Passive bool
}

// Take reads a Snapshot of rn. It never fails as a whole: what could not
// be read is listed in Snapshot.Errors.
func Take(ctx context.Context, rn *runnel.Runnel, o TakeOptions) *Snapshot {
	deadLetter := o.DeadLetter
	if deadLetter == nil {
		deadLetter = defaultDeadLetterRE
	}
	snap := &Snapshot{Time: rn.Engine.Clock.Now(), Rules: takeRules(rn), Schedules: takeSchedules(rn)}
	fail := func(what string, err error) { snap.Errors = append(snap.Errors, what+": "+err.Error()) }

	// Mappings.
	for _, c := range rn.Mappings.ListEventSourceMappings() {
		m := MappingState{UUID: c.UUID, Function: functionName(c.FunctionName), SourceArn: c.EventSourceArn, State: c.State}
		if n, _, ok := stream.SourceOfARN(c.EventSourceArn); ok {
			m.Source, m.SourceKind = n, "stream"
		} else if n, ok := queue.NameFromARN(c.EventSourceArn); ok {
			m.Source, m.SourceKind = n, "queue"
		} else {
			m.Source = c.EventSourceArn
		}
		if c.DestinationConfig != nil && c.DestinationConfig.OnFailure != nil {
			m.OnFailure = c.DestinationConfig.OnFailure.Destination
		}
		st, err := rn.Mappings.Status(c.UUID)
		if err != nil {
			if !errors.Is(err, context.Canceled) {
				fail("mapping "+c.UUID, err)
			}
			continue
		}
		m.Live, m.PublishedAt, m.Shards, m.Queue = st.Live, st.PublishedAt, st.Shards, st.Queue
		snap.Mappings = append(snap.Mappings, m)
	}

	// Functions: those loaded in this process, those stored (their
	// handlers may be registered only in the serving process), and those
	// mappings name.
	names := map[string]bool{}
	for _, c := range rn.Functions.ListFunctions() {
		names[c.FunctionName] = true
	}
	if kv, err := rn.Engine.Bucket(ctx, "runnel_functions"); err == nil {
		keys, err := kv.Keys(ctx)
		if err != nil && !errors.Is(err, jetstream.ErrNoKeysFound) {
			fail("list stored functions", err)
		}
		for _, k := range keys {
			names[k] = true
		}
	} else {
		fail("open functions bucket", err)
	}
	for _, m := range snap.Mappings {
		names[m.Function] = true
	}
	for _, name := range slices.Sorted(maps.Keys(names)) {
		f := FunctionState{Name: name}
		if fn, err := rn.Functions.GetFunction(name); err == nil && !o.Passive {
			s := fn.Stats()
			f.Live = true
			f.Invocations, f.Errors, f.Throttles = s.Invocations, s.Errors, s.Throttles
			f.ConcurrentExecutions, f.DurationSeconds, f.Abandoned = s.ConcurrentExecutions, s.TotalDuration.Seconds(), s.Abandoned
			if rn.Async != nil {
				as := rn.Async.Stats(name)
				f.Async = &as
			}
		} else {
			for _, m := range snap.Mappings {
				if m.Function != name {
					continue
				}
				for _, s := range m.Shards {
					f.Invocations += s.Invocations
					f.Errors += s.FunctionErrors
					f.Throttles += s.Throttles
				}
				if q := m.Queue; q != nil {
					f.Invocations += q.Invocations
					f.Errors += q.FunctionErrors
					f.Throttles += q.Throttles
				}
			}
		}
		snap.Functions = append(snap.Functions, f)
	}

	// Queues.
	urls, err := rn.Queues.ListQueues(ctx, "")
	if err != nil {
		fail("list queues", err)
	}
	dlqFor := map[string][]string{}
	for _, m := range snap.Mappings {
		if n, ok := queue.NameFromARN(m.OnFailure); ok {
			dlqFor[n] = append(dlqFor[n], "on-failure destination of mapping "+m.UUID)
		}
	}
	dlqFor[async.DeadLetterStore] = append(dlqFor[async.DeadLetterStore], "runnel's asynchronous dead-letter store")
	for _, f := range snap.Functions {
		asyncDeadLetters(rn, f.Name, dlqFor)
	}
	ruleDeadLetters(rn, dlqFor)
	for _, u := range urls {
		name := u[strings.LastIndexByte(u, '/')+1:]
		attrs, err := rn.Queues.GetQueueAttributes(ctx, u, []string{queue.AttrAll})
		if err != nil {
			fail("queue "+name, err)
			continue
		}
		q := QueueState{Name: name, URL: u,
			Visible:    atoi(attrs[queue.AttrApproximateNumberOfMessages]),
			NotVisible: atoi(attrs[queue.AttrApproximateNumberOfMessagesNotVisible]),
			Delayed:    atoi(attrs[queue.AttrApproximateNumberOfMessagesDelayed]),
			Expired:    rn.Queues.ExpiredMessages(name)}
		if age, err := rn.Queues.ApproximateAgeOfOldestMessage(ctx, u); err == nil {
			q.OldestAgeSeconds = age.Seconds()
		}
		if p := attrs[queue.AttrRedrivePolicy]; p != "" {
			if rp, err := queue.ParseRedrivePolicy(p); err == nil {
				if n, ok := queue.NameFromARN(rp.DeadLetterTargetArn); ok {
					dlqFor[n] = append(dlqFor[n], "RedrivePolicy target of queue "+name)
				}
			}
		}
		snap.Queues = append(snap.Queues, q)
	}
	for _, name := range rn.SNS.TopicNames() {
		snap.Topics = append(snap.Topics, TopicState{Name: name, Stats: rn.SNS.Stats(name)})
	}
	for q, subs := range rn.SNS.DeadLetterQueues() {
		for _, sub := range subs {
			dlqFor[q] = append(dlqFor[q], "RedrivePolicy target of SNS subscription "+sub)
		}
	}
	for i := range snap.Queues {
		q := &snap.Queues[i]
		q.DeadLetterFor = dlqFor[q.Name]
		if len(q.DeadLetterFor) == 0 && deadLetter.MatchString(q.Name) {
			q.DeadLetterFor = []string{"named like a dead-letter queue"}
		}
		slices.Sort(q.DeadLetterFor)
		q.DeadLetterFor = slices.Compact(q.DeadLetterFor)
		q.DeadLetter = len(q.DeadLetterFor) > 0
	}
	return snap
}

// asyncDeadLetters adds to dlqFor the queues where function fn's failed
// asynchronous events go: the OnFailure destination of each of its
// event invoke configurations ($LATEST's, a version's or an alias's:
// PutFunctionEventInvokeConfig DestinationConfig.OnFailure) and the
// DeadLetterConfig queue (the configuration's, else the function's own).
// Destinations that are not queues (a topic, a function, a bus) are
// skipped.
func asyncDeadLetters(rn *runnel.Runnel, fn string, dlqFor map[string][]string) {
	add := func(arn, why string) {
		if n, ok := queue.NameFromARN(arn); ok {
			dlqFor[n] = append(dlqFor[n], why)
		}
	}
	if rn.Async != nil {
		for _, c := range rn.Async.ListFunctionEventInvokeConfigs(fn) {
			ref := fn
			if c.Qualifier != "" {
				ref += ":" + c.Qualifier
			}
			if d := c.DestinationConfig; d != nil && d.OnFailure != nil {
				add(d.OnFailure.Destination, "asynchronous on-failure destination of function "+ref)
			}
			if d := c.DeadLetterConfig; d != nil {
				add(d.TargetArn, "DeadLetterConfig of function "+ref)
			}
		}
	}
	if f, err := rn.Functions.Describe(fn); err == nil {
		if d := f.Config().DeadLetterConfig; d != nil {
			add(d.TargetArn, "DeadLetterConfig of function "+fn)
		}
	}
}

func functionName(ref string) string {
	if n, ok := function.FunctionNameFromARN(ref); ok {
		return n
	}
	return ref
}

func atoi(s string) int64 { n, _ := strconv.ParseInt(s, 10, 64); return n }
