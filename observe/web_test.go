package observe_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/chromedp/chromedp"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/mapping"
	"github.com/runnel-dev/runnel/observe"
	"github.com/runnel-dev/runnel/queue"
	"github.com/runnel-dev/runnel/stream"
)

// chromium finds a Chromium or Chrome binary: $RUNNEL_CHROMIUM, then the
// usual names on PATH.
func chromium() string {
	if p := os.Getenv("RUNNEL_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// webEnv is a runnel (real clock) with a stream "orders" (2 shards) mapped
// to a counting function, and a queue "work" whose RedrivePolicy names
// "work-dlq", which holds 3 dead-lettered messages.
type webEnv struct {
	rn        *runnel.Runnel
	processed atomic.Int64
	work, dlq string
}

func newWebEnv(t *testing.T) *webEnv {
	t.Helper()
	ctx := context.Background()
	e := &webEnv{rn: testenv.Start(t, testenv.Options{})}
	rn := e.rn
	if _, err := rn.Streams.CreateStream(ctx, stream.CreateStreamInput{StreamName: "orders", ShardCount: 2}); err != nil {
		t.Fatal(err)
	}
	fn := kinesisFunction(t, rn, function.Config{}, func(ctx context.Context, ev events.KinesisEvent) error {
		e.processed.Add(int64(len(ev.Records)))
		return nil
	})
	createMapping(t, rn, mapping.Config{FunctionName: fn, EventSourceArn: rn.Streams.ARN("orders"), BatchSize: 10})
	e.dlq = createQueue(t, rn, "work-dlq", nil)
	e.work = createQueue(t, rn, "work", map[string]string{
		queue.AttrRedrivePolicy: fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":3}`, rn.Queues.ARN("work-dlq"))})
	send(t, rn, e.work, 3)
	for moved := 0; moved < 3; {
		ms, err := rn.Queues.ReceiveMessage(ctx, e.work, queue.ReceiveMessageInput{MaxNumberOfMessages: 10})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			if err := rn.Queues.MoveToDeadLetterQueue(ctx, e.work, m.ReceiptHandle); err != nil {
				t.Fatal(err)
			}
			moved++
		}
	}
	return e
}

// TestWebPageInBrowser loads the page in headless Chromium, sees the
// processed count change live when records are put, and empties the DLQ
// with the redrive button.
func TestWebPageInBrowser(t *testing.T) {
	bin := chromium()
	if bin == "" {
		testenv.MissingTool(t, "no chromium binary found (set RUNNEL_CHROMIUM, or install it: apt-get update && apt-get install -y chromium)")
	}
	e := newWebEnv(t)
	a, err := observe.NewAlarms(e.rn, observe.Config{Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(observe.Handler(e.rn, a))
	defer srv.Close()

	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(bin),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelA()
	bctx, cancelB := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	defer cancelB()
	ctx, cancel := context.WithTimeout(bctx, 90*time.Second)
	defer cancel()

	start := time.Now()
	// The browser starts at the first Run, on bctx (a timeout there would
	// stop it); each action then runs on ctx.
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start chromium (%s): %v", bin, err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/")); err != nil {
		t.Fatalf("start chromium (%s) and load the page: %v", bin, err)
	}
	t.Logf("chromium started and page loaded in %v", time.Since(start).Round(time.Millisecond))

	// text evaluates a JavaScript expression in the page until it yields
	// a string ok accepts, and returns it.
	text := func(what, js string, ok func(string) bool) string {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		var got string
		for {
			var err error
			got, err = chromedp.Run(ctx, chromedp.Evaluate[string](js))
			if err == nil && ok(got) {
				return got
			}
			if time.Now().After(deadline) {
				html, _ := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("main")))
				t.Fatalf("%s: last %q (err %v); page:\n%s", what, got, err, html)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	is := func(want string) func(string) bool { return func(s string) bool { return s == want } }
	const (
		processedJS = `document.querySelector("#total-processed").textContent`
		dlqDepthJS  = `(document.querySelector('[data-dlq-depth="work-dlq"]') || {}).textContent || ""`
		dlqRowsJS   = `String(document.querySelectorAll('[data-queue="work-dlq"] tr[data-message]').length)`
		shardRowsJS = `String(document.querySelectorAll('#lag tr[data-shard^="shardId-"]').length)`
	)

	// The graph: every node and the three kinds of edges.
	for _, node := range []string{"stream:orders", "function:" + functionOf(t, e.rn), "queue:work", "queue:work-dlq"} {
		text("graph node "+node, fmt.Sprintf(`String(!!document.querySelector('#pipeline [data-node="%s"]'))`, node), is("true"))
	}
	text("mapping edge", `String(document.querySelectorAll('#pipeline [data-edge="mapping"]').length)`, is("1"))
	text("redrive edge", `String(!!document.querySelector('#pipeline [data-edge="redrive"][data-from="queue:work"][data-to="queue:work-dlq"]'))`, is("true"))
	// Nodes: this process, serving the queues and the tables, running the
	// mapping.
	text("the nodes card", `document.querySelector('#nodes tbody tr').textContent`, func(s string) bool {
		return strings.Contains(s, "(this node)") && strings.Contains(s, "queues, scheduler, tables") && strings.Contains(s, functionOf(t, e.rn))
	})
	// Lag: one row per shard, nothing processed yet.
	text("a row per shard", shardRowsJS, is("2"))
	text("processed before any put", processedJS, is("0"))
	// The DLQ: its depth and a page of its messages.
	text("DLQ depth", dlqDepthJS, is("3"))
	text("DLQ message rows", dlqRowsJS, is("3"))
	text("DLQ message body", `document.querySelector('[data-queue="work-dlq"] td.body').textContent`, func(s string) bool { return strings.HasPrefix(s, "m") })

	// Put records: the page, without a reload, shows them processed.
	put(t, e.rn, "orders", "a", "b", "c", "d", "e")
	changed := time.Now()
	text("processed after 5 puts", processedJS, is("5"))
	t.Logf("processed count reached 5 in the page %v after the put", time.Since(changed).Round(time.Millisecond))
	if got := e.processed.Load(); got != 5 {
		t.Errorf("function saw %d records, want 5", got)
	}

	// Press redrive: the DLQ's depth in the page reaches 0 and the
	// messages are back in "work".
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-redrive="work-dlq"]`))); err != nil {
		t.Fatal(err)
	}
	pressed := time.Now()
	text("DLQ depth after redrive", dlqDepthJS, is("0"))
	t.Logf("DLQ depth reached 0 in the page %v after the click", time.Since(pressed).Round(time.Millisecond))
	text("redrive status", `document.querySelector('[data-redrive-status="work-dlq"]').textContent`,
		func(s string) bool { return strings.Contains(s, "completed") && strings.Contains(s, "3 of 3") })
	text("graph depth of work", `document.querySelector('#pipeline [data-metric="queue:work"]').textContent`,
		func(s string) bool { return strings.HasSuffix(s, "depth 3") })
	if v, _ := depth(t, e.rn, e.work); v != 3 {
		t.Errorf("work holds %d visible messages after the redrive, want 3", v)
	}
	if v, _ := depth(t, e.rn, e.dlq); v != 0 {
		t.Errorf("work-dlq holds %d visible messages after the redrive, want 0", v)
	}
}

// TestWebAPI checks the JSON endpoints without a browser.
func TestWebAPI(t *testing.T) {
	e := newWebEnv(t)
	a, err := observe.NewAlarms(e.rn, observe.Config{Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(observe.Handler(e.rn, a))
	defer srv.Close()
	get := func(path string, v any) int {
		t.Helper()
		r, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Body.Close()
		if v != nil {
			if err := json.NewDecoder(r.Body).Decode(v); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
		}
		return r.StatusCode
	}

	r, err := http.Get(srv.URL + "/")
	if err != nil || r.StatusCode != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET /: %v %v", r, err)
	}
	r.Body.Close()

	var g observe.Graph
	get("/api/graph", &g)
	kinds := map[string]int{}
	for _, n := range g.Nodes {
		kinds[n.Kind]++
	}
	if kinds["stream"] != 1 || kinds["function"] != 1 || kinds["queue"] < 2 {
		t.Errorf("nodes %+v", g.Nodes)
	}
	edges := map[string]int{}
	for _, ed := range g.Edges {
		edges[ed.Kind]++
	}
	if edges["mapping"] != 1 || edges["redrive"] != 1 {
		t.Errorf("edges %+v", g.Edges)
	}

	var lag observe.Lag
	get("/api/lag", &lag)
	if len(lag.Mappings) != 1 || len(lag.Mappings[0].Shards) != 2 {
		t.Errorf("lag %+v", lag)
	}

	var page observe.DLQPage
	if code := get("/api/dlq/work-dlq?limit=2", &page); code != 200 || page.Visible != 3 || len(page.Messages) != 2 {
		t.Errorf("inspect: %d %+v", code, page.Inspection)
	}
	if code := get("/api/dlq/nope", nil); code != 404 {
		t.Errorf("inspect of a missing queue: %d, want 404", code)
	}

	var list observe.DLQList
	get("/api/dlq", &list)
	if len(list.Queues) != 1 || list.Queues[0].Name != "work-dlq" || list.Queues[0].Depth != 3 || !list.Queues[0].AutoInspect ||
		len(list.Queues[0].Sources) != 1 || list.Queues[0].Sources[0] != "work" {
		t.Errorf("dlq list: %+v", list)
	}

	// "work" is no queue's dead-letter queue: the redrive is refused.
	resp, err := http.Post(srv.URL+"/api/dlq/work/redrive", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	var refused observe.RedriveState
	json.NewDecoder(resp.Body).Decode(&refused)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || refused.Status != queue.MoveTaskFailed || refused.Error == "" {
		t.Errorf("redrive of a queue that is no DLQ: %d %+v", resp.StatusCode, refused)
	}

	resp, err = http.Post(srv.URL+"/api/dlq/work-dlq/redrive?wait=1", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	var task observe.RedriveState
	json.NewDecoder(resp.Body).Decode(&task)
	resp.Body.Close()
	if resp.StatusCode != 200 || task.Status != queue.MoveTaskCompleted || task.Moved != 3 {
		t.Errorf("redrive: %d %+v", resp.StatusCode, task)
	}
	list = observe.DLQList{}
	get("/api/dlq", &list)
	if len(list.Queues) != 1 || list.Queues[0].Name != "work-dlq" || list.Queues[0].Depth != 0 ||
		list.Queues[0].Redrive == nil || list.Queues[0].Redrive.Status != queue.MoveTaskCompleted {
		t.Errorf("dlq list after redrive: %+v", list)
	}
	if code := get("/api/dlq/work-dlq/redrive", &task); code != 200 || task.Moved != 3 {
		t.Errorf("redrive state: %d %+v", code, task)
	}
}

func functionOf(t *testing.T, rn *runnel.Runnel) string {
	t.Helper()
	ms := rn.Mappings.ListEventSourceMappings()
	if len(ms) != 1 {
		t.Fatalf("%d mappings", len(ms))
	}
	n, _ := function.FunctionNameFromARN(ms[0].FunctionName)
	if n == "" {
		n = ms[0].FunctionName
	}
	return n
}

// depth is a queue's visible and in-flight counts.
func depth(t *testing.T, rn *runnel.Runnel, url string) (visible, inflight int) {
	t.Helper()
	a, err := rn.Queues.GetQueueAttributes(context.Background(), url, []string{queue.AttrAll})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Sscan(a[queue.AttrApproximateNumberOfMessages], &visible)
	fmt.Sscan(a[queue.AttrApproximateNumberOfMessagesNotVisible], &inflight)
	return
}
