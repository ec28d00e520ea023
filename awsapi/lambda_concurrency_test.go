package awsapi_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	ltypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/testenv"
)

// TestReservationsLeaveAHundredUnreserved: the reserved concurrency of
// all functions together may not leave fewer than 100 of the account's
// 1,000 to the functions without a reservation ("You can reserve up to
// the Unreserved account concurrency value minus 100",
// configuration-concurrency.html), refused with Lambda's
// InvalidParameterValueException. An update that keeps a reservation is
// not refused, and a reservation removed frees its share.
func TestReservationsLeaveAHundredUnreserved(t *testing.T) {
	ctx := context.Background()
	rn := testenv.Start(t, testenv.Options{})
	lc, _ := lambdaEndpoint(t, rn)
	function.Register("lambdatest-reserve", func(context.Context, any) (any, error) { return nil, nil })
	for _, name := range []string{"r1", "r2"} {
		lambdaMust(lc.CreateFunction(ctx, &lambda.CreateFunctionInput{FunctionName: aws.String(name), Role: aws.String("arn:aws:iam::000000000000:role/r"),
			Runtime: "runnel", Handler: aws.String("lambdatest-reserve"), Code: &ltypes.FunctionCode{}}))
	}
	reserve := func(name string, n int32) error {
		_, err := lc.PutFunctionConcurrency(ctx, &lambda.PutFunctionConcurrencyInput{FunctionName: aws.String(name), ReservedConcurrentExecutions: aws.Int32(n)})
		return err
	}
	msg := fmt.Sprintf("below its minimum value of [%d]", function.MinUnreservedConcurrency)
	wantLambdaErr[*ltypes.InvalidParameterValueException](t, reserve("r1", 1000), msg)
	wantLambdaErr[*ltypes.InvalidParameterValueException](t, reserve("r1", 901), msg)
	lambdaMust(struct{}{}, reserve("r1", 500))
	lambdaMust(struct{}{}, reserve("r2", 400)) // 900 reserved: 100 left
	wantLambdaErr[*ltypes.InvalidParameterValueException](t, reserve("r2", 401), msg)
	// Another change of r1 keeps its 500: not refused.
	lambdaMust(lc.UpdateFunctionConfiguration(ctx, &lambda.UpdateFunctionConfigurationInput{FunctionName: aws.String("r1"), Timeout: aws.Int32(7)}))
	lambdaMust(lc.DeleteFunctionConcurrency(ctx, &lambda.DeleteFunctionConcurrencyInput{FunctionName: aws.String("r1")}))
	lambdaMust(struct{}{}, reserve("r2", 900))
	if got := lambdaMust(lc.GetFunctionConcurrency(ctx, &lambda.GetFunctionConcurrencyInput{FunctionName: aws.String("r2")})); aws.ToInt32(got.ReservedConcurrentExecutions) != 900 {
		t.Fatalf("r2 reserves %d, want 900", aws.ToInt32(got.ReservedConcurrentExecutions))
	}
}
