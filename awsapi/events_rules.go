package awsapi

// EventBridge's rules and targets: PutRule, DeleteRule, DescribeRule,
// ListRules, EnableRule, DisableRule, PutTargets, RemoveTargets,
// ListTargetsByRule (PutRule's Tags and DeleteRule's dropping of them:
// events_tags.go). Targets: Lambda, SQS (FIFO with MessageGroupId),
// Kinesis (PartitionKeyPath) and event buses; RoleArn is stored, never
// checked. https://docs.aws.amazon.com/eventbridge/latest/APIReference/API_PutRule.html

import (
	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/eventbus"
)

func eventsInvalid(format string, args ...any) error {
	return awserr.New(awserr.ErrValidation, format, args...)
}

// putRuleInput is PutRule's request; Tags (Key 1..128, Value 0..256, at
// most 50, no aws: key) are given to a rule it creates and ignored on an
// existing one, as on AWS (events_tags.go).
type putRuleInput struct {
	eventbus.Rule
	Tags []eventbus.Tag
}

func eventsPutRule(rq *request, in *putRuleInput) (any, error) {
	return keyed("RuleArn")(rq.h.rn.Events.PutRuleTagged(rq.ctx, in.Rule, in.Tags))
}

type ruleRef struct {
	Name         string
	EventBusName string
	Force        bool
}

func eventsDeleteRule(rq *request, in *ruleRef) (any, error) {
	return nil, rq.h.rn.Events.DeleteRuleAndTags(rq.ctx, in.EventBusName, in.Name, in.Force)
}

func eventsDescribeRule(rq *request, in *ruleRef) (any, error) {
	return rq.h.rn.Events.DescribeRule(in.EventBusName, in.Name)
}

func eventsEnableRule(rq *request, in *ruleRef) (any, error) {
	return nil, rq.h.rn.Events.SetRuleState(rq.ctx, in.EventBusName, in.Name, eventbus.Enabled)
}

func eventsDisableRule(rq *request, in *ruleRef) (any, error) {
	return nil, rq.h.rn.Events.SetRuleState(rq.ctx, in.EventBusName, in.Name, eventbus.Disabled)
}

type listRulesInput struct {
	listInput
	EventBusName string
}

func eventsListRules(rq *request, in *listRulesInput) (any, error) {
	rules, err := rq.h.rn.Events.ListRules(in.EventBusName, in.NamePrefix)
	if err != nil {
		return nil, err
	}
	return eventsPage(rules, &in.listInput, "Rules", func(r *eventbus.Rule) any { return r })
}

type putTargetsInput struct {
	Rule         string
	EventBusName string
	Targets      []eventbus.Target
}

// failedEntries answers PutTargets and RemoveTargets.
func failedEntries(failed []eventbus.FailedEntry, err error) (any, error) {
	if err != nil {
		return nil, err
	}
	if failed == nil {
		failed = []eventbus.FailedEntry{}
	}
	return map[string]any{"FailedEntryCount": len(failed), "FailedEntries": failed}, nil
}

func eventsPutTargets(rq *request, in *putTargetsInput) (any, error) {
	return failedEntries(rq.h.rn.Events.PutTargets(rq.ctx, in.EventBusName, in.Rule, in.Targets))
}

type removeTargetsInput struct {
	Rule         string
	EventBusName string
	Ids          []string
	Force        bool
}

func eventsRemoveTargets(rq *request, in *removeTargetsInput) (any, error) {
	return failedEntries(rq.h.rn.Events.RemoveTargets(rq.ctx, in.EventBusName, in.Rule, in.Ids))
}

type listTargetsInput struct {
	Rule         string
	EventBusName string
	listInput
}

func eventsListTargetsByRule(rq *request, in *listTargetsInput) (any, error) {
	ts, err := rq.h.rn.Events.ListTargetsByRule(in.EventBusName, in.Rule)
	if err != nil {
		return nil, err
	}
	return eventsPage(ts, &in.listInput, "Targets", func(t *eventbus.Target) any { return t })
}
