package bench

import (
	"context"
	"os"
	"runtime/pprof"
	"strings"
	"testing"
)

// btimer drives a testing.B's timer and keeps the timed duration. With
// RUNNEL_BENCH_PHASE_PROFILE=file it also writes a CPU profile of the timed
// phase alone (go test -cpuprofile covers the untimed setup too, and the
// two cannot run together).
type btimer struct {
	b       *testing.B
	sw      stopwatch
	profile *os.File
}

func (t *btimer) Start() {
	if path := os.Getenv("RUNNEL_BENCH_PHASE_PROFILE"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			t.b.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			t.b.Fatal(err)
		}
		t.profile = f
	}
	t.sw.Start()
	t.b.StartTimer()
}

func (t *btimer) Stop() {
	t.b.StopTimer()
	t.sw.Stop()
	if t.profile != nil {
		pprof.StopCPUProfile()
		t.profile.Close()
		t.profile = nil
	}
}

// benchScenario runs one scenario on a fresh engine with b.N records,
// timing only its measured phase, and reports records/s.
func benchScenario(b *testing.B, fn scenarioFunc) {
	b.StopTimer()
	ctx := context.Background()
	cfg := Config{Workload: Workload{DataDir: os.Getenv("RUNNEL_BENCH_DIR")}, NATSURL: os.Getenv("RUNNEL_BENCH_NATS")}
	e, err := openEnv(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer e.close()
	t := &btimer{b: b}
	if _, err := fn(ctx, e, b.N, t); err != nil {
		b.Fatal(err)
	}
	if s := t.sw.elapsed.Seconds(); s > 0 {
		b.ReportMetric(float64(b.N)/s, "records/s")
	}
}

func BenchmarkJetStreamPublish(b *testing.B)      { benchScenario(b, runJetStreamPublish) }
func BenchmarkJetStreamConsumeNoAck(b *testing.B) { benchScenario(b, runJetStreamConsumeNoAck) }
func BenchmarkJetStreamConsumeAck(b *testing.B)   { benchScenario(b, runJetStreamConsumeAck) }
func BenchmarkRunnelPutRecords(b *testing.B)      { benchScenario(b, runRunnelPut) }
func BenchmarkSNSFanout(b *testing.B)             { benchScenario(b, runRunnelSNSFanout) }
func BenchmarkSNSFanoutRaw(b *testing.B)          { benchScenario(b, runRunnelSNSFanoutRaw) }
func BenchmarkPutEventsToSQS(b *testing.B)        { benchScenario(b, runRunnelEventsToSQS) }

// BenchmarkMappingNoOpHandler puts b.N records before the timer, then
// times a mapping with a no-op handler draining them.
func BenchmarkMappingNoOpHandler(b *testing.B) { benchScenario(b, runRunnelMapping) }

func TestRunSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("starts six engines")
	}
	const n = 5000
	rep, err := Run(context.Background(), Config{Records: n, Workload: Workload{DataDir: t.TempDir(), Progress: testWriter{t}}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{JetStreamPublish, JetStreamConsumeAck, JetStreamConsumeNoAck, RunnelPut, RunnelMapping, RunnelPutThroughMap, JetStreamWorkQueue, RunnelQueue, RunnelSNSFanout, RunnelSNSFanoutRaw, RunnelEventsToSQS}
	if len(rep.Scenarios) != len(want) {
		t.Fatalf("got %d scenarios, want %d", len(rep.Scenarios), len(want))
	}
	for i, s := range rep.Scenarios {
		// Every scenario returns only once all n records were published,
		// consumed or processed; a shortfall is an error from Run.
		if s.Name != want[i] || s.Records != n || s.Seconds <= 0 || s.RecordsPerS <= 0 {
			t.Errorf("scenario %d = %+v, want %s over %d records", i, s, want[i], n)
		}
	}
	for _, k := range []string{"mapping/consume-ack", "mapping/consume-noack", "put/publish"} {
		if rep.Ratios[k] <= 0 {
			t.Errorf("ratio %s = %v", k, rep.Ratios[k])
		}
	}
	if rep.Machine == "" {
		t.Error("no machine description")
	}
	md := rep.Markdown()
	for _, s := range want {
		if !strings.Contains(md, "| "+s+" |") {
			t.Errorf("Markdown lacks a row for %s:\n%s", s, md)
		}
	}
	t.Log("\n" + md)
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// TestRunDefaults runs the full benchmark with the defaults and prints the
// Markdown, with the load average after each scenario. It runs only with
// RUNNEL_BENCH_FULL=1 (it takes a minute or more):
//
//	RUNNEL_BENCH_FULL=1 go test ./bench/ -run TestRunDefaults -v -timeout 30m
func TestRunDefaults(t *testing.T) {
	if os.Getenv("RUNNEL_BENCH_FULL") == "" {
		t.Skip("set RUNNEL_BENCH_FULL=1 to run the full benchmark")
	}
	rep, err := Run(context.Background(), Config{Workload: Workload{DataDir: os.Getenv("RUNNEL_BENCH_DIR"), Progress: loadWriter{t}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + rep.Markdown())
}

// loadWriter logs progress lines with the load average at that moment.
type loadWriter struct{ t *testing.T }

func (w loadWriter) Write(p []byte) (int, error) {
	la, _ := os.ReadFile("/proc/loadavg")
	w.t.Logf("%s   [loadavg %s]", strings.TrimRight(string(p), "\n"), strings.TrimSpace(string(la)))
	return len(p), nil
}

// TestSNSFanoutScenario runs the SNS scenario alone on a few messages:
// it returns only once the three queues hold them all.
func TestSNSFanoutScenario(t *testing.T) {
	sc, err := measure(context.Background(), Config{Records: 300, Workload: Workload{DataDir: t.TempDir()}}, RunnelSNSFanout, runRunnelSNSFanout)
	if err != nil || sc.Records != 300 || sc.RecordsPerS <= 0 {
		t.Fatalf("%+v %v", sc, err)
	}
}
