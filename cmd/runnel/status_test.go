package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/engine"
	"github.com/runnel-dev/runnel/observe"
	"github.com/runnel-dev/runnel/queue"
	"github.com/runnel-dev/runnel/stream"
)

// statusData makes a data directory with a stream and a dead-letter queue
// holding two messages.
func statusData(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	ctx := context.Background()
	rn, err := runnel.Open(ctx, runnel.Config{Engine: engine.Config{DataDir: dir}})
	if err != nil {
		t.Fatal(err)
	}
	defer rn.Close()
	if _, err := rn.Streams.CreateStream(ctx, stream.CreateStreamInput{StreamName: "orders", ShardCount: 1}); err != nil {
		t.Fatal(err)
	}
	u, err := rn.Queues.CreateQueue(ctx, "orders-dlq", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{"x", "y"} {
		if _, err := rn.Queues.SendMessage(ctx, u, queue.SendMessageInput{MessageBody: b}); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestStatusCommandPrintsTheAlarmsTable(t *testing.T) {
	dir := statusData(t)
	run := func(args ...string) string {
		t.Helper()
		g := &globals{dataDir: dir, logLevel: "error"}
		cmd := statusCmd(g)
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetArgs(args)
		if err := cmd.ExecuteContext(context.Background()); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	out := run()
	t.Log("\n" + out)
	for _, want := range []string{
		"1 of 1 alarms in ALARM",
		"ALARMS",
		"STATE  ALARM",
		"ALARM  dlq-depth:orders-dlq  2",
		"dead-letter queue orders-dlq holds 2 messages",
		"QUEUES",
		"orders-dlq  2      2        0            0        yes: named like a dead-letter queue",
		"FUNCTIONS",
		"MAPPINGS",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}

	var rep observe.Report
	if err := json.Unmarshal([]byte(run("--json", "--alarm-dlq-depth", "5")), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.InAlarm != 0 || len(rep.Alarms) != 1 || rep.Alarms[0].Threshold != 5 || rep.Alarms[0].Value != 2 {
		t.Fatalf("--json --alarm-dlq-depth 5: %+v", rep)
	}
}

// lockedBuffer is a bytes.Buffer safe for a writer and a reader.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestServeHTTPMetricsAndStatus(t *testing.T) {
	dir := statusData(t)
	hookFile := filepath.Join(t.TempDir(), "hook")
	g := &globals{dataDir: dir, logLevel: "error"}
	cmd := serveCmd(g)
	var out lockedBuffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"--http", "127.0.0.1:0", "--status-every", "0", "--alarm-command", `echo "$RUNNEL_ALARM_NAME $RUNNEL_ALARM_STATE" > ` + hookFile})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	addrRE := regexp.MustCompile(`metrics: http://(\S+)/metrics`)
	var base string
	for deadline := time.Now().Add(20 * time.Second); base == ""; time.Sleep(10 * time.Millisecond) {
		if m := addrRE.FindStringSubmatch(out.String()); m != nil {
			base = "http://" + m[1]
		} else if time.Now().After(deadline) {
			t.Fatalf("no address printed:\n%s", out.String())
		}
	}
	get := func(path string) string {
		t.Helper()
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %s", path, resp.Status)
		}
		return string(b)
	}
	metrics := get("/metrics")
	for _, want := range []string{`runnel_queue_messages_visible{queue="orders-dlq"} 2`, `runnel_queue_dead_letter{queue="orders-dlq"} 1`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	// The served API refuses a cross-site browser POST (a redrive a page
	// of another site would start): TestACrossSiteRequestCannotRedriveOrReceive.
	req, _ := http.NewRequest(http.MethodPost, base+"/api/dlq/orders-dlq/redrive", strings.NewReader(""))
	req.Header.Set("Origin", "https://evil.example")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	req.Header.Set("Content-Type", "text/plain")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("cross-site POST of a redrive: %v %v, want 403", resp, err)
	} else {
		resp.Body.Close()
	}
	var rep observe.Report
	if err := json.Unmarshal([]byte(get("/status")), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.InAlarm != 1 || rep.Alarms[0].Name != "dlq-depth:orders-dlq" {
		t.Fatalf("/status: %+v", rep.Alarms)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if b, _ := os.ReadFile(hookFile); strings.TrimSpace(string(b)) == "dlq-depth:orders-dlq ALARM" {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("alarm command did not run: %q", b)
		}
	}
}
