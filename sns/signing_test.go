package sns_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"sync"
	"testing"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/awsapi"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/sns"
)

// certAt GETs path from runnel's endpoint: the status and the body.
func certAt(t *testing.T, rn *runnel.Runnel, path string) (int, []byte) {
	t.Helper()
	srv := httptest.NewServer(awsapi.NewHandler(rn, awsapi.Options{}))
	defer srv.Close()
	resp, err := http.Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

var certPathRE = regexp.MustCompile(`^/SimpleNotificationService-[0-9a-f]{32}\.pem$`)

// TestOneSigningCertificateForEveryProcessNamedByItsHash: AWS names each
// signing certificate by its hash (SimpleNotificationService-<hash>.pem,
// sns-verify-signature-of-message.html), and a signature verifies with
// the certificate its SigningCertURL names, whoever serves it. runnel
// made a key per process and always named it
// /SimpleNotificationService-runnel.pem: after a restart, or from
// another node of a cluster, that URL served another certificate and
// the signatures did not verify. Now one key for all processes on the
// JetStream is stored (made once, create-only) and its URL carries the
// certificate's hash; the endpoint serves it at that path only.
func TestOneSigningCertificateForEveryProcessNamedByItsHash(t *testing.T) {
	dir := t.TempDir()
	a := testenv.Start(t, testenv.Options{Dir: dir, ListenAddr: "127.0.0.1:0"})
	b := testenv.Start(t, testenv.Options{NATSURL: a.Engine.ClientURL()})
	var paths [2]string
	var wg sync.WaitGroup
	for i, rn := range []*runnel.Runnel{a, b} { // both make a key at once: one is stored
		wg.Go(func() { paths[i] = rn.SNS.SigningCertPath() })
	}
	wg.Wait()
	if paths[0] != paths[1] || !certPathRE.MatchString(paths[0]) {
		t.Fatalf("certificate paths %q and %q, want one /SimpleNotificationService-<32 hex>.pem", paths[0], paths[1])
	}
	block, _ := pem.Decode(a.SNS.SigningCertPEM())
	if h := sha256.Sum256(block.Bytes); paths[0] != "/SimpleNotificationService-"+hex.EncodeToString(h[:16])+".pem" {
		t.Fatalf("%s is not named by the certificate's hash", paths[0])
	}

	// A signature made by one process verifies with the certificate the
	// other serves at its SigningCertURL.
	topic := createTopic(t, a, "t", nil)
	subscribe(t, a, topic, "sqs", createQueue(t, a, "q", nil), nil)
	publish(t, a, sns.PublishInput{TopicArn: topic, Message: "signed"})
	got := receiveAll(t, a, "q")
	if len(got) != 1 {
		t.Fatalf("%d messages", len(got))
	}
	e := envelopeOf(t, got[0].Body)
	u, _ := url.Parse(e.SigningCertURL)
	status, body := certAt(t, b, u.Path)
	if status != http.StatusOK || string(body) != string(a.SNS.SigningCertPEM()) {
		t.Fatalf("GET %s from the other process: %d %s", u.Path, status, body)
	}
	verify(t, b, e)
	if status, _ := certAt(t, b, "/SimpleNotificationService-00000000000000000000000000000000.pem"); status != http.StatusNotFound {
		t.Fatalf("another hash: HTTP %d, want 404", status)
	}

	// After a restart the same certificate signs.
	b.Close()
	a.Close()
	a = testenv.Start(t, testenv.Options{Dir: dir})
	if p := a.SNS.SigningCertPath(); p != paths[0] {
		t.Fatalf("after a restart the certificate path is %s, was %s", p, paths[0])
	}
	verify(t, a, e)
}
