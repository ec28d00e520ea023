package awsapi_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/runnel-dev/runnel/awsapi"
)

// TestAGivenMaxNumberOfMessagesOfZeroIsInvalid: MaxNumberOfMessages is
// "The maximum number of messages to return ... Valid values: 1 to 10.
// Default: 1" (API_ReceiveMessage): a given 0 is InvalidParameterValue,
// only an absent one is the default. Before, the endpoint read it as an
// int, 0 whether given or not, and a given 0 received one message. (The
// Go SDK never sends a 0; the AWS CLI and hand-made requests do.)
func TestAGivenMaxNumberOfMessagesOfZeroIsInvalid(t *testing.T) {
	ctx := context.Background()
	e := start(t, awsapi.Options{})
	sc := e.sqs()
	qurl := aws.ToString(must(sc.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("max")})).QueueUrl)
	for range 2 {
		must(sc.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(qurl), MessageBody: aws.String("m")}))
	}
	query := func(params ...string) (int, string) {
		t.Helper()
		v := url.Values{"Version": {"2012-11-05"}, "Action": {"ReceiveMessage"}, "QueueUrl": {qurl}, "VisibilityTimeout": {"0"}}
		for i := 0; i < len(params); i += 2 {
			v.Set(params[i], params[i+1])
		}
		req, _ := http.NewRequest("POST", e.srv.URL+"/", strings.NewReader(v.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
		return do(t, sign(req))
	}
	json := func(body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", e.srv.URL+"/", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-amz-json-1.0")
		req.Header.Set("X-Amz-Target", "AmazonSQS.ReceiveMessage")
		return do(t, sign(req))
	}
	for name, call := range map[string]func() (int, string){
		"query": func() (int, string) { return query("MaxNumberOfMessages", "0") },
		"json": func() (int, string) {
			return json(`{"QueueUrl":"` + qurl + `","MaxNumberOfMessages":0,"VisibilityTimeout":0}`)
		},
	} {
		st, body := call()
		if st != 400 || !strings.Contains(body, "InvalidParameterValue") || !strings.Contains(body, "MaxNumberOfMessages") || !strings.Contains(body, "between 1 and 10") {
			t.Fatalf("%s: a given 0 = %d %s, want 400 InvalidParameterValue naming MaxNumberOfMessages and 1..10", name, st, body)
		}
	}
	// absent: the default, one message; given: as many
	if st, body := query(); st != 200 || strings.Count(body, "<MessageId>") != 1 {
		t.Fatalf("query without MaxNumberOfMessages = %d %s, want one message", st, body)
	}
	if st, body := json(`{"QueueUrl":"` + qurl + `","VisibilityTimeout":0}`); st != 200 || strings.Count(body, `"MessageId"`) != 1 {
		t.Fatalf("json without MaxNumberOfMessages = %d %s, want one message", st, body)
	}
	if st, body := json(`{"QueueUrl":"` + qurl + `","MaxNumberOfMessages":2,"VisibilityTimeout":0}`); st != 200 || strings.Count(body, `"MessageId"`) != 2 {
		t.Fatalf("json with MaxNumberOfMessages 2 = %d %s, want two messages", st, body)
	}
}

// TestAGivenMoveTaskRateOfZeroIsInvalid: MaxNumberOfMessagesPerSecond is
// "The number of messages to be moved per second ... (maximum 500)",
// 1..500 when given (API_StartMessageMoveTask); absent means the
// system's rate. A given 0 was taken as absent (500 a second).
func TestAGivenMoveTaskRateOfZeroIsInvalid(t *testing.T) {
	ctx := context.Background()
	e := start(t, awsapi.Options{})
	sc := e.sqs()
	dlq := aws.ToString(must(sc.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("rate-dlq")})).QueueUrl)
	must(sc.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("rate-src"), Attributes: map[string]string{
		"RedrivePolicy": `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:rate-dlq","maxReceiveCount":"1"}`}}))
	must(sc.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(dlq), MessageBody: aws.String("m")}))
	start := func(body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", e.srv.URL+"/", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-amz-json-1.0")
		req.Header.Set("X-Amz-Target", "AmazonSQS.StartMessageMoveTask")
		return do(t, sign(req))
	}
	src := `"SourceArn":"arn:aws:sqs:us-east-1:000000000000:rate-dlq"`
	if st, body := start(`{` + src + `,"MaxNumberOfMessagesPerSecond":0}`); st != 400 || !strings.Contains(body, "MaxNumberOfMessagesPerSecond") {
		t.Fatalf("a given 0 = %d %s, want 400 naming MaxNumberOfMessagesPerSecond", st, body)
	}
	if st, body := start(`{` + src + `}`); st != 200 || !strings.Contains(body, "TaskHandle") {
		t.Fatalf("absent = %d %s, want a task", st, body)
	}
}
