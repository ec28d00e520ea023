package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/backoff"
	"github.com/runnel-dev/runnel/engine"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/function/builtin"
	"github.com/runnel-dev/runnel/mapping"
	"github.com/runnel-dev/runnel/stream"
)

// TestMappingsCommandPrintsAQueueMappingsOwnSettings: an SQS event source
// mapping has no MaximumRetryAttempts or MaximumRecordAgeInSeconds (they
// are stream settings: Lambda's CreateEventSourceMapping documents them
// for Kinesis and DynamoDB streams only), so `runnel mappings` must print
// a queue mapping's own settings (BatchSize, window, ScalingConfig,
// FunctionResponseTypes, RetryPolicy). It used to dereference the nil
// *MaximumRetryAttempts and panic in printMappings for any data directory
// holding a queue mapping (examples/two-tier.yaml).
func TestMappingsCommandPrintsAQueueMappingsOwnSettings(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	ctx := context.Background()
	builtin.Register(nil)
	rn, err := runnel.Open(ctx, runnel.Config{Engine: engine.Config{DataDir: dir}})
	if err != nil {
		t.Fatal(err)
	}
	sd, err := rn.Streams.CreateStream(ctx, stream.CreateStreamInput{StreamName: "orders", ShardCount: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rn.Queues.CreateQueue(ctx, "orders-retry", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := rn.Functions.PutFunction(ctx, function.Config{FunctionName: "process", Handler: "fail-on-poison", Timeout: 30}); err != nil {
		t.Fatal(err)
	}
	zero := 0
	disabled := false
	if _, err := rn.Mappings.CreateEventSourceMapping(ctx, mapping.Config{EventSourceArn: sd.StreamARN, FunctionName: "process",
		StartingPosition: mapping.TrimHorizon, MaximumRetryAttempts: &zero, Enabled: &disabled}); err != nil {
		t.Fatal(err)
	}
	if _, err := rn.Mappings.CreateEventSourceMapping(ctx, mapping.Config{EventSourceArn: rn.Queues.ARN("orders-retry"), FunctionName: "process",
		BatchSize: 10, FunctionResponseTypes: []string{mapping.ReportBatchItemFailures}, Enabled: &disabled,
		RetryPolicy: &backoff.Policy{BaseDelaySeconds: 1, MaxDelaySeconds: 60, MaxAttempts: 5, MaximumAgeInSeconds: 86400}}); err != nil {
		t.Fatal(err)
	}
	rn.Close()

	g := &globals{dataDir: dir, logLevel: "error"}
	cmd := mappingsCmd(g)
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs(nil)
	if err := cmd.ExecuteContext(ctx); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"MaximumRetryAttempts 0,",
		"RetryPolicy BaseDelaySeconds 1, MaxDelaySeconds 60, MaxAttempts 5, MaximumAgeInSeconds 86400",
		"FunctionResponseTypes [ReportBatchItemFailures]",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("mappings output lacks %q:\n%s", want, got)
		}
	}
}
