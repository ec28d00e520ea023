package observe

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/eventbus"
	"github.com/runnel-dev/runnel/queue"
	"github.com/runnel-dev/runnel/target"
)

// ruleDeadLetters adds to dlqFor the dead-letter queues of rule and
// schedule targets and runnel's EventBridge store, so that their depth
// alarms as every DLQ's does.
func ruleDeadLetters(rn *runnel.Runnel, dlqFor map[string][]string) {
	add := func(arn *target.DeadLetterConfig, why string) {
		if arn == nil {
			return
		}
		if n, ok := queue.NameFromARN(arn.Arn); ok {
			dlqFor[n] = append(dlqFor[n], why)
		}
	}
	for _, b := range rn.Events.ListEventBuses("") {
		rules, _ := rn.Events.ListRules(b.Name, "")
		for _, r := range rules {
			ts, _ := rn.Events.ListTargetsByRule(b.Name, r.Name)
			for _, t := range ts {
				add(t.DeadLetterConfig, "DeadLetterConfig of rule "+r.Name+" target "+t.Id)
			}
		}
	}
	for _, sc := range rn.Schedules.ListSchedules("", "", "") {
		add(sc.Target.DeadLetterConfig, "DeadLetterConfig of schedule "+sc.GroupName+"/"+sc.Name)
	}
	dlqFor[target.DeadLetterStore] = append(dlqFor[target.DeadLetterStore], "runnel's EventBridge dead-letter store")
}

// RuleState is an EventBridge rule's counters (AWS/Events' MatchedEvents,
// Invocations and FailedInvocations) since this process opened.
type RuleState struct {
	Bus  string `json:"bus"`
	Rule string `json:"rule"`
	eventbus.Stats
}

var (
	ruleLabels  = []string{"bus", "rule"}
	ruleMetrics = []metric[eventbus.Stats]{
		counter(desc("runnel_eventbridge_rule_matched_events_total", "Events that matched the rule (EventBridge's MatchedEvents).", ruleLabels), func(s eventbus.Stats) int64 { return s.MatchedEvents }),
		counter(desc("runnel_eventbridge_rule_invocations_total", "Deliveries to the rule's targets (EventBridge's Invocations).", ruleLabels), func(s eventbus.Stats) int64 { return s.Invocations }),
		counter(desc("runnel_eventbridge_rule_failed_invocations_total", "Deliveries that failed for good: dead-lettered or kept in runnel's store (EventBridge's FailedInvocations).", ruleLabels), func(s eventbus.Stats) int64 { return s.FailedInvocations }),
	}
)

// ScheduleState is a schedule's counters since this process opened:
// deliveries to its target, and those that failed for good
// (AWS/Scheduler's InvocationsSentToDeadLetterCount and
// InvocationDroppedCount, together).
type ScheduleState struct {
	Group     string `json:"group"`
	Name      string `json:"name"`
	Delivered int64  `json:"delivered"`
	Failed    int64  `json:"failed"`
}

var (
	scheduleLabels  = []string{"group", "schedule"}
	scheduleMetrics = []metric[ScheduleState]{
		counter(desc("runnel_scheduler_schedule_delivered_total", "Invocations of the schedule's target that succeeded.", scheduleLabels), func(s ScheduleState) int64 { return s.Delivered }),
		counter(desc("runnel_scheduler_schedule_failed_total", "Invocations that failed for good: dead-lettered or kept in runnel's store.", scheduleLabels), func(s ScheduleState) int64 { return s.Failed }),
	}
)

// takeSchedules reads every schedule's counters.
func takeSchedules(rn *runnel.Runnel) []ScheduleState {
	var out []ScheduleState
	for _, sc := range rn.Schedules.ListSchedules("", "", "") {
		st := rn.Targets.Source(sc.Arn)
		out = append(out, ScheduleState{Group: sc.GroupName, Name: sc.Name, Delivered: st.Delivered, Failed: st.Failed})
	}
	return out
}

// takeRules reads every rule's counters.
func takeRules(rn *runnel.Runnel) []RuleState {
	var out []RuleState
	for _, b := range rn.Events.ListEventBuses("") {
		rules, _ := rn.Events.ListRules(b.Name, "")
		for _, r := range rules {
			out = append(out, RuleState{Bus: b.Name, Rule: r.Name, Stats: rn.Events.RuleStats(r.Arn)})
		}
	}
	return out
}

func describeRules(ch chan<- *prometheus.Desc) {
	describe(ch, ruleMetrics)
	describe(ch, scheduleMetrics)
}

func collectRules(snap *Snapshot, ch chan<- prometheus.Metric) {
	for _, r := range snap.Rules {
		send(ch, ruleMetrics, r.Stats, r.Bus, r.Rule)
	}
	for _, sc := range snap.Schedules {
		send(ch, scheduleMetrics, sc, sc.Group, sc.Name)
	}
}

// busNode is the graph node of an event bus ARN.
func busNode(arn string) (GraphNode, bool) {
	if !strings.Contains(arn, ":event-bus/") {
		return GraphNode{}, false
	}
	n := eventbus.BusName(arn)
	return GraphNode{ID: "bus:" + n, Kind: "bus", Name: n, ARN: arn}, true
}

// eventsGraph adds to the pipeline graph the buses (with an edge per rule
// target, and one to each target's dead-letter queue) and the schedules
// (an edge to their target). add adds a node, node the node of an ARN.
func eventsGraph(rn *runnel.Runnel, add func(GraphNode) *GraphNode, node func(arn string) string) []GraphEdge {
	var edges []GraphEdge
	for _, b := range rn.Events.ListEventBuses("") {
		from := add(GraphNode{ID: "bus:" + b.Name, Kind: "bus", Name: b.Name, ARN: b.Arn}).ID
		rules, _ := rn.Events.ListRules(b.Name, "")
		for _, r := range rules {
			ts, _ := rn.Events.ListTargetsByRule(b.Name, r.Name)
			for _, t := range ts {
				edges = append(edges, GraphEdge{From: from, To: node(t.Arn), Kind: "rule", Label: r.Name, State: r.State})
				if t.DeadLetterConfig != nil {
					edges = append(edges, GraphEdge{From: from, To: node(t.DeadLetterConfig.Arn), Kind: "deadLetter", Label: "dead letters of " + r.Name + "/" + t.Id})
				}
			}
		}
	}
	for _, sc := range rn.Schedules.ListSchedules("", "", "") {
		from := add(GraphNode{ID: "schedule:" + sc.GroupName + "/" + sc.Name, Kind: "schedule", Name: sc.Name, ARN: sc.Arn}).ID
		edges = append(edges, GraphEdge{From: from, To: node(sc.Target.Arn), Kind: "schedule", Label: sc.ScheduleExpression, State: sc.State})
		if d := sc.Target.DeadLetterConfig; d != nil {
			edges = append(edges, GraphEdge{From: from, To: node(d.Arn), Kind: "deadLetter", Label: "dead letters"})
		}
	}
	return edges
}
