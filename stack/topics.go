package stack

import (
	"context"
	"fmt"
	"maps"
	"strings"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/sns"
)

// Topic is an SNS topic as written in a stack file (CreateTopic and
// Subscribe):
//
//	Topics:
//	  - TopicName: orders            # ends in .fifo with FifoTopic: "true"
//	    Attributes: {DisplayName: Orders}
//	    Subscriptions:
//	      - Protocol: sqs
//	        Endpoint: orders-eu      # a queue name or ARN (lambda: a function name or ARN)
//	        Attributes:
//	          FilterPolicy: '{"region":["eu-west-1"]}'
//	          RedrivePolicy: '{"deadLetterTargetArn":"orders-eu-dlq"}'  # a queue name or ARN
//	          RawMessageDelivery: "true"
type Topic struct {
	TopicName     string            `yaml:"TopicName"`
	Attributes    map[string]string `yaml:"Attributes"`
	Tags          map[string]string `yaml:"Tags"`
	Subscriptions []Subscription    `yaml:"Subscriptions"`
}

// Subscription is a topic's subscription in a stack file (Subscribe);
// its attributes are SNS's (RawMessageDelivery, FilterPolicy,
// FilterPolicyScope, RedrivePolicy, DeliveryPolicy).
type Subscription struct {
	Protocol   string            `yaml:"Protocol"`
	Endpoint   string            `yaml:"Endpoint"`
	Attributes map[string]string `yaml:"Attributes"`
}

// applyTopics creates the stack's topics and subscribes their endpoints;
// a subscription that exists (same topic, protocol and endpoint) gets the
// stack's attributes.
func applyTopics(ctx context.Context, rn *runnel.Runnel, topics []Topic, out *Applied) error {
	for i, t := range topics {
		arn, err := rn.SNS.CreateTopic(ctx, t.TopicName, t.Attributes, t.Tags)
		if err != nil {
			return fmt.Errorf("Topics[%d] (%s): %w", i, t.TopicName, err)
		}
		out.TopicsApplied = append(out.TopicsApplied, t.TopicName)
		for j, s := range t.Subscriptions {
			attrs := maps.Clone(s.Attributes)
			if rp, ok := attrs["RedrivePolicy"]; ok {
				attrs["RedrivePolicy"] = qualifyRedrive(rn, rp)
			}
			sub, err := existingSubscription(rn, arn, s.Protocol, endpointARN(rn, s.Protocol, s.Endpoint))
			if sub == "" && err == nil {
				sub, err = rn.SNS.Subscribe(ctx, sns.SubscribeInput{TopicArn: arn, Protocol: s.Protocol,
					Endpoint: endpointARN(rn, s.Protocol, s.Endpoint), Attributes: attrs, ReturnSubscriptionArn: true})
			} else if sub != "PendingConfirmation" { // a pending one keeps its attributes until confirmed
				for k, v := range attrs {
					if err == nil {
						err = rn.SNS.SetSubscriptionAttributes(ctx, sub, k, v)
					}
				}
			}
			if err != nil {
				return fmt.Errorf("Topics[%d] (%s): Subscriptions[%d]: %w", i, t.TopicName, j, err)
			}
			out.SubscriptionsApplied = append(out.SubscriptionsApplied, sub)
		}
	}
	return nil
}

// existingSubscription returns the ARN of the topic's subscription of
// endpoint, or "".
func existingSubscription(rn *runnel.Runnel, topicArn, protocol, endpoint string) (string, error) {
	subs, err := rn.SNS.ListSubscriptions(topicArn)
	for _, s := range subs {
		if s.Protocol == protocol && s.Endpoint == endpoint {
			return s.SubscriptionArn, nil
		}
	}
	return "", err
}

// endpointARN turns a queue or function name into its ARN for the sqs and
// lambda protocols; other endpoints pass through.
func endpointARN(rn *runnel.Runnel, protocol, endpoint string) string {
	if strings.HasPrefix(endpoint, "arn:") {
		return endpoint
	}
	switch protocol {
	case sns.ProtocolSQS:
		return rn.Queues.ARN(endpoint)
	case sns.ProtocolLambda:
		return rn.Functions.ARN(endpoint)
	}
	return endpoint
}
