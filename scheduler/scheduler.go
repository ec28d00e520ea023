// Package scheduler is EventBridge Scheduler
// (https://docs.aws.amazon.com/scheduler/latest/APIReference/) over
// runnel's engine: schedule groups ("default" always exists) and schedules
// with at(), rate() and cron() expressions in a time zone (scheduler/expr),
// FlexibleTimeWindow, StartDate and EndDate, State and
// ActionAfterCompletion, whose target (Lambda, SQS, Kinesis) is invoked
// through package target with its RetryPolicy and DeadLetterConfig.
//
// # Firing
//
// Every rule of time reads the engine's clock. A schedule's next
// occurrence follows its last fired one (rate(): first at StartDate, or at
// once without one, then every period; cron(): the next matching minute
// from StartDate or the creation; at(): once). With FlexibleTimeWindow FLEXIBLE the invocation comes at
// a fixed offset inside the window (a hash of the schedule and the
// occurrence, so the same after a restart). Outside [StartDate, EndDate]
// nothing fires; a schedule with no occurrence left is complete and,
// with ActionAfterCompletion DELETE, deleted.
//
// Firing an occurrence stores its delivery (target's durable queue), then
// stores the occurrence as the schedule's last fired one with a
// compare-and-set: no occurrence is skipped, after a crash or a stop of
// any length (a missed one fires at restart). A crash between the two
// writes fires that one occurrence again at restart, but not twice to
// the target: the execution id is derived from the schedule (ARN,
// creation and Generation) and the occurrence, so the second delivery has
// the same id, and the delivery is marked Once, so package target attempts
// only one stored copy of an id and drops the other (logged, counted in
// target.Stats.Duplicates). The delivery itself is then at least once,
// as AWS's: an attempt made again after a crash carries the same
// execution id. An UpdateSchedule that gives an at() schedule a new time
// increments its Generation: moved back to a time it fired at, it fires
// again, with a new execution id.
//
// The target's payload is Input with the context attributes
// <aws.scheduler.schedule-arn>, <aws.scheduler.scheduled-time>,
// <aws.scheduler.execution-id> and <aws.scheduler.attempt-number>
// replaced at each attempt: attempt n (1, 2, ...) has its number and its
// own execution id (the first attempt's is the occurrence's; see
// target.AttemptExecutionID); "{}" without Input. An SQS FIFO target must
// have content-based deduplication (API_SqsParameters): without it the
// invocation fails as SQS refuses the message (InvalidParameterValue, not
// retried); with it, the message's MessageDeduplicationId is the
// occurrence's execution id (the same for every attempt). A failed
// invocation goes to the DeadLetterConfig queue with the target service's
// own ERROR_CODE (target/schedule.go).
//
// # Storage
//
// Groups in the KV bucket "runnel_schedule_groups" (key = name, with
// their tags),
// schedules in "runnel_schedules" (key = "<group>/<name>"), each with its
// last fired occurrence. As queues are, the service is meant to be run by
// one process.
package scheduler

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
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/engine"
	"github.com/runnel-dev/runnel/scheduler/expr"
	"github.com/runnel-dev/runnel/target"
)

// DefaultGroup is the group every account has.
const DefaultGroup = "default"

const (
	groupBucket    = "runnel_schedule_groups"
	scheduleBucket = "runnel_schedules"
)

// FlexibleTimeWindow says when an occurrence may be invoked: Mode OFF (at
// its time) or FLEXIBLE within MaximumWindowInMinutes (1..1440) after it.
type FlexibleTimeWindow struct {
	Mode                   string
	MaximumWindowInMinutes *int `json:",omitempty"`
}

// DeadLetterConfig names a standard SQS queue for failed invocations.
type DeadLetterConfig = target.DeadLetterConfig

// Target is a schedule's target (API_Target).
type Target struct {
	// Arn of a Lambda function, SQS queue or Kinesis stream. Required.
	Arn string
	// RoleArn is required by AWS; stored, never checked.
	RoleArn string
	// Input: the payload, at most 8192 characters (JSON for Lambda).
	Input            string              `json:",omitempty"`
	RetryPolicy      *target.RetryPolicy `json:",omitempty"`
	DeadLetterConfig *DeadLetterConfig   `json:",omitempty"`
	// SqsParameters.MessageGroupId: 1..128, for a FIFO queue.
	SqsParameters *target.SqsParameters `json:",omitempty"`
	// KinesisParameters.PartitionKey: 1..256; the execution id when absent.
	KinesisParameters *struct{ PartitionKey string } `json:",omitempty"`
}

// Schedule is a schedule (API_GetSchedule's fields). UpdateSchedule
// replaces every field: an omitted one takes its default.
type Schedule struct {
	Name      string
	GroupName string
	Arn       string
	// ScheduleExpression: at(yyyy-mm-ddThh:mm:ss), rate(value unit) or
	// cron(minutes hours day-of-month month day-of-week year). Required.
	ScheduleExpression string
	// ScheduleExpressionTimezone: an IANA name, default UTC.
	ScheduleExpressionTimezone string `json:",omitempty"`
	FlexibleTimeWindow         FlexibleTimeWindow
	StartDate                  *time.Time `json:",omitempty"`
	EndDate                    *time.Time `json:",omitempty"`
	// State ENABLED (default) or DISABLED.
	State string
	// ActionAfterCompletion NONE (default) or DELETE.
	ActionAfterCompletion string
	Description           string `json:",omitempty"`
	Target                Target
	CreationDate          time.Time
	LastModificationDate  time.Time
	// LastFired is the last occurrence fired (runnel's progress).
	LastFired *time.Time `json:",omitempty"`
	// Generation counts the updates that re-armed an at() schedule (gave
	// it a new time); part of its execution ids (runnel's; 0 at creation).
	Generation int `json:",omitempty"`
	// ClientToken is the CreateSchedule's idempotency token (1..64
	// characters of [a-zA-Z0-9-_]; optional): the same request with the
	// same token answers the schedule's ARN again instead of a conflict.
	// Kept with the schedule, never in GetSchedule's answer.
	ClientToken string `json:",omitempty"`
}

// ScheduleGroup is a group (API_GetScheduleGroup).
type ScheduleGroup struct {
	Name                 string
	Arn                  string
	State                string // ACTIVE
	CreationDate         time.Time
	LastModificationDate time.Time
	// Tags are the group's tags (tags.go): at most MaxTags; not part of
	// GetScheduleGroup's answer (ListTagsForResource's).
	Tags map[string]string `json:",omitempty"`
}

// sched is a schedule in memory.
type sched struct {
	s   Schedule
	rev uint64
	e   *expr.Expr
}

// Options tune the service.
type Options struct {
	Logger *slog.Logger
	// Passive: fire nothing in this process.
	Passive bool
}

// Service is EventBridge Scheduler over one engine. It is safe for
// concurrent use.
type Service struct {
	eng     *engine.Engine
	targets *target.Service
	log     *slog.Logger
	groups  jetstream.KeyValue
	kv      jetstream.KeyValue

	mu     sync.Mutex
	scheds map[string]*sched // by "<group>/<name>"

	kick   chan struct{}
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New opens the service (creating the default group) and unless Passive
// starts firing.
func New(ctx context.Context, eng *engine.Engine, targets *target.Service, opts Options) (*Service, error) {
	if opts.Logger == nil {
		opts.Logger = eng.Logger
	}
	s := &Service{eng: eng, targets: targets, log: opts.Logger.With("service", "scheduler"), scheds: map[string]*sched{}, kick: make(chan struct{}, 1)}
	err := eng.Buckets(ctx, map[string]*jetstream.KeyValue{groupBucket: &s.groups, scheduleBucket: &s.kv})
	if err != nil {
		return nil, err
	}
	if _, err := s.CreateScheduleGroup(ctx, DefaultGroup); err != nil && !errors.Is(err, awserr.ErrConflict) {
		return nil, err
	}
	err = engine.LoadJSON(ctx, s.kv, func(k string, sc Schedule, err error) {
		e, gerr := s.kv.Get(ctx, k)
		if err != nil || gerr != nil {
			s.log.Warn("unreadable schedule ignored", "key", k, "err", err)
			return
		}
		x, perr := expr.ParseStored(sc.ScheduleExpression, sc.ScheduleExpressionTimezone)
		if perr != nil {
			s.log.Warn("schedule with an unreadable expression ignored", "key", k, "err", perr)
			return
		}
		s.scheds[key(sc.GroupName, sc.Name)] = &sched{s: sc, rev: e.Revision(), e: x}
	})
	if err != nil {
		return nil, err
	}
	bg, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	if err := engine.Watch(bg, &s.wg, s.kv, s.applySchedule); err != nil {
		cancel()
		return nil, err
	}
	if !opts.Passive {
		// One process of a cluster fires the schedules: the holder of
		// the lease "scheduler" (another takes over when it dies).
		leases, err := eng.Leases(ctx)
		if err != nil {
			cancel()
			return nil, err
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			leases.RunWhileHeld(bg, "scheduler", func(ctx context.Context) { expr.RunTimer(ctx, eng.Clock, s.kick, s.fire) })
		}()
	}
	return s, nil
}

// Close stops firing.
func (s *Service) Close() {
	s.cancel()
	s.wg.Wait()
}

func key(group, name string) string { return group + "/" + name }

var nameRE = regexp.MustCompile(`^[0-9a-zA-Z\-_.]{1,64}$`)

func invalid(format string, args ...any) error {
	return awserr.New(awserr.ErrValidation, format, args...)
}

// ARNOf returns a schedule's ARN.
func (s *Service) ARNOf(group, name string) string { return s.arn("schedule", group+"/"+name) }

func (s *Service) arn(kind, name string) string {
	return fmt.Sprintf("arn:aws:scheduler:%s:%s:%s/%s", s.eng.Region(), s.eng.AccountID(), kind, name)
}

// CreateScheduleGroup creates a group with tags (at most 200 given,
// MaxTags once merged by key; Key 1..128 characters, Value 1..256; see
// tags.go). Errors: ErrValidation (name, tags), ErrConflict (it exists).
func (s *Service) CreateScheduleGroup(ctx context.Context, name string, tags ...Tag) (string, error) {
	if !nameRE.MatchString(name) {
		return "", invalid("1 validation error detected: Value '%s' at 'name' failed to satisfy constraint: Member must satisfy regular expression pattern: ^[0-9a-zA-Z-_.]+$ (1..64 characters)", name)
	}
	m, err := newGroupTags(tags)
	if err != nil {
		return "", err
	}
	now := s.eng.Clock.Now().UTC()
	g := ScheduleGroup{Name: name, Arn: s.arn("schedule-group", name), State: "ACTIVE", CreationDate: now, LastModificationDate: now, Tags: m}
	data, _ := json.Marshal(g)
	if _, err := s.groups.Create(ctx, name, data); errors.Is(err, jetstream.ErrKeyExists) {
		return "", awserr.New(awserr.ErrConflict, "Schedule group %s already exists.", name)
	} else if err != nil {
		return "", err
	}
	return g.Arn, nil
}

// GetScheduleGroup returns a group.
func (s *Service) GetScheduleGroup(ctx context.Context, name string) (*ScheduleGroup, error) {
	e, err := s.groups.Get(ctx, name)
	if err != nil {
		return nil, awserr.New(awserr.ErrResourceNotFound, "Schedule group %s does not exist.", name)
	}
	var g ScheduleGroup
	return &g, json.Unmarshal(e.Value(), &g)
}

// ListScheduleGroups lists groups by name prefix, in name order.
func (s *Service) ListScheduleGroups(ctx context.Context, prefix string) ([]ScheduleGroup, error) {
	var out []ScheduleGroup
	err := engine.LoadJSON(ctx, s.groups, func(k string, g ScheduleGroup, err error) {
		if err == nil && strings.HasPrefix(g.Name, prefix) {
			out = append(out, g)
		}
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, err
}

// DeleteScheduleGroup deletes a group and its schedules; default cannot
// be deleted (ErrValidation).
func (s *Service) DeleteScheduleGroup(ctx context.Context, name string) error {
	if name == DefaultGroup {
		return invalid("You cannot delete the default group.")
	}
	if _, err := s.GetScheduleGroup(ctx, name); err != nil {
		return err
	}
	for _, sc := range s.ListSchedules(name, "", "") {
		if err := s.DeleteSchedule(ctx, name, sc.Name); err != nil {
			return err
		}
	}
	return s.groups.Delete(ctx, name)
}
