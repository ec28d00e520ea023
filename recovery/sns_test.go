package recovery_test

import (
	"context"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/queue"
	"github.com/runnel-dev/runnel/recovery"
	"github.com/runnel-dev/runnel/sns"
)

// TestResolveSNSDeadLetter: a notification an SNS subscription
// dead-lettered resolves to the published message (JSON as it is, text
// as a JSON string) and its envelope; Classify names it.
func TestResolveSNSDeadLetter(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	ctx := context.Background()
	topic, err := rn.SNS.CreateTopic(ctx, "t", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"gone", "dlq"} {
		if _, err := rn.Queues.CreateQueue(ctx, q, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := rn.SNS.Subscribe(ctx, sns.SubscribeInput{TopicArn: topic, Protocol: "sqs", Endpoint: rn.Queues.ARN("gone"),
		Attributes: map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"` + rn.Queues.ARN("dlq") + `"}`}}); err != nil {
		t.Fatal(err)
	}
	if err := rn.Queues.DeleteQueue(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, m := range []string{`{"order":1}`, "plain text"} {
		out, err := rn.SNS.Publish(ctx, sns.PublishInput{TopicArn: topic, Message: m})
		if err != nil {
			t.Fatal(err)
		}
		want[out.MessageId] = m
	}
	var got []queue.Message
	testenv.Eventually(t, 10*time.Second, "two dead letters", func() bool {
		zero := 0
		ms, _ := rn.Queues.ReceiveMessage(ctx, "dlq", queue.ReceiveMessageInput{MaxNumberOfMessages: 10, WaitTimeSeconds: &zero})
		got = append(got, ms...)
		return len(got) == 2
	})
	for _, m := range got {
		res, err := recovery.Resolve(ctx, rn.Streams, []byte(m.Body))
		if err != nil || res.Kind != recovery.KindSNS || res.SNS.TopicArn != topic {
			t.Fatalf("Resolve: %+v %v", res, err)
		}
		msg := want[res.SNS.MessageId]
		wantPayload := msg
		if msg == "plain text" {
			wantPayload = `"plain text"`
		}
		if string(res.Payload) != wantPayload {
			t.Fatalf("payload %s, want %s", res.Payload, wantPayload)
		}
		if v := recovery.Classify(m); v.Kind != recovery.KindSNS || v.TopicArn != topic || v.RequestID != res.SNS.MessageId {
			t.Fatalf("Classify: %+v", v)
		}
	}
}
