package main

import (
	"encoding/json"
	"testing"
)

// `runnel demo trades --nodes 3` on 20,000 messages: three node processes
// run the exactly-once pipeline with every failure injection, the node
// holding the most of its work is killed with SIGKILL and started again
// at half the messages, and the verifier, reading the tables through the
// nodes, finds every aggregate equal to the producer's totals: exact, no
// duplicate or loss at any stage, 3 nodes, 1 kill. The latency is
// reported as not measured. The run ends because every stage caught up
// (drained), not because nothing moved for the 2-minute drain timeout. It runs only with RUNNEL_CLUSTER_TESTS=1:
// about 4 minutes on a loaded 2-core machine.
func TestDemoTradesNodesIsExactThroughASIGKILL(t *testing.T) {
	dir, raw := runClusterDemo(t, "about 4 minutes", "trades", "--nodes", "3", "--kill-node-at", "0.5",
		"--messages", "20000", "--rate", "0", "--quiet")
	var res struct {
		Messages        int64 `json:"messages"`
		Exact           bool  `json:"exact"`
		Drained         bool  `json:"drained"`
		Nodes           int   `json:"nodes"`
		NodeKills       int   `json:"node_kills"`
		LatencyMeasured bool  `json:"latency_measured"`
		Stages          map[string]struct {
			Invocations, FailuresInjected, Duplicates, Losses int64
		} `json:"stages"`
		Aggregates []struct {
			OK bool `json:"ok"`
		} `json:"aggregates"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	if res.Messages != 20000 || !res.Exact || !res.Drained || res.Nodes != 3 || res.NodeKills != 1 || res.LatencyMeasured || len(res.Aggregates) == 0 {
		t.Fatalf("result: %s", raw)
	}
	for _, a := range res.Aggregates {
		if !a.OK {
			t.Fatalf("an aggregate differs: %s", raw)
		}
	}
	for _, name := range []string{"state", "map", "reduce"} {
		s, ok := res.Stages[name]
		if !ok || s.Invocations == 0 || s.Duplicates != 0 || s.Losses != 0 {
			t.Fatalf("stage %s: %+v\n%s", name, s, raw)
		}
	}
	// The nodes' logs are kept; their data is removed after an exact run.
	nodeDataRemoved(t, dir, "trades-nodes-*")
}
