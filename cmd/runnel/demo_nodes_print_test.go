package main

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/runnel-dev/runnel/demo"
)

// TestDemoNodesFiguresAddUp: in `runnel demo --nodes` the records
// processed per node count the records a retried PutRecords stored twice
// (Kinesis PutRecords is at-least-once: a call retried after its answer
// was lost stores its records again), so the report shows them (stored
// twice) and the per-node figures add up to processed (unique) + stored
// twice, their shares to 100%; the peak RSS is labelled as the driver's,
// with the largest node's beside it. It used to print shares of
// processed (unique) summing to over 100% (the review: 300,586 against 299,990) and the
// driver's peak RSS as if it were the run's.
func TestDemoNodesFiguresAddUp(t *testing.T) {
	r := &demo.Result{RecordsIn: 300000, ProcessedUnique: 299990, Unrecoverable: 10, StoredTwice: 6000, StatsMatch: true,
		Nodes: 3, NodeKills: 1, PeakRSSMiB: 80, NodePeakRSSMiB: 310,
		RecordsByNode: map[string]int64{"node-0": 100000, "node-1": 106000, "node-2": 99990}}
	var out bytes.Buffer
	printNodes(&out, r)
	got := out.String()
	for _, want := range []string{
		"stored twice                6000",
		"processed per node          305990  (= processed (unique) 299990 + stored twice 6000)",
		"peak RSS of this driver     80 MiB",
		"peak RSS of a node          310 MiB",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in:\n%s", want, got)
		}
	}
	var share float64
	for _, m := range regexp.MustCompile(`processed by node-\d +\d+  \(([\d.]+)%\)`).FindAllStringSubmatch(got, -1) {
		f, _ := strconv.ParseFloat(m[1], 64)
		share += f
	}
	if share < 99.9 || share > 100.1 {
		t.Errorf("node shares add up to %.1f%%:\n%s", share, got)
	}
	if strings.Contains(got, "\n  peak RSS   ") {
		t.Errorf("an unlabelled peak RSS line:\n%s", got)
	}
}
