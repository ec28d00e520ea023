package awsapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/awsapi"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/testenv"
)

// startAll serves the whole endpoint (every API) for rn.
func startAll(t *testing.T, rn *runnel.Runnel) *endpoint {
	t.Helper()
	ep := awsapi.NewEndpoint(rn, awsapi.Options{}, awsapi.LambdaOptions{WorkDir: t.TempDir()})
	t.Cleanup(ep.Close)
	e := &endpoint{rn: rn, srv: httptest.NewServer(ep)}
	t.Cleanup(e.srv.Close)
	return e
}

// receiveAll receives n messages of a queue through SQS, with attributes.
func receiveAll(t *testing.T, sc *sqs.Client, url string, n int) []string {
	t.Helper()
	var bodies []string
	testenv.Eventually(t, 15*time.Second, "messages", func() bool {
		out, err := sc.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: &url, MaxNumberOfMessages: 10,
			WaitTimeSeconds: 1, MessageAttributeNames: []string{"All"}})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range out.Messages {
			b := *m.Body
			for k, v := range m.MessageAttributes {
				b += "\n" + k + "=" + aws.ToString(v.StringValue)
			}
			bodies = append(bodies, b)
		}
		return len(bodies) >= n
	})
	return bodies
}

// An EventBridge rule → a Lambda function with RetryPolicy and a DLQ,
// through aws-sdk-go-v2 unchanged: the function gets the matching event;
// once the function is gone, the event lands in the DLQ with AWS's
// attributes.
func TestEventBridgeRuleToLambdaWithDLQ(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	e := startAll(t, rn)
	ctx := context.Background()
	eb, sc := eventbridge.NewFromConfig(e.config("AKID", "secret")), e.sqs()
	var mu sync.Mutex
	var got []string
	function.Register("events-test-recorder", func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
		mu.Lock()
		got = append(got, string(in))
		mu.Unlock()
		return nil, nil
	})
	must(rn.Functions.CreateFunction(ctx, function.Config{FunctionName: "onorder", Handler: "events-test-recorder"}))
	dlq := must(sc.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("rule-dlq")}))
	must(eb.CreateEventBus(ctx, &eventbridge.CreateEventBusInput{Name: aws.String("orders")}))
	_, err := eb.PutRule(ctx, &eventbridge.PutRuleInput{Name: aws.String("r"), EventBusName: aws.String("orders"), EventPattern: aws.String(`{"detail":{"x":[`)})
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != "InvalidEventPatternException" || !strings.HasPrefix(ae.ErrorMessage(), "Event pattern is not valid.") {
		t.Fatalf("bad pattern: %v", err)
	}
	rule := must(eb.PutRule(ctx, &eventbridge.PutRuleInput{Name: aws.String("paid"), EventBusName: aws.String("orders"),
		EventPattern: aws.String(`{"source":["shop"],"detail":{"state":["paid"]}}`)}))
	_, err = eb.PutTargets(ctx, &eventbridge.PutTargetsInput{Rule: aws.String("paid"), EventBusName: aws.String("orders"),
		Targets: []ebtypes.Target{{Id: aws.String("fn"), Arn: aws.String(rn.Functions.ARN("onorder")), RetryPolicy: &ebtypes.RetryPolicy{MaximumRetryAttempts: aws.Int32(186)}}}})
	if !errors.As(err, &ae) || ae.ErrorCode() != "ValidationException" || !strings.Contains(ae.ErrorMessage(), "MaximumRetryAttempts") {
		t.Fatalf("MaximumRetryAttempts 186: %v", err)
	}
	pt := must(eb.PutTargets(ctx, &eventbridge.PutTargetsInput{Rule: aws.String("paid"), EventBusName: aws.String("orders"),
		Targets: []ebtypes.Target{{Id: aws.String("fn"), Arn: aws.String(rn.Functions.ARN("onorder")),
			RetryPolicy:      &ebtypes.RetryPolicy{MaximumRetryAttempts: aws.Int32(3), MaximumEventAgeInSeconds: aws.Int32(600)},
			DeadLetterConfig: &ebtypes.DeadLetterConfig{Arn: aws.String(rn.Queues.ARN("rule-dlq"))}}}}))
	if pt.FailedEntryCount != 0 {
		t.Fatalf("PutTargets: %+v", pt.FailedEntries)
	}
	lt := must(eb.ListTargetsByRule(ctx, &eventbridge.ListTargetsByRuleInput{Rule: aws.String("paid"), EventBusName: aws.String("orders")}))
	if len(lt.Targets) != 1 || aws.ToInt32(lt.Targets[0].RetryPolicy.MaximumRetryAttempts) != 3 {
		t.Fatalf("ListTargetsByRule: %+v", lt.Targets)
	}
	putOne := func(state string) string {
		out := must(eb.PutEvents(ctx, &eventbridge.PutEventsInput{Entries: []ebtypes.PutEventsRequestEntry{
			{Source: aws.String("shop"), DetailType: aws.String("Order"), Detail: aws.String(`{"state":"` + state + `"}`), EventBusName: aws.String("orders")},
			{DetailType: aws.String("Order"), Detail: aws.String(`{}`), EventBusName: aws.String("orders")}}}))
		if out.FailedEntryCount != 1 || aws.ToString(out.Entries[1].ErrorCode) != "InvalidArgument" {
			t.Fatalf("PutEvents: %+v", out.Entries)
		}
		return aws.ToString(out.Entries[0].EventId)
	}
	id := putOne("paid")
	putOne("new")
	testenv.Eventually(t, 15*time.Second, "the invocation", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) == 1 && strings.Contains(got[0], id)
	})
	if err := rn.Functions.DeleteFunction(ctx, "onorder"); err != nil {
		t.Fatal(err)
	}
	id = putOne("paid")
	m := receiveAll(t, sc, *dlq.QueueUrl, 1)[0]
	for _, want := range []string{id, "ERROR_CODE=NO_RESOURCE", "RULE_ARN=" + *rule.RuleArn, "TARGET_ARN=" + rn.Functions.ARN("onorder"), "RETRY_ATTEMPTS=0"} {
		if !strings.Contains(m, want) {
			t.Errorf("DLQ message lacks %q: %s", want, m)
		}
	}
}

// An archive replayed into its bus, through aws-sdk-go-v2.
func TestEventBridgeArchiveReplay(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	e := startAll(t, rn)
	ctx := context.Background()
	eb, sc := eventbridge.NewFromConfig(e.config("AKID", "secret")), e.sqs()
	q := must(sc.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("replayed")}))
	must(eb.PutRule(ctx, &eventbridge.PutRuleInput{Name: aws.String("all"), EventPattern: aws.String(`{"source":["shop"]}`)}))
	must(eb.PutTargets(ctx, &eventbridge.PutTargetsInput{Rule: aws.String("all"), Targets: []ebtypes.Target{{Id: aws.String("q"), Arn: aws.String(rn.Queues.ARN("replayed"))}}}))
	busArn := rn.Events.ARN("default")
	a := must(eb.CreateArchive(ctx, &eventbridge.CreateArchiveInput{ArchiveName: aws.String("a"), EventSourceArn: &busArn, RetentionDays: aws.Int32(7)}))
	begin := time.Now().Add(-time.Minute)
	out := must(eb.PutEvents(ctx, &eventbridge.PutEventsInput{Entries: []ebtypes.PutEventsRequestEntry{
		{Source: aws.String("shop"), DetailType: aws.String("Order"), Detail: aws.String(`{"n":1}`)},
		{Source: aws.String("shop"), DetailType: aws.String("Order"), Detail: aws.String(`{"n":2}`)}}}))
	receiveAll(t, sc, *q.QueueUrl, 2)
	da := must(eb.DescribeArchive(ctx, &eventbridge.DescribeArchiveInput{ArchiveName: aws.String("a")}))
	if da.EventCount != 2 || aws.ToInt32(da.RetentionDays) != 7 || da.State != ebtypes.ArchiveStateEnabled {
		t.Fatalf("DescribeArchive: %+v", da)
	}
	// ListArchives' Archive carries EventCount too (API_ListArchives); it was 0.
	if la := must(eb.ListArchives(ctx, &eventbridge.ListArchivesInput{})); len(la.Archives) != 1 || la.Archives[0].EventCount != 2 {
		t.Fatalf("ListArchives: %+v", la.Archives)
	}
	must(eb.StartReplay(ctx, &eventbridge.StartReplayInput{ReplayName: aws.String("again"), EventSourceArn: a.ArchiveArn,
		EventStartTime: aws.Time(begin), EventEndTime: aws.Time(time.Now().Add(time.Minute)), Destination: &ebtypes.ReplayDestination{Arn: &busArn}}))
	testenv.Eventually(t, 15*time.Second, "replay completed", func() bool {
		r := must(eb.DescribeReplay(ctx, &eventbridge.DescribeReplayInput{ReplayName: aws.String("again")}))
		return r.State == ebtypes.ReplayStateCompleted
	})
	for _, m := range receiveAll(t, sc, *q.QueueUrl, 2) {
		if !strings.Contains(m, `"replay-name":"again"`) || (!strings.Contains(m, *out.Entries[0].EventId) && !strings.Contains(m, *out.Entries[1].EventId)) {
			t.Errorf("replayed event %s", m)
		}
	}
	lr := must(eb.ListReplays(ctx, &eventbridge.ListReplaysInput{}))
	if len(lr.Replays) != 1 || aws.ToString(lr.Replays[0].ReplayName) != "again" {
		t.Errorf("ListReplays: %+v", lr.Replays)
	}
	tp := must(eb.TestEventPattern(ctx, &eventbridge.TestEventPatternInput{EventPattern: aws.String(`{"source":[{"prefix":"sh"}]}`),
		Event: aws.String(`{"id":"1","account":"1","source":"shop","time":"2026-01-01T00:00:00Z","region":"us-east-1","resources":[],"detail-type":"x"}`)}))
	if !tp.Result {
		t.Errorf("TestEventPattern: false")
	}
}
