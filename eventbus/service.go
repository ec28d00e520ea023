// Package eventbus is EventBridge (https://docs.aws.amazon.com/eventbridge/latest/APIReference/)
// over runnel's engine: event buses (the "default" bus always exists),
// rules with an EventPattern (mapping/filter's matcher, the language of
// https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-event-patterns.html)
// or a ScheduleExpression (rate() or cron(), default bus only, on the
// engine's clock), their targets (Lambda, SQS, Kinesis, another bus; see
// package target for delivery, retries and dead letters), PutEvents,
// archives and replays.
//
// # Delivery
//
// PutEvents validates each entry, matches it against the enabled rules of
// its bus, shapes the payload of each matching target (the whole event,
// Input, InputPath or InputTransformer), and stores one delivery per
// target in target's durable queue (the deliveries of all the call's
// entries together, 10 a write), and the event in each archive of the bus
// whose pattern matches it, before it answers the entry's EventId: an
// accepted event is on disk and delivered at least once. Entries that
// could not be stored get InternalFailure (the client may put them again:
// a possible duplicate, as AWS's at-least-once allows). There is no order
// across events.
//
// # Storage
//
// Buses with their rules and targets in the KV bucket "runnel_event_buses"
// (key = bus name, every change a compare-and-set on the revision);
// archives in "runnel_event_archives", replays in "runnel_event_replays";
// archived events in the JetStream stream "RUNNEL_EB_ARCHIVE", subject
// "ebarchive.<archive id>", one message per event with its ingestion time.
//
// # Cluster
//
// Every process serves the API; the scheduled rules are fired by the
// holder of the lease "eventbridge-schedules", the replays run by the
// holder of the lease "eventbridge-replays" (replay_lease.go), each taken
// over by another process when its holder's lease is lost.
package eventbus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/engine"
	"github.com/runnel-dev/runnel/internal/mapx"
	"github.com/runnel-dev/runnel/mapping/filter"
	"github.com/runnel-dev/runnel/scheduler/expr"
	"github.com/runnel-dev/runnel/target"
)

// DefaultBus is the bus every account has.
const DefaultBus = "default"

const (
	busBucket     = "runnel_event_buses"
	archiveBucket = "runnel_event_archives"
	replayBucket  = "runnel_event_replays"
)

// Limits (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-quota.html).
const (
	MaxTargetsPerRule = 5
	MaxPutTargets     = 10
	MaxPutEvents      = 10
	// MaxPutEventsSize bounds the entries of one PutEvents call, as
	// AWS computes it (eb-putevent-size): 256 KB.
	MaxPutEventsSize = 256 * 1024
	MaxInputLength   = 8192
)

// Rule states (API_PutRule State).
const (
	Enabled  = "ENABLED"
	Disabled = "DISABLED"
	// EnabledWithAllCloudTrailManagementEvents is ENABLED that, on AWS,
	// also gets the read-only CloudTrail management events; runnel has
	// none, so it matches as ENABLED. It is kept and answered as given.
	EnabledWithAllCloudTrailManagementEvents = "ENABLED_WITH_ALL_CLOUDTRAIL_MANAGEMENT_EVENTS"
)

// enabled reports whether a rule in state routes events: ENABLED or
// ENABLED_WITH_ALL_CLOUDTRAIL_MANAGEMENT_EVENTS.
func enabled(state string) bool {
	return state == Enabled || state == EnabledWithAllCloudTrailManagementEvents
}

// EventBus is a bus as DescribeEventBus answers it.
type EventBus struct {
	Name             string
	Arn              string
	Description      string    `json:",omitempty"`
	CreationTime     time.Time `json:"-"`
	LastModifiedTime time.Time `json:"-"`
}

// Rule is a rule (API_DescribeRule's fields). PutRule replaces all of
// them: an omitted field is cleared.
type Rule struct {
	Name         string
	Arn          string
	EventBusName string
	// EventPattern (at most 4096 characters) and/or ScheduleExpression
	// (rate() or cron(), UTC, default bus only); at least one.
	EventPattern       string `json:",omitempty"`
	ScheduleExpression string `json:",omitempty"`
	// State ENABLED (default), DISABLED or
	// ENABLED_WITH_ALL_CLOUDTRAIL_MANAGEMENT_EVENTS (kept and answered as
	// given; it matches as ENABLED). Another value: ValidationException.
	State       string
	Description string `json:",omitempty"`
	RoleArn     string `json:",omitempty"`
}

// Target is a rule's target (API_Target). Input, InputPath and
// InputTransformer are exclusive.
type Target struct {
	// Id: 1..64 of [.\-_A-Za-z0-9], unique within the rule.
	Id  string `yaml:"Id"`
	Arn string `yaml:"Arn"`
	// RoleArn is stored, never checked.
	RoleArn string `json:",omitempty" yaml:"RoleArn"`
	// Input: valid JSON text, at most 8192 characters, sent instead of
	// the event.
	Input string `json:",omitempty" yaml:"Input"`
	// InputPath: a JSONPath ($.detail.x) selecting the part of the event
	// to send, at most 256 characters.
	InputPath        string            `json:",omitempty" yaml:"InputPath"`
	InputTransformer *InputTransformer `json:",omitempty" yaml:"InputTransformer"`
	// KinesisParameters.PartitionKeyPath: a JSONPath into the event; the
	// event id when absent.
	KinesisParameters *KinesisParameters `json:",omitempty" yaml:"KinesisParameters"`
	// SqsParameters.MessageGroupId: required for a FIFO queue.
	SqsParameters    *SqsParameters      `json:",omitempty" yaml:"SqsParameters"`
	RetryPolicy      *target.RetryPolicy `json:",omitempty" yaml:"RetryPolicy"`
	DeadLetterConfig *DeadLetterConfig   `json:",omitempty" yaml:"DeadLetterConfig"`
}

// InputTransformer builds the payload from a template (API_InputTransformer).
type InputTransformer struct {
	// InputPathsMap: at most 100 names → JSONPaths into the event; a
	// name may not start with "AWS." nor be a reserved variable
	// (aws.events.rule-arn, aws.events.rule-name,
	// aws.events.event.ingestion-time, aws.events.event,
	// aws.events.event.json): PutTargets refuses it (ValidationException).
	InputPathsMap map[string]string `json:",omitempty" yaml:"InputPathsMap"`
	// InputTemplate: 1..8192 characters with <name> placeholders.
	InputTemplate string `yaml:"InputTemplate"`
}

// KinesisParameters of a stream target.
type KinesisParameters struct {
	PartitionKeyPath string `yaml:"PartitionKeyPath"`
}

// SqsParameters of a queue target: MessageGroupId, required for a FIFO
// queue.
type SqsParameters = target.SqsParameters

// DeadLetterConfig names a standard SQS queue for failed deliveries.
type DeadLetterConfig = target.DeadLetterConfig

// storedRule is a rule with its targets and schedule progress.
type storedRule struct {
	Rule
	Targets []Target `json:",omitempty"`
	// Created is when the rule was first put (rate() counts from it);
	// LastFired the last occurrence of its schedule (Unix ms).
	Created   int64 `json:",omitempty"`
	LastFired int64 `json:",omitempty"`
}

// storedBus is a bus and its rules, as stored.
type storedBus struct {
	EventBus
	Created  int64
	Modified int64
	Rules    map[string]*storedRule
}

// busState is a bus in memory with its compiled patterns.
type busState struct {
	b        storedBus
	rev      uint64
	matchers map[string]*filter.Matcher
	sched    map[string]*expr.Expr
}

// Options tune the service.
type Options struct {
	Logger *slog.Logger
	// Passive: fire no schedules and run no replays in this process.
	Passive bool
}

// Stats are a rule's counters since the service opened (CloudWatch's
// MatchedEvents, Invocations and FailedInvocations of AWS/Events):
// events matched, deliveries to its targets, and deliveries that failed
// for good (dead-lettered or kept in target's store).
type Stats struct{ MatchedEvents, Invocations, FailedInvocations int64 }

type ruleCounters struct{ matched, invocations atomic.Int64 }

// Service is EventBridge over one engine. It is safe for concurrent use.
type Service struct {
	eng      *engine.Engine
	targets  *target.Service
	log      *slog.Logger
	buses    jetstream.KeyValue
	archKV   jetstream.KeyValue
	replayKV jetstream.KeyValue
	archive  jetstream.Stream

	mu    sync.Mutex
	state map[string]*busState
	stats map[string]*ruleCounters // by rule ARN
	arch  map[string]cachedArchive // by name

	kick chan struct{}
	// nextTrim is when the archives are trimmed next (timer goroutine).
	nextTrim time.Time
	bg       context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup
}

// New opens the service: loads the buses (creating "default"), and unless
// Passive takes part in running the schedule timer and the replays (each
// run by the one process of a cluster that holds its lease).
func New(ctx context.Context, eng *engine.Engine, targets *target.Service, opts Options) (*Service, error) {
	if opts.Logger == nil {
		opts.Logger = eng.Logger
	}
	s := &Service{eng: eng, targets: targets, log: opts.Logger.With("service", "eventbridge"),
		state: map[string]*busState{}, stats: map[string]*ruleCounters{}, arch: map[string]cachedArchive{}, kick: make(chan struct{}, 1)}
	err := eng.Buckets(ctx, map[string]*jetstream.KeyValue{busBucket: &s.buses, archiveBucket: &s.archKV, replayBucket: &s.replayKV})
	if err != nil {
		return nil, err
	}
	if s.archive, err = eng.EnsureStream(ctx, jetstream.StreamConfig{Name: archiveStream,
		Subjects: []string{archiveSubjectPrefix + ">"}, Storage: jetstream.FileStorage, Replicas: eng.Replicas(), AllowDirect: true}); err != nil {
		return nil, err
	}
	if err := s.load(ctx); err != nil {
		return nil, err
	}
	if err := s.loadArchives(ctx); err != nil {
		return nil, err
	}
	if _, err := s.busOf(DefaultBus); err != nil {
		if _, err := s.CreateEventBus(ctx, DefaultBus, ""); err != nil && !errors.Is(err, awserr.ErrResourceAlreadyExists) {
			return nil, err
		}
	}
	targets.SetBus(s.putOnBus)
	s.bg, s.cancel = context.WithCancel(context.Background())
	if err := engine.Watch(s.bg, &s.wg, s.buses, s.applyBus); err != nil {
		s.cancel()
		return nil, err
	}
	// Archives created or deleted through another process (applyArchive).
	if err := engine.Watch(s.bg, &s.wg, s.archKV, s.applyArchive); err != nil {
		s.cancel()
		return nil, err
	}
	if !opts.Passive {
		// One process of a cluster fires scheduled rules: the holder of
		// the lease "eventbridge-schedules".
		leases, err := eng.Leases(ctx)
		if err != nil {
			return nil, err
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			leases.RunWhileHeld(s.bg, "eventbridge-schedules", func(ctx context.Context) { expr.RunTimer(ctx, eng.Clock, s.kick, s.fireSchedules) })
		}()
		// One process runs the replays: the holder of the lease
		// ReplayLease (replay_lease.go).
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			leases.RunWhileHeld(s.bg, ReplayLease, s.runReplays)
		}()
	}
	return s, nil
}

// Close stops the schedule timer and the replays running, and gives up
// their leases (a replay is resumed from its saved progress by the next
// holder of the lease ReplayLease, in another process or at the next New).
func (s *Service) Close() {
	if s.cancel != nil {
		s.cancel()
	}
	s.wg.Wait()
}

func (s *Service) load(ctx context.Context) error {
	return engine.LoadJSON(ctx, s.buses, func(k string, b storedBus, err error) {
		if err != nil {
			s.log.Warn("unreadable event bus ignored", "bus", k, "err", err)
			return
		}
		e, gerr := s.buses.Get(ctx, k)
		if gerr != nil {
			return
		}
		s.state[b.Name] = s.compile(b, e.Revision())
	})
}

// compile builds the in-memory state of a stored bus (its patterns were
// checked when they were put).
func (s *Service) compile(b storedBus, rev uint64) *busState {
	st := &busState{b: b, rev: rev, matchers: map[string]*filter.Matcher{}, sched: map[string]*expr.Expr{}}
	if st.b.Rules == nil {
		st.b.Rules = map[string]*storedRule{}
	}
	for name, r := range st.b.Rules {
		if r.EventPattern != "" {
			if m, err := filter.CompileEventPattern(r.EventPattern); err == nil {
				st.matchers[name] = m
			} else {
				// Stored before a stricter check (mapping/filter): the rule
				// matches nothing until PutRule gives it a valid pattern.
				s.log.Warn("eventbridge: a rule's stored EventPattern no longer compiles; it matches no event",
					"bus", b.Name, "rule", name, "err", err)
			}
		}
		if r.ScheduleExpression != "" {
			if e, err := expr.Parse(r.ScheduleExpression, ""); err == nil {
				st.sched[name] = e
			}
		}
	}
	return st
}

// ARN returns a bus's ARN.
func (s *Service) ARN(bus string) string {
	return fmt.Sprintf("arn:aws:events:%s:%s:event-bus/%s", s.eng.Region(), s.eng.AccountID(), bus)
}

// RuleARN returns a rule's ARN (the default bus's rules have no bus in
// theirs).
func (s *Service) RuleARN(bus, rule string) string {
	if bus == DefaultBus {
		return fmt.Sprintf("arn:aws:events:%s:%s:rule/%s", s.eng.Region(), s.eng.AccountID(), rule)
	}
	return fmt.Sprintf("arn:aws:events:%s:%s:rule/%s/%s", s.eng.Region(), s.eng.AccountID(), bus, rule)
}

// BusName returns the bus name of a name or ARN ("" is the default bus).
func BusName(ref string) string {
	if ref == "" {
		return DefaultBus
	}
	if i := strings.Index(ref, ":event-bus/"); i >= 0 && strings.HasPrefix(ref, "arn:") {
		return ref[i+len(":event-bus/"):]
	}
	return ref
}

var busNameRE = regexp.MustCompile(`^[/\.\-_A-Za-z0-9]{1,256}$`)

func notFound(format string, args ...any) error {
	return awserr.New(awserr.ErrResourceNotFound, format, args...)
}

func (s *Service) busOf(name string) (*busState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.state[name]; st != nil {
		return st, nil
	}
	return nil, notFound("Event bus %s does not exist.", name)
}

// CreateEventBus creates a bus (API_CreateEventBus). Name: 1..256 of
// [/.\-_A-Za-z0-9], not "default". Errors: ErrValidation,
// ErrResourceAlreadyExists.
func (s *Service) CreateEventBus(ctx context.Context, name, description string) (*EventBus, error) {
	if !busNameRE.MatchString(name) || strings.HasPrefix(name, "aws.") {
		return nil, awserr.New(awserr.ErrValidation, "1 validation error detected: Value '%s' at 'name' failed to satisfy constraint: Member must satisfy regular expression pattern: [/\\.\\-_A-Za-z0-9]+ (1..256 characters)", name)
	}
	now := s.eng.Clock.Now()
	b := storedBus{EventBus: EventBus{Name: name, Arn: s.ARN(name), Description: description}, Created: now.UnixMilli(),
		Modified: now.UnixMilli(), Rules: map[string]*storedRule{}}
	data, _ := json.Marshal(b)
	s.mu.Lock()
	defer s.mu.Unlock()
	rev, err := s.buses.Create(ctx, name, data)
	if errors.Is(err, jetstream.ErrKeyExists) {
		return nil, awserr.New(awserr.ErrResourceAlreadyExists, "Event bus %s already exists.", name)
	}
	if err != nil {
		return nil, err
	}
	s.state[name] = s.compile(b, rev)
	out := b.view()
	return &out, nil
}

func (b *storedBus) view() EventBus {
	e := b.EventBus
	e.CreationTime, e.LastModifiedTime = time.UnixMilli(b.Created).UTC(), time.UnixMilli(b.Modified).UTC()
	return e
}

// DeleteEventBus deletes a bus and its rules (API_DeleteEventBus); the
// default bus cannot be deleted (ErrValidation), a missing bus is not an
// error.
func (s *Service) DeleteEventBus(ctx context.Context, name string) error {
	name = BusName(name)
	if name == DefaultBus {
		return awserr.New(awserr.ErrValidation, "Cannot delete event bus default.")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.buses.Delete(ctx, name); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return err
	}
	delete(s.state, name)
	return nil
}

// DescribeEventBus returns a bus (API_DescribeEventBus).
func (s *Service) DescribeEventBus(name string) (*EventBus, error) {
	st, err := s.busOf(BusName(name))
	if err != nil {
		return nil, err
	}
	out := st.b.view()
	return &out, nil
}

// ListEventBuses lists the buses whose name starts with prefix, in name
// order.
func (s *Service) ListEventBuses(prefix string) []EventBus {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []EventBus
	for name, st := range s.state {
		if strings.HasPrefix(name, prefix) {
			out = append(out, st.b.view())
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// update applies fn to a copy of a bus and stores it with a
// compare-and-set; fn's error aborts.
func (s *Service) update(ctx context.Context, bus string, fn func(b *storedBus) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.state[bus]
	if st == nil {
		return notFound("Event bus %s does not exist.", bus)
	}
	var b storedBus
	data, _ := json.Marshal(st.b)
	json.Unmarshal(data, &b) // a deep copy
	if err := fn(&b); err != nil {
		return err
	}
	b.Modified = s.eng.Clock.Now().UnixMilli()
	data, err := json.Marshal(b)
	if err != nil {
		return err
	}
	rev, err := s.buses.Update(ctx, bus, data, st.rev)
	if err != nil {
		return awserr.New(awserr.ErrService, "storing event bus %s: %v", bus, err)
	}
	s.state[bus] = s.compile(b, rev)
	s.wake()
	return nil
}

// wake makes the timer look again at the schedules and archives.
func (s *Service) wake() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

func (s *Service) counters(ruleArn string) *ruleCounters {
	s.mu.Lock()
	defer s.mu.Unlock()
	return mapx.GetOrNew(s.stats, ruleArn)
}

// RuleStats returns a rule's counters by its ARN.
func (s *Service) RuleStats(ruleArn string) Stats {
	c := s.counters(ruleArn)
	return Stats{MatchedEvents: c.matched.Load(), Invocations: c.invocations.Load(), FailedInvocations: s.targets.Source(ruleArn).Failed}
}
