package bench

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/runnel-dev/runnel/internal/testenv"
)

// The tables scenario at a tiny size, for correctness only (timing is not
// checked): on runnel in-process, runnel's endpoint and dynalite, every
// item PutItem and BatchWriteItem wrote is read back by GetItem or
// BatchGetItem, then by Query, Scan and parallel Scan, each exactly once
// and as written (RunTables checks each item and fails otherwise); the
// counts of every operation are the workload's.
func TestRunTablesSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two engines, an HTTP server and dynalite")
	}
	if _, err := FindDynalite(); err != nil {
		testenv.MissingTool(t, "dynalite, the tables benchmark's peer, is missing: %v", err)
	}
	// 7 items a partition: partitions straddle the PutItem and the
	// BatchWriteItem items, and the last batches are short.
	const n = 310
	rep, err := RunTables(context.Background(), TablesConfig{Items: n, ItemSize: 40, PartitionItems: 7, Callers: 4, Describes: 20,
		ScanSegments: 3, DataDir: t.TempDir(), Progress: testWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.PeerSkipped != "" || len(rep.Targets) != 3 {
		t.Fatalf("targets %d, dynalite skipped: %q", len(rep.Targets), rep.PeerSkipped)
	}
	items := map[string]int{OpDescribeTable: 0, OpPutItem: n, OpGetItem: n, OpUpdateItem: n, OpBatchWriteItem: n, OpBatchGetItem: n,
		OpQuery: 2 * n, OpScan: 2 * n, OpParallelScan: 2 * n}
	calls := map[string]int{OpDescribeTable: 20, OpPutItem: n, OpGetItem: n, OpUpdateItem: n, OpBatchWriteItem: (n + 24) / 25, OpBatchGetItem: (n + 99) / 100,
		OpQuery: (2*n + 6) / 7, OpScan: 1, OpParallelScan: 3}
	md := rep.Markdown()
	for _, tg := range rep.Targets {
		if len(tg.Ops) != len(tableOps) {
			t.Errorf("%s: %d operations measured, want %d", tg.Name, len(tg.Ops), len(tableOps))
		}
		for _, op := range tableOps {
			o := tg.Op(op)
			// Calls may be more than the least (unprocessed requests sent
			// again, a page more), never fewer.
			if o.Items != items[op] || o.Calls < calls[op] || o.Seconds <= 0 {
				t.Errorf("%s %s: %d items in %d calls, want %d items in at least %d calls", tg.Name, op, o.Items, o.Calls, items[op], calls[op])
			}
		}
		if !strings.Contains(md, "| "+tg.Name+" | ") {
			t.Errorf("Markdown lacks the server of %s", tg.Name)
		}
	}
	if len(rep.Ratios) != len(tableOps) || len(rep.Goals) != 5 {
		t.Errorf("%d ratios and %d goals, want %d and 5", len(rep.Ratios), len(rep.Goals), len(tableOps))
	}
	for _, r := range rep.Ratios {
		if r.VsDynalite <= 0 || r.VsDescribe <= 0 || r.InProcessVsEndpoint <= 0 {
			t.Errorf("ratio %+v: every one measured", r)
		}
	}
	t.Log("\n" + md)
}

// A dynalite that is not there is an error, not a silent runnel-only run.
func TestRunTablesMissingDynalite(t *testing.T) {
	_, err := RunTables(context.Background(), TablesConfig{Items: 5, Dynalite: t.TempDir() + "/nope", DataDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "dynalite") {
		t.Fatalf("err = %v, want one naming dynalite", err)
	}
}

// The check every read goes through: an item is accepted only with a
// key of the workload, its data and the n it should have by then.
func TestTableWorkloadCheck(t *testing.T) {
	w := newTableWorkload(TablesConfig{Items: 10, ItemSize: 12, PartitionItems: 3})
	pk, sk := w.key(11)
	good := tableRow{pk: pk, sk: sk, data: w.data(11)}
	if i, err := w.check(good, true); err != nil || i != 11 {
		t.Fatalf("check(item 11) = %d, %v", i, err)
	}
	pk4, sk4 := w.key(4)
	for name, r := range map[string]tableRow{
		"other data":              {pk: pk, sk: sk, data: w.data(10)},
		"not updated":             {pk: pk4, sk: sk4, data: w.data(4)},
		"sort key past partition": {pk: pk, sk: 3, data: w.data(11)},
		"past the last item":      {pk: w.pk(7), sk: 0, data: w.data(21)},
		"other key shape":         {pk: "x" + pk[1:], sk: sk, data: w.data(11)},
	} {
		if _, err := w.check(r, true); err == nil {
			t.Errorf("%s: %+v accepted", name, r)
		}
	}
	if _, err := w.check(tableRow{pk: pk4, sk: sk4, data: w.data(4), n: 1}, false); err == nil {
		t.Error("an update seen before the updates ran was accepted")
	}
}

// A runnel the benchmark did not start (RunnelEndpoint) is measured the
// same way, on a table of its own that is deleted after.
func TestRunTablesExternalRunnel(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two engines and an HTTP server")
	}
	srv, err := startRunnelEndpoint(t.Context(), EndpointConfig{Workload: Workload{DataDir: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.stop()
	const n = 60
	rep, err := RunTables(t.Context(), TablesConfig{Items: n, ItemSize: 20, PartitionItems: 4, Callers: 3, Describes: 5,
		RunnelEndpoint: srv.url, Dynalite: NoDynalite, DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ep := rep.Target(TargetRunnel)
	if ep == nil || !strings.Contains(ep.Server, srv.url) || ep.Op(OpParallelScan).Items != 2*n || rep.PeerSkipped == "" {
		t.Fatalf("report %+v", rep)
	}
	// Without dynalite, the goals against it are not read.
	for _, g := range rep.Goals {
		if strings.Contains(g.Goal, "dynalite") != (g.Unmeasured != "") || (g.Unmeasured != "" && g.Met) {
			t.Errorf("goal %+v", g)
		}
	}
	c := newSDKTables(srv.url, newTableWorkload(TablesConfig{Items: 1, ItemSize: 10, PartitionItems: 1}))
	out, err := c.c.ListTables(t.Context(), &dynamodb.ListTablesInput{})
	if err != nil || len(out.TableNames) != 0 {
		t.Fatalf("tables left: %v (%v)", out, err)
	}
}
