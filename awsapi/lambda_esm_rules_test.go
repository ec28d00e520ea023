package awsapi_test

import (
	"context"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	ltypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/stream"
)

// TestASecondEventSourceMappingIsA409ResourceConflictOnTheWire: a second
// CreateEventSourceMapping of the same EventSourceArn and function
// reaches aws-sdk-go-v2 as *types.ResourceConflictException (HTTP 409)
// naming the existing mapping's UUID, as Lambda answers it
// (DataBiosphere/azul#3399, hashicorp/terraform-provider-aws#33352).
// Before, the second mapping was created and every record processed
// twice.
func TestASecondEventSourceMappingIsA409ResourceConflictOnTheWire(t *testing.T) {
	ctx := context.Background()
	rn := testenv.Start(t, testenv.Options{})
	lc, _ := lambdaEndpoint(t, rn)
	function.Register("esm-rules-kinesis", function.KinesisHandler(func(context.Context, events.KinesisEvent) (events.KinesisEventResponse, error) {
		return events.KinesisEventResponse{}, nil
	}))
	lambdaMust(lc.CreateFunction(ctx, &lambda.CreateFunctionInput{FunctionName: aws.String("esm-k"), Role: aws.String("r"), Runtime: "runnel", Handler: aws.String("esm-rules-kinesis"), Code: &ltypes.FunctionCode{}}))
	lambdaMust(rn.Streams.CreateStream(ctx, stream.CreateStreamInput{StreamName: "esm-s", ShardCount: 1}))
	in := &lambda.CreateEventSourceMappingInput{EventSourceArn: aws.String(rn.Streams.ARN("esm-s")), FunctionName: aws.String("esm-k"), StartingPosition: ltypes.EventSourcePositionLatest}
	first := lambdaMust(lc.CreateEventSourceMapping(ctx, in))
	_, err := lc.CreateEventSourceMapping(ctx, in)
	wantLambdaErr[*ltypes.ResourceConflictException](t, err, "provided mapping already exists. Please update or delete the existing mapping with UUID "+aws.ToString(first.UUID))
}
