package sns_test

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/sns"
)

// confirmedHTTP subscribes a new HTTP endpoint to topic with attrs and
// confirms it with the token SNS posted; it returns the endpoint.
func confirmedHTTP(t *testing.T, rn *runnel.Runnel, topic string, attrs map[string]string) *endpoint {
	t.Helper()
	ep := &endpoint{}
	srv := httptest.NewServer(ep)
	t.Cleanup(srv.Close)
	if _, err := rn.SNS.Subscribe(ctx, sns.SubscribeInput{TopicArn: topic, Protocol: "http", Endpoint: srv.URL, Attributes: attrs}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, wait, "the confirmation request", func() bool { return ep.count() == 1 })
	ep.mu.Lock()
	tok := envelopeOf(t, ep.bodies[0]).Token
	ep.mu.Unlock()
	if _, err := rn.SNS.ConfirmSubscription(ctx, topic, tok); err != nil {
		t.Fatal(err)
	}
	return ep
}

// lastBody is the body of the endpoint's last request.
func (e *endpoint) lastBody() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.bodies[len(e.bodies)-1]
}

// TestAnXMLMessageIsDeliveredWithItsAnglesRaw: AWS writes '<', '>' and
// '&' raw in the envelope SQS and HTTP subscribers get and in the Lambda
// event (as captured envelopes show; sns-message-and-json-formats.html),
// so a message fits wherever its text does. runnel wrote them with
// json.Marshal as 6-byte \u003c escapes: a 102,400-byte message of
// compact XML made a 300+ KB envelope, which a queue of the default
// 256 KiB maximum refused (Delivered 0, Failed 1: dropped).
func TestAnXMLMessageIsDeliveredWithItsAnglesRaw(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	topic := createTopic(t, rn, "xml", nil)
	subscribe(t, rn, topic, "sqs", createQueue(t, rn, "q", nil), nil)
	ep := confirmedHTTP(t, rn, topic, nil)
	msg := strings.Repeat("<v>1&amp;</v>", 100*1024/13) // 102,388 bytes
	id := publish(t, rn, sns.PublishInput{TopicArn: topic, Message: msg})
	if st := settled(t, rn, "xml", 2); st.Delivered != 2 {
		t.Fatalf("stats %+v, want 2 delivered", st)
	}
	got := receiveAll(t, rn, "q")
	if len(got) != 1 {
		t.Fatalf("the queue got %d messages", len(got))
	}
	for what, body := range map[string]string{"sqs": got[0].Body, "http": ep.lastBody()} {
		if e := envelopeOf(t, body); e.Message != msg || e.MessageId != id {
			t.Fatalf("%s: the envelope does not carry the message", what)
		}
		if strings.Contains(body, `\u003c`) || strings.Contains(body, `\u0026`) || !strings.Contains(body, `"Message":"<v>1&amp;</v>`) {
			t.Fatalf("%s: the envelope escapes < > &: %.200s", what, body)
		}
	}
}

// TestPublishAcceptsAnyValidMessageWhateverItsCharacters: AWS accepts
// any message up to 262,144 bytes with its attributes (API_Publish,
// PublishBatch in all). runnel stored it in the topic's internal queue
// (1 MiB) as json.Marshal's JSON, where '<' takes 6 bytes and control
// characters 6: a 204,800-byte message of '<' on a FIFO topic (or on a
// standard topic whose subscribers are not all queues) was refused with
// InternalError (BatchRequestTooLong). Now the internal form is JSON
// without HTML escaping, or, when escaping would inflate it, packed
// (base64 of its gob, 4/3 of its size).
func TestPublishAcceptsAnyValidMessageWhateverItsCharacters(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	fifo := createTopic(t, rn, "f.fifo", map[string]string{"FifoTopic": "true", "ContentBasedDeduplication": "true"})
	subscribe(t, rn, fifo, "sqs", createQueue(t, rn, "q.fifo", map[string]string{"FifoQueue": "true"}), nil)
	angles := strings.Repeat("<", 200*1024)
	if _, err := rn.SNS.Publish(ctx, sns.PublishInput{TopicArn: fifo, Message: angles, MessageGroupId: "g"}); err != nil {
		t.Fatalf("FIFO publish of %d bytes of '<': %v", len(angles), err)
	}
	settled(t, rn, "f.fifo", 1)
	if got := receiveAll(t, rn, "q.fifo"); len(got) != 1 || envelopeOf(t, got[0].Body).Message != angles {
		t.Fatalf("the FIFO queue got %d messages", len(got))
	}

	std := createTopic(t, rn, "s", nil)
	ep := confirmedHTTP(t, rn, std, map[string]string{"RawMessageDelivery": "true"})
	worst := strings.Repeat("\x01", sns.MaxMessageSize-len("k")-len("String")-1024) + strings.Repeat("\x1f", 1024-len("\x02"))
	attrs := map[string]sns.Attribute{"k": {DataType: "String", StringValue: "\x02"}}
	if _, err := rn.SNS.Publish(ctx, sns.PublishInput{TopicArn: std, Message: worst, MessageAttributes: attrs}); err != nil {
		t.Fatalf("publish of %d bytes of control characters: %v", len(worst), err)
	}
	testenv.Eventually(t, wait, "the raw delivery", func() bool { return ep.count() == 2 })
	if ep.lastBody() != worst {
		t.Fatalf("the raw body (%d bytes) is not the message (%d bytes)", len(ep.lastBody()), len(worst))
	}
	var batch []sns.PublishBatchEntry
	for i := range 10 {
		batch = append(batch, sns.PublishBatchEntry{Id: string(rune('a' + i)), PublishInput: sns.PublishInput{Message: strings.Repeat("\x01", sns.MaxMessageSize/10)}})
	}
	out, err := rn.SNS.PublishBatch(ctx, std, batch)
	if err != nil || len(out.Successful) != 10 {
		t.Fatalf("a PublishBatch of 10 x %d bytes of control characters: %+v %v", sns.MaxMessageSize/10, out, err)
	}
	testenv.Eventually(t, wait, "the batch's raw deliveries", func() bool { return ep.count() == 12 })
}
