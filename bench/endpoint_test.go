package bench

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/internal/testenv"
)

// The endpoint scenario at a tiny size: every record put through the AWS
// SDK is read back exactly once (RunEndpoint checks each one and fails
// otherwise), through runnel's endpoint and, when it is installed (npm
// install in bench/kinesalite), through kinesalite. Timing is not checked.
func TestRunEndpointSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an engine and an HTTP server")
	}
	peer := ""
	if _, err := FindKinesalite(); err != nil {
		// Without kinesalite the run measures runnel only; in CI, where
		// .ci/run installs it, that is a failed install.
		if testenv.InCI() {
			t.Fatalf("CI is set and kinesalite is missing: %v", err)
		}
		t.Logf("kinesalite is not installed: measuring runnel only (%v)", err)
		peer = NoKinesalite
	}
	const n, peerN = 3000, 1200
	rep, err := RunEndpoint(context.Background(), EndpointConfig{Records: n, PeerRecords: peerN, Kinesalite: peer,
		Workload: Workload{Shards: 3, DataDir: t.TempDir(), Progress: testWriter{t}}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{TargetRunnel: n}
	if peer == "" {
		want[TargetKinesalite] = peerN
		if rep.PeerSkipped != "" || rep.PutRatio <= 0 || rep.GetRatio <= 0 {
			t.Errorf("kinesalite skipped (%q) or no ratios (%v, %v)", rep.PeerSkipped, rep.PutRatio, rep.GetRatio)
		}
	} else if rep.PeerSkipped == "" {
		t.Error("kinesalite not measured but PeerSkipped is empty")
	}
	if len(rep.Targets) != len(want) {
		t.Fatalf("%d targets measured, want %d: %+v", len(rep.Targets), len(want), rep.Targets)
	}
	for _, tg := range rep.Targets {
		if tg.Records != want[tg.Name] || tg.Read != tg.Records || tg.PutPerS <= 0 || tg.GetPerS <= 0 || tg.GetRecordsCalls < 3 ||
			(runtime.GOOS == "linux" && tg.GetCPUMicros <= 0) {
			t.Errorf("target %+v: want %d records put and read back", tg, want[tg.Name])
		}
		if !strings.Contains(rep.Markdown(), "| "+tg.Name+" | ") {
			t.Errorf("Markdown lacks a row for %s", tg.Name)
		}
	}
	t.Log("\n" + rep.Markdown())
}

// A kinesalite that is not there is an error, not a silent runnel-only run.
func TestRunEndpointMissingKinesalite(t *testing.T) {
	_, err := RunEndpoint(context.Background(), EndpointConfig{Records: 10, Kinesalite: t.TempDir() + "/nope", Workload: Workload{Shards: 1, DataDir: t.TempDir()}})
	if err == nil || !strings.Contains(err.Error(), "kinesalite") {
		t.Fatalf("err = %v, want one naming kinesalite", err)
	}
}

// processCPUOf reads from /proc what getrusage says of this process (to a
// few ticks of 10 ms): the figure kinesalite's node process is measured by.
func TestProcessCPUOf(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc is Linux's")
	}
	for x := 0; processCPU() < 300*time.Millisecond; x++ {
		_ = strconv.Itoa(x) // burn CPU until the counters are well above a tick
	}
	self, proc := processCPU(), processCPUOf(os.Getpid())
	if proc <= 0 || proc > self+20*time.Millisecond || proc < self-40*time.Millisecond {
		t.Errorf("/proc/self/stat says %v of CPU, getrusage %v", proc, self)
	}
	if processCPUOf(-1) != 0 {
		t.Error("a process that does not exist has CPU time")
	}
}

// BenchmarkEndpointGet is the get phase of the endpoint scenario against
// runnel alone: b.N records put through the endpoint (untimed), then read
// back with aws-sdk-go-v2 GetRecords, one reader per shard, as
// `runnel bench endpoint` does. With RUNNEL_BENCH_PHASE_PROFILE=file it
// writes a CPU profile of the read alone:
//
//	RUNNEL_BENCH_PHASE_PROFILE=/tmp/get.prof go test ./bench/ -run '^$' -bench EndpointGet -benchtime 200000x
func BenchmarkEndpointGet(b *testing.B) {
	b.StopTimer()
	ctx := context.Background()
	cfg := EndpointConfig{Workload: Workload{DataDir: os.Getenv("RUNNEL_BENCH_DIR")}}
	cfg.setDefaults()
	srv, err := startRunnelEndpoint(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer srv.stop()
	client, shards, entries, err := endpointSetup(ctx, cfg, srv.url, b.N)
	if err != nil {
		b.Fatal(err)
	}
	if err := endpointPut(ctx, client, endpointStream, entries, cfg.Producers); err != nil {
		b.Fatal(err)
	}
	runtimeGC()
	t := &btimer{b: b}
	cpu0 := processCPU()
	t.Start()
	if _, _, err := endpointGet(ctx, client, endpointStream, shards, b.N, cfg.RecordSize); err != nil {
		b.Fatal(err)
	}
	t.Stop()
	// The process's CPU time (client and server together) per record: on
	// a shared machine a steadier figure than the rate.
	b.ReportMetric((processCPU()-cpu0).Seconds()*1e6/float64(b.N), "cpu-µs/record")
	b.ReportMetric(float64(b.N)/t.sw.elapsed.Seconds(), "records/s")
}
