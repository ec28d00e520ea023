package sns_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/mapping"
	"github.com/runnel-dev/runnel/queue"
	"github.com/runnel-dev/runnel/sns"
)

const wait = 10 * time.Second

var ctx = context.Background()

func createQueue(t *testing.T, rn *runnel.Runnel, name string, attrs map[string]string) string {
	t.Helper()
	if _, err := rn.Queues.CreateQueue(ctx, name, attrs); err != nil {
		t.Fatal(err)
	}
	return rn.Queues.ARN(name)
}

func createTopic(t *testing.T, rn *runnel.Runnel, name string, attrs map[string]string) string {
	t.Helper()
	arn, err := rn.SNS.CreateTopic(ctx, name, attrs, nil)
	if err != nil {
		t.Fatal(err)
	}
	return arn
}

func subscribe(t *testing.T, rn *runnel.Runnel, topic, protocol, endpoint string, attrs map[string]string) string {
	t.Helper()
	arn, err := rn.SNS.Subscribe(ctx, sns.SubscribeInput{TopicArn: topic, Protocol: protocol, Endpoint: endpoint, Attributes: attrs, ReturnSubscriptionArn: true})
	if err != nil {
		t.Fatal(err)
	}
	return arn
}

func publish(t *testing.T, rn *runnel.Runnel, in sns.PublishInput) string {
	t.Helper()
	out, err := rn.SNS.Publish(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	return out.MessageId
}

// settled waits until every delivery of n messages to subs subscriptions
// ended (delivered, failed or filtered out).
func settled(t *testing.T, rn *runnel.Runnel, topic string, total int64) sns.Stats {
	t.Helper()
	var st sns.Stats
	testenv.Eventually(t, wait, "deliveries settled", func() bool {
		st = rn.SNS.Stats(topic)
		return st.Delivered+st.Failed+st.FilteredOut >= total
	})
	return st
}

// receiveAll takes every visible message of a queue.
func receiveAll(t *testing.T, rn *runnel.Runnel, name string) []queue.Message {
	t.Helper()
	var out []queue.Message
	for {
		zero := 0
		got, err := rn.Queues.ReceiveMessage(ctx, name, queue.ReceiveMessageInput{MaxNumberOfMessages: 10,
			WaitTimeSeconds: &zero, MessageAttributeNames: []string{"All"}, AttributeNames: []string{"All"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 {
			return out
		}
		out = append(out, got...)
	}
}

func envelopeOf(t *testing.T, body string) sns.Envelope {
	t.Helper()
	var e sns.Envelope
	if err := json.Unmarshal([]byte(body), &e); err != nil {
		t.Fatalf("not an envelope: %v: %s", err, body)
	}
	return e
}

func strp(s string) *string { return &s }

// TestFanOutToThreeQueuesWithFilterPolicies: one topic, three queues with
// their own filter policies and dead-letter queues; each queue gets the
// messages its policy matches, in SNS's envelope, and nothing else.
func TestFanOutToThreeQueuesWithFilterPolicies(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	topic := createTopic(t, rn, "orders", nil)
	policies := map[string]string{
		"eu":    `{"region":["eu-west-1","eu-central-1"]}`,
		"big":   `{"amount":[{"numeric":[">=",100]}]}`,
		"other": `{"region":[{"anything-but":["eu-west-1","eu-central-1"]}]}`,
	}
	for name, p := range policies {
		dlq := createQueue(t, rn, name+"-dlq", nil)
		subscribe(t, rn, topic, "sqs", createQueue(t, rn, name, nil), map[string]string{
			"FilterPolicy": p, "RedrivePolicy": `{"deadLetterTargetArn":"` + dlq + `"}`})
	}
	msgs := []struct {
		region string
		amount string
		want   []string
	}{
		{"eu-west-1", "5", []string{"eu"}},
		{"us-east-1", "500", []string{"big", "other"}},
		{"eu-central-1", "100", []string{"big", "eu"}},
		{"ap-south-1", "1", []string{"other"}},
	}
	ids := map[string]string{}
	for i, m := range msgs {
		ids[publish(t, rn, sns.PublishInput{TopicArn: topic, Message: fmt.Sprintf("order %d", i), Subject: "new order",
			MessageAttributes: map[string]sns.Attribute{"region": {DataType: "String", StringValue: m.region},
				"amount": {DataType: "Number", StringValue: m.amount}}})] = fmt.Sprintf("order %d", i)
	}
	st := settled(t, rn, "orders", 12)
	if st.Published != 4 || st.Delivered != 6 || st.FilteredOut != 6 || st.Failed != 0 {
		t.Fatalf("stats %+v", st)
	}
	got := map[string][]string{}
	for name := range policies {
		for _, m := range receiveAll(t, rn, name) {
			e := envelopeOf(t, m.Body)
			if e.Type != "Notification" || e.TopicArn != topic || e.Subject != "new order" || ids[e.MessageId] != e.Message ||
				e.SignatureVersion != "1" || e.Signature == "" || !strings.HasSuffix(e.SigningCertURL, ".pem") ||
				!strings.Contains(e.UnsubscribeURL, "Action=Unsubscribe") || e.MessageAttributes["amount"].Type != "Number" {
				t.Fatalf("envelope %+v", e)
			}
			if _, err := time.Parse("2006-01-02T15:04:05.000Z", e.Timestamp); err != nil {
				t.Fatalf("Timestamp %q", e.Timestamp)
			}
			got[e.Message] = append(got[e.Message], name)
		}
		if dl := receiveAll(t, rn, name+"-dlq"); len(dl) != 0 {
			t.Fatalf("%s-dlq has %d messages", name, len(dl))
		}
	}
	for i, m := range msgs {
		g := got[fmt.Sprintf("order %d", i)]
		sort.Strings(g)
		if strings.Join(g, ",") != strings.Join(m.want, ",") {
			t.Errorf("order %d went to %v, want %v", i, g, m.want)
		}
	}
}

// TestRawMessageDelivery: with RawMessageDelivery the queue gets the
// message itself and the attributes as SQS message attributes.
func TestRawMessageDelivery(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	topic := createTopic(t, rn, "raw", nil)
	subscribe(t, rn, topic, "sqs", createQueue(t, rn, "rawq", nil), map[string]string{"RawMessageDelivery": "true"})
	subscribe(t, rn, topic, "sqs", createQueue(t, rn, "wrapped", nil), nil)
	publish(t, rn, sns.PublishInput{TopicArn: topic, Message: `{"hello":"world"}`, MessageAttributes: map[string]sns.Attribute{
		"s": {DataType: "String", StringValue: "x"}, "n": {DataType: "Number", StringValue: "1.5"},
		"b": {DataType: "Binary", BinaryValue: []byte{2, 3, 4}}, "a": {DataType: "String.Array", StringValue: `["p","q"]`}}})
	settled(t, rn, "raw", 2)
	raw := receiveAll(t, rn, "rawq")
	if len(raw) != 1 || raw[0].Body != `{"hello":"world"}` {
		t.Fatalf("raw: %+v", raw)
	}
	a := raw[0].MessageAttributes
	if *a["s"].StringValue != "x" || a["n"].DataType != "Number" || string(a["b"].BinaryValue) != "\x02\x03\x04" || a["a"].DataType != "String.Array" {
		t.Fatalf("raw attributes %+v", a)
	}
	wrapped := receiveAll(t, rn, "wrapped")
	if len(wrapped) != 1 || len(wrapped[0].MessageAttributes) != 0 {
		t.Fatalf("wrapped: %+v", wrapped)
	}
	if e := envelopeOf(t, wrapped[0].Body); e.Message != `{"hello":"world"}` || e.MessageAttributes["b"] != (sns.EnvelopeValue{Type: "Binary", Value: "AgME"}) {
		t.Fatalf("envelope %+v", e)
	}
}

// TestRedriveToDLQWhenTheQueueIsGone: a deleted target queue is a client
// error: no retry, the message goes to the subscription's DLQ as it would
// have been delivered; a subscription without a DLQ, or whose DLQ is gone
// too, counts it failed (and logs it).
func TestRedriveToDLQWhenTheQueueIsGone(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	topic := createTopic(t, rn, "t", nil)
	dlq := createQueue(t, rn, "dlq", nil)
	subscribe(t, rn, topic, "sqs", createQueue(t, rn, "gone", nil), map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"` + dlq + `"}`})
	subscribe(t, rn, topic, "sqs", createQueue(t, rn, "gone-too", nil), nil)
	subscribe(t, rn, topic, "sqs", createQueue(t, rn, "gone-3", nil), map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"` + createQueue(t, rn, "dlq-gone", nil) + `"}`})
	for _, q := range []string{"gone", "gone-too", "gone-3", "dlq-gone"} {
		if err := rn.Queues.DeleteQueue(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	id := publish(t, rn, sns.PublishInput{TopicArn: topic, Message: "lost?"})
	st := settled(t, rn, "t", 3)
	if st.Failed != 3 || st.DeadLettered != 1 || st.DeadLetterFailed != 1 {
		t.Fatalf("stats %+v", st)
	}
	got := receiveAll(t, rn, "dlq")
	if len(got) != 1 {
		t.Fatalf("dlq: %d messages", len(got))
	}
	if e := envelopeOf(t, got[0].Body); e.MessageId != id || e.Message != "lost?" {
		t.Fatalf("dlq envelope %+v", e)
	}
}

// TestFIFOTopicKeepsGroupOrderAndDeduplicates: a FIFO topic into a FIFO
// queue keeps each group's order, forwards the group id, and delivers a
// duplicate (same content, content-based deduplication) once.
func TestFIFOTopicKeepsGroupOrderAndDeduplicates(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	topic := createTopic(t, rn, "t.fifo", map[string]string{"FifoTopic": "true", "ContentBasedDeduplication": "true"})
	q := createQueue(t, rn, "q.fifo", map[string]string{"FifoQueue": "true"})
	subscribe(t, rn, topic, "sqs", q, map[string]string{"RawMessageDelivery": "true"})
	var entries []sns.PublishBatchEntry
	for i := range 30 {
		entries = append(entries, sns.PublishBatchEntry{Id: fmt.Sprint(i), PublishInput: sns.PublishInput{
			Message: fmt.Sprintf("g%d-%02d", i%3, i), MessageGroupId: fmt.Sprintf("g%d", i%3)}})
		if len(entries) == 10 {
			out, err := rn.SNS.PublishBatch(ctx, topic, entries)
			if err != nil || len(out.Failed) != 0 || out.Successful[0].SequenceNumber == "" {
				t.Fatalf("PublishBatch: %+v %v", out, err)
			}
			entries = nil
		}
	}
	first := publish(t, rn, sns.PublishInput{TopicArn: topic, Message: "dup", MessageGroupId: "g0"})
	if again := publish(t, rn, sns.PublishInput{TopicArn: topic, Message: "dup", MessageGroupId: "g0"}); again != first {
		t.Fatalf("duplicate got MessageId %s, first %s", again, first)
	}
	settled(t, rn, "t.fifo", 31)
	byGroup := map[string][]string{}
	for len(byGroup["g0"])+len(byGroup["g1"])+len(byGroup["g2"]) < 31 {
		got := receiveAll(t, rn, "q.fifo")
		if len(got) == 0 {
			t.Fatalf("only %v", byGroup)
		}
		for _, m := range got {
			g := m.Attributes[queue.MsgAttrMessageGroupId]
			byGroup[g] = append(byGroup[g], m.Body)
			rn.Queues.DeleteMessage(ctx, "q.fifo", m.ReceiptHandle)
		}
	}
	for g, bodies := range byGroup {
		if !sort.StringsAreSorted(bodies[:10]) || (g == "g0" && (len(bodies) != 11 || bodies[10] != "dup")) {
			t.Errorf("group %s out of order: %v", g, bodies)
		}
	}
}

// recorder is a function that records its SNS events and fails the first
// failures calls.
type recorder struct {
	mu       sync.Mutex
	events   []events.SNSEvent
	at       []time.Time
	failures atomic.Int32
}

var handlerSeq atomic.Int64

func newFunction(t *testing.T, rn *runnel.Runnel, name string, failures int32) *recorder {
	t.Helper()
	r := &recorder{}
	r.failures.Store(failures)
	h := fmt.Sprintf("sns-test-%d", handlerSeq.Add(1))
	function.Register(h, func(ctx context.Context, ev events.SNSEvent) error {
		r.mu.Lock()
		r.events = append(r.events, ev)
		r.at = append(r.at, rn.Engine.Clock.Now())
		r.mu.Unlock()
		if r.failures.Add(-1) >= 0 {
			return errors.New("not yet")
		}
		return nil
	})
	if _, err := rn.Functions.CreateFunction(ctx, function.Config{FunctionName: name, Handler: h}); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.events)
}

// TestPublishIsDurableBeforeDelivery: a message accepted while no worker
// runs (a passive instance, as after a crash before delivery) is
// delivered by the next instance on the same data.
func TestPublishIsDurableBeforeDelivery(t *testing.T) {
	dir := t.TempDir()
	rn := testenv.Start(t, testenv.Options{Dir: dir, Mappings: mapping.Options{Passive: true}})
	topic := createTopic(t, rn, "t", nil)
	subscribe(t, rn, topic, "sqs", createQueue(t, rn, "q", nil), nil)
	id := publish(t, rn, sns.PublishInput{TopicArn: topic, Message: "kept"})
	rn.Crash()
	rn = testenv.Start(t, testenv.Options{Dir: dir})
	settled(t, rn, "t", 1)
	got := receiveAll(t, rn, "q")
	if len(got) != 1 || envelopeOf(t, got[0].Body).MessageId != id {
		t.Fatalf("after restart: %+v", got)
	}
}

// TestPublishValidation: AWS's errors, naming the parameter.
func TestPublishValidation(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	std := createTopic(t, rn, "std", nil)
	fifo := createTopic(t, rn, "f.fifo", map[string]string{"FifoTopic": "true"})
	cases := []struct {
		in   sns.PublishInput
		code *awserr.Error
		msg  string
	}{
		{sns.PublishInput{TopicArn: std}, awserr.ErrSNSInvalidParameter, "Empty message"},
		{sns.PublishInput{TopicArn: std, Message: strings.Repeat("x", sns.MaxMessageSize+1)}, awserr.ErrSNSInvalidParameter, "Message too long"},
		{sns.PublishInput{TopicArn: std, Message: "m", MessageStructure: "json"}, awserr.ErrSNSInvalidParameter, "Message Structure"},
		{sns.PublishInput{TopicArn: std, Message: `{"sqs":"x"}`, MessageStructure: "json"}, awserr.ErrSNSInvalidParameter, "No default entry"},
		{sns.PublishInput{TopicArn: std, Message: "m", MessageDeduplicationId: "d"}, awserr.ErrSNSInvalidParameter, "MessageDeduplicationId"},
		{sns.PublishInput{TopicArn: fifo, Message: "m"}, awserr.ErrSNSInvalidParameter, "MessageGroupId parameter is required"},
		{sns.PublishInput{TopicArn: fifo, Message: "m", MessageGroupId: "g"}, awserr.ErrSNSInvalidParameter, "ContentBasedDeduplication"},
		{sns.PublishInput{TopicArn: std, Message: "m", MessageAttributes: map[string]sns.Attribute{"AWS.x": {DataType: "String", StringValue: "v"}}}, awserr.ErrSNSParameterValueInvalid, "name"},
		{sns.PublishInput{TopicArn: std, Message: "m", MessageAttributes: map[string]sns.Attribute{"x": {DataType: "String"}}}, awserr.ErrSNSParameterValueInvalid, "non-empty"},
		{sns.PublishInput{TopicArn: std, Message: "m", MessageAttributes: map[string]sns.Attribute{"x": {DataType: "Number", StringValue: "abc"}}}, awserr.ErrSNSParameterValueInvalid, "to number"},
		{sns.PublishInput{TopicArn: std, Message: "m", MessageAttributes: map[string]sns.Attribute{"x": {DataType: "Blob", StringValue: "a"}}}, awserr.ErrSNSParameterValueInvalid, "supported type"},
		{sns.PublishInput{TopicArn: rn.SNS.TopicARN("nope"), Message: "m"}, awserr.ErrSNSNotFound, "does not exist"},
	}
	for i, c := range cases {
		_, err := rn.SNS.Publish(ctx, c.in)
		if !errors.Is(err, c.code) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("case %d: %v, want %s %q", i, err, c.code.Code, c.msg)
		}
	}
	_, err := rn.SNS.PublishBatch(ctx, std, nil)
	if !errors.Is(err, awserr.ErrSNSEmptyBatchRequest) {
		t.Errorf("empty batch: %v", err)
	}
	out, err := rn.SNS.PublishBatch(ctx, std, []sns.PublishBatchEntry{{Id: "a", PublishInput: sns.PublishInput{Message: "ok"}}, {Id: "b"}})
	if err != nil || len(out.Successful) != 1 || len(out.Failed) != 1 || out.Failed[0].Code != "InvalidParameter" || !out.Failed[0].SenderFault {
		t.Fatalf("mixed batch: %+v %v", out, err)
	}
	_, err = rn.SNS.PublishBatch(ctx, std, []sns.PublishBatchEntry{{Id: "a", PublishInput: sns.PublishInput{Message: "ok"}}, {Id: "a", PublishInput: sns.PublishInput{Message: "ok"}}})
	if !errors.Is(err, awserr.ErrSNSBatchEntryIdsNotDistinct) {
		t.Errorf("same ids: %v", err)
	}
}

// advanceUntil moves a fake clock on in steps until cond holds.
func advanceUntil(t *testing.T, clock *clockwork.FakeClock, step time.Duration, what string, cond func() bool) {
	t.Helper()
	testenv.Eventually(t, wait, what, func() bool {
		if cond() {
			return true
		}
		clock.Advance(step)
		return cond()
	})
}

// TestLambdaDeliveryIsAnAsyncInvocationWithItsRetries: a function
// subscription gets events.SNSEvent as an asynchronous invocation; its
// errors are retried by the async rules (after 1 minute, then 2 more);
// a function that does not exist is a client error: straight to the DLQ.
func TestLambdaDeliveryIsAnAsyncInvocationWithItsRetries(t *testing.T) {
	clock := clockwork.NewFakeClockAt(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rn := testenv.Start(t, testenv.Options{Clock: clock})
	r := newFunction(t, rn, "fn", 2)
	topic := createTopic(t, rn, "t", nil)
	fnARN := func(name string) string {
		return fmt.Sprintf("arn:aws:lambda:%s:%s:function:%s", rn.Engine.Region(), rn.Engine.AccountID(), name)
	}
	sub := subscribe(t, rn, topic, "lambda", fnARN("fn"), nil)
	dlq := createQueue(t, rn, "dlq", nil)
	subscribe(t, rn, topic, "lambda", fnARN("missing"), map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"` + dlq + `"}`})
	id := publish(t, rn, sns.PublishInput{TopicArn: topic, Message: "hi", MessageAttributes: map[string]sns.Attribute{
		"n": {DataType: "Number", StringValue: "7"}}})
	advanceUntil(t, clock, 10*time.Second, "three invocations", func() bool { return r.count() >= 3 })
	r.mu.Lock()
	defer r.mu.Unlock()
	if gap := r.at[1].Sub(r.at[0]); gap < time.Minute {
		t.Fatalf("first retry after %v, want 1 minute", gap)
	}
	if gap := r.at[2].Sub(r.at[1]); gap < 2*time.Minute {
		t.Fatalf("second retry after %v, want 2 minutes", gap)
	}
	rec := r.events[2].Records[0]
	if len(r.events[2].Records) != 1 || rec.EventSource != "aws:sns" || rec.EventVersion != "1.0" || rec.EventSubscriptionArn != sub ||
		rec.SNS.MessageID != id || rec.SNS.TopicArn != topic || rec.SNS.Message != "hi" || rec.SNS.Type != "Notification" ||
		rec.SNS.Signature == "" || rec.SNS.UnsubscribeURL == "" {
		t.Fatalf("event %+v", rec)
	}
	if a, _ := rec.SNS.MessageAttributes["n"].(map[string]any); a["Type"] != "String" || a["Value"] != "7" {
		t.Fatalf("attributes %+v", rec.SNS.MessageAttributes)
	}
	st := rn.SNS.Stats("t")
	if st.Delivered != 1 || st.Failed != 1 || st.DeadLettered != 1 {
		t.Fatalf("stats %+v", st)
	}
	if got := receiveAll(t, rn, "dlq"); len(got) != 1 || envelopeOf(t, got[0].Body).MessageId != id {
		t.Fatalf("dlq %+v", got)
	}
}

// endpoint is an HTTP subscriber that records what it is sent and fails
// the first failures notifications with HTTP 500.
type endpoint struct {
	mu       sync.Mutex
	reqs     []*http.Request
	bodies   []string
	failures int
}

func (e *endpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.reqs, e.bodies = append(e.reqs, r), append(e.bodies, string(b))
	if r.Header.Get("x-amz-sns-message-type") == "Notification" && e.failures > 0 {
		e.failures--
		w.WriteHeader(500)
	}
}

func (e *endpoint) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.reqs)
}

// startHTTP starts a runnel on a fake clock with topic "t" and an HTTP
// endpoint failing its first failures notifications; it returns them and
// the endpoint's URL and the topic's ARN.
func startHTTP(t *testing.T, failures int) (*runnel.Runnel, *clockwork.FakeClock, *endpoint, string, string) {
	t.Helper()
	clock := clockwork.NewFakeClockAt(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rn := testenv.Start(t, testenv.Options{Clock: clock})
	ep := &endpoint{failures: failures}
	srv := httptest.NewServer(ep)
	t.Cleanup(srv.Close)
	return rn, clock, ep, srv.URL, createTopic(t, rn, "t", nil)
}

// TestHTTPConfirmationAndDeliveryPolicyRetries: an http subscription is
// pending until ConfirmSubscription gets the token SNS posted; a
// notification failing with HTTP 500 is retried by the subscription's
// delivery policy, with the same MessageId and SNS's headers; when the
// retries are spent it goes to the DLQ.
func TestHTTPConfirmationAndDeliveryPolicyRetries(t *testing.T) {
	rn, clock, ep, url, topic := startHTTP(t, 2)
	dlq := createQueue(t, rn, "dlq", nil)
	arn, err := rn.SNS.Subscribe(ctx, sns.SubscribeInput{TopicArn: topic, Protocol: "http", Endpoint: url + "/hook",
		Attributes: map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"` + dlq + `"}`,
			"DeliveryPolicy": `{"healthyRetryPolicy":{"numRetries":2,"minDelayTarget":5,"maxDelayTarget":5}}`}})
	if err != nil || arn != sns.PendingConfirmation {
		t.Fatalf("Subscribe: %q %v", arn, err)
	}
	testenv.Eventually(t, wait, "the confirmation request", func() bool { return ep.count() == 1 })
	conf := envelopeOf(t, ep.bodies[0])
	if conf.Type != "SubscriptionConfirmation" || conf.Token == "" || !strings.Contains(conf.SubscribeURL, "Action=ConfirmSubscription") ||
		ep.reqs[0].Header.Get("x-amz-sns-subscription-arn") != "" || ep.reqs[0].Header.Get("x-amz-sns-message-type") != "SubscriptionConfirmation" {
		t.Fatalf("confirmation %+v", conf)
	}
	publish(t, rn, sns.PublishInput{TopicArn: topic, Message: "before"}) // not delivered: pending
	clock.Advance(time.Millisecond)
	if _, err := rn.SNS.ConfirmSubscription(ctx, topic, "wrong"); !errors.Is(err, awserr.ErrSNSInvalidParameter) {
		t.Fatalf("a wrong token: %v", err)
	}
	subArn, err := rn.SNS.ConfirmSubscription(ctx, topic, conf.Token)
	if err != nil || !strings.HasPrefix(subArn, topic+":") {
		t.Fatalf("ConfirmSubscription: %q %v", subArn, err)
	}
	id := publish(t, rn, sns.PublishInput{TopicArn: topic, Message: "after"})
	advanceUntil(t, clock, time.Second, "three attempts", func() bool { return ep.count() >= 4 })
	ep.mu.Lock()
	for i := 1; i < 4; i++ {
		h := ep.reqs[i].Header
		if h.Get("x-amz-sns-message-id") != id || h.Get("x-amz-sns-subscription-arn") != subArn || h.Get("x-amz-sns-topic-arn") != topic ||
			h.Get("x-amz-sns-message-type") != "Notification" || h.Get("User-Agent") != "Amazon Simple Notification Service Agent" ||
			h.Get("Content-Type") != "text/plain; charset=UTF-8" ||
			envelopeOf(t, ep.bodies[i]).Message != "after" {
			t.Fatalf("attempt %d: %v %s", i, h, ep.bodies[i])
		}
	}
	ep.failures = 3
	ep.mu.Unlock()
	settled(t, rn, "t", 1)
	gone := publish(t, rn, sns.PublishInput{TopicArn: topic, Message: "fails"})
	advanceUntil(t, clock, time.Second, "the DLQ", func() bool { return rn.SNS.Stats("t").DeadLettered == 1 })
	if got := receiveAll(t, rn, "dlq"); len(got) != 1 || envelopeOf(t, got[0].Body).MessageId != gone {
		t.Fatalf("dlq %+v", got)
	}
	if n := ep.count(); n != 7 {
		t.Fatalf("%d requests, want 1 confirmation + 3 + 3", n)
	}
}

// TestSubscriptionGetsOnlyLaterMessages: a subscription receives the
// messages published after it was confirmed, not those already waiting
// for delivery (made certain by publishing while no worker runs).
func TestSubscriptionGetsOnlyLaterMessages(t *testing.T) {
	dir := t.TempDir()
	clock := clockwork.NewFakeClockAt(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rn := testenv.Start(t, testenv.Options{Dir: dir, Clock: clock, Mappings: mapping.Options{Passive: true}})
	topic := createTopic(t, rn, "t", nil)
	subscribe(t, rn, topic, "sqs", createQueue(t, rn, "early", nil), nil)
	publish(t, rn, sns.PublishInput{TopicArn: topic, Message: "first"})
	clock.Advance(time.Millisecond)
	subscribe(t, rn, topic, "sqs", createQueue(t, rn, "late", nil), nil)
	clock.Advance(time.Millisecond)
	publish(t, rn, sns.PublishInput{TopicArn: topic, Message: "second"})
	rn.Crash()
	rn = testenv.Start(t, testenv.Options{Dir: dir, Clock: clock})
	settled(t, rn, "t", 3)
	if got := receiveAll(t, rn, "early"); len(got) != 2 {
		t.Fatalf("early: %d messages", len(got))
	}
	if got := receiveAll(t, rn, "late"); len(got) != 1 || envelopeOf(t, got[0].Body).Message != "second" {
		t.Fatalf("late: %+v", got)
	}
}

// TestSubscribeIsIdempotent: the same endpoint subscribed again is the
// same subscription; with other attributes it is refused, as AWS does.
func TestSubscribeIsIdempotent(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	topic := createTopic(t, rn, "t", nil)
	q := createQueue(t, rn, "q", nil)
	first := subscribe(t, rn, topic, "sqs", q, map[string]string{"RawMessageDelivery": "true"})
	if again := subscribe(t, rn, topic, "sqs", q, map[string]string{"RawMessageDelivery": "true"}); again != first {
		t.Fatalf("again: %s, first %s", again, first)
	}
	_, err := rn.SNS.Subscribe(ctx, sns.SubscribeInput{TopicArn: topic, Protocol: "sqs", Endpoint: q, Attributes: map[string]string{"RawMessageDelivery": "false"}})
	if !errors.Is(err, awserr.ErrSNSInvalidParameter) || !strings.Contains(err.Error(), "different attributes") {
		t.Fatalf("other attributes: %v", err)
	}
	if subs, _ := rn.SNS.ListSubscriptions(topic); len(subs) != 1 {
		t.Fatalf("%d subscriptions", len(subs))
	}
}

// TestApplicationEndpointIsRecordedNotDelivered: an application
// (platform) endpoint is accepted and listed; runnel has no push
// platform, so each message for it is counted failed and dead-lettered.
func TestApplicationEndpointIsRecordedNotDelivered(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	topic := createTopic(t, rn, "t", nil)
	endpoint := "arn:aws:sns:us-east-1:000000000000:endpoint/GCM/app/0123"
	dlq := createQueue(t, rn, "dlq", nil)
	subscribe(t, rn, topic, "application", endpoint, map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"` + dlq + `"}`})
	if subs, _ := rn.SNS.ListSubscriptions(topic); len(subs) != 1 || subs[0].Endpoint != endpoint || subs[0].Protocol != "application" {
		t.Fatalf("subscriptions %+v", subs)
	}
	publish(t, rn, sns.PublishInput{TopicArn: topic, Message: "push"})
	if st := settled(t, rn, "t", 1); st.Failed != 1 || st.DeadLettered != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// TestConfirmationTokenExpiresAfterTwoDays: a token is valid 2 days on
// the engine clock.
func TestConfirmationTokenExpiresAfterTwoDays(t *testing.T) {
	rn, clock, ep, url, topic := startHTTP(t, 0)
	for _, path := range []string{"/early", "/late"} {
		if _, err := rn.SNS.Subscribe(ctx, sns.SubscribeInput{TopicArn: topic, Protocol: "http", Endpoint: url + path}); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, wait, "two confirmations", func() bool { return ep.count() == 2 })
	tokens := map[string]string{}
	ep.mu.Lock()
	for i, r := range ep.reqs {
		tokens[r.URL.Path] = envelopeOf(t, ep.bodies[i]).Token
	}
	ep.mu.Unlock()
	clock.Advance(sns.TokenValidity - time.Minute)
	if _, err := rn.SNS.ConfirmSubscription(ctx, topic, tokens["/early"]); err != nil {
		t.Fatalf("within 2 days: %v", err)
	}
	clock.Advance(2 * time.Minute)
	if _, err := rn.SNS.ConfirmSubscription(ctx, topic, tokens["/late"]); !errors.Is(err, awserr.ErrSNSInvalidParameter) {
		t.Fatalf("after 2 days: %v", err)
	}
}

// TestRetryLongerThanFifteenMinutes: a delivery policy delay beyond the
// 15 minutes a queue message can be delayed waits in steps and is not
// attempted early.
func TestRetryLongerThanFifteenMinutes(t *testing.T) {
	rn, clock, ep, url, topic := startHTTP(t, 1)
	_, err := rn.SNS.Subscribe(ctx, sns.SubscribeInput{TopicArn: topic, Protocol: "http", Endpoint: url,
		Attributes: map[string]string{"DeliveryPolicy": `{"healthyRetryPolicy":{"numRetries":1,"minDelayTarget":1000,"maxDelayTarget":1000},"requestPolicy":{"headerContentType":"application/json"}}`}})
	if err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, wait, "the confirmation", func() bool { return ep.count() == 1 })
	if _, err := rn.SNS.ConfirmSubscription(ctx, topic, envelopeOf(t, ep.bodies[0]).Token); err != nil {
		t.Fatal(err)
	}
	publish(t, rn, sns.PublishInput{TopicArn: topic, Message: "m"})
	testenv.Eventually(t, wait, "the first attempt", func() bool { return ep.count() == 2 })
	start := clock.Now()
	advanceUntil(t, clock, 10*time.Second, "the retry", func() bool { return ep.count() == 3 })
	if waited := clock.Since(start); waited < 1000*time.Second || waited > 1100*time.Second {
		t.Fatalf("retried after %v, want 1000 s", waited)
	}
	if st := settled(t, rn, "t", 1); st.Delivered != 1 {
		t.Fatalf("stats %+v", st)
	}
	if ct := ep.reqs[2].Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q, want the requestPolicy's", ct)
	}
}

// TestThrottlePolicySpacesDeliveries: maxReceivesPerSecond 1 spaces an
// http subscription's deliveries a second apart on the engine clock.
func TestThrottlePolicySpacesDeliveries(t *testing.T) {
	rn, clock, ep, url, topic := startHTTP(t, 0)
	if _, err := rn.SNS.Subscribe(ctx, sns.SubscribeInput{TopicArn: topic, Protocol: "http", Endpoint: url,
		Attributes: map[string]string{"DeliveryPolicy": `{"throttlePolicy":{"maxReceivesPerSecond":1}}`}}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, wait, "the confirmation", func() bool { return ep.count() == 1 })
	if _, err := rn.SNS.ConfirmSubscription(ctx, topic, envelopeOf(t, ep.bodies[0]).Token); err != nil {
		t.Fatal(err)
	}
	out, err := rn.SNS.PublishBatch(ctx, topic, []sns.PublishBatchEntry{{Id: "a", PublishInput: sns.PublishInput{Message: "1"}},
		{Id: "b", PublishInput: sns.PublishInput{Message: "2"}}, {Id: "c", PublishInput: sns.PublishInput{Message: "3"}}})
	if err != nil || len(out.Successful) != 3 {
		t.Fatalf("PublishBatch %+v %v", out, err)
	}
	testenv.Eventually(t, wait, "the first delivery", func() bool { return ep.count() == 2 })
	start := clock.Now()
	advanceUntil(t, clock, 100*time.Millisecond, "three deliveries", func() bool { return ep.count() == 4 })
	if took := clock.Since(start); took < 2*time.Second {
		t.Fatalf("three deliveries within %v at 1 a second", took)
	}
	if _, err := rn.SNS.Subscribe(ctx, sns.SubscribeInput{TopicArn: topic, Protocol: "http", Endpoint: url + "/x",
		Attributes: map[string]string{"DeliveryPolicy": `{"throttlePolicy":{"maxReceivesPerSecond":0}}`}}); !errors.Is(err, awserr.ErrSNSInvalidParameter) {
		t.Fatalf("maxReceivesPerSecond 0: %v", err)
	}
}

// TestTopicsWrittenByAnotherProcessAreSeen: a topic and a subscription
// another process stores in the shared buckets become this process's
// (published to, delivered), and go when they are deleted there.
func TestTopicsWrittenByAnotherProcessAreSeen(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	topics, err := rn.Engine.Bucket(ctx, "runnel_sns_topics")
	if err != nil {
		t.Fatal(err)
	}
	subs, err := rn.Engine.Bucket(ctx, "runnel_sns_subscriptions")
	if err != nil {
		t.Fatal(err)
	}
	createQueue(t, rn, sns.QueuePrefix+"other", map[string]string{"MaximumMessageSize": "1048576"})
	q := createQueue(t, rn, "q", nil)
	if _, err := topics.Put(ctx, "remote", []byte(`{"Name":"remote","RunnelID":"other","FifoTopic":false,"Attributes":{}}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := subs.Put(ctx, "s1", []byte(`{"Id":"s1","TopicName":"remote","Protocol":"sqs","Endpoint":"`+q+`","Confirmed":true,"ConfirmedAt":0,"Attributes":{}}`)); err != nil {
		t.Fatal(err)
	}
	arn := rn.SNS.TopicARN("remote")
	testenv.Eventually(t, wait, "the topic and its subscription", func() bool {
		l, err := rn.SNS.ListSubscriptions(arn)
		return err == nil && len(l) == 1
	})
	publish(t, rn, sns.PublishInput{TopicArn: arn, Message: "hello"})
	settled(t, rn, "remote", 1)
	if got := receiveAll(t, rn, "q"); len(got) != 1 || envelopeOf(t, got[0].Body).Message != "hello" {
		t.Fatalf("delivered %+v", got)
	}
	if err := topics.Delete(ctx, "remote"); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, wait, "the topic gone", func() bool {
		_, err := rn.SNS.GetTopicAttributes(arn)
		return errors.Is(err, awserr.ErrSNSNotFound)
	})
}
