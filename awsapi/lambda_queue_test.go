package awsapi_test

import (
	"errors"

	"github.com/runnel-dev/runnel/internal/sdkhttp"

	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	ltypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	stypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel/awsapi"
	"github.com/runnel-dev/runnel/internal/testenv"
)

// A process function built with aws-lambda-go, deployed with CreateFunction
// and fed by a queue through CreateEventSourceMapping, all through the AWS
// SDK: the messages it reports in batchItemFailures stay in the queue and
// come back after the visibility timeout, the others are deleted after one
// delivery, and a message that failed maxReceiveCount times moves to the
// queue's dead-letter queue (RedrivePolicy, the queue's on-failure
// destination) without another invocation. The engine runs on a fake
// clock, so the visibility timeouts pass only when the test says so.
func TestLambdaProcessFunctionFedByAQueue(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a Go binary")
	}
	// Every call is bounded, so that a hang fails here, naming the call.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	zipFile := buildBootstrap(t, "./awsapi/testdata/sqsfail")
	clock := clockwork.NewFakeClockAt(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rn := testenv.Start(t, testenv.Options{Clock: clock})
	ep := awsapi.NewEndpoint(rn, awsapi.Options{}, awsapi.LambdaOptions{WorkDir: t.TempDir()})
	srv := httptest.NewServer(ep)
	t.Cleanup(srv.Close)
	t.Cleanup(ep.Close)
	cfg := aws.Config{HTTPClient: sdkhttp.Client(), Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("a", "b", ""), BaseEndpoint: aws.String(srv.URL)}
	lc, sc := lambda.NewFromConfig(cfg), sqs.NewFromConfig(cfg)

	// The queues: src redrives to dlq after 2 receives.
	const visibility = 30 * time.Second
	dlqURL := lambdaMust(sc.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("lamq-dlq")})).QueueUrl
	dlqArn := lambdaMust(sc.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: dlqURL,
		AttributeNames: []stypes.QueueAttributeName{stypes.QueueAttributeNameQueueArn}})).Attributes[string(stypes.QueueAttributeNameQueueArn)]
	srcURL := lambdaMust(sc.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("lamq-src"), Attributes: map[string]string{
		"VisibilityTimeout": strconv.Itoa(int(visibility / time.Second)),
		"RedrivePolicy":     fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"2"}`, dlqArn),
	}})).QueueUrl
	srcArn := lambdaMust(sc.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: srcURL,
		AttributeNames: []stypes.QueueAttributeName{stypes.QueueAttributeNameQueueArn}})).Attributes[string(stypes.QueueAttributeNameQueueArn)]
	counts := func(url *string) (visible, notVisible int) {
		a := lambdaMust(sc.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: url, AttributeNames: []stypes.QueueAttributeName{
			stypes.QueueAttributeNameApproximateNumberOfMessages, stypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible}}))
		visible, _ = strconv.Atoi(a.Attributes[string(stypes.QueueAttributeNameApproximateNumberOfMessages)])
		notVisible, _ = strconv.Atoi(a.Attributes[string(stypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible)])
		return visible, notVisible
	}

	// The function: every delivery is logged to outFile as
	// "<ok|fail> <body> <ApproximateReceiveCount>".
	outFile := filepath.Join(t.TempDir(), "deliveries.txt")
	lambdaMust(lc.CreateFunction(ctx, &lambda.CreateFunctionInput{
		FunctionName: aws.String("lamq-fn"), Role: aws.String("arn:aws:iam::000000000000:role/r"), Runtime: ltypes.RuntimeProvidedal2023,
		Handler: aws.String("bootstrap"), Code: &ltypes.FunctionCode{ZipFile: zipFile}, Timeout: aws.Int32(10),
		Environment: &ltypes.Environment{Variables: map[string]string{"OUT_FILE": outFile}},
	}))
	deliveries := func() []string {
		b, _ := os.ReadFile(outFile)
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(lines) == 1 && lines[0] == "" {
			return nil
		}
		sort.Strings(lines)
		return lines
	}

	good := []string{"good-1", "good-2", "good-3", "good-4", "good-5"}
	bad := []string{"fail-1", "fail-2"}
	var entries []stypes.SendMessageBatchRequestEntry
	for i, b := range []string{"good-1", "fail-1", "good-2", "good-3", "fail-2", "good-4", "good-5"} {
		entries = append(entries, stypes.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(b)})
	}
	if out := lambdaMust(sc.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: srcURL, Entries: entries})); len(out.Failed) != 0 {
		t.Fatalf("SendMessageBatch failed entries: %+v", out.Failed)
	}

	// A missing queue: Lambda's own InvalidParameterValueException, which
	// the SDK raises as such (not SQS's code).
	_, err := lc.CreateEventSourceMapping(ctx, &lambda.CreateEventSourceMappingInput{
		EventSourceArn: aws.String(strings.Replace(srcArn, "lamq", "nosuchqueue", 1)), FunctionName: aws.String("lamq-fn")})
	var invalid *ltypes.InvalidParameterValueException
	if !errors.As(err, &invalid) || !strings.Contains(aws.ToString(invalid.Message), "AWS.SimpleQueueService.NonExistentQueue") {
		t.Fatalf("CreateEventSourceMapping on a missing queue: %v", err)
	}

	const pollers = 2
	m := lambdaMust(lc.CreateEventSourceMapping(ctx, &lambda.CreateEventSourceMappingInput{
		EventSourceArn: aws.String(srcArn), FunctionName: aws.String("lamq-fn"), BatchSize: aws.Int32(10),
		ScalingConfig:         &ltypes.ScalingConfig{MaximumConcurrency: aws.Int32(pollers)},
		FunctionResponseTypes: []ltypes.FunctionResponseType{ltypes.FunctionResponseTypeReportBatchItemFailures},
	}))
	if aws.ToString(m.State) != "Enabled" || len(m.FunctionResponseTypes) != 1 || aws.ToString(m.EventSourceArn) != srcArn {
		t.Fatalf("CreateEventSourceMapping: %+v", m)
	}

	// idle waits until every poller of the mapping is back in its long
	// poll (one fake-clock timer each), so that advancing the clock is seen
	// by all of them.
	idle := func() {
		t.Helper()
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := clock.BlockUntilContext(wctx, pollers); err != nil {
			t.Fatalf("pollers not idle: %v", err)
		}
	}
	want := func(receives int) []string {
		var w []string
		for _, g := range good {
			w = append(w, "ok "+g+" 1")
		}
		for _, b := range bad {
			for n := 1; n <= receives; n++ {
				w = append(w, fmt.Sprintf("fail %s %d", b, n))
			}
		}
		sort.Strings(w)
		return w
	}
	waitDeliveries := func(receives int) {
		t.Helper()
		testenv.Eventually(t, 60*time.Second, fmt.Sprintf("deliveries of receive %d", receives), func() bool {
			return len(deliveries()) >= len(want(receives))
		})
		if got := deliveries(); !reflect.DeepEqual(got, want(receives)) {
			t.Fatalf("deliveries after receive %d:\n%s\nwant:\n%s", receives, strings.Join(got, "\n"), strings.Join(want(receives), "\n"))
		}
	}

	// First receive: the good messages are processed and deleted, the
	// failed ones stay, invisible for the visibility timeout.
	waitDeliveries(1)
	testenv.Eventually(t, 30*time.Second, "the good messages to be deleted", func() bool {
		v, nv := counts(srcURL)
		return v == 0 && nv == len(bad)
	})
	idle()
	clock.Advance(visibility - time.Second)
	idle()
	if v, nv := counts(srcURL); v != 0 || nv != len(bad) {
		t.Fatalf("before the visibility timeout ended: %d visible, %d not visible; want 0, %d", v, nv, len(bad))
	}
	if got := deliveries(); !reflect.DeepEqual(got, want(1)) {
		t.Fatalf("redelivered before the visibility timeout ended:\n%s", strings.Join(got, "\n"))
	}

	// Second receive (ApproximateReceiveCount 2): only the failed
	// messages come back, and fail again.
	clock.Advance(time.Second)
	waitDeliveries(2)
	testenv.Eventually(t, 30*time.Second, "the failed messages to be invisible again", func() bool {
		v, nv := counts(srcURL)
		return v == 0 && nv == len(bad)
	})
	if v, nv := counts(dlqURL); v != 0 || nv != 0 {
		t.Fatalf("the DLQ holds %d+%d messages before maxReceiveCount was reached", v, nv)
	}

	// Third receive: maxReceiveCount (2) is reached, so the queue moves
	// them to the DLQ instead of handing them to the function.
	idle()
	clock.Advance(visibility)
	var moved []stypes.Message
	testenv.Eventually(t, 30*time.Second, "the failed messages in the DLQ", func() bool {
		out := lambdaMust(sc.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: dlqURL, MaxNumberOfMessages: 10,
			MessageSystemAttributeNames: []stypes.MessageSystemAttributeName{stypes.MessageSystemAttributeNameAll}}))
		moved = append(moved, out.Messages...)
		return len(moved) >= len(bad)
	})
	var movedBodies []string
	for _, msg := range moved {
		movedBodies = append(movedBodies, aws.ToString(msg.Body))
		if src := msg.Attributes[string(stypes.MessageSystemAttributeNameDeadLetterQueueSourceArn)]; src != srcArn {
			t.Errorf("DLQ message %s: DeadLetterQueueSourceArn %q, want %q", aws.ToString(msg.Body), src, srcArn)
		}
	}
	sort.Strings(movedBodies)
	if !reflect.DeepEqual(movedBodies, bad) {
		t.Fatalf("the DLQ holds %v, want %v", movedBodies, bad)
	}
	testenv.Eventually(t, 30*time.Second, "the source queue to be empty", func() bool {
		v, nv := counts(srcURL)
		return v == 0 && nv == 0
	})

	// Nothing more reaches the function: each good message was processed
	// exactly once, each failed one exactly maxReceiveCount times.
	idle()
	clock.Advance(visibility)
	idle()
	if got := deliveries(); !reflect.DeepEqual(got, want(2)) {
		t.Fatalf("deliveries at the end:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want(2), "\n"))
	}
	gm := lambdaMust(lc.GetEventSourceMapping(ctx, &lambda.GetEventSourceMappingInput{UUID: m.UUID}))
	if aws.ToString(gm.State) != "Enabled" {
		t.Fatalf("GetEventSourceMapping: %+v", gm)
	}
	lambdaMust(lc.DeleteEventSourceMapping(ctx, &lambda.DeleteEventSourceMappingInput{UUID: m.UUID}))
}
