package sns

import (
	"crypto"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"log/slog"
	"testing"
)

// TestSignatureVersions: version 1 signs SHA1withRSA and version 2
// SHA256withRSA, over the fields AWS names in its order, and the served
// certificate verifies both.
func TestSignatureVersions(t *testing.T) {
	s := &Service{opts: Options{BaseURL: "http://x"}, log: slog.New(slog.DiscardHandler)}
	block, _ := pem.Decode(s.SigningCertPEM())
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	pub := cert.PublicKey.(*rsa.PublicKey)
	const signed = "Message\nhi\nMessageId\nid\nSubject\nsub\nTimestamp\nts\nTopicArn\narn\nType\nNotification\n"
	for _, v := range []string{"1", "2"} {
		e := &Envelope{Type: TypeNotification, MessageId: "id", TopicArn: "arn", Subject: "sub", Message: "hi", Timestamp: "ts"}
		s.sign(e, v)
		sig, _ := base64.StdEncoding.DecodeString(e.Signature)
		var err error
		if v == "1" {
			h := sha1.Sum([]byte(signed))
			err = rsa.VerifyPKCS1v15(pub, crypto.SHA1, h[:], sig)
		} else {
			h := sha256.Sum256([]byte(signed))
			err = rsa.VerifyPKCS1v15(pub, crypto.SHA256, h[:], sig)
		}
		if err != nil || e.SignatureVersion != v || e.SigningCertURL != "http://x"+s.SigningCertPath() {
			t.Errorf("version %s: %v %+v", v, err, e)
		}
	}
}
