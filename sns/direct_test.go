package sns_test

import (
	"crypto"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/queue"
	"github.com/runnel-dev/runnel/sns"
)

// verify checks an envelope's version-1 signature against the served
// certificate.
func verify(t *testing.T, rn *runnel.Runnel, e sns.Envelope) {
	t.Helper()
	block, _ := pem.Decode(rn.SNS.SigningCertPEM())
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	signed := "Message\n" + e.Message + "\nMessageId\n" + e.MessageId + "\nTimestamp\n" + e.Timestamp +
		"\nTopicArn\n" + e.TopicArn + "\nType\n" + e.Type + "\n"
	sig, _ := base64.StdEncoding.DecodeString(e.Signature)
	h := sha1.Sum([]byte(signed))
	if err := rsa.VerifyPKCS1v15(cert.PublicKey.(*rsa.PublicKey), crypto.SHA1, h[:], sig); err != nil {
		t.Fatalf("signature of %q: %v", e.Message, err)
	}
}

// TestMixedSubscriptionsAreEachServedOnce: Publish delivers to the SQS
// subscriptions itself and leaves the Lambda one to the worker; each gets
// the message once, with its protocol's text (MessageStructure json) and
// a valid signature of that text; the SQS subscriptions share one.
func TestMixedSubscriptionsAreEachServedOnce(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	r := newFunction(t, rn, "fn", 0)
	topic := createTopic(t, rn, "t", nil)
	subscribe(t, rn, topic, "sqs", createQueue(t, rn, "a", nil), nil)
	subscribe(t, rn, topic, "sqs", createQueue(t, rn, "b", nil), nil)
	subscribe(t, rn, topic, "lambda", fmt.Sprintf("arn:aws:lambda:%s:%s:function:fn", rn.Engine.Region(), rn.Engine.AccountID()), nil)
	id := publish(t, rn, sns.PublishInput{TopicArn: topic, MessageStructure: "json", Message: `{"default":"d","sqs":"to sqs","lambda":"to lambda"}`})
	settled(t, rn, "t", 3)
	testenv.Eventually(t, wait, "the function invoked", func() bool { return r.count() >= 1 })
	var sigs []string
	for _, q := range []string{"a", "b"} {
		got := receiveAll(t, rn, q)
		if len(got) != 1 {
			t.Fatalf("queue %s: %d messages, want 1", q, len(got))
		}
		e := envelopeOf(t, got[0].Body)
		if e.MessageId != id || e.Message != "to sqs" {
			t.Fatalf("queue %s: %+v", q, e)
		}
		verify(t, rn, e)
		sigs = append(sigs, e.Signature)
	}
	if sigs[0] != sigs[1] {
		t.Fatalf("the two SQS subscriptions got different signatures of one message")
	}
	rec := r.events[0].Records[0].SNS
	e := sns.Envelope{Type: rec.Type, MessageId: rec.MessageID, TopicArn: rec.TopicArn, Message: rec.Message,
		Timestamp: rec.Timestamp.UTC().Format("2006-01-02T15:04:05.000Z"), Signature: rec.Signature}
	if e.MessageId != id || e.Message != "to lambda" {
		t.Fatalf("lambda: %+v", rec)
	}
	verify(t, rn, e)
	if st := rn.SNS.Stats("t"); st.Delivered != 3 || st.Published != 1 {
		t.Fatalf("stats %+v", st)
	}
	if r.count() != 1 {
		t.Fatalf("%d invocations", r.count())
	}
}

// setStream changes the JetStream stream of queue name (found by its
// description) with change.
func setStream(t *testing.T, rn *runnel.Runnel, name string, change func(*jetstream.StreamConfig)) {
	t.Helper()
	names := rn.Engine.JS.StreamNames(ctx)
	for sn := range names.Name() {
		st, err := rn.Engine.JS.Stream(ctx, sn)
		if err != nil {
			t.Fatal(err)
		}
		if cfg := st.CachedInfo().Config; cfg.Description == "runnel queue "+name {
			change(&cfg)
			if _, err := rn.Engine.JS.UpdateStream(ctx, cfg); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("no stream for queue %s", name)
}

// TestDirectDeliveryFailureIsRetriedByTheWorker: an SQS copy Publish
// could not store (the queue's stream refuses writes for a while) is
// left to the worker, which retries it until it is stored; the healthy
// subscription gets its copy once.
func TestDirectDeliveryFailureIsRetriedByTheWorker(t *testing.T) {
	clock := clockwork.NewFakeClockAt(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rn := testenv.Start(t, testenv.Options{Clock: clock})
	topic := createTopic(t, rn, "t", nil)
	subscribe(t, rn, topic, "sqs", createQueue(t, rn, "ok", nil), nil)
	subscribe(t, rn, topic, "sqs", createQueue(t, rn, "full", nil), nil)
	setStream(t, rn, "full", func(c *jetstream.StreamConfig) { c.MaxBytes, c.Discard = 1, jetstream.DiscardNew })
	id := publish(t, rn, sns.PublishInput{TopicArn: topic, Message: "m"})
	if got := receiveAll(t, rn, "full"); len(got) != 0 {
		t.Fatalf("the full queue took %d messages", len(got))
	}
	if st := rn.SNS.Stats("t"); st.Delivered != 1 || st.Failed != 0 {
		t.Fatalf("after Publish: %+v, want the healthy copy delivered", st)
	}
	setStream(t, rn, "full", func(c *jetstream.StreamConfig) { c.MaxBytes, c.Discard = -1, jetstream.DiscardOld })
	advanceUntil(t, clock, time.Second, "the retried copy delivered", func() bool { return rn.SNS.Stats("t").Delivered >= 2 })
	for _, q := range []string{"ok", "full"} {
		got := receiveAll(t, rn, q)
		if len(got) != 1 || envelopeOf(t, got[0].Body).MessageId != id {
			t.Fatalf("queue %s: %+v, want one copy of %s", q, got, id)
		}
	}
}

// TestAFIFORetryEndsInTheDeadLetterQueueBeforeTheInternalQueueExpiresIt:
// a FIFO message whose delivery keeps failing is retried in place, and
// ages in its topic's internal queue, which keeps messages 14 days; the
// managed retry policy runs for 23. Its retries end an hour before the
// 14 days, so it and the message of its group behind it go to the
// subscription's dead-letter queue. They used to stay until the internal
// queue deleted both, with no dead letter and no failure counted.
func TestAFIFORetryEndsInTheDeadLetterQueueBeforeTheInternalQueueExpiresIt(t *testing.T) {
	clock := clockwork.NewFakeClockAt(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rn := testenv.Start(t, testenv.Options{Clock: clock})
	topic := createTopic(t, rn, "t.fifo", map[string]string{"FifoTopic": "true", "ContentBasedDeduplication": "true"})
	createQueue(t, rn, "dlq.fifo", map[string]string{"FifoQueue": "true"})
	subscribe(t, rn, topic, "sqs", createQueue(t, rn, "full.fifo", map[string]string{"FifoQueue": "true"}),
		map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"` + rn.Queues.ARN("dlq.fifo") + `"}`})
	setStream(t, rn, "full.fifo", func(c *jetstream.StreamConfig) { c.MaxBytes, c.Discard = 1, jetstream.DiscardNew })
	ids := []string{
		publish(t, rn, sns.PublishInput{TopicArn: topic, Message: "m1", MessageGroupId: "g"}),
		publish(t, rn, sns.PublishInput{TopicArn: topic, Message: "m2", MessageGroupId: "g"}),
	}
	// Time runs to half an hour before the 14 days end, in steps of
	// 12 h: each makes the message visible again for one retry.
	start := clock.Now()
	for range 27 {
		clock.Advance(12 * time.Hour)
	}
	clock.Advance(11*time.Hour + 30*time.Minute)
	// Then a second at a time, every 100 ms (a receive may have set its
	// timer as the clock jumped), never up to the 14 days, until the
	// dead-letter queue holds both messages (peeked: visibility 0).
	limit := start.Add(14*24*time.Hour - 5*time.Minute)
	peek := func() []string {
		zero := 0
		msgs, err := rn.Queues.ReceiveMessage(ctx, "dlq.fifo", queue.ReceiveMessageInput{MaxNumberOfMessages: 10, WaitTimeSeconds: &zero, VisibilityTimeout: &zero})
		if err != nil {
			t.Fatal(err)
		}
		var got []string // at least once: a duplicate of a message is skipped
		for _, m := range msgs {
			if id := envelopeOf(t, m.Body).MessageId; len(got) == 0 || got[len(got)-1] != id {
				got = append(got, id)
			}
		}
		return got
	}
	var got []string
	for polls := 0; ; polls++ {
		if got = peek(); slices.Equal(got, ids) || polls == 200 {
			break
		}
		if clock.Now().Before(limit) {
			clock.Advance(time.Second)
		}
		time.Sleep(100 * time.Millisecond) // the worker's turn; not a timed assertion
	}
	if !slices.Equal(got, ids) {
		t.Fatalf("dead-letter queue holds %v, want %v (m1 then m2)", got, ids)
	}
	if n := rn.Queues.ExpiredMessages(""); n != 0 {
		t.Fatalf("%d messages expired from a queue, want none", n)
	}
}
