package observe_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/runnel-dev/runnel/eventbus"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/observe"
	"github.com/runnel-dev/runnel/scheduler"
)

// An EventBridge rule's MatchedEvents, Invocations and FailedInvocations,
// read at scrape time: one event delivered, one to a missing queue.
func TestScheduleMetrics(t *testing.T) {
	rn, _ := start(t)
	ctx := context.Background()
	q := createQueue(t, rn, "ticks", nil)
	if _, err := rn.Schedules.CreateSchedule(ctx, scheduler.Schedule{Name: "now", ScheduleExpression: "rate(1 hour)",
		FlexibleTimeWindow: scheduler.FlexibleTimeWindow{Mode: "OFF"}, Target: scheduler.Target{Arn: rn.Queues.ARN("ticks"), RoleArn: "arn:aws:iam::000000000000:role/s"}}); err != nil {
		t.Fatal(err)
	}
	testenv.Drain(t, rn.Queues, q, 1, nil) // a rate() schedule fires at once
	testenv.Eventually(t, wait, "the delivery counted", func() bool { return rn.Targets.Source(rn.Schedules.ARNOf("default", "now")).Delivered == 1 })
	expected := `
# HELP runnel_scheduler_schedule_delivered_total Invocations of the schedule's target that succeeded.
# TYPE runnel_scheduler_schedule_delivered_total counter
runnel_scheduler_schedule_delivered_total{group="default",schedule="now"} 1
`
	if err := testutil.CollectAndCompare(observe.NewCollector(rn, nil), strings.NewReader(expected), "runnel_scheduler_schedule_delivered_total"); err != nil {
		t.Error(err)
	}
}

func TestEventBridgeRuleMetrics(t *testing.T) {
	rn, _ := start(t)
	ctx := context.Background()
	q := createQueue(t, rn, "ok", nil)
	createQueue(t, rn, "rule-errors", nil)
	if _, err := rn.Events.PutRule(ctx, eventbus.Rule{Name: "r", EventPattern: `{"source":["s"]}`}); err != nil {
		t.Fatal(err)
	}
	if _, err := rn.Events.PutTargets(ctx, "", "r", []eventbus.Target{{Id: "ok", Arn: rn.Queues.ARN("ok")}, {Id: "gone", Arn: rn.Queues.ARN("gone"),
		DeadLetterConfig: &eventbus.DeadLetterConfig{Arn: rn.Queues.ARN("rule-errors")}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := rn.Events.PutEvents(ctx, []eventbus.PutEventsRequestEntry{{Source: "s", DetailType: "d", Detail: "{}"}, {Source: "x", DetailType: "d", Detail: "{}"}}); err != nil {
		t.Fatal(err)
	}
	testenv.Drain(t, rn.Queues, q, 1, nil)
	testenv.Eventually(t, wait, "the failed delivery", func() bool { return rn.Events.RuleStats(rn.Events.RuleARN("default", "r")).FailedInvocations == 1 })
	expected := `
# HELP runnel_eventbridge_rule_failed_invocations_total Deliveries that failed for good: dead-lettered or kept in runnel's store (EventBridge's FailedInvocations).
# TYPE runnel_eventbridge_rule_failed_invocations_total counter
runnel_eventbridge_rule_failed_invocations_total{bus="default",rule="r"} 1
# HELP runnel_eventbridge_rule_invocations_total Deliveries to the rule's targets (EventBridge's Invocations).
# TYPE runnel_eventbridge_rule_invocations_total counter
runnel_eventbridge_rule_invocations_total{bus="default",rule="r"} 2
# HELP runnel_eventbridge_rule_matched_events_total Events that matched the rule (EventBridge's MatchedEvents).
# TYPE runnel_eventbridge_rule_matched_events_total counter
runnel_eventbridge_rule_matched_events_total{bus="default",rule="r"} 1
`
	snap := observe.Take(ctx, rn, observe.TakeOptions{})
	for _, qs := range snap.Queues {
		if qs.Name == "rule-errors" && !qs.DeadLetter {
			t.Errorf("the rule target's DeadLetterConfig queue is not seen as a DLQ: %+v", qs)
		}
	}
	alarms, err := observe.NewAlarms(rn, observe.Config{Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(observe.Handler(rn, alarms))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/api/graph")
	if err != nil {
		t.Fatal(err)
	}
	var g observe.Graph
	json.NewDecoder(resp.Body).Decode(&g)
	resp.Body.Close()
	edges := map[string]bool{}
	for _, e := range g.Edges {
		edges[e.Kind+" "+e.From+" "+e.To] = true
	}
	for _, want := range []string{"rule bus:default queue:ok", "rule bus:default queue:gone", "deadLetter bus:default queue:rule-errors"} {
		if !edges[want] {
			t.Errorf("graph lacks the edge %q: %v", want, edges)
		}
	}
	if err := testutil.CollectAndCompare(observe.NewCollector(rn, nil), strings.NewReader(expected),
		"runnel_eventbridge_rule_matched_events_total", "runnel_eventbridge_rule_invocations_total", "runnel_eventbridge_rule_failed_invocations_total"); err != nil {
		t.Error(err)
	}
}
