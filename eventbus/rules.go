package eventbus

// Rules and their targets: PutRule, DeleteRule, DescribeRule, ListRules,
// EnableRule, DisableRule, PutTargets, RemoveTargets, ListTargetsByRule.
// https://docs.aws.amazon.com/eventbridge/latest/APIReference/API_PutRule.html

import (
	"context"
	"encoding/json"
	"regexp"
	"sort"
	"strings"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/mapping/filter"
	"github.com/runnel-dev/runnel/scheduler/expr"
	"github.com/runnel-dev/runnel/target"
)

var (
	ruleNameRE = regexp.MustCompile(`^[\.\-_A-Za-z0-9]{1,64}$`)
	targetIDRE = regexp.MustCompile(`^[\.\-_A-Za-z0-9]{1,64}$`)
)

func invalid(format string, args ...any) error {
	return awserr.New(awserr.ErrValidation, format, args...)
}

// RuleName returns the rule name of a name or rule ARN.
func RuleName(ref string) string {
	if strings.HasPrefix(ref, "arn:") {
		return ref[strings.LastIndexByte(ref, '/')+1:]
	}
	return ref
}

// PutRule creates or replaces a rule and returns its ARN. Errors:
// ErrValidation (name, state, neither pattern nor schedule, a schedule on
// another bus than default or not a rate()/cron()), ErrInvalidEventPattern,
// ErrResourceNotFound (bus).
func (s *Service) PutRule(ctx context.Context, r Rule) (string, error) {
	r.EventBusName = BusName(r.EventBusName)
	if !ruleNameRE.MatchString(r.Name) {
		return "", invalid("1 validation error detected: Value '%s' at 'name' failed to satisfy constraint: Member must satisfy regular expression pattern: [\\.\\-_A-Za-z0-9]+ (1..64 characters)", r.Name)
	}
	switch r.State {
	case "":
		r.State = Enabled
	case Enabled, Disabled, EnabledWithAllCloudTrailManagementEvents:
		// kept as given (before, the CloudTrail state was stored and
		// answered as ENABLED)
	default:
		return "", invalid("1 validation error detected: Value '%s' at 'state' failed to satisfy constraint: Member must satisfy enum value set: [ENABLED, DISABLED, ENABLED_WITH_ALL_CLOUDTRAIL_MANAGEMENT_EVENTS]", r.State)
	}
	if r.EventPattern == "" && r.ScheduleExpression == "" {
		return "", invalid("Parameter(s) EventPattern or ScheduleExpression must be specified.")
	}
	if r.EventPattern != "" {
		if _, err := filter.CompileEventPattern(r.EventPattern); err != nil {
			return "", err
		}
	}
	if r.ScheduleExpression != "" {
		if r.EventBusName != DefaultBus {
			return "", invalid("ScheduleExpression is supported only on the default event bus.")
		}
		e, err := expr.Parse(r.ScheduleExpression, "")
		if err != nil || e.Kind == expr.At {
			return "", invalid("Parameter ScheduleExpression is not valid.")
		}
	}
	r.Arn = s.RuleARN(r.EventBusName, r.Name)
	err := s.update(ctx, r.EventBusName, func(b *storedBus) error {
		now := s.eng.Clock.Now().UnixMilli()
		sr := &storedRule{Rule: r, Created: now}
		if old := b.Rules[r.Name]; old != nil {
			sr.Targets = old.Targets
			switch {
			case old.ScheduleExpression != r.ScheduleExpression:
				// a new schedule counts from now
			case !enabled(old.State) && enabled(r.State):
				sr.Created, sr.LastFired = old.Created, now // nothing fires for the time it was disabled
			default:
				sr.Created, sr.LastFired = old.Created, old.LastFired
			}
		}
		b.Rules[r.Name] = sr
		return nil
	})
	return r.Arn, err
}

// ruleIn finds a rule in a stored bus.
func ruleIn(b *storedBus, name string) (*storedRule, error) {
	if r := b.Rules[RuleName(name)]; r != nil {
		return r, nil
	}
	return nil, notFound("Rule %s does not exist on EventBus %s.", RuleName(name), b.Name)
}

// updateRule applies fn to a rule of a bus and stores the bus.
func (s *Service) updateRule(ctx context.Context, bus, name string, fn func(r *storedRule) error) error {
	return s.update(ctx, BusName(bus), func(b *storedBus) error {
		r, err := ruleIn(b, name)
		if err != nil {
			return err
		}
		return fn(r)
	})
}

// rule finds a rule of a bus.
func (s *Service) rule(bus, name string) (*storedRule, error) {
	st, err := s.busOf(BusName(bus))
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := st.b.Rules[RuleName(name)]; r != nil {
		return r, nil
	}
	return nil, notFound("Rule %s does not exist on EventBus %s.", RuleName(name), BusName(bus))
}

// DescribeRule returns a rule (API_DescribeRule).
func (s *Service) DescribeRule(bus, name string) (*Rule, error) {
	r, err := s.rule(bus, name)
	if err != nil {
		return nil, err
	}
	out := r.Rule
	return &out, nil
}

// DeleteRule deletes a rule without targets (API_DeleteRule); a rule with
// targets is refused (ErrValidation) unless force. A missing rule is not
// an error.
func (s *Service) DeleteRule(ctx context.Context, bus, name string, force bool) error {
	return s.update(ctx, BusName(bus), func(b *storedBus) error {
		r := b.Rules[RuleName(name)]
		if r != nil && len(r.Targets) > 0 && !force {
			return invalid("Rule can't be deleted since it has targets.")
		}
		delete(b.Rules, RuleName(name))
		return nil
	})
}

// ListRules lists a bus's rules whose name starts with prefix, in name
// order (API_ListRules).
func (s *Service) ListRules(bus, prefix string) ([]Rule, error) {
	st, err := s.busOf(BusName(bus))
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	var out []Rule
	for name, r := range st.b.Rules {
		if strings.HasPrefix(name, prefix) {
			out = append(out, r.Rule)
		}
	}
	s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// SetRuleState enables or disables a rule (API_EnableRule, API_DisableRule).
// A scheduled rule enabled again fires its next occurrence after now: none
// for the time it was disabled.
func (s *Service) SetRuleState(ctx context.Context, bus, name, state string) error {
	return s.updateRule(ctx, bus, name, func(r *storedRule) error {
		if !enabled(r.State) && enabled(state) {
			r.LastFired = s.eng.Clock.Now().UnixMilli() // nothing fires for the time it was disabled
		}
		r.State = state
		return nil
	})
}

// FailedEntry is a target PutTargets or RemoveTargets did not take.
type FailedEntry struct {
	TargetId     string
	ErrorCode    string
	ErrorMessage string
}

// PutTargets adds or replaces targets of a rule (API_PutTargets): 1..10 a
// call, at most 5 a rule. A bad target refuses the call (ErrValidation
// naming the field and range; an InputPathsMap key that is a reserved
// variable name, aws.events.*, is one); going over 5 targets fails the
// entries over it (LimitExceededException).
func (s *Service) PutTargets(ctx context.Context, bus, rule string, ts []Target) ([]FailedEntry, error) {
	if len(ts) < 1 || len(ts) > MaxPutTargets {
		return nil, invalid("1 validation error detected: Value at 'targets' failed to satisfy constraint: Member must have length less than or equal to %d and greater than or equal to 1", MaxPutTargets)
	}
	for i := range ts {
		if err := checkTarget(&ts[i]); err != nil {
			return nil, err
		}
	}
	var failed []FailedEntry
	err := s.updateRule(ctx, bus, rule, func(r *storedRule) error {
		failed = nil
	next:
		for _, t := range ts {
			for i := range r.Targets {
				if r.Targets[i].Id == t.Id {
					r.Targets[i] = t
					continue next
				}
			}
			if len(r.Targets) >= MaxTargetsPerRule {
				failed = append(failed, FailedEntry{TargetId: t.Id, ErrorCode: "LimitExceededException",
					ErrorMessage: "The requested resource exceeds the maximum number allowed."})
				continue
			}
			r.Targets = append(r.Targets, t)
		}
		return nil
	})
	return failed, err
}

// reservedVariables are the InputTemplate variables EventBridge defines
// itself: "These variables are reserved, and you can't create variables
// with these names" (eb-transform-target-input). An InputPathsMap key of
// one of them is refused by PutTargets.
var reservedVariables = map[string]bool{
	"aws.events.rule-arn":             true,
	"aws.events.rule-name":            true,
	"aws.events.event.ingestion-time": true,
	"aws.events.event":                true,
	"aws.events.event.json":           true,
}

// checkTarget checks a target's fields.
func checkTarget(t *Target) error {
	if !targetIDRE.MatchString(t.Id) {
		return invalid("1 validation error detected: Value '%s' at 'targets.member.id' failed to satisfy constraint: Member must satisfy regular expression pattern: [\\.\\-_A-Za-z0-9]+ (1..64 characters)", t.Id)
	}
	if !strings.HasPrefix(t.Arn, "arn:") {
		return invalid("Parameter %s is not valid. Reason: Provided Arn is not in correct format.", t.Arn)
	}
	if !target.Supported(t.Arn) || (strings.HasPrefix(t.Arn, "arn:aws:events:") && !strings.Contains(t.Arn, ":event-bus/")) {
		return invalid("Target %s: runnel delivers to Lambda functions, SQS queues, Kinesis streams and event buses only, not %s.", t.Id, t.Arn)
	}
	n := 0
	for _, set := range []bool{t.Input != "", t.InputPath != "", t.InputTransformer != nil} {
		if set {
			n++
		}
	}
	if n > 1 {
		return invalid("Target %s: only one of Input, InputPath and InputTransformer may be given.", t.Id)
	}
	if len(t.Input) > MaxInputLength || (t.Input != "" && !json.Valid([]byte(t.Input))) {
		return invalid("Target %s: Input must be valid JSON text of at most %d characters.", t.Id, MaxInputLength)
	}
	if len(t.InputPath) > 256 {
		return invalid("Target %s: InputPath: length %d is out of the range 0..256.", t.Id, len(t.InputPath))
	}
	if t.InputPath != "" {
		if _, err := parsePath(t.InputPath); err != nil {
			return invalid("Target %s: InputPath %q is not a valid JsonPath: %v", t.Id, t.InputPath, err)
		}
	}
	if it := t.InputTransformer; it != nil {
		if len(it.InputTemplate) < 1 || len(it.InputTemplate) > MaxInputLength {
			return invalid("Target %s: InputTransformer.InputTemplate: length %d is out of the range 1..%d.", t.Id, len(it.InputTemplate), MaxInputLength)
		}
		if len(it.InputPathsMap) > 100 {
			return invalid("Target %s: InputTransformer.InputPathsMap: %d entries, at most 100.", t.Id, len(it.InputPathsMap))
		}
		for k, p := range it.InputPathsMap {
			if strings.HasPrefix(k, "AWS.") {
				return invalid("Target %s: InputPathsMap key %s must not start with AWS.", t.Id, k)
			}
			if reservedVariables[k] {
				return invalid("Target %s: InputTransformer.InputPathsMap key %s is a reserved variable name; the reserved names are aws.events.rule-arn, aws.events.rule-name, aws.events.event.ingestion-time, aws.events.event and aws.events.event.json.", t.Id, k)
			}
			if _, err := parsePath(p); err != nil {
				return invalid("Target %s: InputPathsMap %s: %q is not a valid JsonPath: %v", t.Id, k, p, err)
			}
		}
	}
	if kp := t.KinesisParameters; kp != nil {
		if _, err := parsePath(kp.PartitionKeyPath); err != nil {
			return invalid("Target %s: KinesisParameters.PartitionKeyPath %q is not a valid JsonPath: %v", t.Id, kp.PartitionKeyPath, err)
		}
	}
	if strings.HasPrefix(t.Arn, "arn:aws:sqs:") && strings.HasSuffix(t.Arn, ".fifo") && (t.SqsParameters == nil || t.SqsParameters.MessageGroupId == "") {
		return invalid("Parameter(s) SqsParameters must be specified for target: %s.", t.Id)
	}
	if d := t.DeadLetterConfig; d != nil && (!strings.HasPrefix(d.Arn, "arn:aws:sqs:") || strings.HasSuffix(d.Arn, ".fifo")) {
		return invalid("Target %s: DeadLetterConfig.Arn must be the ARN of a standard SQS queue, got %q.", t.Id, d.Arn)
	}
	return t.RetryPolicy.Validate("RetryPolicy.")
}

// RemoveTargets removes targets of a rule by id (API_RemoveTargets); ids
// the rule does not have fail their entries.
func (s *Service) RemoveTargets(ctx context.Context, bus, rule string, ids []string) ([]FailedEntry, error) {
	var failed []FailedEntry
	err := s.updateRule(ctx, bus, rule, func(r *storedRule) error {
		failed = nil
		for _, id := range ids {
			i := indexOf(r.Targets, id)
			if i < 0 {
				failed = append(failed, FailedEntry{TargetId: id, ErrorCode: "ResourceNotFoundException", ErrorMessage: "Target " + id + " does not exist."})
				continue
			}
			r.Targets = append(r.Targets[:i], r.Targets[i+1:]...)
		}
		return nil
	})
	return failed, err
}

func indexOf(ts []Target, id string) int {
	for i := range ts {
		if ts[i].Id == id {
			return i
		}
	}
	return -1
}

// ListTargetsByRule returns a rule's targets (API_ListTargetsByRule).
func (s *Service) ListTargetsByRule(bus, rule string) ([]Target, error) {
	r, err := s.rule(bus, rule)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Target(nil), r.Targets...), nil
}
