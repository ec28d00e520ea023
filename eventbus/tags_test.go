package eventbus_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/eventbus"
	"github.com/runnel-dev/runnel/internal/testenv"
)

// Rules and event buses keep their tags: PutRule's Tags (when it creates
// the rule; ignored on an existing one), CreateEventBus's, TagResource
// and UntagResource by ARN, listed in key order by ListTagsForResource
// through every node, within AWS's limits (50 tags, Key 1..128, Value
// 0..256, no aws: key: ValidationException), and gone with the resource
// (a rule or bus made again under the name has none). AWS:
// https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-tagging.html,
// API_TagResource.html, API_Tag.html, API_PutRule.html ("When you
// initially create a rule, you can optionally assign one or more tags").
// Before, PutRule read its Tags and dropped them, and TagResource,
// UntagResource and ListTagsForResource were UnknownOperationException:
// Terraform, which reads a rule's tags back, could not manage a rule.
func TestRulesAndEventBusesKeepTheirTags(t *testing.T) {
	clock := clockwork.NewFakeClockAt(t0)
	a := testenv.Start(t, testenv.Options{Clock: clock, ListenAddr: "127.0.0.1:0"})
	b := testenv.Start(t, testenv.Options{Clock: clock, NATSURL: a.Engine.ClientURL()})
	ctx := context.Background()
	tags := func(kv ...string) []eventbus.Tag {
		var out []eventbus.Tag
		for i := 0; i < len(kv); i += 2 {
			out = append(out, eventbus.Tag{Key: kv[i], Value: kv[i+1]})
		}
		return out
	}
	list := func(rn *eventbus.Service, arn string) []eventbus.Tag {
		t.Helper()
		got, err := rn.ListTagsForResource(ctx, arn)
		if err != nil {
			t.Fatalf("ListTagsForResource %s: %v", arn, err)
		}
		if len(got) == 0 {
			return nil
		}
		return got
	}
	check := func(rn *eventbus.Service, arn string, want []eventbus.Tag) {
		t.Helper()
		if got := list(rn, arn); !reflect.DeepEqual(got, want) {
			t.Fatalf("tags of %s: %v, want %v", arn, got, want)
		}
	}
	wantErr := func(err error, code *awserr.Error, in string) {
		t.Helper()
		if !errors.Is(err, code) || !strings.Contains(err.Error(), in) {
			t.Fatalf("error %v, want %v naming %q", err, code, in)
		}
	}

	if _, err := a.Events.CreateEventBusTagged(ctx, "orders", "", tags("team", "shop", "env", "prod")); err != nil {
		t.Fatal(err)
	}
	ruleArn, err := a.Events.PutRuleTagged(ctx, eventbus.Rule{Name: "paid", EventBusName: "orders", EventPattern: `{"source":["shop"]}`}, tags("owner", "ana"))
	if err != nil {
		t.Fatal(err)
	}
	busArn := a.Events.ARN("orders")
	check(a.Events, busArn, tags("env", "prod", "team", "shop"))
	testenv.Eventually(t, wait, "the rule known to the second process", func() bool {
		_, err := b.Events.DescribeRule("orders", "paid")
		return err == nil
	})
	check(b.Events, ruleArn, tags("owner", "ana"))

	// Through the second node: added, replaced, removed; seen by the first.
	if err := b.Events.TagResource(ctx, ruleArn, tags("owner", "bo", "cost", "")); err != nil {
		t.Fatal(err)
	}
	if err := b.Events.UntagResource(ctx, busArn, []string{"env", "absent"}); err != nil {
		t.Fatal(err)
	}
	check(a.Events, ruleArn, tags("cost", "", "owner", "bo"))
	check(a.Events, busArn, tags("team", "shop"))
	// PutRule on an existing rule ignores its Tags.
	if _, err := a.Events.PutRuleTagged(ctx, eventbus.Rule{Name: "paid", EventBusName: "orders", EventPattern: `{"source":["x"]}`}, tags("owner", "zed")); err != nil {
		t.Fatal(err)
	}
	check(b.Events, ruleArn, tags("cost", "", "owner", "bo"))

	// Limits.
	many := make([]eventbus.Tag, 49)
	for i := range many {
		many[i] = eventbus.Tag{Key: fmt.Sprint("k", i)}
	}
	wantErr(a.Events.TagResource(ctx, ruleArn, many), awserr.ErrValidation, "at most 50 tags")
	wantErr(a.Events.TagResource(ctx, ruleArn, append(many, eventbus.Tag{Key: "k49"}, eventbus.Tag{Key: "k50"})), awserr.ErrValidation, "at most 50 tags")
	wantErr(a.Events.TagResource(ctx, ruleArn, tags(strings.Repeat("k", 129), "")), awserr.ErrValidation, "between 1 and 128")
	wantErr(a.Events.TagResource(ctx, ruleArn, tags("", "v")), awserr.ErrValidation, "between 1 and 128")
	wantErr(a.Events.TagResource(ctx, ruleArn, tags("k", strings.Repeat("v", 257))), awserr.ErrValidation, "between 0 and 256")
	wantErr(a.Events.TagResource(ctx, ruleArn, tags("AWS:x", "v")), awserr.ErrValidation, "aws: prefix")
	wantErr(a.Events.UntagResource(ctx, ruleArn, []string{"aws:x"}), awserr.ErrValidation, "aws: prefix")
	_, err = a.Events.PutRuleTagged(ctx, eventbus.Rule{Name: "other", EventBusName: "orders", EventPattern: `{"source":["shop"]}`}, tags("aws:x", ""))
	wantErr(err, awserr.ErrValidation, "aws: prefix")
	if _, err := a.Events.DescribeRule("orders", "other"); err == nil {
		t.Error("a PutRule refused for its tags created the rule")
	}
	wantErr(a.Events.TagResource(ctx, "arn:aws:sqs:us-east-1:000000000000:q", tags("k", "v")), awserr.ErrValidation, "ResourceARN")
	wantErr(a.Events.TagResource(ctx, a.Events.RuleARN("orders", "nope"), tags("k", "v")), awserr.ErrResourceNotFound, "nope")
	_, err = a.Events.ListTagsForResource(ctx, a.Events.ARN("nobus"))
	wantErr(err, awserr.ErrResourceNotFound, "nobus")
	check(a.Events, ruleArn, tags("cost", "", "owner", "bo"))

	// Deleted with the rule: one made again under its name, at the same
	// instant, has none.
	if err := a.Events.DeleteRuleAndTags(ctx, "orders", "paid", false); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Events.PutRuleTagged(ctx, eventbus.Rule{Name: "paid", EventBusName: "orders", EventPattern: `{"source":["shop"]}`}, nil); err != nil {
		t.Fatal(err)
	}
	check(a.Events, ruleArn, nil)
	// A rule deleted otherwise (DeleteRule): a later one of the name has
	// none either.
	if err := a.Events.TagResource(ctx, ruleArn, tags("k", "v")); err != nil {
		t.Fatal(err)
	}
	if err := a.Events.DeleteRule(ctx, "orders", "paid", false); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	if _, err := a.Events.PutRule(ctx, eventbus.Rule{Name: "paid", EventBusName: "orders", EventPattern: `{"source":["shop"]}`}); err != nil {
		t.Fatal(err)
	}
	check(a.Events, ruleArn, nil)

	// Deleted with the bus, by every node's watch.
	if err := b.Events.DeleteEventBus(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	kv, err := a.Engine.Bucket(ctx, "runnel_event_tags")
	if err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, wait, "the deleted bus's tags dropped", func() bool {
		_, err := kv.Get(ctx, "orders")
		return errors.Is(err, jetstream.ErrKeyNotFound)
	})
	if _, err := a.Events.CreateEventBusTagged(ctx, "orders", "", nil); err != nil {
		t.Fatal(err)
	}
	check(a.Events, busArn, nil)
}
