package awsapi_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	ltypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
)

// An event invoke configuration answers an unset destination as
// {"Destination":null}, as Lambda does (API_OnSuccess, API_OnFailure;
// terraform-provider-aws tells an unset destination by nil), in Put,
// Update, Get and List. Before, runnel answered {"Destination":""}.
func TestAnUnsetAsyncDestinationIsNull(t *testing.T) {
	ctx, rn, lc := startLambda(t)
	createColor(t, lc, "dn", "red")
	lambdaMust(rn.Queues.CreateQueue(ctx, "dn-failures", nil))
	failArn := rn.Queues.ARN("dn-failures")
	check := func(op string, d *ltypes.DestinationConfig, wantFailure string) {
		t.Helper()
		if d == nil || d.OnSuccess == nil || d.OnFailure == nil {
			t.Fatalf("%s: DestinationConfig %+v, want both OnSuccess and OnFailure", op, d)
		}
		if d.OnSuccess.Destination != nil {
			t.Fatalf("%s: OnSuccess.Destination = %q, want null", op, *d.OnSuccess.Destination)
		}
		if wantFailure == "" && d.OnFailure.Destination != nil {
			t.Fatalf("%s: OnFailure.Destination = %q, want null", op, *d.OnFailure.Destination)
		}
		if wantFailure != "" && aws.ToString(d.OnFailure.Destination) != wantFailure {
			t.Fatalf("%s: OnFailure.Destination = %v, want %s", op, d.OnFailure.Destination, wantFailure)
		}
	}
	p := lambdaMust(lc.PutFunctionEventInvokeConfig(ctx, &lambda.PutFunctionEventInvokeConfigInput{FunctionName: aws.String("dn"), MaximumRetryAttempts: aws.Int32(1)}))
	check("Put", p.DestinationConfig, "")
	u := lambdaMust(lc.UpdateFunctionEventInvokeConfig(ctx, &lambda.UpdateFunctionEventInvokeConfigInput{FunctionName: aws.String("dn"),
		DestinationConfig: &ltypes.DestinationConfig{OnFailure: &ltypes.OnFailure{Destination: aws.String(failArn)}}}))
	check("Update", u.DestinationConfig, failArn)
	g := lambdaMust(lc.GetFunctionEventInvokeConfig(ctx, &lambda.GetFunctionEventInvokeConfigInput{FunctionName: aws.String("dn")}))
	check("Get", g.DestinationConfig, failArn)
	// An empty Destination removes it.
	u = lambdaMust(lc.UpdateFunctionEventInvokeConfig(ctx, &lambda.UpdateFunctionEventInvokeConfigInput{FunctionName: aws.String("dn"),
		DestinationConfig: &ltypes.DestinationConfig{OnFailure: &ltypes.OnFailure{Destination: aws.String("")}}}))
	check("Update removing OnFailure", u.DestinationConfig, "")
	l := lambdaMust(lc.ListFunctionEventInvokeConfigs(ctx, &lambda.ListFunctionEventInvokeConfigsInput{FunctionName: aws.String("dn")}))
	if len(l.FunctionEventInvokeConfigs) != 1 {
		t.Fatalf("List: %d configurations, want 1", len(l.FunctionEventInvokeConfigs))
	}
	check("List", l.FunctionEventInvokeConfigs[0].DestinationConfig, "")
}
