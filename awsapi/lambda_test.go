package awsapi_test

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/internal/sdkhttp"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	ltypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/smithy-go"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/awsapi"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/queue"
	"github.com/runnel-dev/runnel/stream"
)

// lambdaEndpoint serves rn's Lambda API on httptest and returns a client;
// the handler's process functions are stopped at the end of the test (or
// by calling its Close).
func lambdaEndpoint(t *testing.T, rn *runnel.Runnel) (*lambda.Client, *awsapi.Handler) {
	t.Helper()
	h := awsapi.NewLambdaHandler(rn, awsapi.LambdaOptions{WorkDir: t.TempDir()})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	t.Cleanup(h.Close)
	return lambda.NewFromConfig(aws.Config{HTTPClient: sdkhttp.Client(),
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("a", "b", ""),
		BaseEndpoint: aws.String(srv.URL),
	}), h
}

// lambdaMust returns v, or panics (failing the test with a stack) on err.
func lambdaMust[T any](v T, err error) T {
	if err != nil {
		panic(fmt.Sprintf("unexpected error: %v", err))
	}
	return v
}

// wantLambdaErr checks that err is a *E whose message contains substr.
func wantLambdaErr[E error](t *testing.T, err error, substr string) {
	t.Helper()
	var target E
	if !errors.As(err, &target) {
		t.Fatalf("error %v (%T), want %T", err, err, target)
	}
	if !strings.Contains(err.Error(), substr) {
		t.Fatalf("error %q does not mention %q", err.Error(), substr)
	}
}

// wantValidation expects the ValidationException Lambda answers for a
// value outside its model's constraints (Lambda's own words, as quoted in
// appleboy/lambda-action#83: "ValidationException: 1 validation error
// detected: Value '[]' at 'layers' failed to satisfy constraint: ..."),
// before any other check.
func wantValidation(t *testing.T, err error, substr string) {
	t.Helper()
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != "ValidationException" || !strings.Contains(ae.ErrorMessage(), substr) {
		t.Fatalf("error %v, want a ValidationException with %q", err, substr)
	}
}

func TestLambdaInProcessFunction(t *testing.T) {
	ctx := context.Background()
	rn := testenv.Start(t, testenv.Options{})
	lc, _ := lambdaEndpoint(t, rn)
	var calls atomic.Int64
	function.Register("lambdatest-echo", func(ctx context.Context, ev json.RawMessage) (any, error) {
		calls.Add(1)
		var in struct {
			Fail string `json:"fail"`
		}
		json.Unmarshal(ev, &in)
		if in.Fail != "" {
			return nil, errors.New(in.Fail)
		}
		return map[string]any{"echo": ev, "env": function.Env(ctx)["COLOR"]}, nil
	})

	cf := lambdaMust(lc.CreateFunction(ctx, &lambda.CreateFunctionInput{
		FunctionName: aws.String("lam-echo"), Role: aws.String("arn:aws:iam::000000000000:role/r"),
		Runtime: "runnel", Handler: aws.String("lambdatest-echo"), Code: &ltypes.FunctionCode{},
		Timeout: aws.Int32(4), Environment: &ltypes.Environment{Variables: map[string]string{"COLOR": "red"}},
	}))
	if *cf.FunctionArn != rn.Functions.ARN("lam-echo") || aws.ToInt32(cf.Timeout) != 4 || cf.Runtime != "runnel" || aws.ToString(cf.Handler) != "lambdatest-echo" {
		t.Fatalf("CreateFunction: %+v", cf)
	}
	_, err := lc.CreateFunction(ctx, &lambda.CreateFunctionInput{FunctionName: aws.String("lam-echo"), Role: aws.String("r"), Runtime: "runnel", Handler: aws.String("lambdatest-echo"), Code: &ltypes.FunctionCode{}})
	wantLambdaErr[*ltypes.ResourceConflictException](t, err, "lam-echo")
	_, err = lc.CreateFunction(ctx, &lambda.CreateFunctionInput{FunctionName: aws.String("lam-x"), Role: aws.String("r"), Runtime: "python3.12", Handler: aws.String("app.handler"), Code: &ltypes.FunctionCode{}})
	wantLambdaErr[*ltypes.InvalidParameterValueException](t, err, "Runtime")
	_, err = lc.CreateFunction(ctx, &lambda.CreateFunctionInput{FunctionName: aws.String("lam-x"), Role: aws.String("r"), Runtime: "runnel", Handler: aws.String("lambdatest-echo"), Timeout: aws.Int32(901), Code: &ltypes.FunctionCode{}})
	wantLambdaErr[*ltypes.InvalidParameterValueException](t, err, "imeout")

	gf := lambdaMust(lc.GetFunction(ctx, &lambda.GetFunctionInput{FunctionName: aws.String("lam-echo")}))
	if aws.ToString(gf.Configuration.Role) != "arn:aws:iam::000000000000:role/r" || gf.Configuration.Environment.Variables["COLOR"] != "red" {
		t.Fatalf("GetFunction: %+v", gf.Configuration)
	}
	_, err = lc.GetFunction(ctx, &lambda.GetFunctionInput{FunctionName: aws.String("nope")})
	wantLambdaErr[*ltypes.ResourceNotFoundException](t, err, "nope")
	lf := lambdaMust(lc.ListFunctions(ctx, &lambda.ListFunctionsInput{}))
	if len(lf.Functions) != 1 || aws.ToString(lf.Functions[0].FunctionName) != "lam-echo" {
		t.Fatalf("ListFunctions: %+v", lf.Functions)
	}
	uc := lambdaMust(lc.UpdateFunctionConfiguration(ctx, &lambda.UpdateFunctionConfigurationInput{
		FunctionName: aws.String("lam-echo"), Timeout: aws.Int32(6), Environment: &ltypes.Environment{Variables: map[string]string{"COLOR": "blue"}},
	}))
	if aws.ToInt32(uc.Timeout) != 6 {
		t.Fatalf("UpdateFunctionConfiguration: %+v", uc)
	}
	_, err = lc.UpdateFunctionCode(ctx, &lambda.UpdateFunctionCodeInput{FunctionName: aws.String("lam-echo"), ZipFile: []byte("PK")})
	wantLambdaErr[*ltypes.InvalidParameterValueException](t, err, "in-process")

	// Invoke: RequestResponse, function error, Event, DryRun.
	out := lambdaMust(lc.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String("lam-echo"), Payload: []byte(`{"x":1}`)}))
	if out.StatusCode != 200 || out.FunctionError != nil || aws.ToString(out.ExecutedVersion) != "$LATEST" || string(out.Payload) != `{"echo":{"x":1},"env":"blue"}` {
		t.Fatalf("Invoke: %d %v %q", out.StatusCode, out.FunctionError, out.Payload)
	}
	out = lambdaMust(lc.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String(rn.Functions.ARN("lam-echo")), Payload: []byte(`{"fail":"bad input"}`)}))
	if out.StatusCode != 200 || aws.ToString(out.FunctionError) != "Unhandled" || !strings.Contains(string(out.Payload), `"errorMessage":"bad input"`) {
		t.Fatalf("Invoke (function error): %d %v %s", out.StatusCode, aws.ToString(out.FunctionError), out.Payload)
	}
	before := calls.Load()
	out = lambdaMust(lc.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String("lam-echo"), InvocationType: ltypes.InvocationTypeEvent, Payload: []byte(`{"async":true}`)}))
	if out.StatusCode != 202 || len(out.Payload) != 0 {
		t.Fatalf("Invoke Event: %d %q", out.StatusCode, out.Payload)
	}
	testenv.Eventually(t, 10*time.Second, "the Event invocation to run", func() bool { return calls.Load() > before })
	out = lambdaMust(lc.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String("lam-echo"), InvocationType: ltypes.InvocationTypeDryRun}))
	if out.StatusCode != 204 {
		t.Fatalf("Invoke DryRun: %d", out.StatusCode)
	}
	_, err = lc.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String("nope"), Payload: []byte(`{}`)})
	wantLambdaErr[*ltypes.ResourceNotFoundException](t, err, "nope")
	_, err = lc.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String("lam-echo"), Payload: []byte(`not json`)})
	wantLambdaErr[*ltypes.InvalidRequestContentException](t, err, "")
	_, err = lc.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String("lam-echo"), Qualifier: aws.String("7"), Payload: []byte(`{}`)})
	wantLambdaErr[*ltypes.ResourceNotFoundException](t, err, "")

	// Reserved concurrency 0 throttles.
	pc := lambdaMust(lc.PutFunctionConcurrency(ctx, &lambda.PutFunctionConcurrencyInput{FunctionName: aws.String("lam-echo"), ReservedConcurrentExecutions: aws.Int32(0)}))
	if aws.ToInt32(pc.ReservedConcurrentExecutions) != 0 {
		t.Fatalf("PutFunctionConcurrency: %+v", pc)
	}
	_, err = lc.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String("lam-echo"), Payload: []byte(`{}`)}, func(o *lambda.Options) { o.RetryMaxAttempts = 1 })
	wantLambdaErr[*ltypes.TooManyRequestsException](t, err, "")
	gc := lambdaMust(lc.GetFunctionConcurrency(ctx, &lambda.GetFunctionConcurrencyInput{FunctionName: aws.String("lam-echo")}))
	if gc.ReservedConcurrentExecutions == nil || *gc.ReservedConcurrentExecutions != 0 {
		t.Fatalf("GetFunctionConcurrency: %+v", gc)
	}
	_, err = lc.PutFunctionConcurrency(ctx, &lambda.PutFunctionConcurrencyInput{FunctionName: aws.String("lam-echo"), ReservedConcurrentExecutions: aws.Int32(5000)})
	wantLambdaErr[*ltypes.InvalidParameterValueException](t, err, "ReservedConcurrentExecutions")
	lambdaMust(lc.DeleteFunctionConcurrency(ctx, &lambda.DeleteFunctionConcurrencyInput{FunctionName: aws.String("lam-echo")}))
	lambdaMust(lc.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String("lam-echo"), Payload: []byte(`{}`)}))

	// Event invoke config CRUD.
	qurl := lambdaMust(rn.Queues.CreateQueue(ctx, "lam-eic-failures", nil))
	_ = qurl
	failArn := rn.Queues.ARN("lam-eic-failures")
	pe := lambdaMust(lc.PutFunctionEventInvokeConfig(ctx, &lambda.PutFunctionEventInvokeConfigInput{
		FunctionName: aws.String("lam-echo"), MaximumRetryAttempts: aws.Int32(1), MaximumEventAgeInSeconds: aws.Int32(600),
		DestinationConfig: &ltypes.DestinationConfig{OnFailure: &ltypes.OnFailure{Destination: aws.String(failArn)}},
	}))
	if aws.ToInt32(pe.MaximumRetryAttempts) != 1 || aws.ToString(pe.DestinationConfig.OnFailure.Destination) != failArn || pe.LastModified == nil || time.Since(*pe.LastModified) > time.Minute {
		t.Fatalf("PutFunctionEventInvokeConfig: %+v", pe)
	}
	ue := lambdaMust(lc.UpdateFunctionEventInvokeConfig(ctx, &lambda.UpdateFunctionEventInvokeConfigInput{FunctionName: aws.String("lam-echo"), MaximumRetryAttempts: aws.Int32(0)}))
	if aws.ToInt32(ue.MaximumRetryAttempts) != 0 || aws.ToInt32(ue.MaximumEventAgeInSeconds) != 600 || aws.ToString(ue.DestinationConfig.OnFailure.Destination) != failArn {
		t.Fatalf("UpdateFunctionEventInvokeConfig: %+v", ue)
	}
	ge := lambdaMust(lc.GetFunctionEventInvokeConfig(ctx, &lambda.GetFunctionEventInvokeConfigInput{FunctionName: aws.String("lam-echo")}))
	if aws.ToInt32(ge.MaximumRetryAttempts) != 0 || !strings.HasPrefix(aws.ToString(ge.FunctionArn), rn.Functions.ARN("lam-echo")) {
		t.Fatalf("GetFunctionEventInvokeConfig: %+v", ge)
	}
	_, err = lc.PutFunctionEventInvokeConfig(ctx, &lambda.PutFunctionEventInvokeConfigInput{FunctionName: aws.String("lam-echo"), MaximumRetryAttempts: aws.Int32(5)})
	wantValidation(t, err, "Value '5' at 'maximumRetryAttempts' failed to satisfy constraint: Member must have value less than or equal to 2")
	le := lambdaMust(lc.ListFunctionEventInvokeConfigs(ctx, &lambda.ListFunctionEventInvokeConfigsInput{FunctionName: aws.String("lam-echo")}))
	if len(le.FunctionEventInvokeConfigs) != 1 {
		t.Fatalf("ListFunctionEventInvokeConfigs: %+v", le)
	}
	lambdaMust(lc.DeleteFunctionEventInvokeConfig(ctx, &lambda.DeleteFunctionEventInvokeConfigInput{FunctionName: aws.String("lam-echo")}))
	_, err = lc.GetFunctionEventInvokeConfig(ctx, &lambda.GetFunctionEventInvokeConfigInput{FunctionName: aws.String("lam-echo")})
	wantLambdaErr[*ltypes.ResourceNotFoundException](t, err, "")

	lambdaMust(lc.DeleteFunction(ctx, &lambda.DeleteFunctionInput{FunctionName: aws.String("lam-echo")}))
	_, err = lc.GetFunction(ctx, &lambda.GetFunctionInput{FunctionName: aws.String("lam-echo")})
	wantLambdaErr[*ltypes.ResourceNotFoundException](t, err, "lam-echo")
	_, err = lc.DeleteFunction(ctx, &lambda.DeleteFunctionInput{FunctionName: aws.String("lam-echo")})
	wantLambdaErr[*ltypes.ResourceNotFoundException](t, err, "lam-echo")
}

func TestLambdaEventSourceMappings(t *testing.T) {
	ctx := context.Background()
	rn := testenv.Start(t, testenv.Options{})
	lc, _ := lambdaEndpoint(t, rn)
	var mu sync.Mutex
	var seen []string
	function.Register("lambdatest-kinesis", function.KinesisHandler(func(ctx context.Context, ev events.KinesisEvent) (events.KinesisEventResponse, error) {
		mu.Lock()
		defer mu.Unlock()
		for _, r := range ev.Records {
			seen = append(seen, string(r.Kinesis.Data))
		}
		return events.KinesisEventResponse{}, nil
	}))
	function.Register("lambdatest-sqs", function.SQSHandler(func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range ev.Records {
			seen = append(seen, m.Body)
		}
		return events.SQSEventResponse{}, nil
	}))
	for fn, h := range map[string]string{"lam-k": "lambdatest-kinesis", "lam-q": "lambdatest-sqs"} {
		lambdaMust(lc.CreateFunction(ctx, &lambda.CreateFunctionInput{FunctionName: aws.String(fn), Role: aws.String("r"), Runtime: "runnel", Handler: aws.String(h), Code: &ltypes.FunctionCode{}}))
	}
	lambdaMust(rn.Streams.CreateStream(ctx, stream.CreateStreamInput{StreamName: "lam-s", ShardCount: 1}))
	lambdaMust(rn.Streams.CreateStream(ctx, stream.CreateStreamInput{StreamName: "lam-s-failures", ShardCount: 1}))
	qurl := lambdaMust(rn.Queues.CreateQueue(ctx, "lam-q", nil))
	streamArn, queueArn, failArn := rn.Streams.ARN("lam-s"), rn.Queues.ARN("lam-q"), rn.Streams.ARN("lam-s-failures")

	// Validation errors name the field.
	_, err := lc.CreateEventSourceMapping(ctx, &lambda.CreateEventSourceMappingInput{EventSourceArn: aws.String(streamArn), FunctionName: aws.String("lam-k"), StartingPosition: ltypes.EventSourcePositionTrimHorizon, BatchSize: aws.Int32(20000)})
	wantValidation(t, err, "Value '20000' at 'batchSize' failed to satisfy constraint: Member must have value less than or equal to 10000")
	_, err = lc.CreateEventSourceMapping(ctx, &lambda.CreateEventSourceMappingInput{EventSourceArn: aws.String(streamArn), FunctionName: aws.String("lam-k")})
	wantLambdaErr[*ltypes.InvalidParameterValueException](t, err, "StartingPosition")
	_, err = lc.CreateEventSourceMapping(ctx, &lambda.CreateEventSourceMappingInput{EventSourceArn: aws.String(queueArn), FunctionName: aws.String("lam-q"), StartingPosition: ltypes.EventSourcePositionLatest})
	wantLambdaErr[*ltypes.InvalidParameterValueException](t, err, "StartingPosition")
	_, err = lc.CreateEventSourceMapping(ctx, &lambda.CreateEventSourceMappingInput{EventSourceArn: aws.String(streamArn), FunctionName: aws.String("nope"), StartingPosition: ltypes.EventSourcePositionLatest})
	wantLambdaErr[*ltypes.ResourceNotFoundException](t, err, "nope")

	// A stream mapping with every parameter.
	filter := `{"data":{"keep":[true]}}`
	sm := lambdaMust(lc.CreateEventSourceMapping(ctx, &lambda.CreateEventSourceMappingInput{
		EventSourceArn: aws.String(streamArn), FunctionName: aws.String("lam-k"),
		StartingPosition: ltypes.EventSourcePositionTrimHorizon, BatchSize: aws.Int32(10),
		MaximumBatchingWindowInSeconds: aws.Int32(0), ParallelizationFactor: aws.Int32(2),
		MaximumRetryAttempts: aws.Int32(3), MaximumRecordAgeInSeconds: aws.Int32(3600),
		BisectBatchOnFunctionError: aws.Bool(true), FunctionResponseTypes: []ltypes.FunctionResponseType{ltypes.FunctionResponseTypeReportBatchItemFailures},
		DestinationConfig: &ltypes.DestinationConfig{OnFailure: &ltypes.OnFailure{Destination: aws.String(failArn)}},
		FilterCriteria:    &ltypes.FilterCriteria{Filters: []ltypes.Filter{{Pattern: aws.String(filter)}}},
	}))
	if aws.ToString(sm.UUID) == "" || aws.ToString(sm.State) != "Enabled" || aws.ToString(sm.FunctionArn) != rn.Functions.ARN("lam-k") ||
		aws.ToString(sm.EventSourceArn) != streamArn || aws.ToInt32(sm.BatchSize) != 10 || aws.ToInt32(sm.ParallelizationFactor) != 2 ||
		aws.ToInt32(sm.MaximumRetryAttempts) != 3 || aws.ToInt32(sm.MaximumRecordAgeInSeconds) != 3600 || !aws.ToBool(sm.BisectBatchOnFunctionError) ||
		len(sm.FunctionResponseTypes) != 1 || aws.ToString(sm.DestinationConfig.OnFailure.Destination) != failArn ||
		aws.ToString(sm.FilterCriteria.Filters[0].Pattern) != filter || sm.StartingPosition != ltypes.EventSourcePositionTrimHorizon ||
		sm.LastModified == nil || time.Since(*sm.LastModified) > time.Minute || aws.ToString(sm.StateTransitionReason) == "" {
		t.Fatalf("CreateEventSourceMapping: %+v", sm)
	}
	for _, d := range []string{`{"keep":true,"n":1}`, `{"keep":false,"n":2}`, `{"keep":true,"n":3}`} {
		lambdaMust(rn.Streams.PutRecord(ctx, "lam-s", stream.PutRecordsRequestEntry{Data: []byte(d), PartitionKey: "k"}))
	}
	testenv.Eventually(t, 10*time.Second, "the filtered records", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) == 2
	})
	mu.Lock()
	if !strings.Contains(seen[0], `"n":1`) || !strings.Contains(seen[1], `"n":3`) {
		t.Errorf("records seen: %q", seen)
	}
	seen = nil
	mu.Unlock()

	// AT_TIMESTAMP round-trips its timestamp (epoch seconds). (Of a
	// version: a second mapping of the same stream and function is a
	// ResourceConflictException, as on AWS.)
	ts := time.Now().Add(-time.Hour).Truncate(time.Second)
	lambdaMust(lc.PublishVersion(ctx, &lambda.PublishVersionInput{FunctionName: aws.String("lam-k")}))
	tm := lambdaMust(lc.CreateEventSourceMapping(ctx, &lambda.CreateEventSourceMappingInput{
		EventSourceArn: aws.String(streamArn), FunctionName: aws.String("lam-k:1"), Enabled: aws.Bool(false),
		StartingPosition: ltypes.EventSourcePositionAtTimestamp, StartingPositionTimestamp: aws.Time(ts),
	}))
	if tm.StartingPositionTimestamp == nil || !tm.StartingPositionTimestamp.Equal(ts) || aws.ToString(tm.State) != "Disabled" {
		t.Fatalf("AT_TIMESTAMP mapping: %+v (timestamp %v, want %v)", tm, tm.StartingPositionTimestamp, ts)
	}

	// Get, List (all, by function, by source), Update.
	g := lambdaMust(lc.GetEventSourceMapping(ctx, &lambda.GetEventSourceMappingInput{UUID: sm.UUID}))
	if aws.ToString(g.UUID) != aws.ToString(sm.UUID) || aws.ToInt32(g.BatchSize) != 10 {
		t.Fatalf("GetEventSourceMapping: %+v", g)
	}
	_, err = lc.GetEventSourceMapping(ctx, &lambda.GetEventSourceMappingInput{UUID: aws.String("00000000-0000-0000-0000-000000000000")})
	wantLambdaErr[*ltypes.ResourceNotFoundException](t, err, "")

	qm := lambdaMust(lc.CreateEventSourceMapping(ctx, &lambda.CreateEventSourceMappingInput{
		EventSourceArn: aws.String(queueArn), FunctionName: aws.String("lam-q"), BatchSize: aws.Int32(5),
		ScalingConfig:         &ltypes.ScalingConfig{MaximumConcurrency: aws.Int32(2)},
		FunctionResponseTypes: []ltypes.FunctionResponseType{ltypes.FunctionResponseTypeReportBatchItemFailures},
	}))
	if aws.ToInt32(qm.BatchSize) != 5 || aws.ToInt32(qm.ScalingConfig.MaximumConcurrency) != 2 || qm.StartingPosition != "" || qm.ParallelizationFactor != nil {
		t.Fatalf("queue mapping: %+v", qm)
	}
	lambdaMust(rn.Queues.SendMessage(ctx, qurl, queue.SendMessageInput{MessageBody: "from the queue"}))
	testenv.Eventually(t, 10*time.Second, "the queue message", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) == 1 && seen[0] == "from the queue"
	})

	all := lambdaMust(lc.ListEventSourceMappings(ctx, &lambda.ListEventSourceMappingsInput{}))
	byFn := lambdaMust(lc.ListEventSourceMappings(ctx, &lambda.ListEventSourceMappingsInput{FunctionName: aws.String("lam-q")}))
	bySrc := lambdaMust(lc.ListEventSourceMappings(ctx, &lambda.ListEventSourceMappingsInput{EventSourceArn: aws.String(streamArn)}))
	paged := lambdaMust(lc.ListEventSourceMappings(ctx, &lambda.ListEventSourceMappingsInput{MaxItems: aws.Int32(2)}))
	if len(all.EventSourceMappings) != 3 || len(byFn.EventSourceMappings) != 1 || len(bySrc.EventSourceMappings) != 2 ||
		len(paged.EventSourceMappings) != 2 || paged.NextMarker == nil {
		t.Fatalf("ListEventSourceMappings: all %d, by function %d, by source %d, paged %d", len(all.EventSourceMappings), len(byFn.EventSourceMappings), len(bySrc.EventSourceMappings), len(paged.EventSourceMappings))
	}
	rest := lambdaMust(lc.ListEventSourceMappings(ctx, &lambda.ListEventSourceMappingsInput{Marker: paged.NextMarker}))
	if len(rest.EventSourceMappings) != 1 || rest.NextMarker != nil {
		t.Fatalf("second page: %+v", rest)
	}

	up := lambdaMust(lc.UpdateEventSourceMapping(ctx, &lambda.UpdateEventSourceMappingInput{UUID: sm.UUID, BatchSize: aws.Int32(50), Enabled: aws.Bool(false)}))
	if aws.ToInt32(up.BatchSize) != 50 || aws.ToString(up.State) != "Disabled" || !aws.ToBool(up.BisectBatchOnFunctionError) ||
		aws.ToInt32(up.MaximumRetryAttempts) != 3 || aws.ToString(up.DestinationConfig.OnFailure.Destination) != failArn {
		t.Fatalf("UpdateEventSourceMapping: %+v", up)
	}
	up = lambdaMust(lc.UpdateEventSourceMapping(ctx, &lambda.UpdateEventSourceMappingInput{UUID: sm.UUID, Enabled: aws.Bool(true), BisectBatchOnFunctionError: aws.Bool(false), DestinationConfig: &ltypes.DestinationConfig{OnFailure: &ltypes.OnFailure{}}}))
	if aws.ToString(up.State) != "Enabled" || aws.ToBool(up.BisectBatchOnFunctionError) || aws.ToString(up.DestinationConfig.OnFailure.Destination) != "" || aws.ToInt32(up.BatchSize) != 50 {
		t.Fatalf("UpdateEventSourceMapping (2): %+v", up)
	}
	_, err = lc.UpdateEventSourceMapping(ctx, &lambda.UpdateEventSourceMappingInput{UUID: sm.UUID, ParallelizationFactor: aws.Int32(11)})
	wantValidation(t, err, "Value '11' at 'parallelizationFactor' failed to satisfy constraint: Member must have value less than or equal to 10")
	_, err = lc.UpdateEventSourceMapping(ctx, &lambda.UpdateEventSourceMappingInput{UUID: qm.UUID, ScalingConfig: &ltypes.ScalingConfig{MaximumConcurrency: aws.Int32(1)}})
	wantValidation(t, err, "Value '1' at 'scalingConfig.maximumConcurrency' failed to satisfy constraint: Member must have value greater than or equal to 2")

	for _, id := range []*string{sm.UUID, tm.UUID, qm.UUID} {
		d := lambdaMust(lc.DeleteEventSourceMapping(ctx, &lambda.DeleteEventSourceMappingInput{UUID: id}))
		if aws.ToString(d.State) != "Deleting" {
			t.Fatalf("DeleteEventSourceMapping: %+v", d)
		}
		_, err = lc.GetEventSourceMapping(ctx, &lambda.GetEventSourceMappingInput{UUID: id})
		wantLambdaErr[*ltypes.ResourceNotFoundException](t, err, "")
	}
}

// buildBootstrap builds a test function with aws-lambda-go and returns its
// deployment package (a zip holding bootstrap).
func buildBootstrap(t *testing.T, pkg string) []byte {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("process functions need a Unix")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "bootstrap")
	cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-o", bin, pkg)
	cmd.Dir = ".." // the module root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	exe, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	hdr := &zip.FileHeader{Name: "bootstrap", Method: zip.Deflate}
	hdr.SetMode(0o755)
	w, err := zw.CreateHeader(hdr)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(exe)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func seqLess(a, b string) bool {
	x, _ := new(big.Int).SetString(a, 10)
	y, _ := new(big.Int).SetString(b, 10)
	return x.Cmp(y) < 0
}

func TestLambdaProcessFunction(t *testing.T) {
	if testing.Short() {
		t.Skip("builds Go binaries")
	}
	ctx := context.Background()
	echoZip := buildBootstrap(t, "./function/process/testdata/echo")
	poisonZip := buildBootstrap(t, "./awsapi/testdata/poison")
	dataDir := t.TempDir()
	rn := testenv.Start(t, testenv.Options{Dir: dataDir})
	lc, lh := lambdaEndpoint(t, rn)

	// The echo function: RequestResponse, function error, UpdateFunctionCode.
	cf := lambdaMust(lc.CreateFunction(ctx, &lambda.CreateFunctionInput{
		FunctionName: aws.String("lam-proc-echo"), Role: aws.String("r"), Runtime: ltypes.RuntimeProvidedal2023,
		Handler: aws.String("bootstrap"), Code: &ltypes.FunctionCode{ZipFile: echoZip}, Timeout: aws.Int32(10),
		Environment: &ltypes.Environment{Variables: map[string]string{"MY_VAR": "v1"}},
	}))
	if cf.Runtime != ltypes.RuntimeProvidedal2023 || aws.ToInt64(&cf.CodeSize) != int64(len(echoZip)) || aws.ToString(cf.CodeSha256) == "" {
		t.Fatalf("CreateFunction: %+v", cf)
	}
	_, err := lc.CreateFunction(ctx, &lambda.CreateFunctionInput{FunctionName: aws.String("lam-proc-bad"), Role: aws.String("r"), Runtime: ltypes.RuntimeProvidedal2, Code: &ltypes.FunctionCode{ZipFile: []byte("not a zip")}})
	wantLambdaErr[*ltypes.InvalidParameterValueException](t, err, "zip")
	out := lambdaMust(lc.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String("lam-proc-echo"), Payload: []byte(`{"op":"echo"}`)}))
	var echo struct {
		Env      map[string]string `json:"env"`
		Function string            `json:"function"`
	}
	if out.StatusCode != 200 || out.FunctionError != nil || json.Unmarshal(out.Payload, &echo) != nil || echo.Env["MY_VAR"] != "v1" || echo.Function != "lam-proc-echo" {
		t.Fatalf("Invoke: %d %v %s", out.StatusCode, aws.ToString(out.FunctionError), out.Payload)
	}
	out = lambdaMust(lc.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String("lam-proc-echo"), Payload: []byte(`{"op":"error","message":"it broke"}`)}))
	if aws.ToString(out.FunctionError) != "Unhandled" || !strings.Contains(string(out.Payload), "it broke") {
		t.Fatalf("Invoke (error): %v %s", aws.ToString(out.FunctionError), out.Payload)
	}
	lambdaMust(lc.UpdateFunctionConfiguration(ctx, &lambda.UpdateFunctionConfigurationInput{FunctionName: aws.String("lam-proc-echo"), Environment: &ltypes.Environment{Variables: map[string]string{"MY_VAR": "v2"}}}))
	out = lambdaMust(lc.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String("lam-proc-echo"), Payload: []byte(`{"op":"echo"}`)}))
	if json.Unmarshal(out.Payload, &echo) != nil || echo.Env["MY_VAR"] != "v2" {
		t.Fatalf("after UpdateFunctionConfiguration: %s", out.Payload)
	}

	// The poison function fed by a stream: partial failures, bisect and the
	// on-failure destination.
	outFile := filepath.Join(t.TempDir(), "processed.txt")
	lambdaMust(lc.CreateFunction(ctx, &lambda.CreateFunctionInput{
		FunctionName: aws.String("lam-proc-poison"), Role: aws.String("r"), Runtime: ltypes.RuntimeProvidedal2023,
		Handler: aws.String("bootstrap"), Code: &ltypes.FunctionCode{ZipFile: poisonZip}, Timeout: aws.Int32(10),
		Environment: &ltypes.Environment{Variables: map[string]string{"OUT_FILE": outFile}},
	}))
	lambdaMust(rn.Streams.CreateStream(ctx, stream.CreateStreamInput{StreamName: "lam-proc-s", ShardCount: 1}))
	furl := lambdaMust(rn.Queues.CreateQueue(ctx, "lam-proc-failures", nil))
	var seqs = map[string]string{}
	for _, d := range []string{"ok-1", "ok-2", "poison-3", "ok-4", "boom-5", "ok-6"} {
		res := lambdaMust(rn.Streams.PutRecord(ctx, "lam-proc-s", stream.PutRecordsRequestEntry{Data: []byte(d), PartitionKey: "k"}))
		seqs[d] = res.SequenceNumber
	}
	lambdaMust(lc.CreateEventSourceMapping(ctx, &lambda.CreateEventSourceMappingInput{
		EventSourceArn: aws.String(rn.Streams.ARN("lam-proc-s")), FunctionName: aws.String("lam-proc-poison"),
		StartingPosition: ltypes.EventSourcePositionTrimHorizon, BatchSize: aws.Int32(10),
		MaximumRetryAttempts: aws.Int32(1), BisectBatchOnFunctionError: aws.Bool(true),
		FunctionResponseTypes: []ltypes.FunctionResponseType{ltypes.FunctionResponseTypeReportBatchItemFailures},
		DestinationConfig:     &ltypes.DestinationConfig{OnFailure: &ltypes.OnFailure{Destination: aws.String(rn.Queues.ARN("lam-proc-failures"))}},
	}))
	type batchInfo struct {
		KinesisBatchInfo struct {
			StartSequenceNumber, EndSequenceNumber string
			BatchSize                              int `json:"batchSize"`
		}
		RequestContext struct {
			Condition string `json:"condition"`
		} `json:"requestContext"`
	}
	var failures []batchInfo
	covered := func(seq string) bool {
		for _, f := range failures {
			if !seqLess(seq, f.KinesisBatchInfo.StartSequenceNumber) && !seqLess(f.KinesisBatchInfo.EndSequenceNumber, seq) {
				return true
			}
		}
		return false
	}
	testenv.Eventually(t, 60*time.Second, "on-failure records for poison-3 and boom-5", func() bool {
		msgs, err := rn.Queues.ReceiveMessage(ctx, furl, queue.ReceiveMessageInput{MaxNumberOfMessages: 10})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			var f batchInfo
			if err := json.Unmarshal([]byte(m.Body), &f); err != nil {
				t.Fatalf("on-failure record %q: %v", m.Body, err)
			}
			failures = append(failures, f)
			rn.Queues.DeleteMessage(ctx, furl, m.ReceiptHandle)
		}
		return covered(seqs["poison-3"]) && covered(seqs["boom-5"])
	})
	for _, f := range failures {
		if f.RequestContext.Condition != "RetryAttemptsExhausted" {
			t.Errorf("on-failure record condition %q", f.RequestContext.Condition)
		}
	}
	// Every ok record not given up on is processed.
	testenv.Eventually(t, 30*time.Second, "the ok records to be processed", func() bool {
		b, _ := os.ReadFile(outFile)
		for _, d := range []string{"ok-1", "ok-2", "ok-4", "ok-6"} {
			if !covered(seqs[d]) && !strings.Contains(string(b), d+"\n") {
				return false
			}
		}
		return true
	})
	if b, _ := os.ReadFile(outFile); !strings.Contains(string(b), "ok-1\n") || !strings.Contains(string(b), "ok-6\n") {
		t.Errorf("processed records: %q", b)
	}

	// The code survives a restart.
	lh.Close()
	rn.Close()
	rn2 := testenv.Start(t, testenv.Options{Dir: dataDir})
	lc2, _ := lambdaEndpoint(t, rn2)
	out = lambdaMust(lc2.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String("lam-proc-echo"), Payload: []byte(`{"op":"echo"}`)}))
	if out.FunctionError != nil || json.Unmarshal(out.Payload, &echo) != nil || echo.Env["MY_VAR"] != "v2" {
		t.Fatalf("Invoke after restart: %v %s", aws.ToString(out.FunctionError), out.Payload)
	}
	gf := lambdaMust(lc2.GetFunction(ctx, &lambda.GetFunctionInput{FunctionName: aws.String("lam-proc-echo")}))
	if gf.Configuration.Runtime != ltypes.RuntimeProvidedal2023 || aws.ToString(gf.Configuration.Handler) != "bootstrap" {
		t.Fatalf("GetFunction after restart: %+v", gf.Configuration)
	}
	lambdaMust(lc2.UpdateFunctionCode(ctx, &lambda.UpdateFunctionCodeInput{FunctionName: aws.String("lam-proc-echo"), ZipFile: poisonZip}))
	out = lambdaMust(lc2.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String("lam-proc-echo"), Payload: []byte(`{"op":"echo"}`)}))
	if string(out.Payload) != `{"op":"echo"}` {
		t.Fatalf("Invoke after UpdateFunctionCode: %s", out.Payload)
	}
	lambdaMust(lc2.DeleteFunction(ctx, &lambda.DeleteFunctionInput{FunctionName: aws.String("lam-proc-echo")}))
}
