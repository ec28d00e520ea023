package awsapi_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/smithy-go"

	"github.com/runnel-dev/runnel/internal/testenv"
)

// EventBridge's TagResource, UntagResource and ListTagsForResource are
// served for rules and event buses, and PutRule's and CreateEventBus's
// Tags are kept, as aws-sdk-go-v2 sends and reads them (AWS:
// API_TagResource.html, API_UntagResource.html,
// API_ListTagsForResource.html; Tags of API_PutRule.html and
// API_CreateEventBus.html). Before, PutRule dropped its Tags and the three
// operations answered UnknownOperationException, so Terraform, which
// reads a rule's tags back after creating it, failed.
func TestEventBridgeTagOperationsAreServed(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	e := startAll(t, rn)
	ctx := context.Background()
	eb := eventbridge.NewFromConfig(e.config("AKID", "secret"))
	tag := func(k, v string) ebtypes.Tag { return ebtypes.Tag{Key: aws.String(k), Value: aws.String(v)} }
	list := func(arn string) map[string]string {
		t.Helper()
		out := must(eb.ListTagsForResource(ctx, &eventbridge.ListTagsForResourceInput{ResourceARN: aws.String(arn)}))
		m := map[string]string{}
		for _, tg := range out.Tags {
			m[aws.ToString(tg.Key)] = aws.ToString(tg.Value)
		}
		return m
	}
	bus := must(eb.CreateEventBus(ctx, &eventbridge.CreateEventBusInput{Name: aws.String("orders"), Tags: []ebtypes.Tag{tag("team", "shop")}}))
	rule := must(eb.PutRule(ctx, &eventbridge.PutRuleInput{Name: aws.String("paid"), EventBusName: aws.String("orders"),
		EventPattern: aws.String(`{"source":["shop"]}`), Tags: []ebtypes.Tag{tag("env", "prod")}}))
	if got := list(aws.ToString(rule.RuleArn)); !reflect.DeepEqual(got, map[string]string{"env": "prod"}) {
		t.Fatalf("rule tags %v", got)
	}
	must(eb.TagResource(ctx, &eventbridge.TagResourceInput{ResourceARN: bus.EventBusArn, Tags: []ebtypes.Tag{tag("cost", "42")}}))
	must(eb.UntagResource(ctx, &eventbridge.UntagResourceInput{ResourceARN: bus.EventBusArn, TagKeys: []string{"team"}}))
	if got := list(aws.ToString(bus.EventBusArn)); !reflect.DeepEqual(got, map[string]string{"cost": "42"}) {
		t.Fatalf("bus tags %v", got)
	}
	if got := list(rn.Events.ARN("default")); len(got) != 0 {
		t.Fatalf("default bus tags %v", got)
	}
	code := func(err error) string {
		var ae smithy.APIError
		if errors.As(err, &ae) {
			return ae.ErrorCode()
		}
		return ""
	}
	_, err := eb.TagResource(ctx, &eventbridge.TagResourceInput{ResourceARN: rule.RuleArn, Tags: []ebtypes.Tag{tag("aws:owner", "x")}})
	if code(err) != "ValidationException" {
		t.Errorf("an aws: key: %v, want ValidationException", err)
	}
	_, err = eb.ListTagsForResource(ctx, &eventbridge.ListTagsForResourceInput{ResourceARN: aws.String(rn.Events.RuleARN("orders", "nope"))})
	if code(err) != "ResourceNotFoundException" {
		t.Errorf("a missing rule: %v, want ResourceNotFoundException", err)
	}
	must(eb.DeleteRule(ctx, &eventbridge.DeleteRuleInput{Name: aws.String("paid"), EventBusName: aws.String("orders")}))
	rule = must(eb.PutRule(ctx, &eventbridge.PutRuleInput{Name: aws.String("paid"), EventBusName: aws.String("orders"), EventPattern: aws.String(`{"source":["shop"]}`)}))
	if got := list(aws.ToString(rule.RuleArn)); len(got) != 0 {
		t.Fatalf("a rule made again has the deleted one's tags: %v", got)
	}
}
