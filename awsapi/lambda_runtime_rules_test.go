package awsapi_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	ltypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/runnel-dev/runnel/awsapi"
	"github.com/runnel-dev/runnel/internal/sdkhttp"
	"github.com/runnel-dev/runnel/internal/testenv"
)

// pyEndpoint serves a runnel (Lambda and CloudWatch Logs) with a
// python3.12 function name whose app.py is src (handler app.handler),
// with timeout seconds and env; it returns the server's URL and a
// Lambda client.
func pyEndpoint(t *testing.T, name, src string, timeout int32, env map[string]string) (string, *lambda.Client) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		testenv.MissingTool(t, "python3 is not installed: runtime python3.12 runs on it")
	}
	rn := testenv.Start(t, testenv.Options{})
	ep := awsapi.NewEndpoint(rn, awsapi.Options{}, awsapi.LambdaOptions{WorkDir: t.TempDir()})
	srv := httptest.NewServer(ep)
	t.Cleanup(srv.Close)
	t.Cleanup(ep.Close)
	lc := lambda.NewFromConfig(aws.Config{HTTPClient: sdkhttp.Client(), Region: "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("a", "b", ""), BaseEndpoint: aws.String(srv.URL)})
	in := &lambda.CreateFunctionInput{FunctionName: aws.String(name), Runtime: ltypes.RuntimePython312, Handler: aws.String("app.handler"),
		Role: aws.String("arn:aws:iam::000000000000:role/r"), Code: &ltypes.FunctionCode{ZipFile: zipFiles(t, map[string]string{"app.py": src})},
		Timeout: aws.Int32(timeout)}
	if env != nil {
		in.Environment = &ltypes.Environment{Variables: env}
	}
	lambdaMust(lc.CreateFunction(context.Background(), in))
	return srv.URL, lc
}

// logMessages is the messages of every event of group's log streams, in
// order, read with GetLogEvents.
func logMessages(t *testing.T, srvURL, group string) string {
	t.Helper()
	var streams struct {
		LogStreams []struct{ LogStreamName string }
	}
	jsonCall(t, srvURL, "Logs_20140328.DescribeLogStreams", map[string]any{"logGroupName": group}, &streams)
	var msgs []string
	for _, s := range streams.LogStreams {
		var evs struct{ Events []logEvent }
		jsonCall(t, srvURL, "Logs_20140328.GetLogEvents", map[string]any{"logGroupName": group, "logStreamName": s.LogStreamName, "startFromHead": true}, &evs)
		for _, e := range evs.Events {
			msgs = append(msgs, e.Message)
		}
	}
	return strings.Join(msgs, "\n")
}

// pyFinisher sleeps 1.5 s, then writes its event's "mark" (or its
// function URL request body's) to $OUT_DIR and prints "finished <mark>".
const pyFinisher = `import json, os, time
def handler(event, context):
    if "rawPath" in event:
        event = json.loads(event["body"])  # a function URL's
    time.sleep(1.5)
    with open(os.path.join(os.environ["OUT_DIR"], event["mark"]), "w") as f:
        f.write("done")
    print("finished", event["mark"])
    return {"ok": True}
`

// A synchronous invocation runs to its end (or its Timeout) whatever its
// caller does: a client that disconnects leaves it running, and its log
// is complete. On Lambda the function runs on after the caller's read
// timeout (the CLI's is 60 s, then it retries: boto/boto3#2510 shows the
// function completing). Before, the HTTP request's context reached the
// function: a disconnect cancelled the invocation, killed its
// environment half-way, and the log ended without the function's output.
// Both the Invoke endpoint and a function URL.
func TestASynchronousInvocationOutlivesItsCaller(t *testing.T) {
	out := t.TempDir()
	srvURL, lc := pyEndpoint(t, "pyfinish", pyFinisher, 10, map[string]string{"OUT_DIR": out})
	ctx := context.Background()
	cu := lambdaMust(lc.CreateFunctionUrlConfig(ctx, &lambda.CreateFunctionUrlConfigInput{FunctionName: aws.String("pyfinish"), AuthType: ltypes.FunctionUrlAuthTypeNone}))
	u, err := url.Parse(aws.ToString(cu.FunctionUrl))
	if err != nil {
		t.Fatal(err)
	}
	// A warm environment first, so that each caller below gives up
	// during the handler's 1.5 s, not during the init.
	lambdaMust(lc.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String("pyfinish"), Payload: []byte(`{"mark":"warm"}`)}))

	abandon := func(what string, req *http.Request) {
		t.Helper()
		c, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		resp, err := http.DefaultClient.Do(req.WithContext(c))
		if err == nil {
			resp.Body.Close()
			t.Fatalf("%s: answered %d before the caller gave up", what, resp.StatusCode)
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("%s: %v", what, err)
		}
	}
	req, _ := http.NewRequest("POST", srvURL+"/2015-03-31/functions/pyfinish/invocations", strings.NewReader(`{"mark":"endpoint"}`))
	abandon("Invoke", req)
	req, _ = http.NewRequest("POST", srvURL+"/", strings.NewReader(`{"mark":"url"}`))
	req.Host = u.Host
	req.Header.Set("Content-Type", "application/json")
	abandon("function URL", req)

	for _, mark := range []string{"endpoint", "url"} {
		testenv.Eventually(t, 20*time.Second, "the abandoned "+mark+" invocation to finish", func() bool {
			_, err := os.Stat(filepath.Join(out, mark))
			return err == nil
		})
	}
	var log string
	testenv.Eventually(t, 10*time.Second, "the log of the abandoned invocations", func() bool {
		log = logMessages(t, srvURL, "/aws/lambda/pyfinish")
		return strings.Count(log, "REPORT RequestId:") == 3
	})
	for _, mark := range []string{"endpoint", "url"} {
		if !strings.Contains(log, "finished "+mark+"\nEND RequestId:") {
			t.Errorf("the %s invocation's log lacks its output before END:\n%s", mark, log)
		}
	}
	if strings.Contains(log, "Task timed out") || strings.Contains(log, "Status: timeout") {
		t.Errorf("log:\n%s", log)
	}
}

// The Tail of a timed-out invocation (Invoke with LogType Tail,
// X-Amz-Log-Result) is the end of its log, which has "Task timed out
// after N.00 seconds", END and REPORT: "the last 4 KB of the execution
// log" (API_Invoke, LogType), the log being the platform lines too
// (SPEC §6.5). Before, package function returned at its own deadline
// without waiting for the process function, which writes those lines
// after killing the environment: the Tail lacked them 2 runs in 3.
func TestATimedOutInvocationsTailHasTheTimeoutLineEndAndReport(t *testing.T) {
	_, lc := pyEndpoint(t, "pyslow", "import time\ndef handler(event, context):\n    print('sleeping')\n    time.sleep(30)\n", 1, nil)
	for i := range 3 {
		out := lambdaMust(lc.Invoke(context.Background(), &lambda.InvokeInput{FunctionName: aws.String("pyslow"), Payload: []byte(`{}`), LogType: ltypes.LogTypeTail}))
		if aws.ToString(out.FunctionError) != "Unhandled" || !strings.Contains(string(out.Payload), "Task timed out after 1.00 seconds") {
			t.Fatalf("invocation %d: %v %s", i, aws.ToString(out.FunctionError), out.Payload)
		}
		b, err := base64.StdEncoding.DecodeString(aws.ToString(out.LogResult))
		if err != nil {
			t.Fatal(err)
		}
		tail := string(b)
		for _, want := range []string{"sleeping\n", "Task timed out after 1.00 seconds\nEND RequestId: ", "\nREPORT RequestId: "} {
			if !strings.Contains(tail, want) {
				t.Errorf("invocation %d: tail lacks %q:\n%s", i, want, tail)
			}
		}
		if !strings.HasSuffix(tail, "Status: timeout\n") {
			t.Errorf("invocation %d: tail does not end with REPORT:\n%s", i, tail)
		}
	}
}

// A function URL request whose event is over the synchronous payload
// limit (6 MiB) is answered 413 Request Entity Too Large, as one whose
// body alone is over it, whether the body itself or its 2.0 event (the
// envelope, a binary body in base64: 4/3 of it) exceeds the limit.
// Lambda: "Request payload size ... 6 MB each
// for request and response (synchronous)" (gettingstarted-limits.html),
// a caller's error. Before, a body under 6 MiB whose event was over it
// got 500 Internal Server Error (Invoke's RequestEntityTooLarge taken
// for a failure of runnel's).
func TestAFunctionURLEventOverTheLimitIsRequestEntityTooLarge(t *testing.T) {
	ctx, _, lc := startLambda(t)
	lambdaMust(lc.CreateFunction(ctx, &lambda.CreateFunctionInput{FunctionName: aws.String("bigurl"), Role: aws.String("r"), Runtime: "runnel",
		Handler: aws.String("lambdatest-color"), Code: &ltypes.FunctionCode{}}))
	cu := lambdaMust(lc.CreateFunctionUrlConfig(ctx, &lambda.CreateFunctionUrlConfigInput{FunctionName: aws.String("bigurl"), AuthType: ltypes.FunctionUrlAuthTypeNone}))
	u, err := url.Parse(aws.ToString(cu.FunctionUrl))
	if err != nil {
		t.Fatal(err)
	}
	send := func(contentType string, body []byte) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", *lc.Options().BaseEndpoint+"/", bytes.NewReader(body))
		req.Host = u.Host
		req.Header.Set("Content-Type", contentType)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	const mib = 1 << 20
	for _, c := range []struct {
		what, contentType string
		body              []byte
	}{
		{"a 5 MiB binary body (base64 in the event: 6.7 MiB)", "application/octet-stream", bytes.Repeat([]byte{0xff}, 5*mib)},
		{"a text body a few bytes under 6 MiB (over with its envelope)", "text/plain", bytes.Repeat([]byte("a"), 6*mib-10)},
		{"a body over 6 MiB", "text/plain", bytes.Repeat([]byte("a"), 6*mib+1)},
	} {
		status, body := send(c.contentType, c.body)
		if status != http.StatusRequestEntityTooLarge || !strings.Contains(body, `"Message":"Request Entity Too Large"`) {
			t.Errorf("%s: %d %s, want 413 Request Entity Too Large", c.what, status, body)
		}
	}
	// A small request still works.
	if status, body := send("text/plain", []byte("hi")); status != 200 {
		t.Errorf("small request: %d %s", status, body)
	}
}
