package awsapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	ltypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/runnel-dev/runnel/function"
)

// A function URL invokes its function with the payload format 2.0 event
// (events.LambdaFunctionURLRequest) and maps the answer back: a result
// with statusCode gives status, headers, cookies and body; any other JSON
// is a 200 application/json body as it is.
func TestLambdaFunctionURL(t *testing.T) {
	ctx, rn, lc := startLambda(t)
	events2 := make(chan events.LambdaFunctionURLRequest, 4)
	function.Register("lambdatest-url", func(ctx context.Context, ev json.RawMessage) (any, error) {
		var req events.LambdaFunctionURLRequest
		json.Unmarshal(ev, &req)
		var raw map[string]any
		json.Unmarshal(ev, &raw)
		if raw["routeKey"] != "$default" {
			return nil, nil
		}
		events2 <- req
		if req.RawPath == "/hello" {
			return "Hello, world!", nil
		}
		return events.LambdaFunctionURLResponse{StatusCode: 201, Headers: map[string]string{"X-Answer": "42"}, Body: "made " + req.Body, Cookies: []string{"a=1", "b=2"}}, nil
	})
	lambdaMust(lc.CreateFunction(ctx, &lambda.CreateFunctionInput{FunctionName: aws.String("lu"), Role: aws.String("r"), Runtime: "runnel",
		Handler: aws.String("lambdatest-url"), Code: &ltypes.FunctionCode{}}))
	_, err := lc.CreateFunctionUrlConfig(ctx, &lambda.CreateFunctionUrlConfigInput{FunctionName: aws.String("lu"), Qualifier: aws.String("1"), AuthType: ltypes.FunctionUrlAuthTypeNone})
	wantLambdaErr[*ltypes.InvalidParameterValueException](t, err, "Qualifier")
	_, err = lc.GetFunctionUrlConfig(ctx, &lambda.GetFunctionUrlConfigInput{FunctionName: aws.String("lu")})
	wantLambdaErr[*ltypes.ResourceNotFoundException](t, err, "The resource you requested does not exist.")
	cu := lambdaMust(lc.CreateFunctionUrlConfig(ctx, &lambda.CreateFunctionUrlConfigInput{FunctionName: aws.String("lu"), AuthType: ltypes.FunctionUrlAuthTypeNone}))
	_, err = lc.CreateFunctionUrlConfig(ctx, &lambda.CreateFunctionUrlConfigInput{FunctionName: aws.String("lu"), AuthType: ltypes.FunctionUrlAuthTypeNone})
	wantLambdaErr[*ltypes.ResourceConflictException](t, err, "FunctionUrlConfig exists")
	u, err := url.Parse(aws.ToString(cu.FunctionUrl))
	if err != nil || !strings.HasSuffix(u.Hostname(), ".lambda-url.us-east-1.localhost") || aws.ToString(cu.FunctionArn) != rn.Functions.ARN("lu") || cu.InvokeMode != ltypes.InvokeModeBuffered {
		t.Fatalf("CreateFunctionUrlConfig: %+v", cu)
	}
	gu := lambdaMust(lc.GetFunctionUrlConfig(ctx, &lambda.GetFunctionUrlConfigInput{FunctionName: aws.String("lu")}))
	if aws.ToString(gu.FunctionUrl) != aws.ToString(cu.FunctionUrl) {
		t.Fatalf("GetFunctionUrlConfig URL %s, want %s", aws.ToString(gu.FunctionUrl), aws.ToString(cu.FunctionUrl))
	}
	endpoint := *lc.Options().BaseEndpoint
	send := func(method, path, body string, header http.Header) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, endpoint+path, strings.NewReader(body))
		req.Host = u.Host // as a client resolving <id>.lambda-url.us-east-1.localhost would send it
		for k, v := range header {
			req.Header[k] = v
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	resp := send("POST", "/orders/7?x=1&x=2&y=3", `{"n":1}`, http.Header{"Content-Type": {"application/json"}, "Cookie": {"s=1; t=2"}, "User-Agent": {"ua"}})
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 201 || resp.Header.Get("X-Answer") != "42" || string(body) != `made {"n":1}` || len(resp.Header.Values("Set-Cookie")) != 2 {
		t.Fatalf("mapped response: %d %v %q", resp.StatusCode, resp.Header, body)
	}
	ev := <-events2
	rc := ev.RequestContext
	if ev.Version != "2.0" || ev.RawPath != "/orders/7" || ev.RawQueryString != "x=1&x=2&y=3" || ev.QueryStringParameters["x"] != "1,2" ||
		len(ev.Cookies) != 2 || ev.Cookies[1] != "t=2" || ev.Headers["content-type"] != "application/json" || ev.Headers["cookie"] != "" ||
		ev.Body != `{"n":1}` || ev.IsBase64Encoded || rc.HTTP.Method != "POST" || rc.HTTP.Path != "/orders/7" || rc.HTTP.UserAgent != "ua" ||
		rc.APIID != strings.Split(u.Hostname(), ".")[0] || rc.AccountID != "000000000000" || rc.TimeEpoch == 0 {
		t.Fatalf("event: %+v", ev)
	}
	resp = send("GET", "/hello", "", nil)
	body, _ = io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" || string(body) != `"Hello, world!"` {
		t.Fatalf("a string result: %d %q %q", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	<-events2

	// Cors: headers on an allowed origin's answer, a preflight answered.
	lambdaMust(lc.UpdateFunctionUrlConfig(ctx, &lambda.UpdateFunctionUrlConfigInput{FunctionName: aws.String("lu"),
		Cors: &ltypes.Cors{AllowOrigins: []string{"https://app.example"}, AllowMethods: []string{"GET", "POST"}, MaxAge: aws.Int32(60)}}))
	resp = send("OPTIONS", "/hello", "", http.Header{"Origin": {"https://app.example"}, "Access-Control-Request-Method": {"POST"}})
	if resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") != "https://app.example" || resp.Header.Get("Access-Control-Allow-Methods") != "GET,POST" || resp.Header.Get("Access-Control-Max-Age") != "60" {
		t.Fatalf("preflight: %d %v", resp.StatusCode, resp.Header)
	}
	if resp = send("GET", "/hello", "", http.Header{"Origin": {"https://other.example"}}); resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("an origin not allowed got %q", resp.Header.Get("Access-Control-Allow-Origin"))
	}
	<-events2

	// AWS_IAM wants a signed request.
	lambdaMust(lc.UpdateFunctionUrlConfig(ctx, &lambda.UpdateFunctionUrlConfigInput{FunctionName: aws.String("lu"), AuthType: ltypes.FunctionUrlAuthTypeAwsIam}))
	if resp := send("GET", "/hello", "", nil); resp.StatusCode != 403 {
		t.Fatalf("AWS_IAM URL without Authorization: %d", resp.StatusCode)
	}
	if l := lambdaMust(lc.ListFunctionUrlConfigs(ctx, &lambda.ListFunctionUrlConfigsInput{FunctionName: aws.String("lu")})); len(l.FunctionUrlConfigs) != 1 || l.FunctionUrlConfigs[0].AuthType != ltypes.FunctionUrlAuthTypeAwsIam {
		t.Fatalf("ListFunctionUrlConfigs: %+v", l.FunctionUrlConfigs)
	}
	lambdaMust(lc.DeleteFunctionUrlConfig(ctx, &lambda.DeleteFunctionUrlConfigInput{FunctionName: aws.String("lu")}))
	if resp := send("GET", "/hello", "", nil); resp.StatusCode != 403 {
		t.Fatalf("a deleted URL: %d", resp.StatusCode)
	}
}
