package stack_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/mapping"
	"github.com/runnel-dev/runnel/sns"
	"github.com/runnel-dev/runnel/stack"
	"github.com/runnel-dev/runnel/stream"
)

// TestAMappingSettingTakenOutOfTheStackFileGoesBackToItsDefault: the
// stack file is the desired state, so a mapping's setting taken out of it
// goes back to Lambda's default (API_CreateEventSourceMapping: Enabled
// true, BatchSize 100 or 10 for SQS, ParallelizationFactor 1,
// MaximumRetryAttempts and MaximumRecordAgeInSeconds -1, no
// DestinationConfig, no FilterCriteria, no ScalingConfig). It is removed
// with the API's own means (UpdateEventSourceMapping with FilterCriteria
// {"Filters":[]}, an empty DestinationConfig, an empty ScalingConfig, "To
// remove the configuration, pass an empty value"). Before, Apply sent the
// absent settings as "not given" and UpdateEventSourceMapping kept them:
// records the filter left out were still skipped, failures still went to
// the old destination, a disabled mapping stayed disabled.
func TestAMappingSettingTakenOutOfTheStackFileGoesBackToItsDefault(t *testing.T) {
	var got atomic.Int32
	function.Register("stack-desired", func(_ context.Context, ev json.RawMessage) error {
		if strings.Contains(string(ev), "kinesis") {
			got.Add(1)
		}
		return nil
	})
	rn := testenv.Start(t, testenv.Options{})
	ctx := context.Background()
	apply := func(mappings string) *stack.Applied {
		t.Helper()
		s, err := stack.Parse([]byte(`
Streams:
  - {StreamName: orders, ShardCount: 1}
Queues:
  - QueueName: work
  - QueueName: jobs
  - QueueName: fails
Functions:
  - {FunctionName: fn, Handler: stack-desired}
EventSourceMappings:
` + mappings))
		if err != nil {
			t.Fatal(err)
		}
		a, err := stack.Apply(ctx, rn, s)
		if err != nil {
			t.Fatalf("apply: %v", err)
		}
		return a
	}
	apply(`
  - EventSourceArn: orders
    FunctionName: fn
    StartingPosition: TRIM_HORIZON
    Enabled: false
    BatchSize: 50
    ParallelizationFactor: 2
    MaximumRetryAttempts: 2
    MaximumRecordAgeInSeconds: 120
    TumblingWindowInSeconds: 30
    BisectBatchOnFunctionError: true
    FunctionResponseTypes: [ReportBatchItemFailures]
    DestinationConfig: {OnFailure: {Destination: fails}}
    FilterCriteria: {Filters: [{Pattern: '{"data":{"kind":["vip"]}}'}]}
  - EventSourceArn: work
    FunctionName: fn
    BatchSize: 5
    ScalingConfig: {MaximumConcurrency: 3}
    FilterCriteria: {Filters: [{Pattern: '{"body":{"kind":["vip"]}}'}]}
    RetryPolicy: {MaxAttempts: 3}
  - EventSourceArn: jobs
    FunctionName: fn
    Enabled: false
    ScalingConfig: {MaximumConcurrency: 3}
`)
	a := apply(`
  - EventSourceArn: orders
    FunctionName: fn
    StartingPosition: TRIM_HORIZON
  - EventSourceArn: work
    FunctionName: fn
  - EventSourceArn: jobs
    FunctionName: fn
`)
	if len(a.MappingsUpdated) != 2 || len(a.MappingsReplaced) != 1 {
		t.Errorf("the stream mapping and the jobs mapping are updated, the work mapping (RetryPolicy taken out) replaced: %+v", a)
	}
	for _, m := range rn.Mappings.ListEventSourceMappings() {
		if m.FilterCriteria != nil && len(m.FilterCriteria.Filters) != 0 {
			t.Errorf("%s: FilterCriteria %+v stayed", m.EventSourceArn, m.FilterCriteria)
		}
		if !*m.Enabled || len(m.FunctionResponseTypes) != 0 {
			t.Errorf("%s: Enabled %v, FunctionResponseTypes %v", m.EventSourceArn, *m.Enabled, m.FunctionResponseTypes)
		}
		if strings.HasPrefix(m.EventSourceArn, "arn:aws:sqs:") {
			if m.BatchSize != mapping.DefaultQueueBatchSize || m.ScalingConfig != nil || m.RetryPolicy != nil {
				t.Errorf("queue mapping: BatchSize %d, ScalingConfig %+v, RetryPolicy %+v; want 10 and none", m.BatchSize, m.ScalingConfig, m.RetryPolicy)
			}
			continue
		}
		if m.BatchSize != mapping.DefaultBatchSize || m.ParallelizationFactor != 1 || *m.MaximumRetryAttempts != -1 || *m.MaximumRecordAgeInSeconds != -1 ||
			(m.TumblingWindowInSeconds != nil && *m.TumblingWindowInSeconds != 0) || m.BisectBatchOnFunctionError || m.DestinationConfig != nil {
			t.Errorf("stream mapping after the settings were taken out: %+v", m)
		}
	}
	// A record the filter left out now reaches the function.
	if _, err := rn.Streams.PutRecords(ctx, "orders", []stream.PutRecordsRequestEntry{{PartitionKey: "a", Data: []byte(`{"kind":"plain"}`)}}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 20*time.Second, "the plain record invoked the function", func() bool { return got.Load() == 1 })
}

// TestASubscriptionTakenOutOfTheStackFileIsUnsubscribed: a topic's
// subscriptions are the file's, as a rule's targets are (the precedent:
// TestApplyingAnEditedStackAgainIsIdempotent). A subscription the file no
// longer lists is unsubscribed (API_Unsubscribe), and a subscription
// attribute taken out is removed (API_SetSubscriptionAttributes: an empty
// FilterPolicy removes it; RawMessageDelivery back to false). Before, a
// subscription taken out of the file kept receiving, and a FilterPolicy
// taken out kept filtering.
func TestASubscriptionTakenOutOfTheStackFileIsUnsubscribed(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	ctx := context.Background()
	apply := func(subs string) *stack.Applied {
		t.Helper()
		s, err := stack.Parse([]byte(`
Queues:
  - QueueName: eu
  - QueueName: us
Topics:
  - TopicName: orders
    Subscriptions:
` + subs))
		if err != nil {
			t.Fatal(err)
		}
		a, err := stack.Apply(ctx, rn, s)
		if err != nil {
			t.Fatalf("apply: %v", err)
		}
		return a
	}
	apply(`
      - Protocol: sqs
        Endpoint: eu
        Attributes: {FilterPolicy: '{"region":["eu"]}', RawMessageDelivery: "true"}
      - Protocol: sqs
        Endpoint: us
`)
	a := apply(`
      - Protocol: sqs
        Endpoint: eu
`)
	subs, err := rn.SNS.ListSubscriptions(rn.SNS.TopicARN("orders"))
	if err != nil || len(subs) != 1 || subs[0].Endpoint != rn.Queues.ARN("eu") {
		t.Fatalf("subscriptions after 'us' was taken out: %+v, %v", subs, err)
	}
	if len(a.SubscriptionsRemoved) != 1 {
		t.Errorf("SubscriptionsRemoved = %v", a.SubscriptionsRemoved)
	}
	attrs, err := rn.SNS.GetSubscriptionAttributes(subs[0].SubscriptionArn)
	if err != nil || attrs[sns.AttrFilterPolicy] != "" || attrs[sns.AttrFilterPolicyScope] != "" || attrs[sns.AttrRawMessageDelivery] != "false" {
		t.Fatalf("eu's attributes after they were taken out: %v, %v", attrs, err)
	}
	// A message the old FilterPolicy refused reaches eu, in an envelope.
	if _, err := rn.SNS.Publish(ctx, sns.PublishInput{TopicArn: rn.SNS.TopicARN("orders"), Message: "m"}); err != nil {
		t.Fatal(err)
	}
	if m := testenv.Drain(t, rn.Queues, "eu", 1, nil)[0]; !strings.Contains(m.Body, `"Message":"m"`) {
		t.Errorf("eu received %s, want the SNS envelope", m.Body)
	}
}

// TestAnEditedQueueOrTopicAttributeIsSetOnApply: a queue or topic that
// exists gets the file's attributes (API_SetQueueAttributes,
// API_SetTopicAttributes), and those taken out of the file go back to
// their defaults; FifoQueue and FifoTopic, which cannot change after
// creation, give an error naming the resource and the attribute. Applied
// tells created queues from kept ones. Before, Apply called CreateQueue
// and CreateTopic on the existing resource, which refuse different
// attributes (QueueAlreadyExists "different value for attribute
// VisibilityTimeout"; InvalidParameter "Topic already exists with
// different attributes"): every Apply, every start of `runnel serve -f`,
// failed; and QueuesCreated listed queues that already existed.
func TestAnEditedQueueOrTopicAttributeIsSetOnApply(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	ctx := context.Background()
	apply := func(doc string) (*stack.Applied, error) {
		t.Helper()
		s, err := stack.Parse([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		return stack.Apply(ctx, rn, s)
	}
	if a, err := apply(`
Queues:
  - QueueName: work
    Attributes: {VisibilityTimeout: "60", DelaySeconds: "5"}
Topics:
  - TopicName: orders
    Attributes: {DisplayName: Orders, SignatureVersion: "2"}
`); err != nil || len(a.QueuesCreated) != 1 || len(a.QueuesKept) != 0 {
		t.Fatalf("first apply: %+v, %v", a, err)
	}
	a, err := apply(`
Queues:
  - QueueName: work
    Attributes: {VisibilityTimeout: "120"}
Topics:
  - TopicName: orders
    Attributes: {DisplayName: "Orders EU"}
`)
	if err != nil {
		t.Fatalf("the edited file applied again: %v", err)
	}
	if len(a.QueuesCreated) != 0 || len(a.QueuesKept) != 1 {
		t.Errorf("QueuesCreated %v, QueuesKept %v: the queue existed", a.QueuesCreated, a.QueuesKept)
	}
	qa, err := rn.Queues.GetQueueAttributes(ctx, "work", []string{"All"})
	if err != nil || qa["VisibilityTimeout"] != "120" || qa["DelaySeconds"] != "0" {
		t.Errorf("queue attributes: VisibilityTimeout %q (want 120), DelaySeconds %q (taken out: want 0), %v", qa["VisibilityTimeout"], qa["DelaySeconds"], err)
	}
	ta, err := rn.SNS.GetTopicAttributes(rn.SNS.TopicARN("orders"))
	if err != nil || ta["DisplayName"] != "Orders EU" || ta["SignatureVersion"] != "1" {
		t.Errorf("topic attributes: DisplayName %q, SignatureVersion %q (taken out: want 1), %v", ta["DisplayName"], ta["SignatureVersion"], err)
	}
	_, err = apply("Queues:\n  - QueueName: work\n    Attributes: {FifoQueue: \"true\"}\n")
	if err == nil || !strings.Contains(err.Error(), "Queues[0] (work)") || !strings.Contains(err.Error(), "FifoQueue") {
		t.Errorf("FifoQueue changed: %v, want an error naming the queue and FifoQueue", err)
	}
	_, err = apply("Topics:\n  - TopicName: orders\n    Attributes: {FifoTopic: \"true\"}\n")
	if err == nil || !strings.Contains(err.Error(), "Topics[0] (orders)") || !strings.Contains(err.Error(), "FifoTopic") {
		t.Errorf("FifoTopic changed: %v, want an error naming the topic and FifoTopic", err)
	}
}

// TestAFilterPolicyAndItsScopeChangeInTheOrderSNSTakes: a nested policy
// needs the MessageBody scope (sns-message-filtering-scope:
// MessageAttributes "does not support nested filter policy"). A file that
// replaced a nested body policy by a flat attribute one (its scope taken
// out) made every Apply fail, and `serve -f` refuse to start: the scope
// was removed first, under the old nested policy. And the other way
// round, a flat attribute policy replaced by a nested body one.
func TestAFilterPolicyAndItsScopeChangeInTheOrderSNSTakes(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	ctx := context.Background()
	apply := func(attrs string) map[string]string {
		t.Helper()
		s, err := stack.Parse([]byte(`
Queues:
  - QueueName: eu
Topics:
  - TopicName: orders
    Subscriptions:
      - Protocol: sqs
        Endpoint: eu
        Attributes: ` + attrs + `
`))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := stack.Apply(ctx, rn, s); err != nil {
			t.Fatalf("apply %s: %v", attrs, err)
		}
		subs, err := rn.SNS.ListSubscriptions(rn.SNS.TopicARN("orders"))
		if err != nil || len(subs) != 1 {
			t.Fatalf("subscriptions %+v, %v", subs, err)
		}
		got, err := rn.SNS.GetSubscriptionAttributes(subs[0].SubscriptionArn)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	nested := `{FilterPolicyScope: MessageBody, FilterPolicy: '{"order":{"region":["eu"]}}'}`
	flat := `{FilterPolicy: '{"region":["eu"]}'}`
	for _, attrs := range []string{nested, flat, flat, nested} {
		got := apply(attrs)
		wantScope := sns.ScopeMessageAttributes
		if attrs == nested {
			wantScope = sns.ScopeMessageBody
		}
		if got[sns.AttrFilterPolicyScope] != wantScope {
			t.Fatalf("after %s: scope %q, want %q", attrs, got[sns.AttrFilterPolicyScope], wantScope)
		}
	}
}
