package mapping_test

// The Lambda-semantics suite for queue (SQS) event source mappings: one
// test per rule of https://docs.aws.amazon.com/lambda/latest/dg/with-sqs.html,
// services-sqs-errorhandling.html, services-sqs-parameters.html and
// services-sqs-scaling.html (SPEC-aws-semantics.md §2.2), plus runnel's
// RetryPolicy. Real engine (embedded JetStream); a fake clock wherever a
// visibility timeout or a delay is observed.
//
// With a fake clock, the pollers of an idle mapping each wait on one timer
// (their long poll); queueIdle waits until they all do, so that advancing
// the clock afterwards is observed by every poller. A mapping with a
// batching window has a single gathering poller, hence a single timer.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/backoff"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/mapping"
	"github.com/runnel-dev/runnel/mapping/filter"
	"github.com/runnel-dev/runnel/queue"
)

// sqsRecorder is a function fed by a queue mapping: it records every
// invocation (event and engine-clock time) and answers with behave.
type sqsRecorder struct {
	mu      sync.Mutex
	events  []events.SQSEvent
	at      []time.Time
	behave  func(ev events.SQSEvent) (events.SQSEventResponse, error)
	name    string
	handler string

	running, peak atomic.Int32
}

func newSQSRecorder(t *testing.T, rn *runnel.Runnel, cfg function.Config, behave func(ev events.SQSEvent) (events.SQSEventResponse, error)) *sqsRecorder {
	t.Helper()
	handlerSeq.Lock()
	handlerSeq.n++
	name := fmt.Sprintf("sqsrec-%d", handlerSeq.n)
	handlerSeq.Unlock()
	r := &sqsRecorder{behave: behave, handler: name}
	clock := rn.Engine.Clock
	function.Register(name, function.SQSHandler(func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		n := r.running.Add(1)
		defer r.running.Add(-1)
		for p := r.peak.Load(); n > p && !r.peak.CompareAndSwap(p, n); p = r.peak.Load() {
		}
		r.mu.Lock()
		r.events = append(r.events, ev)
		r.at = append(r.at, clock.Now())
		r.mu.Unlock()
		if r.behave == nil {
			return events.SQSEventResponse{}, nil
		}
		return r.behave(ev)
	}))
	if cfg.FunctionName == "" {
		cfg.FunctionName = name
	}
	cfg.Handler = name
	if _, err := rn.Functions.CreateFunction(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	r.name = cfg.FunctionName
	return r
}

// calls returns the bodies of each invocation.
func (r *sqsRecorder) calls() [][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([][]string, len(r.events))
	for i, ev := range r.events {
		for _, m := range ev.Records {
			out[i] = append(out[i], m.Body)
		}
	}
	return out
}

func (r *sqsRecorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.events)
}

func (r *sqsRecorder) event(i int) (events.SQSEvent, time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.events[i], r.at[i]
}

func failAlways(events.SQSEvent) (events.SQSEventResponse, error) {
	return events.SQSEventResponse{}, errBoom
}

// createQueue creates a queue and returns its ARN.
func createQueue(t *testing.T, rn *runnel.Runnel, name string, attrs map[string]string) string {
	t.Helper()
	if _, err := rn.Queues.CreateQueue(context.Background(), name, attrs); err != nil {
		t.Fatal(err)
	}
	return rn.Queues.ARN(name)
}

func redrive(dlqARN string, maxReceiveCount int) string {
	return fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":%d}`, dlqARN, maxReceiveCount)
}

// send sends the bodies in batches of 10, in order, and returns their
// message ids. On a FIFO queue (name ending in .fifo) the group is the
// body's first letter and the deduplication id the body.
func send(t *testing.T, rn *runnel.Runnel, name string, bodies ...string) []string {
	t.Helper()
	var ids []string
	for len(bodies) > 0 {
		n := min(10, len(bodies))
		var entries []queue.SendMessageBatchRequestEntry
		for i, b := range bodies[:n] {
			e := queue.SendMessageBatchRequestEntry{Id: strconv.Itoa(i), SendMessageInput: queue.SendMessageInput{MessageBody: b}}
			if strings.HasSuffix(name, ".fifo") {
				e.MessageGroupId, e.MessageDeduplicationId = b[:1], b
			}
			entries = append(entries, e)
		}
		out, err := rn.Queues.SendMessageBatch(context.Background(), name, entries)
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Failed) > 0 {
			t.Fatalf("send: %+v", out.Failed)
		}
		for _, s := range out.Successful {
			ids = append(ids, s.MessageId)
		}
		bodies = bodies[n:]
	}
	return ids
}

// createQueueMapping creates a queue mapping as given (no defaults added).
func createQueueMapping(t *testing.T, rn *runnel.Runnel, cfg mapping.Config) *mapping.Config {
	t.Helper()
	m, err := rn.Mappings.CreateEventSourceMapping(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func queueStatus(t *testing.T, rn *runnel.Runnel, uuid string) mapping.QueueStatus {
	t.Helper()
	st, err := rn.Mappings.Status(uuid)
	if err != nil {
		t.Fatal(err)
	}
	if st.Queue == nil {
		t.Fatalf("mapping %s has no queue status", uuid)
	}
	return *st.Queue
}

// waitQueueStatus waits until cond holds for the mapping's queue status.
func waitQueueStatus(t *testing.T, rn *runnel.Runnel, uuid, what string, cond func(mapping.QueueStatus) bool) mapping.QueueStatus {
	t.Helper()
	var qs mapping.QueueStatus
	testenv.Eventually(t, wait, what, func() bool {
		qs = queueStatus(t, rn, uuid)
		return cond(qs)
	})
	return qs
}

// counts returns ApproximateNumberOfMessages and
// ApproximateNumberOfMessagesNotVisible.
func counts(t *testing.T, rn *runnel.Runnel, name string) (visible, notVisible int) {
	t.Helper()
	a, err := rn.Queues.GetQueueAttributes(context.Background(), name, []string{queue.AttrApproximateNumberOfMessages, queue.AttrApproximateNumberOfMessagesNotVisible})
	if err != nil {
		t.Fatal(err)
	}
	visible, _ = strconv.Atoi(a[queue.AttrApproximateNumberOfMessages])
	notVisible, _ = strconv.Atoi(a[queue.AttrApproximateNumberOfMessagesNotVisible])
	return visible, notVisible
}

func wantCounts(t *testing.T, rn *runnel.Runnel, name string, visible, notVisible int) {
	t.Helper()
	if v, nv := counts(t, rn, name); v != visible || nv != notVisible {
		t.Fatalf("queue %s: ApproximateNumberOfMessages %d, NotVisible %d; want %d, %d", name, v, nv, visible, notVisible)
	}
}

// receiveAll receives every visible message of a queue (a DLQ, say).
func receiveAll(t *testing.T, rn *runnel.Runnel, name string) []queue.Message {
	t.Helper()
	var out []queue.Message
	zero := 0
	for {
		got, err := rn.Queues.ReceiveMessage(context.Background(), name, queue.ReceiveMessageInput{
			MaxNumberOfMessages: 10, WaitTimeSeconds: &zero, AttributeNames: []string{"All"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 {
			return out
		}
		out = append(out, got...)
	}
}

func bodies(msgs []queue.Message) []string {
	var out []string
	for _, m := range msgs {
		out = append(out, m.Body)
	}
	return out
}

func newFakeClock() *clockwork.FakeClock {
	return clockwork.NewFakeClockAt(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
}

// queueIdle waits until n timers wait on the fake clock: the mapping's
// pollers are all back in their long poll.
func queueIdle(t *testing.T, clock *clockwork.FakeClock, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := clock.BlockUntilContext(ctx, n); err != nil {
		t.Fatalf("pollers not idle (%d timers): %v", n, err)
	}
}

func scaling(n int) *mapping.ScalingConfig { return &mapping.ScalingConfig{MaximumConcurrency: n} }

func receiveCounts(ev events.SQSEvent) []string {
	var out []string
	for _, m := range ev.Records {
		out = append(out, m.Attributes["ApproximateReceiveCount"])
	}
	return out
}

func TestQueueSuccessDeletesTheBatch(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	arn := createQueue(t, rn, "src", nil)
	ctx := context.Background()
	str := func(s string) *string { return &s }
	attrs := map[string]queue.MessageAttributeValue{
		"Attribute1": {DataType: "String", StringValue: str("AttributeValue1")},
		"Attribute2": {DataType: "Number", StringValue: str("123")},
		"Attribute3": {DataType: "Binary", BinaryValue: []byte("1100")},
	}
	out, err := rn.Queues.SendMessageBatch(ctx, "src", []queue.SendMessageBatchRequestEntry{
		{Id: "a", SendMessageInput: queue.SendMessageInput{MessageBody: "Message Body", MessageAttributes: attrs}},
		{Id: "b", SendMessageInput: queue.SendMessageInput{MessageBody: "plain"}},
		{Id: "c", SendMessageInput: queue.SendMessageInput{MessageBody: "plain too"}},
	})
	if err != nil || len(out.Failed) > 0 {
		t.Fatal(err, out)
	}
	r := newSQSRecorder(t, rn, function.Config{}, nil)
	m := createQueueMapping(t, rn, mapping.Config{EventSourceArn: arn, FunctionName: r.name})
	if m.BatchSize != mapping.DefaultQueueBatchSize || m.State != mapping.StateEnabled {
		t.Fatalf("defaults: BatchSize %d, State %s", m.BatchSize, m.State)
	}
	qs := waitQueueStatus(t, rn, m.UUID, "batch deleted", func(qs mapping.QueueStatus) bool { return qs.DeletedMessages == 3 })
	wantCounts(t, rn, "src", 0, 0)
	if qs.Invocations != 1 || qs.LastProcessingResult != "OK" || qs.FailedMessages != 0 {
		t.Fatalf("status = %+v", qs)
	}

	ev, _ := r.event(0)
	raw, _ := json.Marshal(ev)
	var got map[string]any
	json.Unmarshal(raw, &got)
	sample, err := os.ReadFile("testdata/sqs-event.json") // aws-lambda-go events/testdata
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]any
	json.Unmarshal(sample, &want)
	recs := got["Records"].([]any)
	if len(recs) != 3 {
		t.Fatalf("%d records, want 3", len(recs))
	}
	var withAttrs, plain map[string]any
	for _, x := range recs {
		rec := x.(map[string]any)
		if rec["body"] == "Message Body" {
			withAttrs = rec
		} else {
			plain = rec
		}
	}
	wantRec := want["Records"].([]any)[0]
	if g, w := sqsShape(withAttrs), sqsShape(wantRec); !reflect.DeepEqual(g, w) {
		t.Fatalf("record shape differs from aws-lambda-go's sqs-event.json:\n got %v\nwant %v", g, w)
	}
	if ma, ok := plain["messageAttributes"].(map[string]any); !ok || len(ma) != 0 {
		t.Fatalf(`a message without attributes has messageAttributes %#v, want {} (as Lambda sends)`, plain["messageAttributes"])
	}
	if withAttrs["messageId"] != out.Successful[0].MessageId || withAttrs["receiptHandle"] == "" ||
		withAttrs["eventSource"] != "aws:sqs" || withAttrs["eventSourceARN"] != arn || withAttrs["awsRegion"] != "us-east-1" ||
		withAttrs["md5OfBody"] != queue.MD5OfBody("Message Body") || withAttrs["md5OfMessageAttributes"] != queue.MD5OfMessageAttributes(attrs) {
		t.Fatalf("record = %v", withAttrs)
	}
	a := withAttrs["attributes"].(map[string]any)
	for _, k := range []string{"ApproximateReceiveCount", "SentTimestamp", "SenderId", "ApproximateFirstReceiveTimestamp"} {
		if s, _ := a[k].(string); s == "" {
			t.Fatalf("attribute %s missing: %v", k, a)
		}
	}
	if a["ApproximateReceiveCount"] != "1" {
		t.Fatalf("ApproximateReceiveCount = %v", a["ApproximateReceiveCount"])
	}
	for _, k := range []string{"SentTimestamp", "ApproximateFirstReceiveTimestamp"} {
		ms, err := strconv.ParseInt(a[k].(string), 10, 64)
		if err != nil || time.Since(time.UnixMilli(ms)) > time.Minute || time.Since(time.UnixMilli(ms)) < 0 {
			t.Fatalf("%s = %v is not epoch milliseconds of now", k, a[k])
		}
	}
	ma := withAttrs["messageAttributes"].(map[string]any)
	a3 := ma["Attribute3"].(map[string]any)
	a2 := ma["Attribute2"].(map[string]any)
	if a3["binaryValue"] != base64.StdEncoding.EncodeToString([]byte("1100")) || a3["dataType"] != "Binary" ||
		a2["stringValue"] != "123" || a2["dataType"] != "Number" {
		t.Fatalf("messageAttributes = %v", ma)
	}
}

// sqsShape is keyShape for SQS events: keys and kinds of values; a list
// of scalars is just "array" (SQS never fills the reserved list values
// the sample shows).
func sqsShape(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, vv := range x {
			out[k] = sqsShape(vv)
		}
		return out
	case []any:
		if len(x) > 0 {
			if _, isObj := x[0].(map[string]any); isObj {
				return []any{sqsShape(x[0])}
			}
		}
		return "array"
	}
	return keyShape(v)
}

func TestQueueFunctionErrorDeletesNothing(t *testing.T) {
	t.Run("the messages come back only after the queue's VisibilityTimeout, with ApproximateReceiveCount 2", func(t *testing.T) {
		clock := newFakeClock()
		rn := testenv.Start(t, testenv.Options{Clock: clock})
		arn := createQueue(t, rn, "src", map[string]string{"VisibilityTimeout": "30"})
		send(t, rn, "src", "a", "b")
		r := newSQSRecorder(t, rn, function.Config{}, failAlways)
		m := createQueueMapping(t, rn, mapping.Config{EventSourceArn: arn, FunctionName: r.name, ScalingConfig: scaling(2)})
		qs := waitQueueStatus(t, rn, m.UUID, "first batch failed", func(qs mapping.QueueStatus) bool { return qs.FailedMessages == 2 })
		if qs.DeletedMessages != 0 || qs.FunctionErrors != 1 || qs.LastProcessingResult != "PROBLEM: Function call failed" {
			t.Fatalf("status = %+v", qs)
		}
		wantCounts(t, rn, "src", 0, 2)
		queueIdle(t, clock, 2)
		clock.Advance(29 * time.Second)
		queueIdle(t, clock, 2)
		if n := r.count(); n != 1 {
			t.Fatalf("%d invocations before the visibility timeout ended, want 1", n)
		}
		clock.Advance(time.Second)
		testenv.Eventually(t, wait, "second invocation", func() bool { return r.count() == 2 })
		ev1, at1 := r.event(0)
		ev2, at2 := r.event(1)
		if at2.Sub(at1) != 30*time.Second {
			t.Fatalf("redelivered %v after the first invocation, want 30s", at2.Sub(at1))
		}
		if got := receiveCounts(ev1); !reflect.DeepEqual(got, []string{"1", "1"}) {
			t.Fatalf("first ApproximateReceiveCount = %v", got)
		}
		if got := receiveCounts(ev2); !reflect.DeepEqual(got, []string{"2", "2"}) {
			t.Fatalf("second ApproximateReceiveCount = %v, want [2 2]", got)
		}
	})
	t.Run("with RedrivePolicy maxReceiveCount 2 the message moves to the DLQ instead of its third receive", func(t *testing.T) {
		clock := newFakeClock()
		rn := testenv.Start(t, testenv.Options{Clock: clock})
		dlq := createQueue(t, rn, "dlq", nil)
		arn := createQueue(t, rn, "src", map[string]string{"VisibilityTimeout": "30", "RedrivePolicy": redrive(dlq, 2)})
		send(t, rn, "src", "poison")
		r := newSQSRecorder(t, rn, function.Config{}, failAlways)
		m := createQueueMapping(t, rn, mapping.Config{EventSourceArn: arn, FunctionName: r.name, ScalingConfig: scaling(2)})
		for n := 1; n <= 2; n++ {
			waitQueueStatus(t, rn, m.UUID, fmt.Sprintf("failure %d", n), func(qs mapping.QueueStatus) bool { return qs.FailedMessages == int64(n) })
			wantCounts(t, rn, "dlq", 0, 0)
			queueIdle(t, clock, 2)
			clock.Advance(30 * time.Second)
		}
		testenv.Eventually(t, wait, "moved to the DLQ", func() bool { v, _ := counts(t, rn, "dlq"); return v == 1 })
		wantCounts(t, rn, "src", 0, 0)
		moved := receiveAll(t, rn, "dlq")
		if len(moved) != 1 || moved[0].Body != "poison" || moved[0].Attributes[queue.MsgAttrDeadLetterQueueSourceArn] != arn {
			t.Fatalf("DLQ holds %+v", moved)
		}
		if n := r.count(); n != 2 {
			t.Fatalf("%d invocations, want 2 (maxReceiveCount)", n)
		}
	})
	t.Run("when window plus function timeout exceed the VisibilityTimeout the messages come back after window + timeout + 30 s", func(t *testing.T) {
		clock := newFakeClock()
		rn := testenv.Start(t, testenv.Options{Clock: clock})
		arn := createQueue(t, rn, "src", map[string]string{"VisibilityTimeout": "30"})
		send(t, rn, "src", "a")
		r := newSQSRecorder(t, rn, function.Config{Timeout: 15}, failAlways)
		m := createQueueMapping(t, rn, mapping.Config{EventSourceArn: arn, FunctionName: r.name, BatchSize: 1, MaximumBatchingWindowInSeconds: 20})
		waitQueueStatus(t, rn, m.UUID, "first failure", func(qs mapping.QueueStatus) bool { return qs.FailedMessages == 1 })
		queueIdle(t, clock, 1) // one poller gathers at a time
		clock.Advance(31 * time.Second)
		queueIdle(t, clock, 1)
		if n := r.count(); n != 1 {
			t.Fatalf("%d invocations after 31 s, want 1 (visibility 20+15+30 = 65 s)", n)
		}
		clock.Advance(34 * time.Second)
		testenv.Eventually(t, wait, "redelivery after 65 s", func() bool { return r.count() == 2 })
		_, at1 := r.event(0)
		_, at2 := r.event(1)
		if at2.Sub(at1) != 65*time.Second {
			t.Fatalf("redelivered after %v, want 65s", at2.Sub(at1))
		}
	})
}

func TestQueueReportBatchItemFailures(t *testing.T) {
	cases := []struct {
		name   string
		rbif   bool
		report []string // bodies to report; "" an empty itemIdentifier, "?" an unknown messageId
		kept   []string // bodies left in the queue
	}{
		{"the listed messages stay and the others are deleted", true, []string{"b", "d"}, []string{"b", "d"}},
		{"an empty batchItemFailures list means success", true, []string{}, nil},
		{"an empty itemIdentifier fails the whole batch", true, []string{"b", ""}, []string{"a", "b", "c", "d", "e"}},
		{"an unknown messageId fails the whole batch", true, []string{"b", "?"}, []string{"a", "b", "c", "d", "e"}},
		{"batchItemFailures are ignored without FunctionResponseTypes", false, []string{"b"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clock := newFakeClock()
			rn := testenv.Start(t, testenv.Options{Clock: clock})
			arn := createQueue(t, rn, "src", map[string]string{"VisibilityTimeout": "60"})
			send(t, rn, "src", "a", "b", "c", "d", "e")
			var calls atomic.Int32
			r := newSQSRecorder(t, rn, function.Config{}, func(ev events.SQSEvent) (events.SQSEventResponse, error) {
				resp := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
				if calls.Add(1) > 1 {
					return resp, nil
				}
				for _, b := range tc.report {
					id := b
					switch b {
					case "":
					case "?":
						id = "00000000-0000-0000-0000-000000000000"
					default:
						for _, m := range ev.Records {
							if m.Body == b {
								id = m.MessageId
							}
						}
					}
					resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: id})
				}
				return resp, nil
			})
			cfg := mapping.Config{EventSourceArn: arn, FunctionName: r.name, ScalingConfig: scaling(2)}
			if tc.rbif {
				cfg.FunctionResponseTypes = []string{mapping.ReportBatchItemFailures}
			}
			m := createQueueMapping(t, rn, cfg)
			qs := waitQueueStatus(t, rn, m.UUID, "batch resolved", func(qs mapping.QueueStatus) bool { return qs.DeletedMessages+qs.FailedMessages == 5 })
			if got := r.calls(); len(got) != 1 || len(got[0]) != 5 {
				t.Fatalf("invocations = %v, want one of 5", got)
			}
			if qs.FailedMessages != int64(len(tc.kept)) {
				t.Fatalf("status = %+v, want %d failed", qs, len(tc.kept))
			}
			wantCounts(t, rn, "src", 0, len(tc.kept))
			if len(tc.kept) == 0 {
				return
			}
			// The kept messages are the ones that come back.
			queueIdle(t, clock, 2)
			clock.Advance(60 * time.Second)
			testenv.Eventually(t, wait, "kept messages redelivered", func() bool { return r.count() == 2 })
			again := r.calls()[1]
			sort.Strings(again)
			if !reflect.DeepEqual(again, tc.kept) {
				t.Fatalf("redelivered %v, want %v", again, tc.kept)
			}
			waitQueueStatus(t, rn, m.UUID, "all deleted", func(qs mapping.QueueStatus) bool { return qs.DeletedMessages == 5 })
			wantCounts(t, rn, "src", 0, 0)
		})
	}
	t.Run("a null itemIdentifier in a raw response fails the whole batch", func(t *testing.T) {
		rn := testenv.Start(t, testenv.Options{})
		arn := createQueue(t, rn, "src", map[string]string{"VisibilityTimeout": "300"})
		send(t, rn, "src", "a", "b")
		function.Register("sqs-raw-null", func(ctx context.Context, ev events.SQSEvent) (json.RawMessage, error) {
			return json.RawMessage(`{"batchItemFailures":[{"itemIdentifier":null}]}`), nil
		})
		if _, err := rn.Functions.CreateFunction(context.Background(), function.Config{FunctionName: "raw", Handler: "sqs-raw-null"}); err != nil {
			t.Fatal(err)
		}
		m := createQueueMapping(t, rn, mapping.Config{EventSourceArn: arn, FunctionName: "raw", FunctionResponseTypes: []string{mapping.ReportBatchItemFailures}})
		qs := waitQueueStatus(t, rn, m.UUID, "batch resolved", func(qs mapping.QueueStatus) bool { return qs.Invocations == 1 && qs.FailedMessages == 2 })
		if qs.DeletedMessages != 0 {
			t.Fatalf("status = %+v", qs)
		}
		wantCounts(t, rn, "src", 0, 2)
	})
}

func TestQueueFilterCriteriaDeletesMessagesThatMatchNoFilter(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	arn := createQueue(t, rn, "src", nil)
	send(t, rn, "src", `{"kind":"a","n":1}`, `{"kind":"b","n":2}`, `not json`, `{"kind":"a","n":3}`)
	r := newSQSRecorder(t, rn, function.Config{}, nil)
	m := createQueueMapping(t, rn, mapping.Config{EventSourceArn: arn, FunctionName: r.name,
		FilterCriteria: &filter.Criteria{Filters: []filter.Pattern{{Pattern: `{"body":{"kind":["a"]}}`}}}})
	qs := waitQueueStatus(t, rn, m.UUID, "all resolved", func(qs mapping.QueueStatus) bool { return qs.DeletedMessages+qs.FilteredMessages == 4 })
	if qs.FilteredMessages != 2 || qs.DeletedMessages != 2 {
		t.Fatalf("status = %+v", qs)
	}
	var invoked []string
	for _, c := range r.calls() {
		invoked = append(invoked, c...)
	}
	if want := []string{`{"kind":"a","n":1}`, `{"kind":"a","n":3}`}; !reflect.DeepEqual(invoked, want) {
		t.Fatalf("invoked with %q, want %q", invoked, want)
	}
	wantCounts(t, rn, "src", 0, 0)
}

func TestQueueFIFOKeepsOrderPerMessageGroup(t *testing.T) {
	clock := newFakeClock()
	rn := testenv.Start(t, testenv.Options{Clock: clock})
	arn := createQueue(t, rn, "src.fifo", map[string]string{"FifoQueue": "true", "VisibilityTimeout": "30"})
	send(t, rn, "src.fifo", "a1", "b1", "a2", "b2", "a3")
	var calls atomic.Int32
	r := newSQSRecorder(t, rn, function.Config{}, func(ev events.SQSEvent) (events.SQSEventResponse, error) {
		var resp events.SQSEventResponse
		if calls.Add(1) == 1 {
			// Only a2 is reported: a3, after it in group a, must stay too.
			for _, m := range ev.Records {
				if m.Body == "a2" {
					resp.BatchItemFailures = []events.SQSBatchItemFailure{{ItemIdentifier: m.MessageId}}
				}
			}
		}
		return resp, nil
	})
	m := createQueueMapping(t, rn, mapping.Config{EventSourceArn: arn, FunctionName: r.name, ScalingConfig: scaling(2),
		FunctionResponseTypes: []string{mapping.ReportBatchItemFailures}})
	qs := waitQueueStatus(t, rn, m.UUID, "first batch resolved", func(qs mapping.QueueStatus) bool { return qs.DeletedMessages+qs.FailedMessages == 5 })
	if qs.DeletedMessages != 3 || qs.FailedMessages != 2 {
		t.Fatalf("status = %+v, want a1 b1 b2 deleted, a2 a3 kept", qs)
	}
	first := r.calls()[0]
	if len(first) != 5 || !reflect.DeepEqual(group(first, "a"), []string{"a1", "a2", "a3"}) || !reflect.DeepEqual(group(first, "b"), []string{"b1", "b2"}) {
		t.Fatalf("first batch %v is not in order per group", first)
	}
	wantCounts(t, rn, "src.fifo", 0, 2)

	// Group b goes on while group a waits for a2.
	send(t, rn, "src.fifo", "b3", "a4")
	testenv.Eventually(t, wait, "b3 processed", func() bool { return r.count() == 2 })
	if got := r.calls()[1]; !reflect.DeepEqual(got, []string{"b3"}) {
		t.Fatalf("second batch %v, want [b3] (group a is blocked behind a2)", got)
	}
	waitQueueStatus(t, rn, m.UUID, "b3 deleted", func(qs mapping.QueueStatus) bool { return qs.DeletedMessages == 4 })
	queueIdle(t, clock, 2)
	if n := r.count(); n != 2 {
		t.Fatalf("a4 delivered before a2: %v", r.calls())
	}
	clock.Advance(30 * time.Second)
	testenv.Eventually(t, wait, "group a retried", func() bool { return r.count() == 3 })
	ev, _ := r.event(2)
	if got := r.calls()[2]; !reflect.DeepEqual(got, []string{"a2", "a3", "a4"}) {
		t.Fatalf("third batch %v, want [a2 a3 a4]", got)
	}
	if got := receiveCounts(ev); !reflect.DeepEqual(got, []string{"2", "2", "1"}) {
		t.Fatalf("ApproximateReceiveCount = %v, want [2 2 1]", got)
	}
	waitQueueStatus(t, rn, m.UUID, "all deleted", func(qs mapping.QueueStatus) bool { return qs.DeletedMessages == 7 })
	wantCounts(t, rn, "src.fifo", 0, 0)
}

// group returns the bodies of group g (first letter), in order.
func group(bodies []string, g string) []string {
	var out []string
	for _, b := range bodies {
		if strings.HasPrefix(b, g) {
			out = append(out, b)
		}
	}
	return out
}

func TestQueueBadParametersAreRefusedNamingTheField(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	arn := createQueue(t, rn, "src", map[string]string{"VisibilityTimeout": "30"})
	fifo := createQueue(t, rn, "src.fifo", map[string]string{"FifoQueue": "true", "VisibilityTimeout": "30"})
	r := newSQSRecorder(t, rn, function.Config{}, nil)
	slow := newSQSRecorder(t, rn, function.Config{Timeout: 60}, nil)
	kinesisOnly := newRecorder(t, rn, function.Config{}, nil)
	cases := []struct {
		name   string
		mutate func(*mapping.Config)
		want   error
		text   string
	}{
		{"BatchSize above 10 needs a batching window", func(c *mapping.Config) { c.BatchSize = 11 }, awserr.ErrInvalidParameterValue,
			"Maximum batch window in seconds must be greater than 0 if maximum batch size is greater than 10"},
		{"BatchSize above 10000", func(c *mapping.Config) { c.BatchSize, c.MaximumBatchingWindowInSeconds = 10001, 1 }, awserr.ErrInvalidParameterValue, "'BatchSize' failed to satisfy constraint: Member must have value between 1 and 10000"},
		{"BatchSize below 1", func(c *mapping.Config) { c.BatchSize = -1 }, awserr.ErrInvalidParameterValue, "'BatchSize'"},
		{"BatchSize above 10 on a FIFO queue", func(c *mapping.Config) { c.EventSourceArn, c.BatchSize = fifo, 11 }, awserr.ErrInvalidParameterValue, "'BatchSize' failed to satisfy constraint: Member must have value between 1 and 10"},
		{"MaximumBatchingWindowInSeconds above 300", func(c *mapping.Config) { c.MaximumBatchingWindowInSeconds = 301 }, awserr.ErrInvalidParameterValue, "'MaximumBatchingWindowInSeconds'"},
		{"MaximumBatchingWindowInSeconds on a FIFO queue", func(c *mapping.Config) { c.EventSourceArn, c.MaximumBatchingWindowInSeconds = fifo, 1 }, awserr.ErrInvalidParameterValue, "MaximumBatchingWindowInSeconds"},
		{"ScalingConfig.MaximumConcurrency below 2", func(c *mapping.Config) { c.ScalingConfig = scaling(1) }, awserr.ErrInvalidParameterValue, "'ScalingConfig.MaximumConcurrency' failed to satisfy constraint: Member must have value between 2 and 1000"},
		{"ScalingConfig.MaximumConcurrency above 1000", func(c *mapping.Config) { c.ScalingConfig = scaling(1001) }, awserr.ErrInvalidParameterValue, "'ScalingConfig.MaximumConcurrency'"},
		{"StartingPosition is not for SQS", func(c *mapping.Config) { c.StartingPosition = mapping.TrimHorizon }, awserr.ErrInvalidParameterValue, "StartingPosition is not valid for an SQS event source"},
		{"BisectBatchOnFunctionError is not for SQS", func(c *mapping.Config) { c.BisectBatchOnFunctionError = true }, awserr.ErrInvalidParameterValue, "BisectBatchOnFunctionError is not valid for an SQS event source"},
		{"MaximumRetryAttempts is not for SQS", func(c *mapping.Config) { c.MaximumRetryAttempts = ptr(2) }, awserr.ErrInvalidParameterValue, "MaximumRetryAttempts is not valid for an SQS event source"},
		{"DestinationConfig is not for SQS", func(c *mapping.Config) { c.DestinationConfig = withDestination(rn.Queues.ARN("src")) }, awserr.ErrInvalidParameterValue, "DestinationConfig is not valid for an SQS event source"},
		{"FunctionResponseTypes unknown", func(c *mapping.Config) { c.FunctionResponseTypes = []string{"Everything"} }, awserr.ErrInvalidParameterValue, "FunctionResponseTypes[0]"},
		{"RetryPolicy out of range", func(c *mapping.Config) { c.RetryPolicy = &backoff.Policy{MaxAttempts: 1001} }, awserr.ErrInvalidParameterValue, "'RetryPolicy.MaxAttempts'"},
		{"FilterCriteria with a bad pattern", func(c *mapping.Config) {
			c.FilterCriteria = &filter.Criteria{Filters: []filter.Pattern{{Pattern: `{"body":5}`}}}
		}, awserr.ErrInvalidParameterValue, "FilterCriteria.Filters[0]"},
		{"unknown function", func(c *mapping.Config) { c.FunctionName = "nope" }, awserr.ErrResourceNotFound, "nope"},
		{"a function whose handler takes only Kinesis events", func(c *mapping.Config) { c.FunctionName = kinesisOnly.name }, awserr.ErrInvalidParameterValue, "FunctionName"},
		{"unknown queue", func(c *mapping.Config) { c.EventSourceArn = rn.Queues.ARN("nope") }, awserr.ErrQueueDoesNotExist, "nope"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := mapping.Config{EventSourceArn: arn, FunctionName: r.name}
			tc.mutate(&c)
			_, err := rn.Mappings.CreateEventSourceMapping(context.Background(), c)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.text) {
				t.Fatalf("err = %v, want %v containing %q", err, tc.want, tc.text)
			}
		})
	}
	t.Run("a queue VisibilityTimeout shorter than the function timeout", func(t *testing.T) {
		_, err := rn.Mappings.CreateEventSourceMapping(context.Background(), mapping.Config{EventSourceArn: arn, FunctionName: slow.name})
		var ae *awserr.Error
		if !errors.As(err, &ae) || !errors.Is(err, awserr.ErrInvalidParameterValue) ||
			ae.Message != "Queue visibility timeout: 30 seconds is less than Function timeout: 60 seconds" {
			t.Fatalf("err = %v", err)
		}
	})
	if n := len(rn.Mappings.ListEventSourceMappings()); n != 0 {
		t.Fatalf("%d mappings exist after refused creates", n)
	}
	t.Run("the limits themselves are accepted", func(t *testing.T) {
		for _, c := range []mapping.Config{
			{EventSourceArn: arn, FunctionName: r.name, BatchSize: 10000, MaximumBatchingWindowInSeconds: 300, ScalingConfig: scaling(1000), Enabled: ptr(false)},
			{EventSourceArn: fifo, FunctionName: r.name, BatchSize: 10, ScalingConfig: scaling(2), Enabled: ptr(false)},
		} {
			m, err := rn.Mappings.CreateEventSourceMapping(context.Background(), c)
			if err != nil {
				t.Fatal(err)
			}
			if err := rn.Mappings.DeleteEventSourceMapping(context.Background(), m.UUID); err != nil {
				t.Fatal(err)
			}
		}
	})
}
