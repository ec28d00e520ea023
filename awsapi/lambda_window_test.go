package awsapi_test

import (
	"context"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	ltypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/runnel-dev/runnel/batch"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/stream"
)

// TumblingWindowInSeconds through aws-sdk-go-v2: its range, and Create,
// Get and Update of a stream mapping with it.
func TestLambdaTumblingWindowInSeconds(t *testing.T) {
	ctx := context.Background()
	rn := testenv.Start(t, testenv.Options{})
	lc, _ := lambdaEndpoint(t, rn)
	function.Register("lambdatest-window", batch.AggregateKinesis(
		func(ctx context.Context, n map[string]int, r events.KinesisEventRecord) (map[string]int, error) {
			n[r.Kinesis.PartitionKey]++
			return n, nil
		},
		func(context.Context, batch.WindowEmit, map[string]int) error { return nil }))
	lambdaMust(lc.CreateFunction(ctx, &lambda.CreateFunctionInput{FunctionName: aws.String("lam-w"), Role: aws.String("r"), Runtime: "runnel", Handler: aws.String("lambdatest-window"), Code: &ltypes.FunctionCode{}}))
	lambdaMust(rn.Streams.CreateStream(ctx, stream.CreateStreamInput{StreamName: "lam-w", ShardCount: 1}))
	lambdaMust(rn.Queues.CreateQueue(ctx, "lam-wq", nil))
	streamArn := rn.Streams.ARN("lam-w")

	_, err := lc.CreateEventSourceMapping(ctx, &lambda.CreateEventSourceMappingInput{EventSourceArn: aws.String(streamArn), FunctionName: aws.String("lam-w"),
		StartingPosition: ltypes.EventSourcePositionTrimHorizon, TumblingWindowInSeconds: aws.Int32(901)})
	wantValidation(t, err, "tumblingWindowInSeconds") // out of the model's range 0..900
	_, err = lc.CreateEventSourceMapping(ctx, &lambda.CreateEventSourceMappingInput{EventSourceArn: aws.String(rn.Queues.ARN("lam-wq")), FunctionName: aws.String("lam-w"),
		TumblingWindowInSeconds: aws.Int32(60)})
	wantLambdaErr[*ltypes.InvalidParameterValueException](t, err, "TumblingWindowInSeconds")

	m := lambdaMust(lc.CreateEventSourceMapping(ctx, &lambda.CreateEventSourceMappingInput{EventSourceArn: aws.String(streamArn), FunctionName: aws.String("lam-w"),
		StartingPosition: ltypes.EventSourcePositionTrimHorizon, TumblingWindowInSeconds: aws.Int32(120)}))
	if aws.ToInt32(m.TumblingWindowInSeconds) != 120 {
		t.Fatalf("CreateEventSourceMapping TumblingWindowInSeconds = %v, want 120", m.TumblingWindowInSeconds)
	}
	g := lambdaMust(lc.GetEventSourceMapping(ctx, &lambda.GetEventSourceMappingInput{UUID: m.UUID}))
	if aws.ToInt32(g.TumblingWindowInSeconds) != 120 {
		t.Fatalf("GetEventSourceMapping TumblingWindowInSeconds = %v, want 120", g.TumblingWindowInSeconds)
	}
	u := lambdaMust(lc.UpdateEventSourceMapping(ctx, &lambda.UpdateEventSourceMappingInput{UUID: m.UUID, BatchSize: aws.Int32(5)}))
	if aws.ToInt32(u.TumblingWindowInSeconds) != 120 || aws.ToInt32(u.BatchSize) != 5 {
		t.Fatalf("an update without TumblingWindowInSeconds: %+v", u)
	}
	u = lambdaMust(lc.UpdateEventSourceMapping(ctx, &lambda.UpdateEventSourceMappingInput{UUID: m.UUID, TumblingWindowInSeconds: aws.Int32(0)}))
	if u.TumblingWindowInSeconds == nil || *u.TumblingWindowInSeconds != 0 {
		t.Fatalf("UpdateEventSourceMapping TumblingWindowInSeconds = %v, want 0", u.TumblingWindowInSeconds)
	}
}

// CreateEventSourceMapping on a stream consumer's ARN through
// aws-sdk-go-v2: accepted, and EventSourceArn stays the consumer's ARN in
// Create, Get and List (the mapping reads through the consumer; see
// mapping's TestMappingOnConsumerARNProcessesLikeAStreamMapping).
func TestLambdaEventSourceMappingOnAConsumerARN(t *testing.T) {
	ctx := context.Background()
	rn := testenv.Start(t, testenv.Options{})
	lc, _ := lambdaEndpoint(t, rn)
	function.Register("lambdatest-efo", function.KinesisHandler(func(context.Context, events.KinesisEvent) (events.KinesisEventResponse, error) {
		return events.KinesisEventResponse{}, nil
	}))
	lambdaMust(lc.CreateFunction(ctx, &lambda.CreateFunctionInput{FunctionName: aws.String("lam-efo"), Role: aws.String("r"), Runtime: "runnel", Handler: aws.String("lambdatest-efo"), Code: &ltypes.FunctionCode{}}))
	lambdaMust(rn.Streams.CreateStream(ctx, stream.CreateStreamInput{StreamName: "lam-efo", ShardCount: 1}))
	c := lambdaMust(rn.Streams.RegisterStreamConsumer(ctx, "lam-efo", "lambda", nil))
	m := lambdaMust(lc.CreateEventSourceMapping(ctx, &lambda.CreateEventSourceMappingInput{EventSourceArn: aws.String(c.ConsumerARN), FunctionName: aws.String("lam-efo"),
		StartingPosition: ltypes.EventSourcePositionLatest}))
	g := lambdaMust(lc.GetEventSourceMapping(ctx, &lambda.GetEventSourceMappingInput{UUID: m.UUID}))
	l := lambdaMust(lc.ListEventSourceMappings(ctx, &lambda.ListEventSourceMappingsInput{EventSourceArn: aws.String(c.ConsumerARN)}))
	if aws.ToString(m.EventSourceArn) != c.ConsumerARN || aws.ToString(g.EventSourceArn) != c.ConsumerARN || len(l.EventSourceMappings) != 1 {
		t.Fatalf("EventSourceArn: created %q, got %q, listed %d; want %q", aws.ToString(m.EventSourceArn), aws.ToString(g.EventSourceArn), len(l.EventSourceMappings), c.ConsumerARN)
	}
	_, err := lc.CreateEventSourceMapping(ctx, &lambda.CreateEventSourceMappingInput{EventSourceArn: aws.String(rn.Streams.ARN("lam-efo") + "/consumer/nobody:1"), FunctionName: aws.String("lam-efo"),
		StartingPosition: ltypes.EventSourcePositionLatest})
	wantLambdaErr[*ltypes.ResourceNotFoundException](t, err, "nobody")
}
