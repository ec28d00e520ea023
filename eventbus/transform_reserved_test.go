package eventbus_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/eventbus"
)

// TestAReservedVariableNameCannotBeAnInputPathsMapKey: the InputTemplate
// variables aws.events.rule-arn, aws.events.rule-name,
// aws.events.event.ingestion-time, aws.events.event and
// aws.events.event.json are EventBridge's own: "These variables are
// reserved, and you can't create variables with these names"
// (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-transform-target-input.html).
// Before, PutTargets refused only keys starting with "AWS.", took these,
// and the event's value of the path replaced the predefined one (a rule
// name of "shop.orders"). Now PutTargets refuses the call with a
// ValidationException naming the target and the key, and stores nothing.
func TestAReservedVariableNameCannotBeAnInputPathsMapKey(t *testing.T) {
	rn, _ := start(t)
	ctx := context.Background()
	q := newQueue(t, rn, "q", nil)
	if _, err := rn.Events.PutRule(ctx, eventbus.Rule{Name: "r", EventPattern: `{"source":["shop.orders"]}`}); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"aws.events.rule-arn", "aws.events.rule-name", "aws.events.event.ingestion-time", "aws.events.event", "aws.events.event.json"} {
		failed, err := rn.Events.PutTargets(ctx, "", "r", []eventbus.Target{{Id: "t", Arn: q, InputTransformer: &eventbus.InputTransformer{
			InputPathsMap: map[string]string{k: "$.source"}, InputTemplate: `{"v":<` + k + `>}`}}})
		var ae *awserr.Error
		if !errors.As(err, &ae) || !errors.Is(err, awserr.ErrValidation) || !strings.Contains(ae.Message, "key "+k+" is a reserved variable name") {
			t.Errorf("PutTargets with InputPathsMap key %s: failed=%v err=%v, want a ValidationException naming the key", k, failed, err)
		}
	}
	if ts, err := rn.Events.ListTargetsByRule("", "r"); err != nil || len(ts) != 0 {
		t.Errorf("targets stored: %+v %v, want none", ts, err)
	}
}
