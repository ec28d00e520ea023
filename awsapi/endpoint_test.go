package awsapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/runnel-dev/runnel/internal/sdkhttp"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	ltypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/runnel-dev/runnel/awsapi"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/testenv"
)

// One address serves the three APIs, as `runnel serve --aws` does.
func TestEndpointServesLambdaKinesisAndSQS(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	srv := httptest.NewServer(awsapi.NewEndpoint(rn, awsapi.Options{}, awsapi.LambdaOptions{WorkDir: t.TempDir()}))
	defer srv.Close()
	cfg := aws.Config{HTTPClient: sdkhttp.Client(), Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("a", "b", ""), BaseEndpoint: aws.String(srv.URL)}
	ctx := context.Background()
	if _, err := kinesis.NewFromConfig(cfg).CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: aws.String("s"), ShardCount: aws.Int32(1)}); err != nil {
		t.Fatal(err)
	}
	if _, err := sqs.NewFromConfig(cfg).CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("q")}); err != nil {
		t.Fatal(err)
	}
	function.Register("endpoint-noop", func(ctx context.Context, ev json.RawMessage) (json.RawMessage, error) { return ev, nil })
	lc := lambda.NewFromConfig(cfg)
	if _, err := lc.CreateFunction(ctx, &lambda.CreateFunctionInput{FunctionName: aws.String("f"), Role: aws.String("arn:aws:iam::000000000000:role/r"),
		Runtime: "runnel", Handler: aws.String("endpoint-noop"), Code: &ltypes.FunctionCode{}}); err != nil {
		t.Fatal(err)
	}
	out, err := lc.ListFunctions(ctx, &lambda.ListFunctionsInput{})
	if err != nil || len(out.Functions) != 1 || aws.ToString(out.Functions[0].FunctionName) != "f" {
		t.Fatalf("ListFunctions = %+v, %v", out, err)
	}
	inv, err := lc.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String("f"), Payload: []byte(`{"x":1}`)})
	if err != nil || string(inv.Payload) != `{"x":1}` {
		t.Fatalf("Invoke = %+v, %v", inv, err)
	}
	names, _ := rn.Streams.ListStreams(ctx)
	if len(names) != 1 || names[0] != "s" {
		t.Fatalf("streams %v", names)
	}
}

// TestCORS: a browser's preflight is answered for any origin as AWS's
// JSON endpoints answer it (recorded from AWS in kinesalite's and
// dynalite's connection tests: "*", a 2-day max age, the requested
// headers and method echoed, an empty 200 with a request id), with or
// without Access-Control-Request-Method, and the answers carry the
// headers that let a page's SDK read them.
func TestCORS(t *testing.T) {
	e := start(t, awsapi.Options{})
	for _, method := range []string{"POST", ""} {
		pre, _ := http.NewRequest("OPTIONS", e.srv.URL+"/", nil)
		pre.Header.Set("Origin", "http://localhost:3000")
		if method != "" {
			pre.Header.Set("Access-Control-Request-Method", method)
		}
		pre.Header.Set("Access-Control-Request-Headers", "x-amz-target, content-type, authorization")
		resp, err := http.DefaultClient.Do(pre)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		h := resp.Header
		if resp.StatusCode != 200 || len(body) != 0 || h.Get("Access-Control-Allow-Origin") != "*" || h.Get("Access-Control-Max-Age") != "172800" ||
			h.Get("Access-Control-Allow-Headers") != "x-amz-target, content-type, authorization" || h.Get("Access-Control-Allow-Methods") != method ||
			len(h.Get("x-amzn-RequestId")) != 36 {
			t.Fatalf("preflight (request method %q): %d %q %v", method, resp.StatusCode, body, h)
		}
	}
	req, _ := http.NewRequest("POST", e.srv.URL+"/", strings.NewReader(`{}`))
	req.Header.Set("Origin", "http://localhost:3000")
	req.Header.Set("X-Amz-Target", "Kinesis_20131202.ListStreams")
	resp, err := http.DefaultClient.Do(sign(req))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if h := resp.Header; resp.StatusCode != 200 || h.Get("Access-Control-Allow-Origin") != "*" || !strings.Contains(h.Get("Access-Control-Expose-Headers"), "x-amzn-RequestId") {
		t.Fatalf("request: %d %v", resp.StatusCode, h)
	}
}
