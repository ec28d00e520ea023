package stack

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/awserr"
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

// applyTopics makes the stack's topics and their subscriptions what the
// file says. A topic that does not exist is created with the file's
// attributes and tags. A topic that exists gets the file's attributes
// (SetTopicAttributes), and those the file leaves out go back to SNS's
// defaults (topicAttrDefaults); its tags are left as they are, as
// CreateTopic leaves them. FifoTopic cannot change: a file that changes
// it is an InvalidParameter error naming the topic. Before, a changed
// attribute made CreateTopic fail ("Topic already exists with different
// attributes") at every Apply, every start of `runnel serve -f`.
//
// A topic's subscriptions are the file's (same protocol and endpoint):
// one the file lists is subscribed or, when it exists, gets the file's
// attributes, those it leaves out being removed (RawMessageDelivery back
// to false, no FilterPolicy, ...); one the file does not list is
// unsubscribed (a pending one, which has no ARN to unsubscribe, is left
// to expire). Before, subscriptions were only added and updated: one
// taken out of the file kept receiving, a FilterPolicy taken out kept
// filtering.
func applyTopics(ctx context.Context, rn *runnel.Runnel, topics []Topic, out *Applied) error {
	for i, t := range topics {
		arn, err := applyTopic(ctx, rn, t)
		if err != nil {
			return fmt.Errorf("Topics[%d] (%s): %w", i, t.TopicName, err)
		}
		out.TopicsApplied = append(out.TopicsApplied, t.TopicName)
		cur, err := rn.SNS.ListSubscriptions(arn)
		if err != nil {
			return fmt.Errorf("Topics[%d] (%s): %w", i, t.TopicName, err)
		}
		listed := map[string]bool{}
		for j, s := range t.Subscriptions {
			endpoint := endpointARN(rn, s.Protocol, s.Endpoint)
			listed[s.Protocol+"\x00"+endpoint] = true
			sub, err := applySubscription(ctx, rn, arn, s, endpoint)
			if err != nil {
				return fmt.Errorf("Topics[%d] (%s): Subscriptions[%d]: %w", i, t.TopicName, j, err)
			}
			out.SubscriptionsApplied = append(out.SubscriptionsApplied, sub)
		}
		for _, c := range cur {
			if listed[c.Protocol+"\x00"+c.Endpoint] || c.SubscriptionArn == "PendingConfirmation" {
				continue
			}
			if err := rn.SNS.Unsubscribe(ctx, c.SubscriptionArn); err != nil {
				return fmt.Errorf("Topics[%d] (%s): unsubscribe %s %s: %w", i, t.TopicName, c.Protocol, c.Endpoint, err)
			}
			out.SubscriptionsRemoved = append(out.SubscriptionsRemoved, c.SubscriptionArn)
		}
	}
	return nil
}

// topicAttrDefaults are the settable topic attributes with the value
// GetTopicAttributes reports when they are not set (Policy's default
// names the topic: see isDefaultTopicPolicy); the FIFO ones apply to FIFO
// topics only. Setting "" removes an attribute.
var topicAttrDefaults = map[string]string{
	sns.AttrDisplayName: "", sns.AttrDeliveryPolicy: "", sns.AttrSignatureVersion: "1",
	"KmsMasterKeyId": "", "TracingConfig": "", "ArchivePolicy": "", "DataProtectionPolicy": "",
}

var fifoTopicAttrDefaults = map[string]string{sns.AttrContentBasedDeduplication: "false", sns.AttrFifoThroughputScope: "Topic"}

// applyTopic creates topic t, or sets an existing one's attributes to the
// file's, and returns its ARN.
func applyTopic(ctx context.Context, rn *runnel.Runnel, t Topic) (string, error) {
	arn := rn.SNS.TopicARN(t.TopicName)
	cur, err := rn.SNS.GetTopicAttributes(arn)
	if err != nil { // no such topic (or a bad name, which CreateTopic reports)
		return rn.SNS.CreateTopic(ctx, t.TopicName, t.Attributes, t.Tags)
	}
	fifo := cur[sns.AttrFifoTopic] == "true"
	if want := t.Attributes[sns.AttrFifoTopic] == "true"; want != fifo {
		return "", awserr.New(awserr.ErrSNSInvalidParameter, "Invalid parameter: FifoTopic: topic %s exists with FifoTopic %t and the file says %t: FifoTopic cannot change after the topic is created (delete the topic, then apply)", t.TopicName, fifo, want)
	}
	change := map[string]string{}
	for k, v := range t.Attributes {
		if k != sns.AttrFifoTopic && cur[k] != v {
			change[k] = v
		}
	}
	defaults := maps.Clone(topicAttrDefaults)
	if fifo {
		maps.Copy(defaults, fifoTopicAttrDefaults)
	}
	for k, def := range defaults {
		if _, given := t.Attributes[k]; !given && cur[k] != def {
			change[k] = ""
		}
	}
	if _, given := t.Attributes[sns.AttrPolicy]; !given && !isDefaultTopicPolicy(cur[sns.AttrPolicy]) {
		change[sns.AttrPolicy] = ""
	}
	for _, k := range slices.Sorted(maps.Keys(change)) {
		if err := rn.SNS.SetTopicAttributes(ctx, arn, k, change[k]); err != nil {
			return "", fmt.Errorf("%s: %w", k, err)
		}
	}
	return arn, nil
}

// isDefaultTopicPolicy reports whether policy is the one a topic has when
// none was set.
func isDefaultTopicPolicy(policy string) bool {
	return policy == "" || strings.Contains(policy, `"Id":"__default_policy_ID"`)
}

// subAttrs are the subscription attributes SetSubscriptionAttributes
// takes, with the value GetSubscriptionAttributes reports when they are
// not set, in the order they are removed (FilterPolicy before its scope).
var subAttrs = []struct{ name, def string }{
	{sns.AttrFilterPolicy, ""}, {sns.AttrFilterPolicyScope, ""}, {sns.AttrRawMessageDelivery, "false"},
	{sns.AttrRedrivePolicy, ""}, {sns.AttrDeliveryPolicy, ""}, {sns.AttrSubscriptionRoleArn, ""},
}

// applySubscription subscribes endpoint to topic arn, or gives the
// existing subscription the file's attributes, removing those the file
// leaves out; it returns the subscription's ARN ("PendingConfirmation"
// for a pending one, which keeps its attributes until confirmed).
func applySubscription(ctx context.Context, rn *runnel.Runnel, arn string, s Subscription, endpoint string) (string, error) {
	attrs := maps.Clone(s.Attributes)
	if rp, ok := attrs["RedrivePolicy"]; ok {
		attrs["RedrivePolicy"] = qualifyRedrive(rn, rp)
	}
	sub, err := existingSubscription(rn, arn, s.Protocol, endpoint)
	if err != nil {
		return "", err
	}
	if sub == "" {
		return rn.SNS.Subscribe(ctx, sns.SubscribeInput{TopicArn: arn, Protocol: s.Protocol,
			Endpoint: endpoint, Attributes: attrs, ReturnSubscriptionArn: true})
	}
	if sub == "PendingConfirmation" {
		return sub, nil
	}
	cur, err := rn.SNS.GetSubscriptionAttributes(sub)
	if err != nil {
		return "", err
	}
	// change sets one attribute to the file's value ("" removes it) when
	// it differs from the subscription's.
	change := func(name string) error {
		want, given := attrs[name]
		def := ""
		for _, a := range subAttrs {
			if a.name == name {
				def = a.def
			}
		}
		switch {
		case given && cur[name] != want:
			return rn.SNS.SetSubscriptionAttributes(ctx, sub, name, want)
		case !given && cur[name] != def && !(name == sns.AttrFilterPolicyScope && cur[name] == sns.ScopeMessageAttributes):
			if err := rn.SNS.SetSubscriptionAttributes(ctx, sub, name, ""); err != nil {
				return fmt.Errorf("remove %s: %w", name, err)
			}
		}
		return nil
	}
	// The policy and its scope, in the order SNS takes: a nested policy
	// needs the MessageBody scope, so the scope goes first when the file's
	// scope is MessageBody, and last otherwise (a nested policy being
	// replaced by a flat one under MessageAttributes: the policy first).
	pair := []string{sns.AttrFilterPolicy, sns.AttrFilterPolicyScope}
	if attrs[sns.AttrFilterPolicyScope] == sns.ScopeMessageBody {
		pair = []string{sns.AttrFilterPolicyScope, sns.AttrFilterPolicy}
	}
	for _, name := range pair {
		if err := change(name); err != nil {
			return "", err
		}
	}
	others := map[string]bool{}
	for _, a := range subAttrs {
		others[a.name] = true
	}
	for k := range attrs {
		others[k] = true
	}
	delete(others, sns.AttrFilterPolicy)
	delete(others, sns.AttrFilterPolicyScope)
	for _, name := range slices.Sorted(maps.Keys(others)) {
		if err := change(name); err != nil {
			return "", err
		}
	}
	return sub, nil
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
