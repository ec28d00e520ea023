package bench

import (
	"context"
	"fmt"

	"github.com/nats-io/nuid"

	"github.com/runnel-dev/runnel/eventbus"
)

// RunnelEventsToSQS is the EventBridge scenario: events put on the
// default bus, matched by one rule whose target is an SQS queue (issue
// 16's target: 30,000 events/s, against JetStreamPublish in the same
// run).
const RunnelEventsToSQS = "runnel-putevents-rule-sqs"

// runRunnelEventsToSQS puts n events with snsPublishers callers in
// PutEvents calls of 10, each event matching the rule's pattern, and
// stops the clock when the target queue holds all n (the targets'
// Delivered counter reaches n).
func runRunnelEventsToSQS(ctx context.Context, e *env, n int, t timer) (string, error) {
	name := "bench-" + nuid.Next()
	if _, err := e.rn.Queues.CreateQueue(ctx, name, nil); err != nil {
		return "", err
	}
	if _, err := e.rn.Events.PutRule(ctx, eventbus.Rule{Name: name, EventPattern: `{"source":["bench"],"detail":{"kind":["order"]}}`}); err != nil {
		return "", err
	}
	if failed, err := e.rn.Events.PutTargets(ctx, "", name, []eventbus.Target{{Id: "q", Arn: e.rn.Queues.ARN(name)}}); err != nil || len(failed) > 0 {
		return "", fmt.Errorf("PutTargets: %v %v", err, failed)
	}
	detail := fmt.Sprintf(`{"kind":"order","pad":%q}`, e.payload)
	base := e.rn.Targets.Stats().Delivered
	t.Start()
	err := inParallel(n, eventbus.MaxPutEvents, func(lo, hi int) error {
		var entries []eventbus.PutEventsRequestEntry
		for range hi - lo {
			entries = append(entries, eventbus.PutEventsRequestEntry{Source: "bench", DetailType: "Order", Detail: detail})
		}
		out, err := e.rn.Events.PutEvents(ctx, entries)
		if err == nil && out.FailedEntryCount > 0 {
			err = fmt.Errorf("PutEvents: %d failed", out.FailedEntryCount)
		}
		return err
	})
	if err == nil {
		err = waitUntil(ctx, func() (bool, error) {
			st := e.rn.Targets.Stats()
			if st.DeadLettered+st.KeptInStore > 0 {
				return false, fmt.Errorf("eventbridge: %d deliveries failed", st.DeadLettered+st.KeptInStore)
			}
			return st.Delivered-base >= int64(n), nil
		})
	}
	if err != nil {
		return "", err
	}
	t.Stop()
	return fmt.Sprintf("default bus, 1 rule (source and detail pattern) -> 1 SQS queue; %d callers PutEvents(10); until the queue holds every event", snsPublishers), nil
}
