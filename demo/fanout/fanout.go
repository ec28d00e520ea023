// Package fanout is `runnel demo fanout`, issue 16's fan-out demo: N
// events published through an SNS topic to several consumers (three
// queues with filter policies, an HTTP endpoint that fails for a while,
// a function), each subscription with its own dead-letter queue; and the
// same N events put on an EventBridge bus whose rules route them by
// pattern to four more consumers (three queues, one refusing events for a
// while, and a function), each target with a dead-letter queue (bus.go).
// Then a reconciliation per consumer: every event a consumer's filter or
// pattern matches is delivered to it (at least once, as AWS delivers) or
// is in its dead-letter queue; lost must be 0, and nothing the filter
// refuses may arrive.
package fanout

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nuid"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/demo/nodeset"
	"github.com/runnel-dev/runnel/engine"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/queue"
	"github.com/runnel-dev/runnel/sns"
	"github.com/runnel-dev/runnel/target"
)

// Config configures Run.
type Config struct {
	// DataDir holds the run's data directory (removed at the end unless
	// Keep); NATSURL runs on an external server instead.
	DataDir, NATSURL string
	Keep             bool
	// Events to publish: default 2,000.
	Events int
	// FailFor is how long the HTTP consumer answers HTTP 500 from the
	// first event on: default 3 s. Its delivery policy retries 6 times, 1
	// to 2 s apart, so events failing longer end in its dead-letter queue.
	FailFor time.Duration
	// The bus consumer "bus-big" refuses events for FailFor too.
	// Timeout bounds the wait for every delivery to settle: default 2 minutes.
	Timeout time.Duration
	Logger  *slog.Logger
}

func (c *Config) setDefaults() {
	if c.Events <= 0 {
		c.Events = 2000
	}
	if c.FailFor == 0 {
		c.FailFor = 3 * time.Second
	}
	if c.Timeout <= 0 {
		c.Timeout = 2 * time.Minute
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// ConsumerResult is one consumer's reconciliation.
type ConsumerResult struct {
	Name     string `json:"name"`
	Via      string `json:"via"` // "topic" or "bus"
	Protocol string `json:"protocol"`
	// Filter is the subscription's filter policy or the rule's pattern.
	Filter string `json:"filter,omitempty"`
	// Expected are the events its filter matches.
	Expected int `json:"expected"`
	// Delivered are the distinct expected events it received;
	// DeadLettered those in its dead-letter queue (and not delivered).
	Delivered    int `json:"delivered"`
	DeadLettered int `json:"deadLettered"`
	// Duplicates are deliveries beyond the first of an event (at-least-once).
	Duplicates int `json:"duplicates"`
	// Unexpected are events it received that its filter does not match.
	Unexpected int `json:"unexpected"`
	// Lost = Expected - Delivered - DeadLettered.
	Lost int `json:"lost"`
}

// Result is the run's report.
type Result struct {
	Events    int              `json:"events"`
	Topic     string           `json:"topic"`
	Bus       string           `json:"bus"`
	Consumers []ConsumerResult `json:"consumers"`
	Stats     sns.Stats        `json:"stats"`
	// BusStats are the bus targets' deliveries (Retried: the failed
	// attempts retried).
	BusStats target.Stats `json:"busStats"`
	// WebhookFailures counts the HTTP 500s the failing consumer answered.
	WebhookFailures int     `json:"webhookFailures"`
	Lost            int     `json:"lost"`
	Exact           bool    `json:"exact"` // Lost == 0 and no Unexpected
	Seconds         float64 `json:"seconds"`
}

// event is what the demo publishes; its attributes carry the same fields.
type event struct {
	ID     int    `json:"id"`
	Region string `json:"region"`
	Amount int    `json:"amount"`
	Kind   string `json:"kind"`
}

var regions = []string{"eu-west-1", "us-east-1", "eu-central-1", "ap-south-1"}

func makeEvent(i int) event {
	kind := "order"
	if i%7 == 0 {
		kind = "refund"
	}
	return event{ID: i, Region: regions[i%len(regions)], Amount: (i * 37) % 1000, Kind: kind}
}

// consumer is a subscription of the demo and the filter it must apply.
type consumer struct {
	name, protocol, policy string
	bus                    bool // a bus rule's target, not a subscription
	match                  func(event) bool
	seen                   map[int]int
	dead                   map[int]bool
}

func consumers() []*consumer {
	return []*consumer{
		{name: "fanout-all", protocol: "sqs", match: func(event) bool { return true }},
		{name: "fanout-eu", protocol: "sqs", policy: `{"region":[{"prefix":"eu-"}]}`, match: func(e event) bool { return strings.HasPrefix(e.Region, "eu-") }},
		{name: "fanout-big", protocol: "sqs", policy: `{"amount":[{"numeric":[">=",500]}],"kind":[{"anything-but":"refund"}]}`,
			match: func(e event) bool { return e.Amount >= 500 && e.Kind != "refund" }},
		{name: "fanout-webhook", protocol: "http", policy: `{"$or":[{"kind":["refund"]},{"region":["ap-south-1"]}]}`,
			match: func(e event) bool { return e.Kind == "refund" || e.Region == "ap-south-1" }},
		{name: "fanout-audit", protocol: "lambda", policy: `{"amount":[{"numeric":["<",100]}]}`, match: func(e event) bool { return e.Amount < 100 }},
	}
}

// Run runs the demo.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	cfg.setDefaults()
	if err := nodeset.RefuseShared(ctx, cfg.NATSURL, "demo fanout", cfg.Logger); err != nil {
		return nil, err
	}
	dir := filepath.Join(cfg.DataDir, "fanout-"+nuid.Next())
	if !cfg.Keep && cfg.NATSURL == "" {
		defer os.RemoveAll(dir)
	}
	reg := function.NewRegistry()
	cs, bcs := consumers(), busConsumers()
	var mu sync.Mutex
	recordEvent := func(c *consumer, e event) {
		mu.Lock()
		c.seen[e.ID]++
		mu.Unlock()
	}
	record := func(c *consumer, body string) { // body: the published message
		var e event
		if json.Unmarshal([]byte(body), &e) == nil {
			recordEvent(c, e)
		}
	}
	for _, c := range bcs {
		c.bus = true
	}
	for _, c := range append(cs, bcs...) {
		c.seen, c.dead = map[int]int{}, map[int]bool{}
	}
	audit, webhook := cs[4], cs[3]
	registerBusAudit(reg, bcs[3], recordEvent)
	reg.Register("fanout-audit", func(ctx context.Context, ev json.RawMessage) (json.RawMessage, error) {
		var e struct {
			Records []struct{ Sns struct{ Message string } }
		}
		json.Unmarshal(ev, &e)
		for _, r := range e.Records {
			record(audit, r.Sns.Message)
		}
		return nil, nil
	})
	rn, err := runnel.Open(ctx, runnel.Config{Engine: engine.Config{DataDir: dir, NATSURL: cfg.NATSURL, Logger: cfg.Logger},
		Registry: reg, RetentionInterval: -1})
	if err != nil {
		return nil, err
	}
	defer rn.Close()
	start := time.Now()
	var failUntil time.Time
	failures := 0
	tokens := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var env sns.Envelope
		json.NewDecoder(r.Body).Decode(&env)
		if env.Type == sns.TypeSubscriptionConfirmation {
			select {
			case tokens <- env.Token:
			default:
			}
			return
		}
		mu.Lock()
		if failUntil.IsZero() && env.Type == sns.TypeNotification {
			failUntil = time.Now().Add(cfg.FailFor)
		}
		failing := time.Now().Before(failUntil)
		mu.Unlock()
		if env.Type == sns.TypeNotification && failing {
			mu.Lock()
			failures++
			mu.Unlock()
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		if env.Type == sns.TypeNotification {
			record(webhook, env.Message)
		}
	}))
	defer srv.Close()
	topic, err := setup(ctx, rn, cs, srv.URL, tokens)
	if err != nil {
		return nil, err
	}
	if err := setupBus(ctx, rn, bcs); err != nil {
		return nil, err
	}
	if err := publish(ctx, rn, topic, cfg.Events); err != nil {
		return nil, err
	}
	var restore sync.WaitGroup
	defer restore.Wait()
	if err := putBus(ctx, rn, cfg.Events, cfg.FailFor, &restore); err != nil {
		return nil, err
	}
	want, busWant := expected(cs, cfg.Events), expected(bcs, cfg.Events)
	deadline := time.Now().Add(cfg.Timeout)
	for st := rn.SNS.Stats("fanout-events"); st.Delivered+st.Failed < want; st = rn.SNS.Stats("fanout-events") {
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("fanout: deliveries not settled after %v: %+v, want %d", cfg.Timeout, st, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for st := rn.Targets.Stats(); st.Delivered+st.DeadLettered+st.KeptInStore < busWant; st = rn.Targets.Stats() {
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("fanout: bus deliveries not settled after %v: %+v, want %d", cfg.Timeout, st, busWant)
		}
		time.Sleep(50 * time.Millisecond)
	}
	mu.Lock()
	res := &Result{Events: cfg.Events, Topic: topic, Bus: rn.Events.ARN(Bus), Stats: rn.SNS.Stats("fanout-events"), BusStats: rn.Targets.Stats(),
		Seconds: time.Since(start).Seconds(), WebhookFailures: failures}
	mu.Unlock()
	for _, c := range append(cs, bcs...) {
		eventOf := func(body string) (event, bool) {
			if c.bus {
				return busEventOf(body)
			}
			var e event
			return e, json.Unmarshal([]byte(messageOf(body)), &e) == nil
		}
		if c.protocol == "sqs" {
			if err := drain(ctx, rn, c.name, func(body string) {
				if e, ok := eventOf(body); ok {
					recordEvent(c, e)
				}
			}); err != nil {
				return nil, err
			}
		}
		if err := drain(ctx, rn, c.name+"-dlq", func(body string) {
			if e, ok := eventOf(body); ok {
				c.dead[e.ID] = true
			}
		}); err != nil {
			return nil, err
		}
		res.Consumers = append(res.Consumers, reconcile(c, cfg.Events))
	}
	res.Exact = true
	for _, c := range res.Consumers {
		res.Lost += c.Lost
		res.Exact = res.Exact && c.Lost == 0 && c.Unexpected == 0
	}
	return res, nil
}

// setup creates the topic, the consumers' queues and dead-letter queues,
// the function, and the subscriptions.
func setup(ctx context.Context, rn *runnel.Runnel, cs []*consumer, webhookURL string, tokens <-chan string) (string, error) {
	topic, err := rn.SNS.CreateTopic(ctx, "fanout-events", nil, nil)
	if err != nil {
		return "", err
	}
	if _, err := rn.Functions.CreateFunction(ctx, function.Config{FunctionName: "fanout-audit", Handler: "fanout-audit"}); err != nil {
		return "", err
	}
	for _, c := range cs {
		endpoint := rn.Functions.ARN(c.name)
		for _, q := range []string{c.name, c.name + "-dlq"} {
			if q == c.name && c.protocol != "sqs" {
				continue
			}
			if _, err := rn.Queues.CreateQueue(ctx, q, nil); err != nil {
				return "", err
			}
		}
		attrs := map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"` + rn.Queues.ARN(c.name+"-dlq") + `"}`}
		if c.policy != "" {
			attrs["FilterPolicy"] = c.policy
		}
		switch c.protocol {
		case "sqs":
			endpoint = rn.Queues.ARN(c.name)
		case "http":
			endpoint = webhookURL
			attrs["DeliveryPolicy"] = `{"healthyRetryPolicy":{"numRetries":6,"minDelayTarget":1,"maxDelayTarget":2}}`
		}
		if _, err := rn.SNS.Subscribe(ctx, sns.SubscribeInput{TopicArn: topic, Protocol: c.protocol, Endpoint: endpoint, Attributes: attrs}); err != nil {
			return "", fmt.Errorf("fanout: subscribe %s: %w", c.name, err)
		}
		if c.protocol == "http" {
			if err := confirm(ctx, rn, topic, tokens); err != nil {
				return "", err
			}
		}
	}
	return topic, nil
}

// confirm confirms the topic's pending http subscription with the token
// SNS posted to the endpoint, as a subscriber does.
func confirm(ctx context.Context, rn *runnel.Runnel, topic string, tokens <-chan string) error {
	select {
	case tok := <-tokens:
		_, err := rn.SNS.ConfirmSubscription(ctx, topic, tok)
		return err
	case <-time.After(30 * time.Second):
		return fmt.Errorf("fanout: no subscription confirmation reached the webhook")
	}
}

// publish publishes n events in batches of 10, with the event's fields as
// attributes.
func publish(ctx context.Context, rn *runnel.Runnel, topic string, n int) error {
	var batch []sns.PublishBatchEntry
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		out, err := rn.SNS.PublishBatch(ctx, topic, batch)
		if err == nil && len(out.Failed) > 0 {
			err = fmt.Errorf("fanout: %d entries refused: %s", len(out.Failed), out.Failed[0].Message)
		}
		batch = batch[:0]
		return err
	}
	for i := range n {
		e := makeEvent(i)
		b, _ := json.Marshal(e)
		batch = append(batch, sns.PublishBatchEntry{Id: fmt.Sprint(i), PublishInput: sns.PublishInput{Message: string(b),
			MessageAttributes: map[string]sns.Attribute{"region": {DataType: "String", StringValue: e.Region},
				"amount": {DataType: "Number", StringValue: fmt.Sprint(e.Amount)}, "kind": {DataType: "String", StringValue: e.Kind}}}})
		if len(batch) == sns.MaxBatchEntries {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

// drain receives and deletes every message of a queue.
func drain(ctx context.Context, rn *runnel.Runnel, name string, fn func(body string)) error {
	for {
		zero := 0
		ms, err := rn.Queues.ReceiveMessage(ctx, name, queue.ReceiveMessageInput{MaxNumberOfMessages: queue.MaxBatchEntries, WaitTimeSeconds: &zero})
		if err != nil || len(ms) == 0 {
			return err
		}
		for _, m := range ms {
			fn(m.Body)
			if err := rn.Queues.DeleteMessage(ctx, name, m.ReceiptHandle); err != nil {
				return err
			}
		}
	}
}

// messageOf is the published message of an SQS body (the envelope's
// Message).
func messageOf(body string) string {
	var env sns.Envelope
	if json.Unmarshal([]byte(body), &env) == nil && env.Type == sns.TypeNotification {
		return env.Message
	}
	return body
}

// expected counts the deliveries n events make to cs.
func expected(cs []*consumer, n int) int64 {
	var want int64
	for i := range n {
		for _, c := range cs {
			if c.match(makeEvent(i)) {
				want++
			}
		}
	}
	return want
}

func reconcile(c *consumer, n int) ConsumerResult {
	r := ConsumerResult{Name: c.name, Via: "topic", Protocol: c.protocol, Filter: c.policy}
	if c.bus {
		r.Via = "bus"
	}
	for i := range n {
		e := makeEvent(i)
		got := c.seen[i]
		switch {
		case !c.match(e):
			r.Unexpected += got
		case got > 0:
			r.Delivered++
			r.Duplicates += got - 1
		case c.dead[i]:
			r.DeadLettered++
		}
		if c.match(e) {
			r.Expected++
		}
	}
	r.Lost = r.Expected - r.Delivered - r.DeadLettered
	return r
}
