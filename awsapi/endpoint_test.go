package awsapi_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"testing"

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
	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("a", "b", ""), BaseEndpoint: aws.String(srv.URL)}
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
