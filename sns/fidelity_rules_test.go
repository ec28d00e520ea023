package sns_test

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/sns"
)

// TestANestedBodyPolicyIsSetAfterItsScope: SetSubscriptionAttributes
// checks a FilterPolicy under the subscription's stored FilterPolicyScope:
// FilterPolicyScope MessageBody, then a nested FilterPolicy, is accepted
// (sns-message-filtering-scope.html's flow) and filters message bodies.
// Before, the policy was checked alone, as if its scope were
// MessageAttributes, and refused.
func TestANestedBodyPolicyIsSetAfterItsScope(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	topic := createTopic(t, rn, "orders", nil)
	q := createQueue(t, rn, "paid", nil)
	sub := subscribe(t, rn, topic, sns.ProtocolSQS, q, map[string]string{sns.AttrRawMessageDelivery: "true"})
	if err := rn.SNS.SetSubscriptionAttributes(ctx, sub, sns.AttrFilterPolicyScope, sns.ScopeMessageBody); err != nil {
		t.Fatal(err)
	}
	if err := rn.SNS.SetSubscriptionAttributes(ctx, sub, sns.AttrFilterPolicy, `{"order":{"status":["paid"]}}`); err != nil {
		t.Fatalf("a nested FilterPolicy after FilterPolicyScope MessageBody: %v", err)
	}
	publish(t, rn, sns.PublishInput{TopicArn: topic, Message: `{"order":{"status":"paid","id":1}}`})
	publish(t, rn, sns.PublishInput{TopicArn: topic, Message: `{"order":{"status":"open","id":2}}`})
	settled(t, rn, "orders", 2)
	got := receiveAll(t, rn, "paid")
	if len(got) != 1 || !strings.Contains(got[0].Body, `"id":1`) {
		t.Fatalf("received %v, want the paid order only", got)
	}
}

// TestAFilterPolicyMayBeLongerThanLambdasPatterns: a filter policy is at
// most 256 KB (subscription-filter-policy-constraints.html), not the
// 4,096 bytes of a Lambda filter pattern: a 5 KB list of ids on one key
// is accepted and matches.
func TestAFilterPolicyMayBeLongerThanLambdasPatterns(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	topic := createTopic(t, rn, "customers", nil)
	q := createQueue(t, rn, "vip", nil)
	ids := make([]string, 120)
	for i := range ids {
		ids[i] = strconv.Quote(fmt.Sprintf("customer-%05d-abcdefghijklmnopqrst", i))
	}
	policy := `{"customer":[` + strings.Join(ids, ",") + `]}`
	if len(policy) <= 4096 {
		t.Fatalf("the policy has %d bytes", len(policy))
	}
	subscribe(t, rn, topic, sns.ProtocolSQS, q, map[string]string{sns.AttrFilterPolicy: policy, sns.AttrRawMessageDelivery: "true"})
	publish(t, rn, sns.PublishInput{TopicArn: topic, Message: "hit", MessageAttributes: map[string]sns.Attribute{"customer": {DataType: "String", StringValue: "customer-00117-abcdefghijklmnopqrst"}}})
	publish(t, rn, sns.PublishInput{TopicArn: topic, Message: "miss", MessageAttributes: map[string]sns.Attribute{"customer": {DataType: "String", StringValue: "customer-99999"}}})
	settled(t, rn, "customers", 2)
	if got := receiveAll(t, rn, "vip"); len(got) != 1 || got[0].Body != "hit" {
		t.Fatalf("received %v, want hit only", got)
	}
}

// TestAFilterPolicyMatchesByCIDR: the cidr operator (IPv4 and IPv6
// prefixes) is an SNS filter policy operator.
func TestAFilterPolicyMatchesByCIDR(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	topic := createTopic(t, rn, "logins", nil)
	q := createQueue(t, rn, "internal", nil)
	subscribe(t, rn, topic, sns.ProtocolSQS, q, map[string]string{sns.AttrRawMessageDelivery: "true",
		sns.AttrFilterPolicy: `{"ip":[{"cidr":"10.0.0.0/24"},{"cidr":"2001:db8::/32"}]}`})
	for _, ip := range []string{"10.0.0.7", "10.0.1.7", "2001:db8::1", "2001:db9::1"} {
		publish(t, rn, sns.PublishInput{TopicArn: topic, Message: ip, MessageAttributes: map[string]sns.Attribute{"ip": {DataType: "String", StringValue: ip}}})
	}
	settled(t, rn, "logins", 4)
	var bodies []string
	for _, m := range receiveAll(t, rn, "internal") {
		bodies = append(bodies, m.Body)
	}
	sort.Strings(bodies)
	if strings.Join(bodies, " ") != "10.0.0.7 2001:db8::1" {
		t.Fatalf("received %v, want the addresses inside the prefixes", bodies)
	}
}

// TestARawDeliveryOfMoreThanTenAttributesIsAClientError: a message with
// more than 10 attributes to a raw SQS subscription is not delivered
// with 10 of them (attributes dropped silently, counted delivered): it is
// a client-side error, "discarded" (sns-message-attributes.html), so it
// goes to the subscription's dead-letter queue.
func TestARawDeliveryOfMoreThanTenAttributesIsAClientError(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	topic := createTopic(t, rn, "wide", nil)
	q := createQueue(t, rn, "raw", nil)
	dlq := createQueue(t, rn, "raw-dlq", nil)
	subscribe(t, rn, topic, sns.ProtocolSQS, q, map[string]string{sns.AttrRawMessageDelivery: "true",
		sns.AttrRedrivePolicy: `{"deadLetterTargetArn":"` + dlq + `"}`})
	attrs := map[string]sns.Attribute{}
	for i := range 12 {
		attrs[fmt.Sprintf("a%02d", i)] = sns.Attribute{DataType: "String", StringValue: "v"}
	}
	id := publish(t, rn, sns.PublishInput{TopicArn: topic, Message: "wide", MessageAttributes: attrs})
	st := settled(t, rn, "wide", 1)
	if st.Delivered != 0 || st.Failed != 1 {
		t.Fatalf("stats %+v, want the message failed, not delivered", st)
	}
	if got := receiveAll(t, rn, "raw"); len(got) != 0 {
		t.Fatalf("the raw subscriber received %d messages", len(got))
	}
	if got := receiveAll(t, rn, "raw-dlq"); len(got) != 1 || got[0].Body != "wide" {
		t.Fatalf("the dead-letter queue holds %v, want message %s", got, id)
	}
}

// TestANumberAttributeIsADecimalNumber: a Number message attribute must
// be a number: NaN, Infinity and hexadecimal (which Go's ParseFloat
// takes) are refused with SNS's "Could not cast message attribute ... to
// number"; decimals with a sign, a point or an exponent are accepted.
func TestANumberAttributeIsADecimalNumber(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	topic := createTopic(t, rn, "numbers", nil)
	pub := func(v string) error {
		_, err := rn.SNS.Publish(ctx, sns.PublishInput{TopicArn: topic, Message: "m", MessageAttributes: map[string]sns.Attribute{"n": {DataType: "Number", StringValue: v}}})
		return err
	}
	for _, bad := range []string{"NaN", "Inf", "-Infinity", "0x1p3", "1e", ".", "1_000", "1e300", "1e-200", "123456789012345678901234567890123456789"} {
		if err := pub(bad); err == nil || !strings.Contains(err.Error(), "Could not cast message attribute 'n' value to number") {
			t.Errorf("Number %q: %v, want refused", bad, err)
		}
	}
	for _, good := range []string{"1", "-2.5", "+3", ".5", "5.", "1e9", "-1.5E-3", "1e126", "1e-128", "12345678901234567890123456789012345678000"} {
		if err := pub(good); err != nil {
			t.Errorf("Number %q: %v", good, err)
		}
	}
}

// TestAPolicyNumberIsWithinABillion: numeric matching takes values from
// -1,000,000,000 to 1,000,000,000 (subscription-filter-policy-constraints
// .html): a policy number or numeric operand outside is refused.
func TestAPolicyNumberIsWithinABillion(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	topic := createTopic(t, rn, "priced", nil)
	q := createQueue(t, rn, "priced-q", nil)
	for _, p := range []string{`{"price":[1e12]}`, `{"price":[{"numeric":[">",-2e9]}]}`, `{"price":[{"numeric":[">=",0,"<",1000000001]}]}`} {
		if _, err := rn.SNS.Subscribe(ctx, sns.SubscribeInput{TopicArn: topic, Protocol: sns.ProtocolSQS, Endpoint: q, Attributes: map[string]string{sns.AttrFilterPolicy: p}}); err == nil || !strings.Contains(err.Error(), "out of the range") {
			t.Errorf("policy %s: %v, want refused", p, err)
		}
	}
	subscribe(t, rn, topic, sns.ProtocolSQS, q, map[string]string{sns.AttrFilterPolicy: `{"price":[{"numeric":[">=",-1e9,"<=",1e9]}]}`})
}

// TestAJSONStructuredMessageReachesAFunctionWithoutAttributes: "message
// attributes are sent only when the message structure is String, not
// JSON" (sns-message-attributes.html): a function subscribed gets none of
// a message published with MessageStructure json.
func TestAJSONStructuredMessageReachesAFunctionWithoutAttributes(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	topic := createTopic(t, rn, "structured", nil)
	r := newFunction(t, rn, "structured-fn", 0)
	subscribe(t, rn, topic, sns.ProtocolLambda, rn.Functions.ARN("structured-fn"), nil)
	publish(t, rn, sns.PublishInput{TopicArn: topic, MessageStructure: "json", Message: `{"default":"d","lambda":"for the function"}`,
		MessageAttributes: map[string]sns.Attribute{"k": {DataType: "String", StringValue: "v"}}})
	publish(t, rn, sns.PublishInput{TopicArn: topic, Message: "plain", MessageAttributes: map[string]sns.Attribute{"k": {DataType: "String", StringValue: "v"}}})
	testenv.Eventually(t, wait, "both delivered", func() bool { return r.count() == 2 })
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, ev := range r.events {
		e := ev.Records[0].SNS
		if n := len(e.MessageAttributes); (e.Message == "plain") != (n == 1) {
			t.Errorf("message %q reached the function with %d attributes", e.Message, n)
		}
	}
}
