package sns_test

import (
	"strings"
	"testing"

	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/sns"
)

// TestAPolicyNumericConditionHasOnlyRulersOperatorsAndAProperRange: an SNS
// filter policy's "numeric" takes = < <= > >= only and a range whose
// bottom is below its top; AWS refuses the rest with InvalidParameter
// "Invalid parameter: FilterPolicy: Unrecognized numeric range operator:
// !=" / "... Bottom must be less than top" (Event Ruler's
// JsonRuleCompiler.processNumericMatchExpression and Range.between, which
// SNS's filtering shares). Before, runnel checked only the numbers:
// ["!=",5] was accepted as "not 5" and [">=",5,"<",5] as a range nothing
// matches.
func TestAPolicyNumericConditionHasOnlyRulersOperatorsAndAProperRange(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	topic := createTopic(t, rn, "ops", nil)
	q := createQueue(t, rn, "ops-q", nil)
	for _, c := range []struct{ policy, want string }{
		{`{"price":[{"numeric":["!=",5]}]}`, "FilterPolicy: Unrecognized numeric range operator: !="},
		{`{"price":[{"numeric":[">=",5,"<",5]}]}`, "FilterPolicy: Bottom must be less than top"},
		{`{"price":[{"numeric":[">",9,"<=",1]}]}`, "FilterPolicy: Bottom must be less than top"},
	} {
		_, err := rn.SNS.Subscribe(ctx, sns.SubscribeInput{TopicArn: topic, Protocol: sns.ProtocolSQS, Endpoint: q,
			Attributes: map[string]string{sns.AttrFilterPolicy: c.policy}})
		if err == nil || !strings.Contains(err.Error(), "InvalidParameter") || !strings.Contains(err.Error(), "Invalid parameter: "+c.want) {
			t.Errorf("policy %s: %v, want InvalidParameter %q", c.policy, err, c.want)
		}
	}
	subscribe(t, rn, topic, sns.ProtocolSQS, q, map[string]string{sns.AttrFilterPolicy: `{"price":[{"numeric":[">=",5,"<=",5.5]}]}`})
}

// TestAPolicyNumericConditionIgnoresMessageNumbersBeyondABillion: "For
// numeric matching, the value can range from -10^9 to 10^9 (-1 billion
// to 1 billion)" (subscription-filter-policy-constraints.html): a message
// number outside that range is no number for a numeric condition. Before,
// runnel compared any number as a float64, so {"numeric":[">",0]} let
// through an epoch-milliseconds timestamp 1700000000000.
func TestAPolicyNumericConditionIgnoresMessageNumbersBeyondABillion(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	topic := createTopic(t, rn, "stamps", nil)
	q := createQueue(t, rn, "stamps-q", nil)
	subscribe(t, rn, topic, sns.ProtocolSQS, q, map[string]string{sns.AttrRawMessageDelivery: "true",
		sns.AttrFilterPolicy: `{"ts":[{"numeric":[">",0]}]}`})
	for _, ts := range []string{"1700000000000", "-6000000000", "1000000001", "1000000000", "0.0000001"} {
		publish(t, rn, sns.PublishInput{TopicArn: topic, Message: ts,
			MessageAttributes: map[string]sns.Attribute{"ts": {DataType: "Number", StringValue: ts}}})
	}
	settled(t, rn, "stamps", 5)
	var got []string
	for _, m := range receiveAll(t, rn, "stamps-q") {
		got = append(got, m.Body)
	}
	if len(got) != 2 || !strings.Contains(strings.Join(got, ","), "1000000000") || !strings.Contains(strings.Join(got, ","), "0.0000001") {
		t.Fatalf("delivered %v, want only 1000000000 and 0.0000001 (within ±1e9)", got)
	}
}
