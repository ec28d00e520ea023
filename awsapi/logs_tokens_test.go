package awsapi_test

import (
	"context"
	"net/http/httptest"
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

// GetLogEvents returns a token of each direction even on an empty page:
// nextForwardToken (f/) reads on forward, nextBackwardToken (b/) back, and
// at the end of the stream the token given comes back in its own
// direction, which is how clients know they are at the end
// (API_GetLogEvents: "If you have reached the end of the stream, it
// returns the same token you passed in"). Before, an empty page returned
// the given token as both: after reading forward to the end,
// nextBackwardToken was an f/ token, and reading "back" with it read
// forward.
func TestGetLogEventsReturnsATokenOfEachDirection(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	ep := awsapi.NewEndpoint(rn, awsapi.Options{}, awsapi.LambdaOptions{WorkDir: t.TempDir()})
	srv := httptest.NewServer(ep)
	t.Cleanup(srv.Close)
	t.Cleanup(ep.Close)
	lc := lambda.NewFromConfig(aws.Config{HTTPClient: sdkhttp.Client(), Region: "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("a", "b", ""), BaseEndpoint: aws.String(srv.URL)})
	ctx := context.Background()
	lambdaMust(lc.CreateFunction(ctx, &lambda.CreateFunctionInput{FunctionName: aws.String("tokfn"), Role: aws.String("r"), Runtime: "runnel",
		Handler: aws.String("lambdatest-color"), Code: &ltypes.FunctionCode{}}))
	lambdaMust(lc.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String("tokfn")}))

	var streams struct {
		LogStreams []struct{ LogStreamName string }
	}
	var stream string
	testenv.Eventually(t, 5*time.Second, "the function's log stream", func() bool {
		jsonCall(t, srv.URL, "Logs_20140328.DescribeLogStreams", map[string]any{"logGroupName": "/aws/lambda/tokfn"}, &streams)
		if len(streams.LogStreams) == 1 {
			stream = streams.LogStreams[0].LogStreamName
		}
		return stream != ""
	})
	type page struct {
		Events                              []logEvent
		NextForwardToken, NextBackwardToken string
	}
	get := func(in map[string]any) page {
		t.Helper()
		in["logGroupName"], in["logStreamName"] = "/aws/lambda/tokfn", stream
		var p page
		if status, body := jsonCall(t, srv.URL, "Logs_20140328.GetLogEvents", in, &p); status != 200 {
			t.Fatalf("GetLogEvents %v: %d %s", in, status, body)
		}
		if !strings.HasPrefix(p.NextForwardToken, "f/") || !strings.HasPrefix(p.NextBackwardToken, "b/") {
			t.Errorf("GetLogEvents %v: tokens %q (forward) and %q (backward)", in, p.NextForwardToken, p.NextBackwardToken)
		}
		return p
	}
	all := get(map[string]any{"startFromHead": true})
	if len(all.Events) != 3 { // START, END, REPORT
		t.Fatalf("events %+v", all.Events)
	}
	// Forward to the end: an empty page, the forward token unchanged.
	end := get(map[string]any{"nextToken": all.NextForwardToken})
	if len(end.Events) != 0 || end.NextForwardToken != all.NextForwardToken {
		t.Errorf("at the end: %+v, want no events and the forward token %q again", end, all.NextForwardToken)
	}
	// Back from the end: the stream's events.
	if back := get(map[string]any{"nextToken": end.NextBackwardToken}); len(back.Events) != 3 {
		t.Errorf("back from the end: %d events, want 3", len(back.Events))
	}
	// Back to the start: an empty page, the backward token unchanged;
	// forward from there reads the stream again.
	start := get(map[string]any{"nextToken": all.NextBackwardToken})
	if len(start.Events) != 0 || start.NextBackwardToken != all.NextBackwardToken {
		t.Errorf("at the start: %+v, want no events and the backward token %q again", start, all.NextBackwardToken)
	}
	if again := get(map[string]any{"nextToken": start.NextForwardToken}); len(again.Events) != 3 {
		t.Errorf("forward from the start: %d events, want 3", len(again.Events))
	}
}
