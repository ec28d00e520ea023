package observe_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/observe"
	"github.com/runnel-dev/runnel/queue"
)

// webRequest sends a request to the web API with the given browser
// headers ("" leaves one out) and returns its status and body.
func webRequest(t *testing.T, method, url, origin, fetchSite string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(""))
	if err != nil {
		t.Fatal(err)
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	if fetchSite != "" {
		req.Header.Set("Sec-Fetch-Site", fetchSite)
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "text/plain") // a "simple" request: no CORS preflight
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestACrossSiteRequestCannotRedriveOrReceive: a page of another site
// must not act on runnel's queues through a browser that can reach the
// operator's view. A cross-site POST with Content-Type text/plain needs
// no CORS preflight (the Fetch standard's CORS-safelisted request), so
// the browser sends it; and an <img src> sends a cross-site GET. Go's
// http.CrossOriginProtection (net/http, Go 1.25) refuses unsafe methods
// whose Sec-Fetch-Site is not same-origin/none, or whose Origin is not
// the Host; GET /api/dlq/{queue} receives messages, so it is checked the
// same way. Before, a POST with Origin https://evil.example ran a full
// redrive of orders-dlq to a queue of the attacker's choosing, and every
// cross-site GET received (and so counted a receive of) the messages.
// The page's own same-origin requests still work.
func TestACrossSiteRequestCannotRedriveOrReceive(t *testing.T) {
	rn, _ := start(t)
	ctx := context.Background()
	dlq := createQueue(t, rn, "orders-dlq", nil)
	createQueue(t, rn, "orders", map[string]string{queue.AttrRedrivePolicy: `{"deadLetterTargetArn":"` + rn.Queues.ARN("orders-dlq") + `","maxReceiveCount":"3"}`})
	other := createQueue(t, rn, "elsewhere", nil)
	send(t, rn, dlq, 4)
	a, err := observe.NewAlarms(rn, observe.Config{Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(observe.Handler(rn, a))
	defer srv.Close()
	visible := func(u string) string {
		attrs, err := rn.Queues.GetQueueAttributes(ctx, u, []string{queue.AttrAll})
		if err != nil {
			t.Fatal(err)
		}
		return attrs[queue.AttrApproximateNumberOfMessages] + "/" + attrs[queue.AttrApproximateNumberOfMessagesNotVisible]
	}

	redrive := srv.URL + "/api/dlq/orders-dlq/redrive?to=elsewhere&wait=1"
	for _, h := range []struct{ origin, site string }{
		{"https://evil.example", "cross-site"},
		{"https://evil.example", ""},                 // an older browser: Origin only
		{"http://other.localhost:1234", "same-site"}, // another origin of the same site
	} {
		if code, body := webRequest(t, http.MethodPost, redrive, h.origin, h.site); code != http.StatusForbidden || !strings.Contains(body, "cross-origin") {
			t.Fatalf("POST from %+v: %d %s, want 403", h, code, body)
		}
		if code, body := webRequest(t, http.MethodGet, srv.URL+"/api/dlq/orders-dlq?limit=10", h.origin, h.site); code != http.StatusForbidden || !strings.Contains(body, "cross-origin") {
			t.Fatalf("GET from %+v: %d %s, want 403", h, code, body)
		}
	}
	if got := visible(other); got != "0/0" {
		t.Fatalf("elsewhere after the refused redrives: %s visible/in flight, want 0/0", got)
	}
	if got := visible(dlq); got != "4/0" {
		t.Fatalf("orders-dlq after the refused requests: %s visible/in flight, want 4/0", got)
	}

	// The page's own fetches: same-origin (a browser sends Origin on a
	// POST; a GET carries only Sec-Fetch-Site).
	var page observe.DLQPage
	code, body := webRequest(t, http.MethodGet, srv.URL+"/api/dlq/orders-dlq?limit=10", "", "same-origin")
	if code != http.StatusOK || json.Unmarshal([]byte(body), &page) != nil || len(page.Messages) != 4 {
		t.Fatalf("same-origin GET: %d %s", code, body)
	}
	for _, m := range page.Messages {
		if m.ReceiveCount != 0 {
			t.Fatalf("message %s was received %d times before: a refused GET received it", m.MessageId, m.ReceiveCount)
		}
	}
	if code, body := webRequest(t, http.MethodPost, redrive, srv.URL, "same-origin"); code != http.StatusOK || !strings.Contains(body, `"moved":4`) {
		t.Fatalf("same-origin POST: %d %s", code, body)
	}
	if got := visible(other); got != "4/0" {
		t.Fatalf("elsewhere after the page's redrive: %s, want 4/0", got)
	}
}

// TestAWorkQueueIsNotInspected: GET /api/dlq/{queue} receives the
// queue's messages (and releases them), and an SQS receive counts toward
// the RedrivePolicy's maxReceiveCount: "If the ReceiveCount for a message
// exceeds the maximum receive count for the queue, Amazon SQS moves the
// message to the dead-letter queue" (SQS Developer Guide, Using
// dead-letter queues). The endpoint is for dead-letter queues; another
// queue is refused with 400 naming it. Before, three GETs of a work queue
// with maxReceiveCount 2 moved its message to its DLQ.
func TestAWorkQueueIsNotInspected(t *testing.T) {
	rn, _ := start(t)
	ctx := context.Background()
	dlq := createQueue(t, rn, "orders-dlq", nil)
	work := createQueue(t, rn, "work", map[string]string{queue.AttrRedrivePolicy: `{"deadLetterTargetArn":"` + rn.Queues.ARN("orders-dlq") + `","maxReceiveCount":"2"}`})
	send(t, rn, work, 1)
	a, err := observe.NewAlarms(rn, observe.Config{Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(observe.Handler(rn, a))
	defer srv.Close()
	for i := 0; i < 3; i++ {
		code, body := webRequest(t, http.MethodGet, srv.URL+"/api/dlq/work?limit=10", "", "")
		if code != http.StatusBadRequest || !strings.Contains(body, "queue work is not a dead-letter queue") {
			t.Fatalf("GET /api/dlq/work #%d: %d %s, want 400 naming the queue", i+1, code, body)
		}
	}
	for u, want := range map[string]string{work: "1", dlq: "0"} {
		attrs, err := rn.Queues.GetQueueAttributes(ctx, u, []string{queue.AttrAll})
		if err != nil {
			t.Fatal(err)
		}
		if got := attrs[queue.AttrApproximateNumberOfMessages]; got != want {
			t.Errorf("%s holds %s visible messages, want %s", u, got, want)
		}
	}
	// A queue created since the page's last snapshot is seen; a missing
	// one is 404.
	late := createQueue(t, rn, "late-dlq", nil)
	send(t, rn, late, 1)
	if code, body := webRequest(t, http.MethodGet, srv.URL+"/api/dlq/late-dlq", "", ""); code != http.StatusOK {
		t.Fatalf("GET of a new DLQ: %d %s", code, body)
	}
	if code, body := webRequest(t, http.MethodGet, srv.URL+"/api/dlq/nope", "", ""); code != http.StatusNotFound {
		t.Fatalf("GET of a missing queue: %d %s", code, body)
	}
}

// TestARebindedNameIsRefusedOnALoopbackListener: DNS rebinding points a
// site's name (evil.example) at 127.0.0.1: the site's page then calls
// "its own" origin, which is this server, and passes every same-origin
// check (Origin and Host agree). On a loopback connection the server now
// answers only to localhost, an IP address, this machine's name or a name
// given to --http-allowed-hosts (a reverse proxy's): another Host is 421;
// the page itself, reached as 127.0.0.1 or localhost, still works.
func TestARebindedNameIsRefusedOnALoopbackListener(t *testing.T) {
	rn, _ := start(t)
	a, err := observe.NewAlarms(rn, observe.Config{Interval: time.Hour, AllowedHosts: []string{"runnel.example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(observe.Handler(rn, a)) // 127.0.0.1
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	hostname, _ := os.Hostname()
	get := func(host string) int {
		req, err := http.NewRequest(http.MethodGet, srv.URL+"/status", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, h := range []string{"evil.example:" + port, "evil.example", "attacker.localhost.evil.example:" + port} {
		if code := get(h); code != http.StatusMisdirectedRequest {
			t.Fatalf("Host %s: %d, want 421", h, code)
		}
	}
	// this machine's name (Debian maps it to 127.0.1.1) and a name given
	// to --http-allowed-hosts (a reverse proxy passing its Host through)
	for _, h := range []string{"127.0.0.1:" + port, "localhost:" + port, "app.localhost:" + port, "[::1]:" + port, hostname + ":" + port, "runnel.example.com"} {
		if code := get(h); code != http.StatusOK {
			t.Fatalf("Host %s: %d, want 200", h, code)
		}
	}
}
