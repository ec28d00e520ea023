package observe_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/chromedp/chromedp"

	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/mapping"
	"github.com/runnel-dev/runnel/observe"
)

// TestThePageMarksLagAtTheIteratorAgeAlarmThreshold: the page marks a
// shard "lagging" when its iterator age is above the iterator-age
// alarm's threshold (Config.IteratorAge, `runnel serve
// --alarm-iterator-age`), which /api/lag reports as
// iteratorAgeThresholdMs. Before, the page used a fixed 60 s whatever the
// flag: with --alarm-iterator-age 5s a shard 10 s behind was in ALARM
// and shown as not lagging. Checked in headless Chromium when one is
// installed, on /api/lag always.
func TestThePageMarksLagAtTheIteratorAgeAlarmThreshold(t *testing.T) {
	rn, clock := start(t)
	g := newGate()
	defer g.open()
	arn := createStream(t, rn, "s")
	fn := kinesisFunction(t, rn, function.Config{Timeout: 900}, func(ctx context.Context, ev events.KinesisEvent) error { return g.wait(ctx) })
	put(t, rn, "s", "r1")
	id := createMapping(t, rn, mapping.Config{EventSourceArn: arn, FunctionName: fn, BatchSize: 1})
	testenv.Eventually(t, wait, "the record in flight", func() bool {
		s, err := rn.Mappings.Status(id)
		return err == nil && len(s.Shards) == 1 && s.Shards[0].PendingRecords == 1
	})
	clock.Advance(10 * time.Second)
	a, err := observe.NewAlarms(rn, observe.Config{Interval: time.Hour, IteratorAge: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(observe.Handler(rn, a))
	defer srv.Close()

	resp, err := http.Get(srv.URL + "/api/lag")
	if err != nil {
		t.Fatal(err)
	}
	var lag observe.Lag
	err = json.NewDecoder(resp.Body).Decode(&lag)
	resp.Body.Close()
	if err != nil || lag.IteratorAgeThresholdMs != 5000 || len(lag.Mappings) != 1 || lag.Mappings[0].Shards[0].IteratorAgeMs < 10000 {
		t.Fatalf("/api/lag: %v %+v", err, lag)
	}

	bin := chromium()
	if bin == "" {
		testenv.MissingTool(t, "no chromium binary found (set RUNNEL_CHROMIUM, or install it: apt-get update && apt-get install -y chromium)")
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), chromedp.ExecPath(bin), chromedp.Headless, chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()))
	defer cancelA()
	bctx, cancelB := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	defer cancelB()
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start chromium (%s): %v", bin, err)
	}
	ctx, cancel := context.WithTimeout(bctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/")); err != nil {
		t.Fatal(err)
	}
	const js = `(document.querySelector('#lag tr[data-shard^="shardId-"] [data-field="iteratorAge"]') || {}).className || ""`
	var got string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		got, err = chromedp.Run(ctx, chromedp.Evaluate[string](js))
		if err == nil && got == "num lagging" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the shard 10 s behind with a 5 s threshold: iterator age cell class %q (err %v), want \"num lagging\"", got, err)
		}
	}
}
