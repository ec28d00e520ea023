package sns_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/queue"
	"github.com/runnel-dev/runnel/sns"
)

// holdingEndpoint is an HTTP subscriber that records the message ids of
// its notifications; with hold, it holds its first notification until
// release is closed (an endpoint that hangs).
type holdingEndpoint struct {
	mu      sync.Mutex
	bodies  []string
	ids     []string
	hold    bool
	release chan struct{}
}

func (e *holdingEndpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	e.mu.Lock()
	e.bodies = append(e.bodies, string(b))
	block := false
	if r.Header.Get("x-amz-sns-message-type") == "Notification" {
		e.ids = append(e.ids, r.Header.Get("x-amz-sns-message-id"))
		block, e.hold = e.hold, false
	}
	e.mu.Unlock()
	if block {
		<-e.release
	}
}

func (e *holdingEndpoint) notifications() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.ids...)
}

// slowFanOut starts a runnel on a fake clock whose log goes to logs,
// with topic "t" and two confirmed HTTP subscriptions: one that hangs on
// its first notification until release is closed, one that answers at
// once. It publishes a message and returns once the hanging endpoint
// holds it.
func slowFanOut(t *testing.T, logs *testenv.LogBuffer) (rn *runnel.Runnel, clock *clockwork.FakeClock, hanging, fast *holdingEndpoint, id string) {
	t.Helper()
	clock = clockwork.NewFakeClockAt(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rn = testenv.Start(t, testenv.Options{Clock: clock, Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	topic := createTopic(t, rn, "t", nil)
	release := make(chan struct{})
	hanging, fast = &holdingEndpoint{hold: true, release: release}, &holdingEndpoint{}
	for _, ep := range []*holdingEndpoint{hanging, fast} {
		srv := httptest.NewServer(ep)
		t.Cleanup(srv.Close)
		if _, err := rn.SNS.Subscribe(ctx, sns.SubscribeInput{TopicArn: topic, Protocol: "http", Endpoint: srv.URL}); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, wait, "the confirmation", func() bool { ep.mu.Lock(); defer ep.mu.Unlock(); return len(ep.bodies) == 1 })
		ep.mu.Lock()
		tok := envelopeOf(t, ep.bodies[0]).Token
		ep.mu.Unlock()
		if _, err := rn.SNS.ConfirmSubscription(ctx, topic, tok); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the log:\n%s", logs)
		}
		select {
		case <-release:
		default:
			close(release)
		}
	})
	clock.Advance(time.Millisecond)
	id = publish(t, rn, sns.PublishInput{TopicArn: topic, Message: "once"})
	testenv.Eventually(t, wait, "the hanging endpoint holds the notification", func() bool { return len(hanging.notifications()) == 1 })
	return rn, clock, hanging, fast, id
}

// renewed is the debug log line of a renewal of an internal message's
// visibility.
const renewed = "an internal message kept invisible while it is delivered"

// internalQueue is the URL of topic "t"'s internal queue.
func internalQueue(t *testing.T, rn *runnel.Runnel) string {
	t.Helper()
	urls, err := rn.Queues.ListQueues(ctx, sns.QueuePrefix)
	if err != nil || len(urls) != 1 {
		t.Fatalf("internal queues %v %v", urls, err)
	}
	return urls[0]
}

// queueCount is the number of messages in url, visible or not.
func queueCount(t *testing.T, rn *runnel.Runnel, url string) (visible, inflight int) {
	t.Helper()
	a, err := rn.Queues.GetQueueAttributes(ctx, url, []string{"All"})
	if err != nil {
		t.Fatal(err)
	}
	visible, _ = strconv.Atoi(a[queue.AttrApproximateNumberOfMessages])
	inflight, _ = strconv.Atoi(a[queue.AttrApproximateNumberOfMessagesNotVisible])
	return visible, inflight
}

// finish releases the hanging endpoint, waits until the internal queue
// is empty and checks that each endpoint got the message once.
func finish(t *testing.T, rn *runnel.Runnel, clock *clockwork.FakeClock, hanging, fast *holdingEndpoint, id string) {
	t.Helper()
	url := internalQueue(t, rn)
	close(hanging.release)
	advanceUntil(t, clock, time.Second, "the message deleted", func() bool { v, n := queueCount(t, rn, url); return v+n == 0 })
	for name, ep := range map[string]*holdingEndpoint{"hanging": hanging, "fast": fast} {
		if got := ep.notifications(); len(got) != 1 || got[0] != id {
			t.Errorf("the %s endpoint got %v, want %s once", name, got, id)
		}
	}
	if st := rn.SNS.Stats("t"); st.Delivered != 2 {
		t.Errorf("stats %+v, want 2 delivered", st)
	}
}

// TestASlowFanOutKeepsItsMessageInvisible: AWS retries only a failed
// delivery, per subscription (sns-message-delivery-retries.html); a
// delivery that takes long does not send the message to the other
// subscriptions again. runnel's worker hid a message for a fixed 300 s
// (engine clock) while it delivered to its subscriptions one after
// another; a slower fan-out (an HTTP endpoint that hangs: 15 s an
// attempt, numRetries up to 100) showed the message again and another
// receiver delivered it to every subscription again. Now the handler
// renews the visibility every 100 s while it works: over 20 minutes of
// a hanging delivery the message never shows again.
func TestASlowFanOutKeepsItsMessageInvisible(t *testing.T) {
	logs := &testenv.LogBuffer{}
	rn, clock, hanging, fast, id := slowFanOut(t, logs)
	url := internalQueue(t, rn)
	for step := 1; step <= 40; step++ { // 20 minutes in steps of 30 s
		clock.Advance(30 * time.Second)
		// Renewals every 100 s of the receive (at the publish's time).
		renewals := step * 30 / 100
		testenv.Eventually(t, wait, "the renewals", func() bool { return strings.Count(logs.String(), renewed) >= renewals })
		if v, n := queueCount(t, rn, url); v != 0 || n != 1 {
			t.Fatalf("after %d s: %d visible, %d in flight; want the message in flight", step*30, v, n)
		}
	}
	finish(t, rn, clock, hanging, fast, id)
	if strings.Contains(logs.String(), "came back while this process delivers it") {
		t.Errorf("the message showed again while it was delivered:\n%s", logs)
	}
}

// TestAMessageThatComesBackWhileItIsDeliveredIsLeftToItsHandler: the
// same AWS rule, when the renewal comes too late (the engine clock jumps
// 20 minutes at once, as a suspended host's does; or a renewal fails):
// the receiver of this process that gets the message again leaves it
// to the handler that has it (which takes its new receipt handle) and
// no subscription gets it twice. Before, every subscription got it
// again.
func TestAMessageThatComesBackWhileItIsDeliveredIsLeftToItsHandler(t *testing.T) {
	logs := &testenv.LogBuffer{}
	rn, clock, hanging, fast, id := slowFanOut(t, logs)
	clock.Advance(20 * time.Minute)
	advanceUntil(t, clock, time.Second, "the message taken again", func() bool {
		return strings.Contains(logs.String(), "came back while this process delivers it") || len(hanging.notifications()) > 1 || len(fast.notifications()) > 1
	})
	finish(t, rn, clock, hanging, fast, id)
}
