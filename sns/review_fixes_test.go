package sns_test

// Tests of the fixes of the 2026-11-28 SNS review, named after their
// rules.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/sns"
)

// TestLambdaSubscriptionToAVersionOrAliasInvokesIt: an endpoint
// arn:aws:lambda:…:function:fn:1 (or :prod) runs version 1 (or the
// alias's version), and one to an alias that does not exist fails the
// delivery (a client error, to the dead-letter queue). Before, runnel
// kept only the function name and invoked $LATEST for all three. AWS:
// Subscribe's Endpoint for lambda is "the ARN of an Lambda function"
// (API_Subscribe), and a qualified ARN invokes that version or alias
// (Lambda's configuration-aliases.html: "You can use the alias ARN ... to
// invoke the function version the alias points to").
func TestLambdaSubscriptionToAVersionOrAliasInvokesIt(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	var mu sync.Mutex
	got := map[string]int{}
	handler := func(which string) string {
		h := fmt.Sprintf("sns-review-%s-%d", which, handlerSeq.Add(1))
		function.Register(h, func(ctx context.Context, ev json.RawMessage) error {
			mu.Lock()
			got[which]++
			mu.Unlock()
			return nil
		})
		return h
	}
	if _, err := rn.Functions.CreateFunction(ctx, function.Config{FunctionName: "fn", Handler: handler("v1")}); err != nil {
		t.Fatal(err)
	}
	if _, err := rn.Functions.PublishVersion(ctx, "fn", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := rn.Functions.CreateAlias(ctx, "fn", function.Alias{Name: "prod", FunctionVersion: "1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := rn.Functions.PutFunction(ctx, function.Config{FunctionName: "fn", Handler: handler("latest")}); err != nil {
		t.Fatal(err)
	}
	arn := func(ref string) string {
		return fmt.Sprintf("arn:aws:lambda:%s:%s:function:%s", rn.Engine.Region(), rn.Engine.AccountID(), ref)
	}
	topic := createTopic(t, rn, "t", nil)
	dlq := createQueue(t, rn, "dlq", nil)
	subscribe(t, rn, topic, "lambda", arn("fn:1"), nil)
	subscribe(t, rn, topic, "lambda", arn("fn:prod"), nil)
	subscribe(t, rn, topic, "lambda", arn("fn:staging"), map[string]string{sns.AttrRedrivePolicy: `{"deadLetterTargetArn":"` + dlq + `"}`})
	id := publish(t, rn, sns.PublishInput{TopicArn: topic, Message: "hi"})
	st := settled(t, rn, "t", 3)
	testenv.Eventually(t, wait, "two invocations", func() bool { mu.Lock(); defer mu.Unlock(); return got["v1"]+got["latest"] >= 2 })
	mu.Lock()
	defer mu.Unlock()
	if got["v1"] != 2 || got["latest"] != 0 {
		t.Errorf("subscriptions to fn:1 and fn:prod invoked %v; want version 1 twice, $LATEST never", got)
	}
	if st.Delivered != 2 || st.Failed != 1 || st.DeadLettered != 1 {
		t.Errorf("stats %+v; want 2 delivered, the missing alias's delivery failed and dead-lettered", st)
	}
	if d := receiveAll(t, rn, "dlq"); len(d) != 1 || envelopeOf(t, d[0].Body).MessageId != id {
		t.Errorf("dead-letter queue: %+v", d)
	}
}

// TestFilterPolicyExistsTrueNeedsANonNullNonEmptyValue: with
// FilterPolicyScope MessageBody, "exists": true delivers a message whose
// key holds a value, not one whose key is null or "". Before, runnel
// delivered all three (the matcher's exists, shared with Lambda and
// EventBridge, saw null and "" as values). SNS: "Use "exists": true to
// match incoming messages that include the specified property. The key
// must have a non-null and non-empty value" (attribute-key-matching.html).
func TestFilterPolicyExistsTrueNeedsANonNullNonEmptyValue(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	topic := createTopic(t, rn, "t", nil)
	q := createQueue(t, rn, "q", nil)
	subscribe(t, rn, topic, "sqs", q, map[string]string{sns.AttrFilterPolicyScope: sns.ScopeMessageBody,
		sns.AttrFilterPolicy: `{"store":[{"exists":true}]}`, sns.AttrRawMessageDelivery: "true"})
	for _, m := range []string{`{"store":null,"id":1}`, `{"store":"","id":2}`, `{"store":"fans","id":3}`, `{"id":4}`} {
		publish(t, rn, sns.PublishInput{TopicArn: topic, Message: m})
	}
	st := settled(t, rn, "t", 4)
	var bodies []string
	for _, m := range receiveAll(t, rn, "q") {
		bodies = append(bodies, m.Body)
	}
	if len(bodies) != 1 || bodies[0] != `{"store":"fans","id":3}` || st.FilteredOut != 3 {
		t.Errorf("exists:true delivered %v (stats %+v); want only store=fans, 3 filtered out", bodies, st)
	}
}

// TestSubscriptionsSharingAFIFODeadLetterQueueEachKeepTheirDeadLetter:
// two subscriptions of a FIFO topic whose deliveries fail for good, with
// one FIFO dead-letter queue, leave two dead letters of the message, one
// per subscription. Before, both were sent with the message's
// deduplication id: the queue kept the first and dropped the second as a
// duplicate, while DeadLettered counted both. AWS: the dead-letter queue
// holds "messages that can't be delivered to subscribers"
// (sns-dead-letter-queues.html), one per failed subscription.
func TestSubscriptionsSharingAFIFODeadLetterQueueEachKeepTheirDeadLetter(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	dlq := createQueue(t, rn, "dlq.fifo", map[string]string{"FifoQueue": "true"})
	redrive := map[string]string{sns.AttrRedrivePolicy: `{"deadLetterTargetArn":"` + dlq + `"}`}
	topic := createTopic(t, rn, "t.fifo", map[string]string{"FifoTopic": "true"})
	a := subscribe(t, rn, topic, "sqs", rn.Queues.ARN("gone-a.fifo"), redrive)
	b := subscribe(t, rn, topic, "sqs", rn.Queues.ARN("gone-b.fifo"), redrive)
	id := publish(t, rn, sns.PublishInput{TopicArn: topic, Message: "m", MessageGroupId: "g", MessageDeduplicationId: "d1"})
	st := settled(t, rn, "t.fifo", 2)
	got := map[string]bool{}
	for _, m := range receiveAll(t, rn, "dlq.fifo") {
		e := envelopeOf(t, m.Body)
		if e.MessageId != id {
			t.Errorf("dead letter of %s, want %s", e.MessageId, id)
		}
		u, err := url.Parse(e.UnsubscribeURL)
		if err != nil {
			t.Fatal(err)
		}
		got[u.Query().Get("SubscriptionArn")] = true
	}
	if len(got) != 2 || !got[a] || !got[b] || st.DeadLettered != 2 || st.DeadLetterFailed != 0 {
		t.Errorf("dead letters of %v, stats %+v; want one for each of %s and %s", got, st, a, b)
	}
}

// TestAStandardTopicSubscriptionRefusesAFIFODeadLetterQueue: a standard
// topic's subscription takes a standard dead-letter queue only, on
// Subscribe and SetSubscriptionAttributes, with InvalidParameter naming
// RedrivePolicy. Before, a FIFO one was accepted. AWS: "FIFO topic
// subscriptions use FIFO queues, and standard topic subscriptions use
// standard queues" (sns-dead-letter-queues.html).
func TestAStandardTopicSubscriptionRefusesAFIFODeadLetterQueue(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	fifoDLQ := createQueue(t, rn, "dlq.fifo", map[string]string{"FifoQueue": "true"})
	stdDLQ := createQueue(t, rn, "dlq", nil)
	topic := createTopic(t, rn, "t", nil)
	redrive := func(arn string) string { return `{"deadLetterTargetArn":"` + arn + `"}` }
	_, err := rn.SNS.Subscribe(ctx, sns.SubscribeInput{TopicArn: topic, Protocol: "sqs", Endpoint: createQueue(t, rn, "q", nil),
		Attributes: map[string]string{sns.AttrRedrivePolicy: redrive(fifoDLQ)}})
	if !errors.Is(err, awserr.ErrSNSInvalidParameter) || !strings.Contains(err.Error(), "RedrivePolicy") || !strings.Contains(err.Error(), "standard queue") {
		t.Errorf("Subscribe with a FIFO dead-letter queue: %v", err)
	}
	sub := subscribe(t, rn, topic, "sqs", rn.Queues.ARN("q"), map[string]string{sns.AttrRedrivePolicy: redrive(stdDLQ)})
	err = rn.SNS.SetSubscriptionAttributes(ctx, sub, sns.AttrRedrivePolicy, redrive(fifoDLQ))
	if !errors.Is(err, awserr.ErrSNSInvalidParameter) || !strings.Contains(err.Error(), "RedrivePolicy") {
		t.Errorf("SetSubscriptionAttributes to a FIFO dead-letter queue: %v", err)
	}
	attrs, err := rn.SNS.GetSubscriptionAttributes(sub)
	if err != nil || attrs[sns.AttrRedrivePolicy] != redrive(stdDLQ) {
		t.Errorf("after the refusal: %v %v", attrs[sns.AttrRedrivePolicy], err)
	}
}

// TestAnEmptyFilterPolicyRemovesIt: FilterPolicy {} is no policy: set on
// a subscription it removes the policy (the subscription gets every
// message again), on Subscribe it is accepted, and it does not count
// against the 200 policies of a topic. Before, {} was refused
// ("pattern must have at least one field"). AWS: "you can remove the
// filter policy by overwriting it with an empty JSON body", aws sns
// set-subscription-attributes --attribute-name FilterPolicy
// --attribute-value "{}" (message-filtering-policy-remove.html).
func TestAnEmptyFilterPolicyRemovesIt(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	topic := createTopic(t, rn, "t", nil)
	q := createQueue(t, rn, "q", nil)
	sub := subscribe(t, rn, topic, "sqs", q, map[string]string{sns.AttrFilterPolicy: `{"a":["x"]}`, sns.AttrRawMessageDelivery: "true"})
	if err := rn.SNS.SetSubscriptionAttributes(ctx, sub, sns.AttrFilterPolicy, "{}"); err != nil {
		t.Fatalf("SetSubscriptionAttributes FilterPolicy {}: %v", err)
	}
	if a, _ := rn.SNS.GetSubscriptionAttributes(sub); a[sns.AttrFilterPolicy] != "" {
		t.Errorf("FilterPolicy after {}: %q, want none", a[sns.AttrFilterPolicy])
	}
	publish(t, rn, sns.PublishInput{TopicArn: topic, Message: "no attributes"})
	if st := settled(t, rn, "t", 1); st.Delivered != 1 || len(receiveAll(t, rn, "q")) != 1 {
		t.Errorf("after {}: stats %+v; want the message delivered", st)
	}
	// Subscribe with {} (and with spaces), then the per-topic limit.
	for i, p := range []string{"{}", " { } "} {
		arn, err := rn.SNS.Subscribe(ctx, sns.SubscribeInput{TopicArn: topic, Protocol: "sqs", Endpoint: rn.Queues.ARN(fmt.Sprintf("e%d", i)),
			Attributes: map[string]string{sns.AttrFilterPolicy: p}, ReturnSubscriptionArn: true})
		if err != nil {
			t.Fatalf("Subscribe FilterPolicy %q: %v", p, err)
		}
		if a, _ := rn.SNS.GetSubscriptionAttributes(arn); a[sns.AttrFilterPolicy] != "" {
			t.Errorf("Subscribe FilterPolicy %q stored %q", p, a[sns.AttrFilterPolicy])
		}
	}
	for i := range sns.MaxFilterPoliciesPerTopic {
		subscribe(t, rn, topic, "sqs", rn.Queues.ARN(fmt.Sprintf("p%d", i)), map[string]string{sns.AttrFilterPolicy: `{"a":["x"]}`})
	}
	empty, err := rn.SNS.Subscribe(ctx, sns.SubscribeInput{TopicArn: topic, Protocol: "sqs", Endpoint: rn.Queues.ARN("last"),
		Attributes: map[string]string{sns.AttrFilterPolicy: "{}"}, ReturnSubscriptionArn: true})
	if err != nil {
		t.Fatalf("Subscribe FilterPolicy {} with %d policies on the topic: %v", sns.MaxFilterPoliciesPerTopic, err)
	}
	if err := rn.SNS.SetSubscriptionAttributes(ctx, empty, sns.AttrFilterPolicy, "{}"); err != nil {
		t.Errorf("SetSubscriptionAttributes FilterPolicy {} with %d policies on the topic: %v", sns.MaxFilterPoliciesPerTopic, err)
	}
	if err := rn.SNS.SetSubscriptionAttributes(ctx, empty, sns.AttrFilterPolicy, `{"a":["x"]}`); !errors.Is(err, awserr.ErrSNSFilterPolicyLimitExceeded) {
		t.Errorf("a 201st policy: %v, want FilterPolicyLimitExceeded", err)
	}
}

// TestTheLambdaEventHasMillisecondsAndANullSubject: the event a function
// subscription gets has Sns.Timestamp with three digits of milliseconds
// (…:00.100Z, …:00.000Z), as the envelope, and Sns.Subject null when the
// message has no subject; Go handlers taking events.SNSEvent still decode
// it. Before, the Timestamp lost its trailing zeros (.100Z was .1Z, .000Z
// no fraction) and a missing Subject was "". AWS's sample SNS event
// (Lambda's with-sns.html) has "Timestamp": "2019-01-02T12:45:07.000Z",
// and a message published without a subject arrives with "Subject": null.
func TestTheLambdaEventHasMillisecondsAndANullSubject(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 100*int(time.Millisecond), time.UTC)
	clock := clockwork.NewFakeClockAt(at)
	rn := testenv.Start(t, testenv.Options{Clock: clock})
	var mu sync.Mutex
	var raw []string
	h := fmt.Sprintf("sns-review-raw-%d", handlerSeq.Add(1))
	function.Register(h, func(ctx context.Context, ev json.RawMessage) error {
		mu.Lock()
		raw = append(raw, string(ev))
		mu.Unlock()
		return nil
	})
	if _, err := rn.Functions.CreateFunction(ctx, function.Config{FunctionName: "raw", Handler: h}); err != nil {
		t.Fatal(err)
	}
	typed := newFunction(t, rn, "typed", 0)
	topic := createTopic(t, rn, "t", nil)
	arn := func(name string) string {
		return fmt.Sprintf("arn:aws:lambda:%s:%s:function:%s", rn.Engine.Region(), rn.Engine.AccountID(), name)
	}
	subscribe(t, rn, topic, "lambda", arn("raw"), nil)
	subscribe(t, rn, topic, "lambda", arn("typed"), nil)
	publish(t, rn, sns.PublishInput{TopicArn: topic, Message: "no subject"})
	clock.Advance(900 * time.Millisecond) // 00:00:01.000
	publish(t, rn, sns.PublishInput{TopicArn: topic, Message: "with subject", Subject: "hello"})
	advanceUntil(t, clock, 10*time.Second, "four invocations", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(raw) == 2 && typed.count() == 2
	})
	type entity struct {
		Message, Timestamp string
		Subject            *string
	}
	show := func(p *string) string {
		if p == nil {
			return "null"
		}
		return fmt.Sprintf("%q", *p)
	}
	mu.Lock()
	defer mu.Unlock()
	got := map[string]entity{}
	for _, r := range raw {
		var ev struct{ Records []struct{ Sns entity } }
		if err := json.Unmarshal([]byte(r), &ev); err != nil || len(ev.Records) != 1 {
			t.Fatalf("event %s: %v", r, err)
		}
		got[ev.Records[0].Sns.Message] = ev.Records[0].Sns
	}
	if e := got["no subject"]; e.Timestamp != "2026-01-01T00:00:00.100Z" || e.Subject != nil {
		t.Errorf("without a subject: Timestamp %q, Subject %s; want 2026-01-01T00:00:00.100Z, null (%v)", e.Timestamp, show(e.Subject), raw)
	}
	if e := got["with subject"]; e.Timestamp != "2026-01-01T00:00:01.000Z" || e.Subject == nil || *e.Subject != "hello" {
		t.Errorf("with a subject: Timestamp %q, Subject %s; want 2026-01-01T00:00:01.000Z, \"hello\" (%v)", e.Timestamp, show(e.Subject), raw)
	}
	typed.mu.Lock()
	defer typed.mu.Unlock()
	for _, ev := range typed.events {
		s := ev.Records[0].SNS
		want, subject := at, ""
		if s.Message == "with subject" {
			want, subject = at.Add(900*time.Millisecond), "hello"
		}
		if !s.Timestamp.Equal(want) || s.Subject != subject {
			t.Errorf("events.SNSEvent of %q: Timestamp %v, Subject %q; want %v, %q", s.Message, s.Timestamp, s.Subject, want, subject)
		}
	}
}
