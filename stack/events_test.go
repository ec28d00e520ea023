package stack_test

import (
	"context"
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
