package async_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/function/async"
	"github.com/runnel-dev/runnel/internal/testenv"
)

// "Both versions must have the same dead-letter queue configuration, or
// no dead-letter queue configuration"
// (https://docs.aws.amazon.com/lambda/latest/dg/configuring-alias-routing.html):
// CreateAlias and UpdateAlias refuse weights between versions whose
// DeadLetterConfigs differ, with InvalidParameterValueException naming
// both. And a dead letter goes to the DeadLetterConfig of the version
// that ran the event, not to that of the alias's FunctionVersion: for an
// alias stored before this rule (here written into the aliases bucket
// directly), its weighted version's queue. Before, such an alias was
// accepted, and a dead letter of an event version 2 ran went to version
// 1's queue.
func TestAWeightedAliasNeedsTheSameDeadLetterQueueInBothVersions(t *testing.T) {
	ctx := context.Background()
	rn := testenv.Start(t, testenv.Options{Clock: newClock()})
	dlqA, dlqB := createQueue(t, rn, "dlq-a", nil), createQueue(t, rn, "dlq-b", nil)
	r := newFunction(t, rn, function.Config{DeadLetterConfig: &function.DeadLetterConfig{TargetArn: dlqA}}, fail("boom"))
	if _, err := rn.Functions.PublishVersion(ctx, "f", nil); err != nil {
		t.Fatal(err)
	}
	cfg, _ := rn.Functions.Describe("f")
	c := cfg.Config()
	c.DeadLetterConfig = &function.DeadLetterConfig{TargetArn: dlqB}
	if _, err := rn.Functions.PutFunction(ctx, c); err != nil {
		t.Fatal(err)
	}
	if _, err := rn.Functions.PublishVersion(ctx, "f", nil); err != nil {
		t.Fatal(err)
	}
	weighted := &function.AliasRoutingConfiguration{AdditionalVersionWeights: map[string]float64{"2": 1}}
	_, err := rn.Functions.CreateAlias(ctx, "f", function.Alias{Name: "live", FunctionVersion: "1", RoutingConfig: weighted})
	if !errors.Is(err, awserr.ErrInvalidParameterValue) || !strings.Contains(err.Error(), "versions 1 (DeadLetterConfig "+dlqA+") and 2 (DeadLetterConfig "+dlqB+")") {
		t.Fatalf("CreateAlias weighted across different DeadLetterConfigs: %v, want InvalidParameterValue naming versions 1 and 2", err)
	}
	if _, err := rn.Functions.CreateAlias(ctx, "f", function.Alias{Name: "live", FunctionVersion: "1"}); err != nil {
		t.Fatal(err)
	}
	_, err = rn.Functions.UpdateAlias(ctx, "f", "live", function.AliasUpdate{RoutingConfig: weighted})
	if !errors.Is(err, awserr.ErrInvalidParameterValue) {
		t.Fatalf("UpdateAlias weighted across different DeadLetterConfigs: %v, want InvalidParameterValue", err)
	}

	// An alias stored before the rule: version 2 runs every event.
	kv, err := rn.Engine.Bucket(ctx, "runnel_function_aliases")
	if err != nil {
		t.Fatal(err)
	}
	old := function.Alias{AliasArn: rn.Functions.ARN("f") + ":old", Name: "old", FunctionVersion: "1", RoutingConfig: weighted, RevisionId: "r"}
	b, _ := json.Marshal(old)
	if _, err := kv.Put(ctx, "f.old", b); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, wait, "the stored alias seen", func() bool { _, err := rn.Functions.GetAlias("f", "old"); return err == nil })
	put(t, rn, async.EventInvokeConfig{FunctionName: "f:old", MaximumRetryAttempts: ptr(0)})
	invoke(t, rn, "f:old", async.Event, `{"n":1}`)
	m := onlyMessage(t, rn, "dlq-b")
	if m.Body != `{"n":1}` || r.count() != 1 {
		t.Fatalf("dlq-b got %q after %d invocations, want the event after 1", m.Body, r.count())
	}
	if n := queueDepth(t, rn, "dlq-a"); n != 0 {
		t.Fatalf("dlq-a (version 1's, which did not run) got %d messages", n)
	}
}
