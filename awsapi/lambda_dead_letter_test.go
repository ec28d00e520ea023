package awsapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	ltypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/testenv"
)

func init() {
	function.Register("dead-letter-test-fails", func(context.Context, json.RawMessage) (json.RawMessage, error) {
		return nil, errors.New("boom")
	})
}

// TestAFunctionsDeadLetterConfigReceivesItsFailedEvents: "To retain
// discarded events, configure a dead-letter queue with
// UpdateFunctionConfiguration" (API_PutFunctionEventInvokeConfig);
// CreateFunction takes it too (API_DeadLetterConfig). Before, runnel did
// not read the field: the call succeeded, GetFunctionConfiguration showed
// none, and failed events went to runnel's built-in store.
func TestAFunctionsDeadLetterConfigReceivesItsFailedEvents(t *testing.T) {
	ctx, rn, lc := startLambda(t)
	for _, q := range []string{"dlq", "other"} {
		if _, err := rn.Queues.CreateQueue(ctx, q, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := rn.Queues.CreateQueue(ctx, "dlq.fifo", map[string]string{"FifoQueue": "true"}); err != nil {
		t.Fatal(err)
	}
	dlq := rn.Queues.ARN("dlq")
	lambdaMust(lc.CreateFunction(ctx, &lambda.CreateFunctionInput{FunctionName: aws.String("dl"), Role: aws.String("r"),
		Runtime: "runnel", Handler: aws.String("dead-letter-test-fails"), Code: &ltypes.FunctionCode{},
		DeadLetterConfig: &ltypes.DeadLetterConfig{TargetArn: aws.String(dlq)}}))
	cfg := lambdaMust(lc.GetFunctionConfiguration(ctx, &lambda.GetFunctionConfigurationInput{FunctionName: aws.String("dl")}))
	if cfg.DeadLetterConfig == nil || aws.ToString(cfg.DeadLetterConfig.TargetArn) != dlq {
		t.Fatalf("GetFunctionConfiguration.DeadLetterConfig = %+v, want %s", cfg.DeadLetterConfig, dlq)
	}
	lambdaMust(lc.PutFunctionEventInvokeConfig(ctx, &lambda.PutFunctionEventInvokeConfigInput{FunctionName: aws.String("dl"), MaximumRetryAttempts: aws.Int32(0)}))
	lambdaMust(lc.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String("dl"), InvocationType: ltypes.InvocationTypeEvent, Payload: []byte(`{"order":1}`)}))
	got := testenv.Drain(t, rn.Queues, "dlq", 1, nil)
	if got[0].Body != `{"order":1}` {
		t.Fatalf("dead letter %q, want the event", got[0].Body)
	}

	// Published versions keep it; an update with an empty TargetArn
	// removes it; a FIFO queue or a missing one is refused.
	lambdaMust(lc.PublishVersion(ctx, &lambda.PublishVersionInput{FunctionName: aws.String("dl")}))
	lambdaMust(lc.UpdateFunctionConfiguration(ctx, &lambda.UpdateFunctionConfigurationInput{FunctionName: aws.String("dl"),
		DeadLetterConfig: &ltypes.DeadLetterConfig{TargetArn: aws.String("")}}))
	if c := lambdaMust(lc.GetFunctionConfiguration(ctx, &lambda.GetFunctionConfigurationInput{FunctionName: aws.String("dl")})); c.DeadLetterConfig != nil {
		t.Fatalf("$LATEST's DeadLetterConfig after its removal: %+v", c.DeadLetterConfig)
	}
	if c := lambdaMust(lc.GetFunctionConfiguration(ctx, &lambda.GetFunctionConfigurationInput{FunctionName: aws.String("dl"), Qualifier: aws.String("1")})); c.DeadLetterConfig == nil {
		t.Fatalf("version 1 lost its DeadLetterConfig")
	}
	for _, arn := range []string{rn.Queues.ARN("dlq.fifo"), rn.Queues.ARN("missing"), "arn:aws:sns:us-east-1:000000000000:t"} {
		_, err := lc.UpdateFunctionConfiguration(ctx, &lambda.UpdateFunctionConfigurationInput{FunctionName: aws.String("dl"),
			DeadLetterConfig: &ltypes.DeadLetterConfig{TargetArn: aws.String(arn)}})
		wantLambdaErr[*ltypes.InvalidParameterValueException](t, err, "DeadLetterConfig.TargetArn")
	}
}
