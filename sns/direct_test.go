package sns_test

import (
	"crypto"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"testing"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/internal/testenv"
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
