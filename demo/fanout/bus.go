package fanout

// The EventBridge half of the demo: the same events put on the bus
// "fanout-bus", where four rules route them by pattern to their
// consumers (three queues and a function), each target with a
// dead-letter queue. The queue of "bus-big" refuses every event for
// FailFor from the first one (its MaximumMessageSize lowered below the
// events' size, then restored): its target retries with backoff, 1 s
// doubling with full jitter, at most busRetries times, then dead-letters.

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/eventbus"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/queue"
	"github.com/runnel-dev/runnel/target"
)

// Bus is the demo's event bus.
const Bus = "fanout-bus"

// busRetries is the failing target's MaximumRetryAttempts.
const busRetries = 4

// busPad makes every event bigger than refusedSize, the failing queue's
// MaximumMessageSize while it fails.
const refusedSize = 1024

var busPad = strings.Repeat("p", refusedSize)

// busConsumers are the bus's rules, each a consumer: policy is its
// EventPattern.
func busConsumers() []*consumer {
	return []*consumer{
		{name: "bus-all", protocol: "sqs", policy: `{"source":["fanout.shop"]}`, match: func(event) bool { return true }},
		{name: "bus-eu-orders", protocol: "sqs", policy: `{"detail":{"region":[{"prefix":"eu-"}],"kind":["order"]}}`,
			match: func(e event) bool { return strings.HasPrefix(e.Region, "eu-") && e.Kind == "order" }},
		{name: "bus-big", protocol: "sqs", policy: `{"detail-type":["Order"],"detail":{"amount":[{"numeric":[">=",500]}]}}`,
			match: func(e event) bool { return e.Amount >= 500 && e.Kind == "order" }},
		{name: "bus-audit", protocol: "lambda", policy: `{"detail":{"amount":[{"numeric":["<",100]}],"kind":[{"anything-but":"order"}]}}`,
			match: func(e event) bool { return e.Amount < 100 && e.Kind != "order" }},
	}
}

// busEvent is what the bus's consumers get: the event with the demo's
// event as its detail.
type busEvent struct {
	ID     string `json:"id"`
	Detail event  `json:"detail"`
}

// registerBusAudit registers the function of "bus-audit".
func registerBusAudit(reg *function.Registry, c *consumer, record func(*consumer, event)) {
	reg.Register(c.name, func(ctx context.Context, ev json.RawMessage) (json.RawMessage, error) {
		var e busEvent
		if json.Unmarshal(ev, &e) == nil {
			record(c, e.Detail)
		}
		return nil, nil
	})
}

// setupBus creates the bus, the queues, dead-letter queues and function
// of cs, and their rules and targets.
func setupBus(ctx context.Context, rn *runnel.Runnel, cs []*consumer) error {
	if _, err := rn.Events.CreateEventBus(ctx, Bus, "runnel demo fanout"); err != nil {
		return err
	}
	for _, c := range cs {
		arn := rn.Functions.ARN(c.name)
		if c.protocol == "lambda" {
			if _, err := rn.Functions.CreateFunction(ctx, function.Config{FunctionName: c.name, Handler: c.name}); err != nil {
				return err
			}
		} else {
			if _, err := rn.Queues.CreateQueue(ctx, c.name, nil); err != nil {
				return err
			}
			arn = rn.Queues.ARN(c.name)
		}
		if _, err := rn.Queues.CreateQueue(ctx, c.name+"-dlq", nil); err != nil {
			return err
		}
		if _, err := rn.Events.PutRule(ctx, eventbus.Rule{Name: c.name, EventBusName: Bus, EventPattern: c.policy}); err != nil {
			return fmt.Errorf("fanout: rule %s: %w", c.name, err)
		}
		t := eventbus.Target{Id: c.name, Arn: arn, DeadLetterConfig: &eventbus.DeadLetterConfig{Arn: rn.Queues.ARN(c.name + "-dlq")}}
		if c.name == "bus-big" {
			retries, age := busRetries, target.MinMaximumEventAgeInSeconds
			t.RetryPolicy = &target.RetryPolicy{MaximumRetryAttempts: &retries, MaximumEventAgeInSeconds: &age}
		}
		if failed, err := rn.Events.PutTargets(ctx, Bus, c.name, []eventbus.Target{t}); err != nil || len(failed) > 0 {
			return fmt.Errorf("fanout: targets of %s: %v %v", c.name, err, failed)
		}
	}
	return nil
}

// putBus puts n events on the bus in PutEvents calls of 10 (detail-type
// "Order" or "Refund", the event as detail), making the queue of
// "bus-big" refuse them for failFor from the first.
func putBus(ctx context.Context, rn *runnel.Runnel, n int, failFor time.Duration, wg *sync.WaitGroup) error {
	if err := rn.Queues.SetQueueAttributes(ctx, "bus-big", map[string]string{queue.AttrMaximumMessageSize: strconv.Itoa(refusedSize)}); err != nil {
		return err
	}
	wg.Go(func() {
		time.Sleep(failFor) // the demo's consumer failure is on the wall clock
		if err := rn.Queues.SetQueueAttributes(context.WithoutCancel(ctx), "bus-big", map[string]string{queue.AttrMaximumMessageSize: "262144"}); err != nil {
			rn.Engine.Logger.Error("fanout: could not restore the queue bus-big", "err", err)
		}
	})
	var batch []eventbus.PutEventsRequestEntry
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		out, err := rn.Events.PutEvents(ctx, batch)
		if err == nil && out.FailedEntryCount > 0 {
			for _, e := range out.Entries {
				if e.ErrorCode != "" {
					err = fmt.Errorf("fanout: %d events refused: %s %s", out.FailedEntryCount, e.ErrorCode, e.ErrorMessage)
					break
				}
			}
		}
		batch = batch[:0]
		return err
	}
	for i := range n {
		e := makeEvent(i)
		d, _ := json.Marshal(struct {
			event
			Pad string `json:"pad"`
		}{e, busPad})
		typ := "Order"
		if e.Kind == "refund" {
			typ = "Refund"
		}
		batch = append(batch, eventbus.PutEventsRequestEntry{Source: "fanout.shop", DetailType: typ, Detail: string(d), EventBusName: Bus})
		if len(batch) == eventbus.MaxPutEvents {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

// busEventOf is the demo's event in a bus consumer's message.
func busEventOf(body string) (event, bool) {
	var e busEvent
	if json.Unmarshal([]byte(body), &e) != nil || e.ID == "" {
		return event{}, false
	}
	return e.Detail, true
}
