package trades_test

import (
	"context"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/demo/trades"
)

// TestExactWithFailuresAndCrash runs the whole pipeline on a small input
// with every failure injection raised, and the engine crashed and
// reopened mid-run: the aggregates must equal the producer's totals
// exactly, with no duplicate and no loss at any stage. The run ends
// because every stage caught up, not because nothing moved for the drain
// timeout.
func TestExactWithFailuresAndCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the pipeline end to end")
	}
	res, err := trades.Run(context.Background(), trades.Config{
		Messages: 30000, Rate: -1, DataDir: t.TempDir(), CrashAt: 0.5,
		StateFailure: 0.05, MapFailure: 0.1, ReduceFailure: 0.1, Modifications: 0.05, Duplicates: 0.05,
		DrainTimeout: 30 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Drained {
		t.Fatalf("the run ended by the drain timeout, not because the pipeline caught up (%.1f s)", res.Seconds)
	}
	if !res.Crashed {
		t.Fatal("the run did not crash")
	}
	for _, a := range res.Aggregates {
		if !a.OK {
			t.Errorf("aggregate %s = %s, want %s", a.Key, a.Got, a.Expected)
		}
	}
	for name, s := range res.Stages {
		if s.Duplicates != 0 || s.Losses != 0 {
			t.Errorf("stage %s: %d duplicates, %d losses", name, s.Duplicates, s.Losses)
		}
	}
	if !res.Exact {
		t.Fatal("not exact")
	}
	var injected int64
	for _, s := range res.Stages {
		injected += s.FailuresInjected
	}
	if injected == 0 || res.Modifications == 0 || res.Duplicates == 0 || res.OutOfOrder == 0 {
		t.Fatalf("nothing was injected: %+v", res)
	}
	if res.Latency.N == 0 {
		t.Fatal("no latency observed")
	}
}
