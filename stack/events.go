package stack

// The EventBridge and Scheduler sections of a stack file:
//
//	EventBuses:
//	  - Name: orders
//	Rules:
//	  - Name: paid
//	    EventBusName: orders
//	    EventPattern: {source: [shop], detail: {state: [paid]}}   # YAML or a JSON string
//	    Targets:
//	      - Id: fn
//	        Arn: on-paid                  # a function, queue or stream name, or an ARN
//	        RetryPolicy: {MaximumRetryAttempts: 3, MaximumEventAgeInSeconds: 600}
//	        DeadLetterConfig: {Arn: paid-dlq}
//	Archives:
//	  - ArchiveName: orders-archive
//	    EventSourceArn: orders            # a bus name or ARN
//	    RetentionDays: 7
//	Schedules:
//	  - Name: nightly
//	    ScheduleExpression: cron(0 2 * * ? *)
//	    ScheduleExpressionTimezone: Europe/Paris
//	    FlexibleTimeWindow: {Mode: "OFF"}
//	    Target: {Arn: nightly-job, RoleArn: arn:aws:iam::000000000000:role/s, Input: '{"job":"x"}'}
//
// Buses and archives that exist are kept; rules are put (replaced) with
// their targets, a target the file no longer lists being removed;
// schedules are created, or updated when they exist (see the package
// doc, "Applying a file again").

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/eventbus"
	"github.com/runnel-dev/runnel/scheduler"
	"github.com/runnel-dev/runnel/scheduler/expr"
	"github.com/runnel-dev/runnel/target"
)

// jsonText is a JSON document in a stack file: a string, or YAML turned
// into JSON.
type jsonText string

func (j *jsonText) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*j = jsonText(n.Value)
		return nil
	}
	var v any
	if err := n.Decode(&v); err != nil {
		return err
	}
	b, err := json.Marshal(v)
	*j = jsonText(b)
	return err
}

// EventBus is a bus (CreateEventBus).
type EventBus struct {
	Name        string `yaml:"Name"`
	Description string `yaml:"Description"`
}

// RuleTarget is a rule's target (PutTargets): an eventbus.Target whose
// Arn and DeadLetterConfig.Arn may be names.
type RuleTarget = eventbus.Target

// Rule is a rule with its targets (PutRule, PutTargets).
type Rule struct {
	Name               string       `yaml:"Name"`
	EventBusName       string       `yaml:"EventBusName"`
	EventPattern       jsonText     `yaml:"EventPattern"`
	ScheduleExpression string       `yaml:"ScheduleExpression"`
	State              string       `yaml:"State"`
	Description        string       `yaml:"Description"`
	Targets            []RuleTarget `yaml:"Targets"`
}

// Archive is an archive of a bus (CreateArchive); EventSourceArn may be a
// bus name.
type Archive struct {
	ArchiveName    string   `yaml:"ArchiveName"`
	EventSourceArn string   `yaml:"EventSourceArn"`
	EventPattern   jsonText `yaml:"EventPattern"`
	RetentionDays  int      `yaml:"RetentionDays"`
	Description    string   `yaml:"Description"`
}

// Schedule is a schedule (CreateSchedule); its target's Arn and
// DeadLetterConfig.Arn may be names.
type Schedule struct {
	Name                       string    `yaml:"Name"`
	GroupName                  string    `yaml:"GroupName"`
	ScheduleExpression         string    `yaml:"ScheduleExpression"`
	ScheduleExpressionTimezone string    `yaml:"ScheduleExpressionTimezone"`
	StartDate                  *yamlTime `yaml:"StartDate"`
	EndDate                    *yamlTime `yaml:"EndDate"`
	FlexibleTimeWindow         struct {
		Mode                   string `yaml:"Mode"`
		MaximumWindowInMinutes *int   `yaml:"MaximumWindowInMinutes"`
	} `yaml:"FlexibleTimeWindow"`
	State                 string `yaml:"State"`
	ActionAfterCompletion string `yaml:"ActionAfterCompletion"`
	Description           string `yaml:"Description"`
	Target                struct {
		Arn               string                   `yaml:"Arn"`
		RoleArn           string                   `yaml:"RoleArn"`
		Input             string                   `yaml:"Input"`
		RetryPolicy       *target.RetryPolicy      `yaml:"RetryPolicy"`
		DeadLetterConfig  *target.DeadLetterConfig `yaml:"DeadLetterConfig"`
		SqsParameters     *target.SqsParameters    `yaml:"SqsParameters"`
		KinesisParameters *struct {
			PartitionKey string `yaml:"PartitionKey"`
		} `yaml:"KinesisParameters"`
	} `yaml:"Target"`
}

// AppliedEvents says what applyEvents did.
type AppliedEvents struct {
	BusesCreated, RulesPut, ArchivesCreated, SchedulesCreated, SchedulesUpdated []string
	// SchedulesSkipped are one-time schedules (at()) whose time has
	// passed: not created (see applyEvents).
	SchedulesSkipped []string `json:",omitempty"`
}

// names resolves the names of a stack file's targets.
type names struct {
	rn     *runnel.Runnel
	queues map[string]bool
	fns    map[string]bool
}

// target is the ARN of a target given by name: a function's, else a
// queue's, table stream's or stream's (resolveARN).
func (n names) target(ctx context.Context, s string) string {
	if s == "" || strings.HasPrefix(s, "arn:") {
		return s
	}
	if _, err := n.rn.Functions.GetFunction(s); err == nil || n.fns[s] {
		return n.rn.Functions.ARN(s)
	}
	return resolveARN(ctx, n.rn, n.queues, s)
}

// deadLetter resolves a dead-letter queue given by name.
func (n names) deadLetter(d *target.DeadLetterConfig) *target.DeadLetterConfig {
	if d == nil {
		return nil
	}
	arn := d.Arn
	if !strings.HasPrefix(arn, "arn:") {
		arn = n.rn.Queues.ARN(arn)
	}
	return &target.DeadLetterConfig{Arn: arn}
}

// applyEvents applies the buses, rules, archives and schedules.
func applyEvents(ctx context.Context, rn *runnel.Runnel, s *Stack, queues map[string]bool, out *AppliedEvents) error {
	n := names{rn: rn, queues: queues, fns: map[string]bool{}}
	for _, f := range s.Functions {
		n.fns[f.FunctionName] = true
	}
	for i, b := range s.EventBuses {
		if _, err := rn.Events.CreateEventBus(ctx, b.Name, b.Description); err != nil && !errors.Is(err, awserr.ErrResourceAlreadyExists) {
			return fmt.Errorf("EventBuses[%d] (%s): %w", i, b.Name, err)
		} else if err == nil {
			out.BusesCreated = append(out.BusesCreated, b.Name)
		}
	}
	for i, r := range s.Rules {
		if err := n.putRule(ctx, r); err != nil {
			return fmt.Errorf("Rules[%d] (%s): %w", i, r.Name, err)
		}
		out.RulesPut = append(out.RulesPut, r.Name)
	}
	for i, a := range s.Archives {
		_, err := rn.Events.CreateArchive(ctx, eventbus.Archive{ArchiveName: a.ArchiveName, EventSourceArn: a.EventSourceArn,
			EventPattern: string(a.EventPattern), RetentionDays: a.RetentionDays, Description: a.Description})
		if err != nil && !errors.Is(err, awserr.ErrResourceAlreadyExists) {
			return fmt.Errorf("Archives[%d] (%s): %w", i, a.ArchiveName, err)
		} else if err == nil {
			out.ArchivesCreated = append(out.ArchivesCreated, a.ArchiveName)
		}
	}
	// A schedule that exists is updated (before, Create was tried first,
	// and its checks, such as a StartDate more than 5 minutes past,
	// failed the Apply of an unchanged file). A one-time schedule whose
	// time has passed is not created: it would fire at once, and after it
	// fired and deleted itself (ActionAfterCompletion DELETE) every Apply,
	// every start of `runnel serve -f`, fired it again.
	for i, sc := range s.Schedules {
		in := n.schedule(ctx, &sc)
		if _, err := rn.Schedules.GetSchedule(in.GroupName, in.Name); err == nil {
			if _, err := rn.Schedules.UpdateSchedule(ctx, in); err != nil {
				return fmt.Errorf("Schedules[%d] (%s): %w", i, sc.Name, err)
			}
			out.SchedulesUpdated = append(out.SchedulesUpdated, sc.Name)
			continue
		}
		if e, err := expr.Parse(in.ScheduleExpression, in.ScheduleExpressionTimezone); err == nil && e.Kind == expr.At {
			if _, future := e.Next(rn.Engine.Clock.Now()); !future {
				rn.Engine.Logger.Info("stack: a one-time schedule whose time has passed is not created", "schedule", sc.Name, "expression", in.ScheduleExpression)
				out.SchedulesSkipped = append(out.SchedulesSkipped, sc.Name)
				continue
			}
		}
		if _, err := rn.Schedules.CreateSchedule(ctx, in); errors.Is(err, awserr.ErrConflict) {
			if _, err := rn.Schedules.UpdateSchedule(ctx, in); err != nil {
				return fmt.Errorf("Schedules[%d] (%s): %w", i, sc.Name, err)
			}
			out.SchedulesUpdated = append(out.SchedulesUpdated, sc.Name)
		} else if err != nil {
			return fmt.Errorf("Schedules[%d] (%s): %w", i, sc.Name, err)
		} else {
			out.SchedulesCreated = append(out.SchedulesCreated, sc.Name)
		}
	}
	return nil
}

func (n names) putRule(ctx context.Context, r Rule) error {
	rn := n.rn
	if _, err := rn.Events.PutRule(ctx, eventbus.Rule{Name: r.Name, EventBusName: r.EventBusName, EventPattern: string(r.EventPattern),
		ScheduleExpression: r.ScheduleExpression, State: r.State, Description: r.Description}); err != nil {
		return err
	}
	// The rule's targets are the file's: those it no longer lists are
	// removed (before, PutTargets only added and updated, and a target
	// taken out of the file kept receiving every event).
	keep := map[string]bool{}
	for _, t := range r.Targets {
		keep[t.Id] = true
	}
	cur, err := rn.Events.ListTargetsByRule(r.EventBusName, r.Name)
	if err != nil {
		return err
	}
	var gone []string
	for _, t := range cur {
		if !keep[t.Id] {
			gone = append(gone, t.Id)
		}
	}
	if len(gone) > 0 {
		failed, err := rn.Events.RemoveTargets(ctx, r.EventBusName, r.Name, gone)
		if err == nil && len(failed) > 0 {
			err = fmt.Errorf("remove target %s: %s: %s", failed[0].TargetId, failed[0].ErrorCode, failed[0].ErrorMessage)
		}
		if err != nil {
			return err
		}
	}
	if len(r.Targets) == 0 {
		return nil
	}
	ts := slices.Clone(r.Targets)
	for i, t := range ts {
		ts[i].Arn, ts[i].DeadLetterConfig = n.target(ctx, t.Arn), n.deadLetter(t.DeadLetterConfig)
	}
	failed, err := rn.Events.PutTargets(ctx, r.EventBusName, r.Name, ts)
	if err == nil && len(failed) > 0 {
		err = fmt.Errorf("target %s: %s: %s", failed[0].TargetId, failed[0].ErrorCode, failed[0].ErrorMessage)
	}
	return err
}

func (n names) schedule(ctx context.Context, sc *Schedule) scheduler.Schedule {
	t := sc.Target
	out := scheduler.Schedule{Name: sc.Name, GroupName: sc.GroupName, ScheduleExpression: sc.ScheduleExpression,
		ScheduleExpressionTimezone: sc.ScheduleExpressionTimezone, State: sc.State, ActionAfterCompletion: sc.ActionAfterCompletion,
		Description:        sc.Description,
		FlexibleTimeWindow: scheduler.FlexibleTimeWindow{Mode: sc.FlexibleTimeWindow.Mode, MaximumWindowInMinutes: sc.FlexibleTimeWindow.MaximumWindowInMinutes},
		Target: scheduler.Target{Arn: n.target(ctx, t.Arn), RoleArn: t.RoleArn, Input: t.Input, RetryPolicy: t.RetryPolicy,
			DeadLetterConfig: n.deadLetter(t.DeadLetterConfig), SqsParameters: t.SqsParameters}}
	if t.KinesisParameters != nil {
		out.Target.KinesisParameters = &struct{ PartitionKey string }{t.KinesisParameters.PartitionKey}
	}
	if sc.StartDate != nil {
		out.StartDate = &sc.StartDate.Time
	}
	if sc.EndDate != nil {
		out.EndDate = &sc.EndDate.Time
	}
	return out
}
