package eventbus_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/eventbus"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/queue"
	"github.com/runnel-dev/runnel/recovery"
	"github.com/runnel-dev/runnel/stream"
	"github.com/runnel-dev/runnel/target"
)

const wait = 15 * time.Second

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func ptr[T any](v T) *T { return &v }

// start opens a runnel on a fake clock.
func start(t *testing.T) (*runnel.Runnel, *clockwork.FakeClock) {
	t.Helper()
	clock := clockwork.NewFakeClockAt(t0)
	return testenv.Start(t, testenv.Options{Clock: clock}), clock
}

// newQueue creates a queue and returns its ARN.
func newQueue(t *testing.T, rn *runnel.Runnel, name string, attrs map[string]string) string {
	t.Helper()
	if _, err := rn.Queues.CreateQueue(context.Background(), name, attrs); err != nil {
		t.Fatal(err)
	}
	return rn.Queues.ARN(name)
}

// drain receives and deletes n messages from a queue (with all
// attributes), advancing the clock by step between polls so that delayed
// retries come due.
func drain(t *testing.T, rn *runnel.Runnel, clock *clockwork.FakeClock, name string, n int, step time.Duration) []queue.Message {
	t.Helper()
	var tick func()
	if step > 0 {
		tick = func() { clock.Advance(step) }
	}
	got := testenv.Drain(t, rn.Queues, name, n, tick)
	if len(got) != n {
		t.Fatalf("%s: %d messages, want %d", name, len(got), n)
	}
	return got
}

// empty checks a queue holds no visible message.
func empty(t *testing.T, rn *runnel.Runnel, name string) {
	t.Helper()
	zero := 0
	msgs, _ := rn.Queues.ReceiveMessage(context.Background(), name, queue.ReceiveMessageInput{MaxNumberOfMessages: 10, WaitTimeSeconds: &zero})
	if len(msgs) != 0 {
		t.Fatalf("%s: unexpected message %s", name, msgs[0].Body)
	}
}

func put(t *testing.T, rn *runnel.Runnel, entries ...eventbus.PutEventsRequestEntry) *eventbus.PutEventsOutput {
	t.Helper()
	out, err := rn.Events.PutEvents(context.Background(), entries)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func rule(t *testing.T, rn *runnel.Runnel, r eventbus.Rule, targets ...eventbus.Target) {
	t.Helper()
	ctx := context.Background()
	if _, err := rn.Events.PutRule(ctx, r); err != nil {
		t.Fatal(err)
	}
	failed, err := rn.Events.PutTargets(ctx, r.EventBusName, r.Name, targets)
	if err != nil || len(failed) > 0 {
		t.Fatalf("PutTargets: %v %v", err, failed)
	}
}

func orderEvent(state string, amount int) eventbus.PutEventsRequestEntry {
	d, _ := json.Marshal(map[string]any{"state": state, "amount": amount, "id": state + "-1"})
	return eventbus.PutEventsRequestEntry{Source: "shop.orders", DetailType: "Order", Detail: string(d)}
}

func TestRuleRoutesMatchingEventsToSQS(t *testing.T) {
	rn, clock := start(t)
	q := newQueue(t, rn, "orders", nil)
	rule(t, rn, eventbus.Rule{Name: "big", EventPattern: `{"source":["shop.orders"],"detail":{"amount":[{"numeric":[">",100]}]}}`},
		eventbus.Target{Id: "q", Arn: q})
	out := put(t, rn, orderEvent("a", 50), orderEvent("b", 500), orderEvent("c", 101))
	if out.FailedEntryCount != 0 {
		t.Fatalf("failed entries: %+v", out.Entries)
	}
	msgs := drain(t, rn, clock, "orders", 2, 0)
	ids := map[string]bool{out.Entries[1].EventId: true, out.Entries[2].EventId: true}
	for _, m := range msgs {
		var ev map[string]any
		json.Unmarshal([]byte(m.Body), &ev)
		if !ids[ev["id"].(string)] || ev["source"] != "shop.orders" || ev["detail-type"] != "Order" || ev["version"] != "0" ||
			ev["account"] != rn.Engine.AccountID() || ev["time"] != "2026-01-01T00:00:00Z" {
			t.Errorf("unexpected event %s", m.Body)
		}
	}
	empty(t, rn, "orders")
	if st := rn.Events.RuleStats(rn.Events.RuleARN("default", "big")); st.MatchedEvents != 2 || st.Invocations != 2 {
		t.Errorf("rule stats %+v, want 2 matched, 2 invocations", st)
	}
}

func TestPutEventsLimitsAndEntryErrors(t *testing.T) {
	rn, _ := start(t)
	ctx := context.Background()
	many := make([]eventbus.PutEventsRequestEntry, 11)
	for i := range many {
		many[i] = orderEvent("x", 1)
	}
	if _, err := rn.Events.PutEvents(ctx, many); !errors.Is(err, awserr.ErrValidation) {
		t.Errorf("11 entries: %v, want ValidationException", err)
	}
	big := orderEvent("x", 1)
	big.Detail = `{"pad":"` + strings.Repeat("x", 256*1024) + `"}`
	if _, err := rn.Events.PutEvents(ctx, []eventbus.PutEventsRequestEntry{big}); err == nil || !strings.Contains(err.Error(), "Total size of the entries in the request is over the limit.") {
		t.Errorf("over 256 KB: %v", err)
	}
	out := put(t, rn, orderEvent("ok", 1),
		eventbus.PutEventsRequestEntry{DetailType: "d", Detail: "{}"},
		eventbus.PutEventsRequestEntry{Source: "s", DetailType: "d", Detail: "[1]"},
		eventbus.PutEventsRequestEntry{Source: "s", DetailType: "d", Detail: "{}", EventBusName: "nope"})
	if out.FailedEntryCount != 3 || out.Entries[0].EventId == "" {
		t.Fatalf("result %+v", out)
	}
	for i, want := range []string{"", "InvalidArgument", "MalformedDetail", "ResourceNotFoundException"} {
		if out.Entries[i].ErrorCode != want {
			t.Errorf("entry %d: code %q, want %q", i, out.Entries[i].ErrorCode, want)
		}
	}
	if out.Entries[1].ErrorMessage != "Parameter Source is not valid. Reason: Source is a required argument." {
		t.Errorf("message %q", out.Entries[1].ErrorMessage)
	}
}

func TestTargetInputShapes(t *testing.T) {
	rn, clock := start(t)
	q := newQueue(t, rn, "shapes", nil)
	p := `{"source":["shop.orders"]}`
	rule(t, rn, eventbus.Rule{Name: "r", EventPattern: p},
		eventbus.Target{Id: "input", Arn: q, Input: `{"fixed":true}`},
		eventbus.Target{Id: "path", Arn: q, InputPath: "$.detail.state"},
		eventbus.Target{Id: "tpl", Arn: q, InputTransformer: &eventbus.InputTransformer{
			InputPathsMap: map[string]string{"state": "$.detail.state", "amount": "$.detail.amount", "missing": "$.detail.nope"},
			InputTemplate: `{"s": <state>, "n": <amount>, "text": "order is <state> (<amount>)", "rule": "<aws.events.rule-name>", "m": "<missing>"}`}})
	rule(t, rn, eventbus.Rule{Name: "raw", EventPattern: `{"source":["raw"]}`}, eventbus.Target{Id: "path", Arn: q, InputPath: "$.detail"})
	put(t, rn, orderEvent("paid", 7), eventbus.PutEventsRequestEntry{Source: "raw", DetailType: "d", Detail: `{"z":1,"a":{"y":2,"b":3}}`})
	got := map[string]bool{}
	for _, m := range drain(t, rn, clock, "shapes", 4, 0) {
		got[m.Body] = true
	}
	for _, want := range []string{`{"fixed":true}`, `"paid"`, `{"z":1,"a":{"y":2,"b":3}}`,
		`{"s": "paid", "n": 7, "text": "order is paid (7)", "rule": "r", "m": ""}`} {
		if !got[want] {
			t.Errorf("no payload %s among %v", want, got)
		}
	}
}

func TestRetriesThenDeadLetterQueue(t *testing.T) {
	rn, clock := start(t)
	// The target refuses messages over 1 KiB: every attempt fails.
	q := newQueue(t, rn, "small", map[string]string{queue.AttrMaximumMessageSize: "1024"})
	dlq := newQueue(t, rn, "dlq", nil)
	rule(t, rn, eventbus.Rule{Name: "r", EventPattern: `{"source":["shop.orders"]}`},
		eventbus.Target{Id: "t", Arn: q, RetryPolicy: &target.RetryPolicy{MaximumRetryAttempts: ptr(2)},
			DeadLetterConfig: &eventbus.DeadLetterConfig{Arn: dlq}})
	ev := orderEvent("big", 1)
	ev.Detail = `{"pad":"` + strings.Repeat("x", 2000) + `"}`
	out := put(t, rn, ev)
	m := drain(t, rn, clock, "dlq", 1, 5*time.Second)[0]
	attr := func(k string) string {
		if v, ok := m.MessageAttributes[k]; ok && v.StringValue != nil {
			return *v.StringValue
		}
		return ""
	}
	if attr("RULE_ARN") != rn.Events.RuleARN("default", "r") || attr("TARGET_ARN") != q || attr("ERROR_CODE") != "SDK_CLIENT_ERROR" ||
		attr("EXHAUSTED_RETRY_CONDITION") != "MaximumRetryAttempts" || attr("RETRY_ATTEMPTS") != "2" || attr("ERROR_MESSAGE") == "" {
		t.Errorf("DLQ attributes %v", m.MessageAttributes)
	}
	if !strings.Contains(m.Body, out.Entries[0].EventId) {
		t.Errorf("DLQ body is not the event: %.100s", m.Body)
	}
	if st := rn.Targets.Stats(); st.Retried != 2 || st.DeadLettered != 1 {
		t.Errorf("stats %+v, want 2 retries, 1 dead-lettered", st)
	}
	if st := rn.Events.RuleStats(rn.Events.RuleARN("default", "r")); st.FailedInvocations != 1 || st.Invocations != 1 {
		t.Errorf("rule stats %+v, want 1 invocation, 1 failed", st)
	}
}

func TestMissingTargetIsNotRetried(t *testing.T) {
	rn, clock := start(t)
	dlq := newQueue(t, rn, "dlq", nil)
	rule(t, rn, eventbus.Rule{Name: "r", EventPattern: `{"source":["shop.orders"]}`},
		eventbus.Target{Id: "t", Arn: rn.Queues.ARN("gone"), DeadLetterConfig: &eventbus.DeadLetterConfig{Arn: dlq}, InputPath: "$.detail"})
	out := put(t, rn, orderEvent("a", 1))
	m := drain(t, rn, clock, "dlq", 1, 0)[0]
	if !strings.Contains(m.Body, out.Entries[0].EventId) {
		t.Errorf("DLQ body %s, want the original event (not the InputPath payload)", m.Body)
	}
	if r, err := recovery.Resolve(context.Background(), rn.Streams, []byte(m.Body)); err != nil || r.Kind != recovery.KindEvent || string(r.Payload) != m.Body {
		t.Errorf("recovery.Resolve of the dead letter: %+v %v, want the event", r, err)
	}
	if v := m.MessageAttributes["ERROR_CODE"]; v.StringValue == nil || *v.StringValue != "NO_RESOURCE" {
		t.Errorf("ERROR_CODE %v, want NO_RESOURCE", m.MessageAttributes)
	}
	if _, ok := m.MessageAttributes["EXHAUSTED_RETRY_CONDITION"]; ok || rn.Targets.Stats().Retried != 0 {
		t.Errorf("a missing target was retried: %v", m.MessageAttributes)
	}
}

func TestEventAgeLimitEndsRetries(t *testing.T) {
	rn, clock := start(t)
	q := newQueue(t, rn, "small", map[string]string{queue.AttrMaximumMessageSize: "1024"})
	rule(t, rn, eventbus.Rule{Name: "r", EventPattern: `{"source":["shop.orders"]}`},
		eventbus.Target{Id: "t", Arn: q, RetryPolicy: &target.RetryPolicy{MaximumEventAgeInSeconds: ptr(60)}})
	ev := orderEvent("big", 1)
	ev.Detail = `{"pad":"` + strings.Repeat("x", 2000) + `"}`
	put(t, rn, ev)
	// No DLQ: the event is kept in runnel's store, not dropped.
	m := drain(t, rn, clock, target.DeadLetterStore, 1, 5*time.Second)[0]
	if v := m.MessageAttributes["EXHAUSTED_RETRY_CONDITION"]; v.StringValue == nil || *v.StringValue != "MaximumEventAgeInSeconds" {
		t.Errorf("attributes %v, want EXHAUSTED_RETRY_CONDITION MaximumEventAgeInSeconds", m.MessageAttributes)
	}
	// Given up at the first attempt due after 60 s: at most one backoff
	// (5 minutes) later, with room for the polls' clock steps.
	if age := clock.Since(t0); age > 10*time.Minute {
		t.Errorf("dead-lettered after %v, want within 60 s + one backoff", age)
	}
	if rn.Targets.Stats().KeptInStore != 1 {
		t.Errorf("stats %+v", rn.Targets.Stats())
	}
}

func TestFIFOQueueAndKinesisTargets(t *testing.T) {
	rn, clock := start(t)
	ctx := context.Background()
	fifo := newQueue(t, rn, "o.fifo", map[string]string{queue.AttrFifoQueue: "true"})
	if _, err := rn.Streams.CreateStream(ctx, stream.CreateStreamInput{StreamName: "s", ShardCount: 1}); err != nil {
		t.Fatal(err)
	}
	p := `{"source":["shop.orders"]}`
	if _, err := rn.Events.PutRule(ctx, eventbus.Rule{Name: "r", EventPattern: p}); err != nil {
		t.Fatal(err)
	}
	if _, err := rn.Events.PutTargets(ctx, "", "r", []eventbus.Target{{Id: "f", Arn: fifo}}); !errors.Is(err, awserr.ErrValidation) {
		t.Errorf("FIFO target without MessageGroupId: %v, want ValidationException", err)
	}
	if _, err := rn.Events.PutTargets(ctx, "", "r", []eventbus.Target{{Id: "sfn", Arn: "arn:aws:states:us-east-1:000000000000:stateMachine:x"}}); !errors.Is(err, awserr.ErrValidation) {
		t.Errorf("a Step Functions target: %v, want ValidationException (not supported)", err)
	}
	rule(t, rn, eventbus.Rule{Name: "r", EventPattern: p},
		eventbus.Target{Id: "f", Arn: fifo, SqsParameters: &eventbus.SqsParameters{MessageGroupId: "g1"}},
		eventbus.Target{Id: "k", Arn: rn.Streams.ARN("s"), KinesisParameters: &eventbus.KinesisParameters{PartitionKeyPath: "$.detail.id"}})
	put(t, rn, orderEvent("a", 1))
	drain(t, rn, clock, "o.fifo", 1, 0)
	testenv.Eventually(t, wait, "a record", func() bool {
		it, err := rn.Streams.GetShardIterator(ctx, stream.GetShardIteratorInput{StreamName: "s", ShardID: "shardId-000000000000", ShardIteratorType: "TRIM_HORIZON"})
		if err != nil {
			t.Fatal(err)
		}
		out, err := rn.Streams.GetRecords(ctx, it, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Records) == 1 && out.Records[0].PartitionKey != "a-1" {
			t.Fatalf("partition key %q, want a-1 ($.detail.id)", out.Records[0].PartitionKey)
		}
		return len(out.Records) == 1
	})
}

// TestTwoRulesDeliverOneEventToOneFIFOQueueTwice: two rules matching one
// event, each with a target named "Target0" (CDK's name for a rule's
// first target) on the same FIFO queue, deliver two messages: target Ids
// are unique within a rule only, so a deduplication id made of the event
// id and the target Id took the second rule's delivery for a duplicate
// and dropped it, while counting it delivered.
func TestTwoRulesDeliverOneEventToOneFIFOQueueTwice(t *testing.T) {
	rn, clock := start(t)
	fifo := newQueue(t, rn, "both.fifo", map[string]string{queue.AttrFifoQueue: "true"})
	p := `{"source":["shop.orders"]}`
	rule(t, rn, eventbus.Rule{Name: "whole", EventPattern: p},
		eventbus.Target{Id: "Target0", Arn: fifo, SqsParameters: &eventbus.SqsParameters{MessageGroupId: "g"}})
	rule(t, rn, eventbus.Rule{Name: "detail", EventPattern: p},
		eventbus.Target{Id: "Target0", Arn: fifo, InputPath: "$.detail", SqsParameters: &eventbus.SqsParameters{MessageGroupId: "g"}})
	put(t, rn, orderEvent("a", 1))
	got := drain(t, rn, clock, "both.fifo", 2, 0)
	if got[0].Body == got[1].Body {
		t.Errorf("one payload twice, %q: want the whole event and its detail", got[0].Body)
	}
}

func TestEventBusTarget(t *testing.T) {
	rn, clock := start(t)
	ctx := context.Background()
	if _, err := rn.Events.CreateEventBus(ctx, "audit", ""); err != nil {
		t.Fatal(err)
	}
	q := newQueue(t, rn, "audited", nil)
	rule(t, rn, eventbus.Rule{Name: "forward", EventPattern: `{"source":["shop.orders"]}`}, eventbus.Target{Id: "bus", Arn: rn.Events.ARN("audit")})
	rule(t, rn, eventbus.Rule{Name: "keep", EventBusName: "audit", EventPattern: `{"detail":{"state":["paid"]}}`}, eventbus.Target{Id: "q", Arn: q})
	out := put(t, rn, orderEvent("paid", 1), orderEvent("new", 1))
	m := drain(t, rn, clock, "audited", 1, 0)[0]
	if !strings.Contains(m.Body, out.Entries[0].EventId) {
		t.Errorf("forwarded event %s, want the paid one with its id", m.Body)
	}
	empty(t, rn, "audited")
}

func TestLambdaTargetIsInvokedAsynchronously(t *testing.T) {
	rn, clock := start(t)
	ctx := context.Background()
	var mu sync.Mutex
	var got []string
	function.Register("eventbus-test-recorder", func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
		mu.Lock()
		got = append(got, string(in))
		mu.Unlock()
		return nil, nil
	})
	if _, err := rn.Functions.CreateFunction(ctx, function.Config{FunctionName: "rec", Handler: "eventbus-test-recorder"}); err != nil {
		t.Fatal(err)
	}
	rule(t, rn, eventbus.Rule{Name: "r", EventPattern: `{"detail":{"state":["paid"]}}`},
		eventbus.Target{Id: "fn", Arn: rn.Functions.ARN("rec")})
	out := put(t, rn, orderEvent("paid", 3), orderEvent("new", 3))
	testenv.Eventually(t, wait, "the function's invocation", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) > 0
	})
	clock.Advance(time.Second)
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 || !strings.Contains(got[0], out.Entries[0].EventId) {
		t.Errorf("invocations %v, want the paid event", got)
	}
}

// Before, a transformed payload delivered to a bus was routed as if it
// were an event: one without a time panicked the archive of that bus, in
// the target poller, and again after every restart (the delivery was never
// deleted).
func TestABusTargetWithATransformedPayloadPutsAWholeEvent(t *testing.T) {
	rn, clock := start(t)
	ctx := context.Background()
	if _, err := rn.Events.CreateEventBus(ctx, "audit", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := rn.Events.CreateArchive(ctx, eventbus.Archive{ArchiveName: "audit-all", EventSourceArn: rn.Events.ARN("audit")}); err != nil {
		t.Fatal(err)
	}
	q := newQueue(t, rn, "audited", nil)
	dlq := newQueue(t, rn, "dlq", nil)
	rule(t, rn, eventbus.Rule{Name: "forward", EventPattern: `{"source":["shop.orders"]}`},
		eventbus.Target{Id: "detail", Arn: rn.Events.ARN("audit"), InputPath: "$.detail"},
		eventbus.Target{Id: "number", Arn: rn.Events.ARN("audit"), InputPath: "$.detail.amount",
			DeadLetterConfig: &eventbus.DeadLetterConfig{Arn: dlq}, RetryPolicy: &target.RetryPolicy{MaximumRetryAttempts: ptr(0)}})
	rule(t, rn, eventbus.Rule{Name: "keep", EventBusName: "audit", EventPattern: `{"detail":{"state":["paid"]}}`}, eventbus.Target{Id: "q", Arn: q})
	out := put(t, rn, orderEvent("paid", 7))
	var ev map[string]any
	if err := json.Unmarshal([]byte(drain(t, rn, clock, "audited", 1, 0)[0].Body), &ev); err != nil {
		t.Fatal(err)
	}
	if ev["source"] != "shop.orders" || ev["detail-type"] != "Order" || ev["id"] != out.Entries[0].EventId ||
		ev["detail"].(map[string]any)["amount"] != 7.0 || ev["time"] != t0.UTC().Format(time.RFC3339) {
		t.Fatalf("event on the bus %v, want the detail in the original's envelope", ev)
	}
	testenv.Eventually(t, wait, "the transformed event archived", func() bool {
		d, err := rn.Events.DescribeArchive(ctx, "audit-all")
		return err == nil && d.EventCount == 1
	})
	// A payload that is no JSON object cannot be an event's detail: it
	// goes to the target's dead-letter queue, not lost.
	m := drain(t, rn, clock, "dlq", 1, 0)[0]
	if m.MessageAttributes["ERROR_CODE"].StringValue == nil || !strings.Contains(*m.MessageAttributes["ERROR_MESSAGE"].StringValue, "JSON object") {
		t.Fatalf("dead letter %+v", m.MessageAttributes)
	}
}

// "Supported syntax includes ... wildcards (*)" (eb-transform-target-input.html).
// Before, [*] was refused at PutTargets and .* read a key named "*": the
// target silently got "".
func TestInputPathWildcardsSelectEveryMatch(t *testing.T) {
	rn, _ := start(t)
	q := newQueue(t, rn, "wild", nil)
	rule(t, rn, eventbus.Rule{Name: "r", EventPattern: `{"source":["shop"]}`},
		eventbus.Target{Id: "ids", Arn: q, InputPath: "$.detail.items[*].id"},
		eventbus.Target{Id: "members", Arn: q, InputPath: "$.detail.totals.*"},
		eventbus.Target{Id: "none", Arn: q, InputPath: "$.detail.nothing[*]"},
		eventbus.Target{Id: "tpl", Arn: q, InputTransformer: &eventbus.InputTransformer{
			InputPathsMap: map[string]string{"ids": "$.detail.items[*].id"},
			InputTemplate: `{"ids": <ids>}`}})
	put(t, rn, eventbus.PutEventsRequestEntry{Source: "shop", DetailType: "d",
		Detail: `{"items":[{"id":"a"},{"id":"b","n":2},{"n":3}],"totals":{"net":10,"tax":"2.1"}}`})
	got := map[string]bool{}
	for _, m := range testenv.Drain(t, rn.Queues, "wild", 4, nil) {
		got[m.Body] = true
	}
	for _, want := range []string{`["a","b"]`, `[10,"2.1"]`, `[]`, `{"ids": ["a","b"]}`} {
		if !got[want] {
			t.Errorf("no payload %s among %v", want, got)
		}
	}
}
