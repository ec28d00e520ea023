package sns_test

import (
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/sns"
)

// TestAMessageItsDeadLetterQueueRefusesForNowIsKept: a message SNS
// accepted is delivered or dead-lettered (docs/design.md); AWS drops a
// message only when the subscription has no dead-letter queue, or counts
// one its dead-letter queue cannot take
// (NumberOfNotificationsFailedToRedriveToDlq). When the dead-letter queue
// refused the message for a reason a retry may cure (its stream full, a
// leader election: a retryable InternalError), runnel dropped it, logged
// and counted, after Publish had answered its MessageId. Now the message is
// kept (the direct path leaves it to the topic's worker) and tried again
// until the dead-letter queue takes it.
func TestAMessageItsDeadLetterQueueRefusesForNowIsKept(t *testing.T) {
	clock := clockwork.NewFakeClock()
	rn := testenv.Start(t, testenv.Options{Clock: clock})
	topic := createTopic(t, rn, "orders", nil)
	createQueue(t, rn, "gone", nil)
	dlq := createQueue(t, rn, "orders-dlq", nil)
	subscribe(t, rn, topic, sns.ProtocolSQS, rn.Queues.ARN("gone"), map[string]string{sns.AttrRedrivePolicy: `{"deadLetterTargetArn":"` + dlq + `"}`})
	if err := rn.Queues.DeleteQueue(ctx, rn.Queues.QueueURL("gone")); err != nil {
		t.Fatal(err)
	}
	// The dead-letter queue's stream is full for a while (its limit
	// reached, DiscardNew): JetStream refuses the message, retryably.
	var st jetstream.Stream
	for info := range rn.Engine.JS.ListStreams(ctx).Info() {
		if info.Config.Description == "runnel queue orders-dlq" {
			st, _ = rn.Engine.JS.Stream(ctx, info.Config.Name)
		}
	}
	if st == nil {
		t.Fatal("the dead-letter queue's stream was not found")
	}
	cfg := st.CachedInfo().Config
	full := cfg
	full.MaxMsgs, full.MaxBytes, full.Discard = 1, 1, jetstream.DiscardNew
	if _, err := rn.Engine.JS.UpdateStream(ctx, full); err != nil {
		t.Fatal(err)
	}
	if _, err := rn.SNS.Publish(ctx, sns.PublishInput{TopicArn: topic, Message: "order-42"}); err != nil {
		t.Fatal(err)
	}
	if s := rn.SNS.Stats("orders"); s.DeadLetterFailed != 0 || s.Failed != 0 {
		t.Fatalf("stats %+v: the message was counted as dropped while its dead-letter queue was full for now", s)
	}
	if _, err := rn.Engine.JS.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	n := 0
	testenv.Eventually(t, 20*time.Second, "the message in the dead-letter queue", func() bool {
		clock.Advance(30 * time.Second)
		n += len(receiveAll(t, rn, "orders-dlq"))
		return n > 0
	})
	if s := rn.SNS.Stats("orders"); s.DeadLettered != 1 || s.DeadLetterFailed != 0 {
		t.Errorf("stats %+v; want 1 dead-lettered, none failed to redrive", s)
	}
}
