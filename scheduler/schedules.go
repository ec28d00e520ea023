package scheduler

// CreateSchedule, GetSchedule, UpdateSchedule, DeleteSchedule,
// ListSchedules. https://docs.aws.amazon.com/scheduler/latest/APIReference/API_CreateSchedule.html

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/scheduler/expr"
	"github.com/runnel-dev/runnel/target"
)

// check validates a schedule and fills its defaults; it returns its
// parsed expression. create: a CreateSchedule (its StartDate may not be
// more than 5 minutes past).
func (s *Service) check(sc *Schedule, create bool) (*expr.Expr, error) {
	if sc.GroupName == "" {
		sc.GroupName = DefaultGroup
	}
	if !nameRE.MatchString(sc.Name) {
		return nil, invalid("1 validation error detected: Value '%s' at 'name' failed to satisfy constraint: Member must satisfy regular expression pattern: ^[0-9a-zA-Z-_.]+$ (1..64 characters)", sc.Name)
	}
	if tz := sc.ScheduleExpressionTimezone; len(tz) > 50 {
		return nil, invalid("ScheduleExpressionTimezone: length %d is out of the range 1..50.", len(tz))
	} else if _, err := expr.Location(tz); err != nil {
		// "Local" (the host's zone to Go) was accepted: a schedule
		// followed whatever zone the machine was set to.
		return nil, invalid("ScheduleExpressionTimezone: %v.", err)
	}
	x, err := expr.Parse(sc.ScheduleExpression, sc.ScheduleExpressionTimezone)
	if err != nil {
		return nil, invalid("Invalid Schedule Expression %s: %v.", sc.ScheduleExpression, err)
	}
	switch w := sc.FlexibleTimeWindow; w.Mode {
	case "OFF":
		if w.MaximumWindowInMinutes != nil {
			return nil, invalid("MaximumWindowInMinutes must not be set when Mode is OFF.")
		}
	case "FLEXIBLE":
		if w.MaximumWindowInMinutes == nil || *w.MaximumWindowInMinutes < 1 || *w.MaximumWindowInMinutes > 1440 {
			return nil, awserr.New(awserr.ErrValidation, "FlexibleTimeWindow.MaximumWindowInMinutes: must be in the range 1..1440 when Mode is FLEXIBLE.")
		}
	default:
		return nil, invalid("1 validation error detected: Value '%s' at 'flexibleTimeWindow.mode' failed to satisfy constraint: Member must satisfy enum value set: [OFF, FLEXIBLE]", w.Mode)
	}
	if sc.StartDate != nil && sc.EndDate != nil && !sc.StartDate.Before(*sc.EndDate) {
		return nil, invalid("The StartDate must come before the EndDate.")
	}
	if sc.EndDate != nil && !sc.EndDate.After(s.eng.Clock.Now()) {
		return nil, invalid("The EndDate you specify cannot be earlier than the current time.")
	}
	if create && x.Kind != expr.At && sc.StartDate != nil && sc.StartDate.Before(s.eng.Clock.Now().Add(-5*time.Minute)) {
		// AWS's words (as moto reproduces them); a StartDate long past
		// would otherwise fire every occurrence since, at once.
		return nil, invalid("The StartDate you specify cannot be earlier than 5 minutes ago.")
	}
	for _, f := range []struct{ name, v, def string }{{"State", sc.State, "ENABLED"}, {"ActionAfterCompletion", sc.ActionAfterCompletion, "NONE"}} {
		allowed := map[string][]string{"State": {"ENABLED", "DISABLED"}, "ActionAfterCompletion": {"NONE", "DELETE"}}[f.name]
		if f.v != "" && f.v != allowed[0] && f.v != allowed[1] {
			return nil, invalid("1 validation error detected: Value '%s' at '%s' failed to satisfy constraint: Member must satisfy enum value set: %v", f.v, f.name, allowed)
		}
	}
	if sc.State == "" {
		sc.State = "ENABLED"
	}
	if sc.ActionAfterCompletion == "" {
		sc.ActionAfterCompletion = "NONE"
	}
	t := &sc.Target
	if !strings.HasPrefix(t.Arn, "arn:") || t.RoleArn == "" {
		return nil, invalid("Target.Arn and Target.RoleArn are required ARNs.")
	}
	if !target.Supported(t.Arn) || strings.HasPrefix(t.Arn, "arn:aws:events:") {
		return nil, invalid("Target.Arn: runnel invokes Lambda functions, SQS queues and Kinesis streams only, not %s.", t.Arn)
	}
	if len(t.Input) > 8192 {
		return nil, invalid("Target.Input: length %d is out of the range 1..8192.", len(t.Input))
	}
	if strings.HasPrefix(t.Arn, "arn:aws:lambda:") && t.Input != "" && !json.Valid([]byte(t.Input)) {
		// API_Target: "If you are configuring a templated Lambda, AWS Step
		// Functions, or Amazon EventBridge target, the input must be a
		// well-formed JSON." Accepted, every occurrence's invocation was
		// refused (InvalidRequestContent) and retried for a day.
		return nil, invalid("Target.Input: the input of a Lambda target must be well-formed JSON.")
	}
	if d := t.DeadLetterConfig; d != nil && (!strings.HasPrefix(d.Arn, "arn:aws:sqs:") || strings.HasSuffix(d.Arn, ".fifo")) {
		return nil, invalid("Target.DeadLetterConfig.Arn must be the ARN of a standard SQS queue, got %q.", d.Arn)
	}
	return x, t.RetryPolicy.Validate("Target.RetryPolicy.")
}

// CreateSchedule creates a schedule and returns its ARN. Errors:
// ErrValidation, ErrResourceNotFound (group), ErrConflict (exists; see
// repeatedCreate for a repeated ClientToken).
func (s *Service) CreateSchedule(ctx context.Context, sc Schedule) (string, error) {
	if t := sc.ClientToken; t != "" && !clientTokenRE.MatchString(t) {
		return "", invalid("1 validation error detected: Value '%s' at 'clientToken' failed to satisfy constraint: Member must satisfy regular expression pattern: ^[a-zA-Z0-9-_]+$ (1..64 characters)", t)
	}
	return s.store(ctx, sc, true)
}

var clientTokenRE = regexp.MustCompile(`^[a-zA-Z0-9\-_]{1,64}$`)

// repeatedCreate answers a CreateSchedule of a schedule that exists (k,
// read from the bucket, so that it holds across processes): with the
// ClientToken that created it and the same request (every field but the
// dates runnel sets), the existing ARN, as the first call's answer
// (API_CreateSchedule: ClientToken "ensure[s] the idempotency of the
// request"; SDKs fill it and send it again on a retry). Otherwise
// ErrConflict: "Schedule <name> already exists.", or, with the same token
// and another request, "ClientToken <token> was used for a different
// request.". Before, ClientToken was ignored: a CreateSchedule retried
// after a timeout got ConflictException though the first call created the
// schedule.
func (s *Service) repeatedCreate(ctx context.Context, k string, sc Schedule) (string, error) {
	conflict := awserr.New(awserr.ErrConflict, "Schedule %s already exists.", sc.Name)
	if sc.ClientToken == "" {
		return "", conflict
	}
	e, err := s.kv.Get(ctx, k)
	if err != nil {
		return "", conflict
	}
	var old Schedule
	if err := json.Unmarshal(e.Value(), &old); err != nil || old.ClientToken != sc.ClientToken {
		return "", conflict
	}
	if !sameRequest(old, sc) {
		return "", awserr.New(awserr.ErrConflict, "ClientToken %s was used for a different request.", sc.ClientToken)
	}
	return old.Arn, nil
}

// sameRequest reports whether a and b are the same CreateSchedule: equal
// but for what runnel sets (dates, progress, generation).
func sameRequest(a, b Schedule) bool {
	norm := func(s Schedule) string {
		s.CreationDate, s.LastModificationDate, s.LastFired, s.Generation = time.Time{}, time.Time{}, nil, 0
		for _, d := range []**time.Time{&s.StartDate, &s.EndDate} {
			if *d != nil {
				u := (*d).UTC()
				*d = &u
			}
		}
		data, _ := json.Marshal(s)
		return string(data)
	}
	return norm(a) == norm(b)
}

// UpdateSchedule replaces a schedule (ErrResourceNotFound if missing).
// Its progress is kept while the expression stays the same; a new rate()
// or cron() expression, or such a schedule enabled again, counts from now
// (nothing fires for the time it was disabled). An at() schedule fires
// its one occurrence once: given a new time, it fires at that time (at
// once if the time has passed); enabled again, it fires if it has not
// (trap: an at() schedule disabled past its time fires when enabled).
func (s *Service) UpdateSchedule(ctx context.Context, sc Schedule) (string, error) {
	return s.store(ctx, sc, false)
}

func (s *Service) store(ctx context.Context, sc Schedule, create bool) (string, error) {
	x, err := s.check(&sc, create)
	if err != nil {
		return "", err
	}
	if _, err := s.GetScheduleGroup(ctx, sc.GroupName); err != nil {
		return "", err
	}
	now := s.eng.Clock.Now().UTC()
	sc.Arn = s.arn("schedule", sc.GroupName+"/"+sc.Name)
	sc.CreationDate, sc.LastModificationDate, sc.LastFired = now, now, nil
	k := key(sc.GroupName, sc.Name)
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.scheds[k]
	var rev uint64
	if create {
		data, _ := json.Marshal(sc)
		rev, err = s.kv.Create(ctx, k, data)
		if errors.Is(err, jetstream.ErrKeyExists) {
			return s.repeatedCreate(ctx, k, sc)
		}
	} else {
		if old == nil {
			return "", awserr.New(awserr.ErrResourceNotFound, "Schedule %s does not exist.", sc.Name)
		}
		sc.CreationDate = old.s.CreationDate
		changed := old.s.ScheduleExpression != sc.ScheduleExpression || old.s.ScheduleExpressionTimezone != sc.ScheduleExpressionTimezone
		sc.Generation, sc.ClientToken = old.s.Generation, old.s.ClientToken
		switch {
		case x.Kind == expr.At && changed:
			sc.LastFired = nil // a new time: not fired yet
			sc.Generation++    // its own execution id, even at a time it fired at before
		case x.Kind == expr.At:
			sc.LastFired = old.s.LastFired // fired or not, enabled again or not: its one occurrence
		case changed, old.s.State != "ENABLED" && sc.State == "ENABLED":
			sc.LastFired = &now // counts from now: no backlog of the old expression or of the disabled time
		case old.s.LastFired == nil && sc.StartDate != nil && sc.StartDate.Before(now.Add(-5*time.Minute)):
			// Not fired yet, and given a StartDate long past (CreateSchedule
			// refuses one; an update of a schedule made long ago carries its
			// own): it counts from now, never a backlog of every occurrence
			// since that date.
			sc.LastFired = &now
		default:
			sc.LastFired = old.s.LastFired
		}
		data, _ := json.Marshal(sc)
		rev, err = s.kv.Update(ctx, k, data, old.rev)
	}
	if err != nil {
		return "", awserr.New(awserr.ErrService, "storing schedule %s: %v", sc.Name, err)
	}
	s.scheds[k] = &sched{s: sc, rev: rev, e: x}
	s.wake()
	return sc.Arn, nil
}

func (s *Service) wake() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// GetSchedule returns a schedule.
func (s *Service) GetSchedule(group, name string) (*Schedule, error) {
	if group == "" {
		group = DefaultGroup
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sc := s.scheds[key(group, name)]
	if sc == nil {
		return nil, awserr.New(awserr.ErrResourceNotFound, "Schedule %s does not exist.", name)
	}
	out := sc.s
	return &out, nil
}

// DeleteSchedule deletes a schedule (ErrResourceNotFound if missing).
func (s *Service) DeleteSchedule(ctx context.Context, group, name string) error {
	if group == "" {
		group = DefaultGroup
	}
	k := key(group, name)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.scheds[k] == nil {
		return awserr.New(awserr.ErrResourceNotFound, "Schedule %s does not exist.", name)
	}
	if err := s.kv.Delete(ctx, k); err != nil {
		return err
	}
	delete(s.scheds, k)
	return nil
}

// ListSchedules lists schedules by group ("" any), name prefix and state,
// by group then name.
func (s *Service) ListSchedules(group, prefix, state string) []Schedule {
	s.mu.Lock()
	var out []Schedule
	for _, sc := range s.scheds {
		if (group == "" || sc.s.GroupName == group) && strings.HasPrefix(sc.s.Name, prefix) && (state == "" || sc.s.State == state) {
			out = append(out, sc.s)
		}
	}
	s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return key(out[i].GroupName, out[i].Name) < key(out[j].GroupName, out[j].Name) })
	return out
}
