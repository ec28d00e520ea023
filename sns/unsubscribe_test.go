package sns_test

import (
	"crypto"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"net/url"
	"testing"

	"github.com/runnel-dev/runnel/internal/testenv"
)

// TestUnsubscribingAnHTTPEndpointSendsItAnUnsubscribeConfirmation: "After
// an HTTP/HTTPS endpoint is unsubscribed from a topic, Amazon SNS sends
// an unsubscribe confirmation message to the endpoint"
// (http-unsubscribe-confirmation-json.html): a POST with
// x-amz-sns-message-type UnsubscribeConfirmation and a signed JSON body
// with Type, MessageId, Token, TopicArn, Message ("You have chosen to
// deactivate subscription <arn>.\nTo cancel this operation and restore
// the subscription, visit the SubscribeURL included in this message."),
// SubscribeURL, Timestamp and the signature fields. runnel sent nothing.
func TestUnsubscribingAnHTTPEndpointSendsItAnUnsubscribeConfirmation(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	topic := createTopic(t, rn, "t", nil)
	ep := confirmedHTTP(t, rn, topic, nil)
	subs, err := rn.SNS.ListSubscriptions(topic)
	if err != nil || len(subs) != 1 {
		t.Fatalf("subscriptions %+v %v", subs, err)
	}
	subArn := subs[0].SubscriptionArn
	if err := rn.SNS.Unsubscribe(ctx, subArn); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, wait, "the unsubscribe confirmation", func() bool { return ep.count() == 2 })
	ep.mu.Lock()
	h, body, token := ep.reqs[1].Header, ep.bodies[1], envelopeOf(t, ep.bodies[0]).Token
	ep.mu.Unlock()
	e := envelopeOf(t, body)
	wantMsg := "You have chosen to deactivate subscription " + subArn + ".\nTo cancel this operation and restore the subscription, visit the SubscribeURL included in this message."
	if h.Get("x-amz-sns-message-type") != "UnsubscribeConfirmation" || h.Get("x-amz-sns-message-id") != e.MessageId ||
		h.Get("x-amz-sns-topic-arn") != topic || h.Get("x-amz-sns-subscription-arn") != subArn {
		t.Fatalf("headers %v", h)
	}
	su, err := url.Parse(e.SubscribeURL)
	if err != nil || e.Type != "UnsubscribeConfirmation" || e.MessageId == "" || e.Token != token || e.TopicArn != topic || e.Message != wantMsg ||
		su.Query().Get("Action") != "ConfirmSubscription" || su.Query().Get("TopicArn") != topic || su.Query().Get("Token") != token ||
		e.Timestamp == "" || e.SignatureVersion != "1" || e.SigningCertURL == "" {
		t.Fatalf("the unsubscribe confirmation %s", body)
	}
	block, _ := pem.Decode(rn.SNS.SigningCertPEM())
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	signed := "Message\n" + e.Message + "\nMessageId\n" + e.MessageId + "\nSubscribeURL\n" + e.SubscribeURL + "\nTimestamp\n" + e.Timestamp +
		"\nToken\n" + e.Token + "\nTopicArn\n" + e.TopicArn + "\nType\n" + e.Type + "\n"
	sig, _ := base64.StdEncoding.DecodeString(e.Signature)
	sum := sha1.Sum([]byte(signed))
	if err := rsa.VerifyPKCS1v15(cert.PublicKey.(*rsa.PublicKey), crypto.SHA1, sum[:], sig); err != nil {
		t.Fatalf("the signature does not verify: %v", err)
	}
}
