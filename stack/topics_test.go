package stack_test

import (
	"context"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/sns"
	"github.com/runnel-dev/runnel/stack"
)

// TestStackTopics: a stack's topic with two queue subscriptions (a filter
// policy, a dead-letter queue by name) is created, applying it again
// changes a subscription's attributes in place, and it delivers.
func TestStackTopics(t *testing.T) {
	doc := `
Queues:
  - QueueName: eu
  - QueueName: all
  - QueueName: eu-dlq
Topics:
  - TopicName: orders
    Subscriptions:
      - Protocol: sqs
        Endpoint: eu
        Attributes:
          FilterPolicy: '{"region":["eu"]}'
          RedrivePolicy: '{"deadLetterTargetArn":"eu-dlq"}'
      - Protocol: sqs
        Endpoint: all
`
	s, err := stack.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	rn := testenv.Start(t, testenv.Options{})
	ctx := context.Background()
	a, err := stack.Apply(ctx, rn, s)
	if err != nil || len(a.TopicsApplied) != 1 || len(a.SubscriptionsApplied) != 2 {
		t.Fatalf("Apply: %+v %v", a, err)
	}
	s.Topics[0].Subscriptions[0].Attributes["FilterPolicy"] = `{"region":["us"]}`
	if a, err = stack.Apply(ctx, rn, s); err != nil {
		t.Fatal(err)
	}
	subs, _ := rn.SNS.ListSubscriptions(rn.SNS.TopicARN("orders"))
	if len(subs) != 2 {
		t.Fatalf("subscriptions after a second apply: %+v", subs)
	}
	attrs, err := rn.SNS.GetSubscriptionAttributes(a.SubscriptionsApplied[0])
	if err != nil || attrs["FilterPolicy"] != `{"region":["us"]}` || attrs["RedrivePolicy"] != `{"deadLetterTargetArn":"`+rn.Queues.ARN("eu-dlq")+`"}` {
		t.Fatalf("attributes %v %v", attrs, err)
	}
	if _, err := rn.SNS.Publish(ctx, sns.PublishInput{TopicArn: rn.SNS.TopicARN("orders"), Message: "m",
		MessageAttributes: map[string]sns.Attribute{"region": {DataType: "String", StringValue: "us"}}}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, "two deliveries", func() bool { return rn.SNS.Stats("orders").Delivered == 2 })
}
