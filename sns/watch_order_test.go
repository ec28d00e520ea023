package sns_test

import (
	"strings"
	"testing"

	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/sns"
)

// TestAnOlderStoredSubscriptionDoesNotUndoALaterChange: every process
// watches the subscriptions bucket to apply other processes' changes,
// and sees its own writes there too, after it has set them. A watch entry
// of this process's first write, arriving after its second, brought the
// first state back for a moment: a subscription attribute set twice read
// back with its first value (stack's TestASubscriptionTakenOutOfTheStack
// FileIsUnsubscribed failed so under load, RawMessageDelivery still
// "true"). Entries are now applied by revision: one older than what this
// process wrote or applied is skipped.
func TestAnOlderStoredSubscriptionDoesNotUndoALaterChange(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	topic := createTopic(t, rn, "orders", nil)
	createQueue(t, rn, "eu", nil)
	arn := subscribe(t, rn, topic, sns.ProtocolSQS, rn.Queues.ARN("eu"), nil)
	if err := rn.SNS.SetSubscriptionAttributes(ctx, arn, sns.AttrRawMessageDelivery, "true"); err != nil {
		t.Fatal(err)
	}
	kv, err := rn.Engine.Bucket(ctx, "runnel_sns_subscriptions")
	if err != nil {
		t.Fatal(err)
	}
	id := arn[strings.LastIndexByte(arn, ':')+1:]
	first, err := kv.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if err := rn.SNS.SetSubscriptionAttributes(ctx, arn, sns.AttrRawMessageDelivery, "false"); err != nil {
		t.Fatal(err)
	}
	rn.SNS.ApplyStoredSubscription(id, first.Value(), first.Revision()) // the watch, late
	attrs, err := rn.SNS.GetSubscriptionAttributes(arn)
	if err != nil || attrs[sns.AttrRawMessageDelivery] != "false" {
		t.Fatalf("RawMessageDelivery after it was set to false and an older entry was seen: %q, %v", attrs[sns.AttrRawMessageDelivery], err)
	}
}
