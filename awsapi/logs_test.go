package awsapi_test

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http/httptest"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/internal/sdkhttp"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	ltypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	stypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/runnel-dev/runnel/awsapi"
	"github.com/runnel-dev/runnel/internal/testenv"
)

// zipFiles is a deployment package holding files (name → content).
func zipFiles(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for name, body := range files {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(body))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// pythonFunction serves a runnel whose function pyfn (python3.12,
// app.handler) prints "hello world <n>" and returns {"n": n}, or raises
// KeyError when the event has "fail"; it returns the server and the
// clients' configuration.
func pythonFunction(t *testing.T) (*httptest.Server, aws.Config) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		testenv.MissingTool(t, "python3 is not installed: runtime python3.12 runs on it")
	}
	rn := testenv.Start(t, testenv.Options{})
	ep := awsapi.NewEndpoint(rn, awsapi.Options{}, awsapi.LambdaOptions{WorkDir: t.TempDir()})
	srv := httptest.NewServer(ep)
	t.Cleanup(srv.Close)
	t.Cleanup(ep.Close)
	cfg := aws.Config{HTTPClient: sdkhttp.Client(), Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("a", "b", ""), BaseEndpoint: aws.String(srv.URL)}
	code := zipFiles(t, map[string]string{"app.py": "def handler(event, context):\n" +
		"    if event.get('fail'):\n        raise KeyError('missing ' + event['fail'])\n" +
		"    print('hello world', event['n'])\n    return {'n': event['n']}\n"})
	cf := lambdaMust(lambda.NewFromConfig(cfg).CreateFunction(context.Background(), &lambda.CreateFunctionInput{FunctionName: aws.String("pyfn"), Runtime: ltypes.RuntimePython312,
		Handler: aws.String("app.handler"), Role: aws.String("arn:aws:iam::000000000000:role/r"), Code: &ltypes.FunctionCode{ZipFile: code}}))
	if cf.Runtime != ltypes.RuntimePython312 || aws.ToString(cf.Handler) != "app.handler" {
		t.Errorf("configuration %+v", cf)
	}
	return srv, cfg
}

// A Python function's unhandled exception in an asynchronous invocation
// arrives in its on-failure destination with AWS's errorType and
// errorMessage (the record's responsePayload, as
// https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-retain-records.html
// shows it): with MaximumRetryAttempts 0 after one attempt, no retry
// waited for.
func TestPythonExceptionToOnFailureDestination(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, cfg := pythonFunction(t)
	lc, sc := lambda.NewFromConfig(cfg), sqs.NewFromConfig(cfg)
	qurl := lambdaMust(sc.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("py-failures")})).QueueUrl
	lambdaMust(lc.PutFunctionEventInvokeConfig(ctx, &lambda.PutFunctionEventInvokeConfigInput{FunctionName: aws.String("pyfn"), MaximumRetryAttempts: aws.Int32(0),
		DestinationConfig: &ltypes.DestinationConfig{OnFailure: &ltypes.OnFailure{Destination: aws.String("arn:aws:sqs:us-east-1:000000000000:py-failures")}}}))
	out := lambdaMust(lc.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String("pyfn"), InvocationType: ltypes.InvocationTypeEvent, Payload: []byte(`{"fail":"key"}`)}))
	if out.StatusCode != 202 {
		t.Fatalf("status %d", out.StatusCode)
	}
	var msgs []stypes.Message
	for len(msgs) == 0 {
		msgs = lambdaMust(sc.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: qurl, WaitTimeSeconds: 20})).Messages
	}
	var record struct {
		RequestContext struct {
			Condition              string
			ApproximateInvokeCount int
		}
		RequestPayload  json.RawMessage
		ResponseContext struct{ FunctionError string }
		ResponsePayload struct {
			ErrorType, ErrorMessage string
			StackTrace              []string
		}
	}
	if err := json.Unmarshal([]byte(aws.ToString(msgs[0].Body)), &record); err != nil {
		t.Fatal(err)
	}
	p := record.ResponsePayload
	if p.ErrorType != "KeyError" || p.ErrorMessage != "'missing key'" || len(p.StackTrace) != 1 || record.ResponseContext.FunctionError != "Unhandled" ||
		record.RequestContext.Condition != "RetriesExhausted" || record.RequestContext.ApproximateInvokeCount != 1 || string(record.RequestPayload) != `{"fail":"key"}` {
		t.Errorf("record %s", aws.ToString(msgs[0].Body))
	}
}

type logEvent struct {
	LogStreamName, Message string
	Timestamp              int64
}

// A python3.x function deployed with CreateFunction: Invoke with LogType
// Tail returns the invocation's log (START, its output, END, REPORT), and
// the CloudWatch Logs calls find the same lines in /aws/lambda/<name>:
// the group, the environment's stream, its events, and the events a
// filter pattern matches. A Python exception is the invocation's error
// with AWS's errorType and errorMessage.
func TestPythonFunctionLogs(t *testing.T) {
	ctx := context.Background()
	srv, cfg := pythonFunction(t)
	lc := lambda.NewFromConfig(cfg)
	for _, n := range []string{"1", "2"} {
		out := lambdaMust(lc.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String("pyfn"), Payload: []byte(`{"n":` + n + `}`), LogType: ltypes.LogTypeTail}))
		tail, err := base64.StdEncoding.DecodeString(aws.ToString(out.LogResult))
		if err != nil || string(out.Payload) != `{"n": `+n+`}` || out.FunctionError != nil {
			t.Fatalf("invoke: %s %v %v", out.Payload, out.FunctionError, err)
		}
		if !regexp.MustCompile(`START RequestId: \S+ Version: \$LATEST\nhello world ` + n + `\nEND RequestId: \S+\nREPORT RequestId: \S+\tDuration: `).Match(tail) {
			t.Errorf("tail:\n%s", tail)
		}
	}
	out := lambdaMust(lc.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String("pyfn"), Payload: []byte(`{"fail":"key"}`)}))
	if aws.ToString(out.FunctionError) != "Unhandled" || !strings.Contains(string(out.Payload), `"errorMessage":"'missing key'","errorType":"KeyError","requestId":"`) {
		t.Errorf("error: %v %s", aws.ToString(out.FunctionError), out.Payload)
	}

	logs := func(op string, in any, out any) (int, string) {
		return jsonCall(t, srv.URL, "Logs_20140328."+op, in, out)
	}
	var groups struct {
		LogGroups []struct {
			LogGroupName, Arn string
			CreationTime      int64
		}
	}
	logs("DescribeLogGroups", map[string]any{"logGroupNamePrefix": "/aws/lambda/"}, &groups)
	if len(groups.LogGroups) != 1 || groups.LogGroups[0].LogGroupName != "/aws/lambda/pyfn" ||
		groups.LogGroups[0].Arn != "arn:aws:logs:us-east-1:000000000000:log-group:/aws/lambda/pyfn:*" || groups.LogGroups[0].CreationTime == 0 {
		t.Fatalf("groups %+v", groups)
	}
	var streams struct {
		LogStreams []struct {
			LogStreamName                           string
			FirstEventTimestamp, LastEventTimestamp int64
		}
	}
	logs("DescribeLogStreams", map[string]any{"logGroupName": "/aws/lambda/pyfn"}, &streams)
	if len(streams.LogStreams) != 1 || !regexp.MustCompile(`^\d{4}/\d\d/\d\d/\[\$LATEST\][0-9a-f]{32}$`).MatchString(streams.LogStreams[0].LogStreamName) ||
		streams.LogStreams[0].FirstEventTimestamp == 0 || streams.LogStreams[0].LastEventTimestamp < streams.LogStreams[0].FirstEventTimestamp {
		t.Fatalf("streams %+v", streams)
	}
	stream := streams.LogStreams[0].LogStreamName
	var events struct {
		Events                              []logEvent
		NextForwardToken, NextBackwardToken string
	}
	logs("GetLogEvents", map[string]any{"logGroupName": "/aws/lambda/pyfn", "logStreamName": stream, "startFromHead": true}, &events)
	var msgs []string
	for _, e := range events.Events {
		msgs = append(msgs, e.Message)
	}
	all := strings.Join(msgs, "\n")
	if !regexp.MustCompile(`(?s)^runnel: Runtime python3.12 runs on .*\nSTART .*\nhello world 1\nEND .*\nREPORT .*\nSTART .*\nhello world 2\nEND .*\nREPORT .*\nSTART .*\n\[ERROR\] KeyError: 'missing key'\r.*\nEND .*\nREPORT [^\n]*$`).MatchString(all) &&
		!regexp.MustCompile(`(?s)^START .*\nhello world 1\nEND .*\nREPORT .*\nSTART .*\nhello world 2\nEND .*\nREPORT .*\nSTART .*\n\[ERROR\] KeyError: 'missing key'\r.*\nEND .*\nREPORT [^\n]*$`).MatchString(all) {
		t.Errorf("events:\n%s", all)
	}
	var again struct{ Events []logEvent }
	logs("GetLogEvents", map[string]any{"logGroupName": "/aws/lambda/pyfn", "logStreamName": stream, "nextToken": events.NextForwardToken}, &again)
	if len(again.Events) != 0 {
		t.Errorf("after the forward token: %+v", again.Events)
	}
	var last struct{ Events []logEvent }
	logs("GetLogEvents", map[string]any{"logGroupName": "/aws/lambda/pyfn", "logStreamName": stream, "limit": 2}, &last)
	if len(last.Events) != 2 || !strings.HasPrefix(last.Events[0].Message, "END ") || !strings.HasPrefix(last.Events[1].Message, "REPORT ") {
		t.Errorf("the newest 2 events: %+v", last.Events)
	}

	for pattern, want := range map[string]int{`"hello world"`: 2, `hello 2`: 1, `?START ?END`: 6, `REPORT -Init`: 2, `processed`: 0, ``: len(msgs)} {
		var filtered struct{ Events []logEvent }
		if status, body := logs("FilterLogEvents", map[string]any{"logGroupName": "/aws/lambda/pyfn", "filterPattern": pattern}, &filtered); status != 200 {
			t.Fatalf("FilterLogEvents %q: %d %s", pattern, status, body)
		}
		if len(filtered.Events) != want {
			t.Errorf("pattern %q: %d events, want %d", pattern, len(filtered.Events), want)
		}
		for _, e := range filtered.Events {
			if e.LogStreamName != stream {
				t.Errorf("event of stream %q", e.LogStreamName)
			}
		}
	}
	// endTime: FilterLogEvents returns an event stamped at it ("Events with
	// a timestamp later than this time are not returned"), GetLogEvents
	// does not ("equal to or later ... not included").
	var hello logEvent
	for _, e := range events.Events {
		if e.Message == "hello world 1" {
			hello = e
		}
	}
	at := map[string]any{"logGroupName": "/aws/lambda/pyfn", "startTime": hello.Timestamp, "endTime": hello.Timestamp, "filterPattern": `"hello world 1"`}
	var atEnd struct{ Events []logEvent }
	if logs("FilterLogEvents", at, &atEnd); len(atEnd.Events) != 1 {
		t.Errorf("FilterLogEvents with endTime at the event's timestamp: %d events, want 1", len(atEnd.Events))
	}
	var getAtEnd struct{ Events []logEvent }
	logs("GetLogEvents", map[string]any{"logGroupName": "/aws/lambda/pyfn", "logStreamName": stream, "startTime": hello.Timestamp, "endTime": hello.Timestamp, "startFromHead": true}, &getAtEnd)
	if len(getAtEnd.Events) != 0 {
		t.Errorf("GetLogEvents with endTime equal to startTime: %d events, want none", len(getAtEnd.Events))
	}
	if status, body := logs("FilterLogEvents", map[string]any{"logGroupName": "/aws/lambda/pyfn", "filterPattern": `{ $.level = "ERROR" }`}, nil); status != 400 || !strings.Contains(body, "InvalidParameterException") {
		t.Errorf("a JSON pattern: %d %s", status, body)
	}
	if status, body := logs("GetLogEvents", map[string]any{"logGroupName": "/aws/lambda/nosuch", "logStreamName": "x"}, nil); status != 400 || !strings.Contains(body, "ResourceNotFoundException") {
		t.Errorf("a missing group: %d %s", status, body)
	}
}
