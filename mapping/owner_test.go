package mapping_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/lease"
	"github.com/runnel-dev/runnel/mapping"
)

// Ownership across processes (issue 13): a serving process A whose
// embedded server listens, and a second non-passive process B connected
// to it, as two `runnel serve` nodes on one JetStream.

func startNode(t *testing.T, url string) *runnel.Runnel {
	t.Helper()
	if url == "" {
		return testenv.Start(t, testenv.Options{ListenAddr: "127.0.0.1:0"})
	}
	return testenv.Start(t, testenv.Options{NATSURL: url})
}

func putN(t *testing.T, rn *runnel.Runnel, stream, prefix string, n int) {
	t.Helper()
	for i := range n {
		put(t, rn, stream, fmt.Sprintf("k%d", i), fmt.Sprintf("%s%d", prefix, i))
	}
}

// holder returns the node holding mapping id's leases (a queue
// mapping's, or every shard's of a stream mapping): "" for none, the
// nodes joined by "," when several hold some.
func holder(t *testing.T, rn *runnel.Runnel, id string) string {
	t.Helper()
	var nodes []string
	for n := range unitHolders(t, rn, id) {
		nodes = append(nodes, n)
	}
	sort.Strings(nodes)
	return strings.Join(nodes, ",")
}

// unitHolders returns, for mapping id, each node holding some of its
// leases and the units ("" for a queue mapping, else shard ids) it holds.
func unitHolders(t *testing.T, rn *runnel.Runnel, id string) map[string][]string {
	t.Helper()
	m, err := rn.Engine.Leases(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	held, err := m.Holders(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for key, n := range held {
		if key == "esm."+id {
			out[n] = append(out[n], "")
		} else if shard, ok := strings.CutPrefix(key, "esm."+id+"."); ok {
			out[n] = append(out[n], shard)
		}
	}
	for _, shards := range out {
		sort.Strings(shards)
	}
	return out
}

func node(t *testing.T, rn *runnel.Runnel) string {
	t.Helper()
	m, err := rn.Engine.Leases(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return m.Node()
}

// Two processes that both load a stored mapping must not both run it:
// before mapping leases, each ran every mapping, and every record was
// processed twice.
func TestAMappingRunsInOneProcessAtATime(t *testing.T) {
	a := startNode(t, "")
	arn := createStream(t, a, "src", 2)
	r := newRecorder(t, a, function.Config{}, nil)
	createMapping(t, a, mapping.Config{EventSourceArn: arn, FunctionName: r.name, BatchSize: 10, StartingPosition: "TRIM_HORIZON"})
	startNode(t, a.Engine.ClientURL())
	putN(t, a, "src", "r", 100)
	testenv.Eventually(t, wait, "every record processed", func() bool { return r.processed() == 100 })
	time.Sleep(300 * time.Millisecond) // let a second runner, if any, deliver too
	for i := range 100 {
		if n := r.processedCount(fmt.Sprintf("r%d", i)); n != 1 {
			t.Fatalf("record r%d processed %d times, want once: two processes run the mapping", i, n)
		}
	}
}

// A mapping disabled, enabled or deleted through one process takes effect
// in the process running it within 2 s.
func TestAMappingChangedThroughAnotherProcessTakesEffectWhereItRuns(t *testing.T) {
	a := startNode(t, "")
	arn := createStream(t, a, "src", 1)
	r := newRecorder(t, a, function.Config{}, nil)
	m := createMapping(t, a, mapping.Config{EventSourceArn: arn, FunctionName: r.name, BatchSize: 10, StartingPosition: "TRIM_HORIZON"})
	b := startNode(t, a.Engine.ClientURL())
	ctx := context.Background()
	if h := holder(t, a, m.UUID); h != node(t, a) {
		t.Fatalf("the mapping is held by %q, want the creating process %q", h, node(t, a))
	}
	off := false
	if _, err := b.Mappings.UpdateEventSourceMapping(ctx, mapping.Config{UUID: m.UUID, Enabled: &off}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 2*time.Second, "the mapping stopped where it ran", func() bool { return holder(t, a, m.UUID) == "" })
	on := true
	if _, err := b.Mappings.UpdateEventSourceMapping(ctx, mapping.Config{UUID: m.UUID, Enabled: &on}); err != nil {
		t.Fatal(err)
	}
	putN(t, a, "src", "r", 20)
	testenv.Eventually(t, wait, "records processed after the re-enable", func() bool { return r.processed() == 20 })
	if err := b.Mappings.DeleteEventSourceMapping(ctx, m.UUID); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 2*time.Second, "the deleted mapping stopped", func() bool { return holder(t, a, m.UUID) == "" })
	// Either process may have run it since the re-enable: both forget it.
	for _, rn := range []*runnel.Runnel{a, b} {
		testenv.Eventually(t, 2*time.Second, "every process forgets the deleted mapping", func() bool {
			_, err := rn.Mappings.GetEventSourceMapping(m.UUID)
			return err != nil
		})
	}
}

// When the process running a mapping stops cleanly, it hands the mapping
// over: the other process runs it at once from the final checkpoint, and
// no record is processed twice or skipped.
func TestAStoppingProcessHandsItsMappingsOver(t *testing.T) {
	a := startNode(t, "")
	arn := createStream(t, a, "src", 1)
	r := newRecorder(t, a, function.Config{}, nil)
	m := createMapping(t, a, mapping.Config{EventSourceArn: arn, FunctionName: r.name, BatchSize: 10, StartingPosition: "TRIM_HORIZON"})
	b := startNode(t, a.Engine.ClientURL())
	putN(t, a, "src", "x", 30)
	testenv.Eventually(t, wait, "first records processed", func() bool { return r.processed() == 30 })
	a.Mappings.Close()
	testenv.Eventually(t, 2*lease.DefaultTTL, "the other process runs the mapping", func() bool { return holder(t, b, m.UUID) == node(t, b) })
	putN(t, b, "src", "y", 30)
	testenv.Eventually(t, wait, "records processed after the handover", func() bool { return r.processed() == 60 })
	for i := range 30 {
		for _, p := range []string{"x", "y"} {
			if n := r.processedCount(fmt.Sprintf("%s%d", p, i)); n != 1 {
				t.Fatalf("record %s%d processed %d times across the handover, want once", p, i, n)
			}
		}
	}
}

// Mappings are balanced by count: with four mappings and two processes,
// each runs two.
func TestMappingsAreBalancedAcrossProcesses(t *testing.T) {
	a := startNode(t, "")
	arn := createStream(t, a, "src", 1)
	var ids []string
	for range 4 {
		r := newRecorder(t, a, function.Config{}, nil)
		ids = append(ids, createMapping(t, a, mapping.Config{EventSourceArn: arn, FunctionName: r.name, StartingPosition: "LATEST"}).UUID)
	}
	b := startNode(t, a.Engine.ClientURL())
	na, nb := node(t, a), node(t, b)
	testenv.Eventually(t, 10*balanceWait, "two mappings on each process", func() bool {
		count := map[string]int{}
		for _, id := range ids {
			count[holder(t, a, id)]++
		}
		return count[na] == 2 && count[nb] == 2
	})
}

// balanceWait is a little more than the balance interval.
const balanceWait = 3 * time.Second

// A function created through one process can be invoked through another
// at once (its configuration is watched), so a mapping run by either
// finds it.
func TestAFunctionCreatedThroughOneProcessIsKnownToTheOther(t *testing.T) {
	a := startNode(t, "")
	b := startNode(t, a.Engine.ClientURL())
	r := newRecorder(t, b, function.Config{}, nil)
	testenv.Eventually(t, 2*time.Second, "the other process knows the function", func() bool {
		_, err := a.Functions.GetFunction(r.name)
		return err == nil
	})
	if err := b.Functions.DeleteFunction(context.Background(), r.name); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 2*time.Second, "the other process forgets the deleted function", func() bool {
		_, err := a.Functions.GetFunction(r.name)
		return err != nil
	})
}

// A passive process (the CLI's, a library's reader) runs no mapping but
// answers Get, List and Status as a node would: a mapping created,
// updated and deleted through another process after it opened is seen
// by it within the watch's delay.
func TestAPassiveProcessSeesMappingsChangedElsewhere(t *testing.T) {
	a := startNode(t, "")
	arn := createStream(t, a, "src", 1)
	r := newRecorder(t, a, function.Config{}, nil)
	p := testenv.Start(t, testenv.Options{NATSURL: a.Engine.ClientURL(), Mappings: mapping.Options{Passive: true}})
	m := createMapping(t, a, mapping.Config{EventSourceArn: arn, FunctionName: r.name, BatchSize: 10, StartingPosition: "TRIM_HORIZON"})
	testenv.Eventually(t, wait, "the passive process sees the new mapping", func() bool {
		c, err := p.Mappings.GetEventSourceMapping(m.UUID)
		return err == nil && c.BatchSize == 10
	})
	up := *m
	up.BatchSize = 7
	if _, err := a.Mappings.UpdateEventSourceMapping(t.Context(), up); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, wait, "the passive process sees the update", func() bool {
		st, err := p.Mappings.Status(m.UUID)
		return err == nil && st.Config.BatchSize == 7
	})
	if err := a.Mappings.DeleteEventSourceMapping(t.Context(), m.UUID); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, wait, "the passive process sees the delete", func() bool {
		_, err := p.Mappings.GetEventSourceMapping(m.UUID)
		return errors.Is(err, awserr.ErrResourceNotFound) && len(p.Mappings.ListEventSourceMappings()) == 0
	})
}

// A mapping created by another process while a process opens (after it
// loaded the configurations, before its watch applies changes: a node
// may wait there up to 2 minutes for its presence lease) is seen by it.
func TestAMappingCreatedWhileAProcessOpensIsSeenByIt(t *testing.T) {
	a := startNode(t, "")
	arn := createStream(t, a, "src", 1)
	r := newRecorder(t, a, function.Config{}, nil)
	var m *mapping.Config
	t.Cleanup(func() { mapping.SetAfterLoad(nil) })
	mapping.SetAfterLoad(func() {
		mapping.SetAfterLoad(nil)
		m = createMapping(t, a, mapping.Config{EventSourceArn: arn, FunctionName: r.name, BatchSize: 10, StartingPosition: "TRIM_HORIZON"})
	})
	b := startNode(t, a.Engine.ClientURL())
	if m == nil {
		t.Fatal("the hook did not run")
	}
	testenv.Eventually(t, wait, "the process that was opening sees the mapping", func() bool {
		_, err := b.Mappings.GetEventSourceMapping(m.UUID)
		return err == nil
	})
}
