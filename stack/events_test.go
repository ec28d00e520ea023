package stack_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel/eventbus"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/stack"
)

func TestEventsStackAppliesAndRuns(t *testing.T) {
	clock := clockwork.NewFakeClockAt(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rn := testenv.Start(t, testenv.Options{Clock: clock})
	ctx := context.Background()
	s, err := stack.Load("../examples/eventbridge.yaml")
	if err != nil {
		t.Fatal(err)
	}
	a, err := stack.Apply(ctx, rn, s)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Events.BusesCreated) != 1 || len(a.Events.RulesPut) != 1 || len(a.Events.ArchivesCreated) != 1 || len(a.Events.SchedulesCreated) != 1 {
		t.Fatalf("applied %+v", a.Events)
	}
	a, err = stack.Apply(ctx, rn, s)
	if err != nil || len(a.Events.BusesCreated)+len(a.Events.ArchivesCreated) != 0 || len(a.Events.SchedulesUpdated) != 1 {
		t.Fatalf("second apply %+v %v", a.Events, err)
	}
	ts, _ := rn.Events.ListTargetsByRule("orders", "paid")
	if len(ts) != 1 || ts[0].Arn != rn.Queues.ARN("paid") || ts[0].DeadLetterConfig.Arn != rn.Queues.ARN("paid-dlq") || *ts[0].RetryPolicy.MaximumRetryAttempts != 3 {
		t.Fatalf("targets %+v", ts)
	}
	out, err := rn.Events.PutEvents(ctx, []eventbus.PutEventsRequestEntry{{Source: "shop", DetailType: "o", Detail: `{"state":"paid"}`, EventBusName: "orders"}})
	if err != nil || out.FailedEntryCount != 0 {
		t.Fatal(err, out)
	}
	if m := testenv.Drain(t, rn.Queues, "paid", 1, nil)[0]; m.Body != `{"state":"paid"}` {
		t.Errorf("delivered %s, want the InputPath $.detail", m.Body)
	}
	clock.Advance(time.Minute)
	if m := testenv.Drain(t, rn.Queues, "ticks", 1, nil)[0]; !strings.Contains(m.Body, "tick") {
		t.Errorf("schedule delivered %s", m.Body)
	}
}

// TestApplyingAnEditedStackAgainIsIdempotent: the file is the truth, and
// applying it again changes only what it changed.
//   - A target taken out of a rule is removed (before, it kept receiving
//     every event: PutTargets only adds).
//   - A one-time schedule that fired and deleted itself is not created
//     again (before, each Apply, each start of serve -f, fired it again).
//   - A schedule whose StartDate is now more than 5 minutes past is
//     updated (before, Create was tried first and its check failed the
//     Apply of an unchanged file).
//   - A stream the file turns on for an existing table is turned on
//     (before, a kept table's StreamSpecification was ignored).
func TestApplyingAnEditedStackAgainIsIdempotent(t *testing.T) {
	clock := clockwork.NewFakeClockAt(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rn := testenv.Start(t, testenv.Options{Clock: clock})
	ctx := context.Background()
	file := func(targets, stream string) *stack.Stack {
		s, err := stack.Parse([]byte(`
Queues:
  - QueueName: old
  - QueueName: new
  - QueueName: jobs
Tables:
  - TableName: sessions
    KeySchema: [{AttributeName: id, KeyType: HASH}]
    AttributeDefinitions: [{AttributeName: id, AttributeType: S}]
` + stream + `
Rules:
  - Name: paid
    EventPattern: {source: [shop]}
    Targets:
` + targets + `
Schedules:
  - Name: migrate
    ScheduleExpression: at(2026-01-01T00:01:00)
    ActionAfterCompletion: DELETE
    FlexibleTimeWindow: {Mode: "OFF"}
    Target: {Arn: jobs, RoleArn: "arn:aws:iam::000000000000:role/s", Input: '{"job":"migrate"}'}
  - Name: hourly
    ScheduleExpression: rate(1 hour)
    StartDate: 2026-01-01T00:00:00Z
    FlexibleTimeWindow: {Mode: "OFF"}
    Target: {Arn: jobs, RoleArn: "arn:aws:iam::000000000000:role/s", Input: '{"job":"hourly"}'}
`))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	both := "      - {Id: old, Arn: old}\n      - {Id: new, Arn: new}"
	if _, err := stack.Apply(ctx, rn, file(both, "")); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Minute)
	testenv.Drain(t, rn.Queues, "jobs", 1, nil) // migrate fired
	testenv.Eventually(t, 10*time.Second, "the one-time schedule deleted after it fired", func() bool {
		_, err := rn.Schedules.GetSchedule("", "migrate")
		return err != nil
	})
	clock.Advance(10 * time.Minute)
	a, err := stack.Apply(ctx, rn, file("      - {Id: new, Arn: new}", "    StreamSpecification: {StreamEnabled: true, StreamViewType: NEW_IMAGE}"))
	if err != nil {
		t.Fatalf("the edited file applied again: %v", err)
	}
	if !slices.Equal(a.Events.SchedulesSkipped, []string{"migrate"}) || !slices.Equal(a.Events.SchedulesUpdated, []string{"hourly"}) {
		t.Fatalf("schedules: %+v", a.Events)
	}
	if _, err := rn.Schedules.GetSchedule("", "migrate"); err == nil {
		t.Fatal("the one-time schedule that fired was created again")
	}
	ts, err := rn.Events.ListTargetsByRule("", "paid")
	if err != nil || len(ts) != 1 || ts[0].Id != "new" {
		t.Fatalf("the rule's targets after the file dropped 'old': %+v, %v", ts, err)
	}
	d, err := rn.Tables.DescribeTable(ctx, "sessions")
	if err != nil || d.StreamSpecification == nil || !d.StreamSpecification.StreamEnabled || d.StreamSpecification.StreamViewType != "NEW_IMAGE" {
		t.Fatalf("the kept table's stream: %+v, %v", d.StreamSpecification, err)
	}
}
