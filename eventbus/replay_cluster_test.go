package eventbus_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/eventbus"
	"github.com/runnel-dev/runnel/internal/testenv"
)

// clusterReplay sets up, on a (whose embedded server b connects to), an
// archive of 5 events and a rule sending them to queue "q", and a hook
// that holds the first replayed event's runner until release is closed
// (stepped is closed when it is held). It returns the archive's ARN.
func clusterReplay(t *testing.T, a *runnel.Runnel) (archiveArn string, stepped, release chan struct{}) {
	t.Helper()
	ctx := context.Background()
	q := newQueue(t, a, "q", nil)
	ar, err := a.Events.CreateArchive(ctx, eventbus.Archive{ArchiveName: "a", EventSourceArn: "default"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		put(t, a, orderEvent("s", i))
	}
	// The rule comes after the events: only the replay delivers them.
	rule(t, a, eventbus.Rule{Name: "all", EventPattern: `{"source":["shop.orders"]}`}, eventbus.Target{Id: "q", Arn: q})
	stepped, release = make(chan struct{}), make(chan struct{})
	var first atomic.Bool
	eventbus.SetReplayStepped(func(string) {
		if first.CompareAndSwap(false, true) { // later steps, of any runner, go on
			close(stepped)
			<-release
		}
	})
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release) // a failed test's held runner stops at Close
		}
		eventbus.SetReplayStepped(nil)
	})
	return ar.ArchiveArn, stepped, release
}

func startReplay(t *testing.T, rn *runnel.Runnel, archiveArn string) {
	t.Helper()
	if _, err := rn.Events.StartReplay(context.Background(), eventbus.Replay{ReplayName: "r", EventSourceArn: archiveArn, EventStartTime: t0,
		EventEndTime: t0.Add(time.Minute), Destination: eventbus.ReplayDestination{Arn: rn.Events.ARN("default")}}); err != nil {
		t.Fatal(err)
	}
}

// replayState waits until replay "r" is in state want and returns it.
func replayState(t *testing.T, rn *runnel.Runnel, timeout time.Duration, want string) *eventbus.Replay {
	t.Helper()
	var r *eventbus.Replay
	testenv.Eventually(t, timeout, "replay "+want, func() bool {
		var err error
		r, err = rn.Events.DescribeReplay(context.Background(), "r")
		return err == nil && r.State == want
	})
	return r
}

// holder returns the node holding the replays' lease ("" for none).
func holder(t *testing.T, rn *runnel.Runnel) string {
	t.Helper()
	h, err := rn.Engine.LeaseHolders(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return h[eventbus.ReplayLease]
}

func node(t *testing.T, rn *runnel.Runnel) string {
	t.Helper()
	m, err := rn.Engine.Leases(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return m.Node()
}

// TestAReplayRunsOnOneProcessOfACluster: a replay sends each archived
// event in its range to the bus once (StartReplay,
// https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-replay-archived-event.html;
// AWS runs it as one job). Before, every runnel process that started
// while a replay ran (a node joining the cluster) resumed it from its
// saved progress beside the process already running it, whose failed
// saves were ignored: 5 archived events reached the target 9 times. Now
// only the holder of the lease "eventbridge-replays" runs replays; a node
// that starts meanwhile does not.
func TestAReplayRunsOnOneProcessOfACluster(t *testing.T) {
	clock := clockwork.NewFakeClockAt(t0)
	a := testenv.Start(t, testenv.Options{Clock: clock, ListenAddr: "127.0.0.1:0"})
	archiveArn, stepped, release := clusterReplay(t, a)
	startReplay(t, a, archiveArn)
	<-stepped // a runs the replay: the first event sent and saved, 4 left
	b := testenv.Start(t, testenv.Options{Clock: clock, NATSURL: a.Engine.ClientURL()})
	if h := holder(t, b); h != node(t, a) {
		t.Fatalf("the replays' lease is held by %q, want a's node %q", h, node(t, a))
	}
	close(release)
	replayState(t, a, wait, eventbus.ReplayCompleted)
	drain(t, a, clock, "q", 5, 0)
	empty(t, a, "q")
	ruleArn := a.Events.RuleARN("default", "all")
	if na, nb := a.Events.RuleStats(ruleArn).MatchedEvents, b.Events.RuleStats(ruleArn).MatchedEvents; na != 5 || nb != 0 {
		t.Errorf("events replayed: %d by a, %d by b; want 5 by a, none by b", na, nb)
	}
}

// TestAReplayIsTakenOverWhenItsProcessDies: a replay started runs to its
// end (STARTING, RUNNING, COMPLETED; eb-replay-archived-event.html). Before,
// a replay was run by the process that started it (or resumed by a
// process at its start): when that process died, no other node took it
// over, and it stayed RUNNING until the dead process came back. Now the
// holder of the lease "eventbridge-replays" runs it; when that lease is
// lost (here: a's leases no longer renewed, as a dead process's), b takes
// the lease over and resumes the replay from its saved progress: each of
// the 5 events reaches the target once. This waits for the lease to
// expire (its TTL, 10 s of real time).
func TestAReplayIsTakenOverWhenItsProcessDies(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for a lease's TTL")
	}
	clock := clockwork.NewFakeClockAt(t0)
	a := testenv.Start(t, testenv.Options{Clock: clock, ListenAddr: "127.0.0.1:0"})
	testenv.Eventually(t, wait, "a holds the replays' lease", func() bool { return holder(t, a) == node(t, a) })
	b := testenv.Start(t, testenv.Options{Clock: clock, NATSURL: a.Engine.ClientURL()})
	archiveArn, stepped, release := clusterReplay(t, a)
	startReplay(t, b, archiveArn) // any process may start it; a runs it
	<-stepped
	leases, err := a.Engine.Leases(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	leases.Abandon() // a's leases lapse, as a dead process's would
	replayState(t, b, 3*lease10s, eventbus.ReplayCompleted)
	if h := holder(t, b); h != node(t, b) {
		t.Errorf("the replays' lease is held by %q, want b's node %q", h, node(t, b))
	}
	close(release) // a's runner, held since before its lease lapsed, stops
	drain(t, b, clock, "q", 5, 0)
	ruleArn := a.Events.RuleARN("default", "all")
	if na, nb := a.Events.RuleStats(ruleArn).MatchedEvents, b.Events.RuleStats(ruleArn).MatchedEvents; na != 1 || nb != 4 {
		t.Errorf("events replayed: %d by a, %d by b; want 1 by a, 4 by b", na, nb)
	}
	empty(t, b, "q")
}

// lease10s is the leases' TTL (lease.DefaultTTL).
const lease10s = 10 * time.Second

// TestAReplayRunnerWhoseRecordWasWrittenByAnotherStops: a replay's
// progress is saved with a compare-and-set on the revision its runner
// wrote last; a save that finds another runner's write stops the runner,
// which no longer owns the replay, and the progress saved never moves
// backwards. Before, saveReplay's errors were ignored: the runner went on,
// sending the events again, and wrote its older progress over the newer.
func TestAReplayRunnerWhoseRecordWasWrittenByAnotherStops(t *testing.T) {
	clock := clockwork.NewFakeClockAt(t0)
	rn := testenv.Start(t, testenv.Options{Clock: clock})
	ctx := context.Background()
	archiveArn, stepped, release := clusterReplay(t, rn)
	startReplay(t, rn, archiveArn)
	<-stepped
	// Another runner's write: all of the archive replayed.
	kv, err := rn.Engine.JS.KeyValue(ctx, "runnel_event_replays")
	if err != nil {
		t.Fatal(err)
	}
	e, err := kv.Get(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	var r map[string]any
	json.Unmarshal(e.Value(), &r)
	const done = 1 << 40
	r["Seq"] = done
	data, _ := json.Marshal(r)
	if _, err := kv.Update(ctx, "r", data, e.Revision()); err != nil {
		t.Fatal(err)
	}
	close(release)
	got := replayState(t, rn, wait, eventbus.ReplayCompleted)
	if got.Seq != done {
		t.Errorf("saved progress %d, want the other runner's %d (never moved backwards)", got.Seq, uint64(done))
	}
	// The first event, and the one in flight when the runner found out.
	drain(t, rn, clock, "q", 2, 0)
	empty(t, rn, "q")
}
