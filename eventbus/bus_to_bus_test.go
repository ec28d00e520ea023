package eventbus_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/eventbus"
	"github.com/runnel-dev/runnel/internal/testenv"
)

// wantStats checks a rule's matched events and invocations.
func wantStats(t *testing.T, rn *runnel.Runnel, bus, rule string, matched, invocations int64) {
	t.Helper()
	if st := rn.Events.RuleStats(rn.Events.RuleARN(bus, rule)); st.MatchedEvents != matched || st.Invocations != invocations {
		t.Errorf("rule %s/%s: %+v, want %d matched, %d invocations", bus, rule, st, matched, invocations)
	}
}

// TestAnEventFromAnotherBusIsNotRoutedToAThirdBus: "EventBridge can't
// route events received from a sender event bus to a third event bus"
// (eb-bus-to-bus.html, Note). An event that a rule of bus A put on bus B
// goes to the matching rules' other targets on B, not to their event bus
// targets. Before, B forwarded it again: a chain A→B→C delivered to C's
// targets, and a loop A→B→A never stopped (1,170 copies in 4 s).
func TestAnEventFromAnotherBusIsNotRoutedToAThirdBus(t *testing.T) {
	rn, clock := start(t)
	createBuses(t, rn, "b", "c")
	qa, qb, qc := newQueue(t, rn, "qa", nil), newQueue(t, rn, "qb", nil), newQueue(t, rn, "qc", nil)
	pat := `{"source":["shop.orders"]}`
	rule(t, rn, eventbus.Rule{Name: "a2b", EventPattern: pat}, eventbus.Target{Id: "b", Arn: rn.Events.ARN("b")})
	rule(t, rn, eventbus.Rule{Name: "a2q", EventPattern: pat}, eventbus.Target{Id: "q", Arn: qa})
	rule(t, rn, eventbus.Rule{Name: "b2c", EventBusName: "b", EventPattern: pat}, eventbus.Target{Id: "c", Arn: rn.Events.ARN("c")})
	rule(t, rn, eventbus.Rule{Name: "b2a", EventBusName: "b", EventPattern: pat},
		eventbus.Target{Id: "a", Arn: rn.Events.ARN("default")}, eventbus.Target{Id: "q", Arn: qb})
	rule(t, rn, eventbus.Rule{Name: "c2q", EventBusName: "c", EventPattern: pat}, eventbus.Target{Id: "q", Arn: qc})
	id := put(t, rn, orderEvent("paid", 1)).Entries[0].EventId

	if m := drain(t, rn, clock, "qb", 1, 0)[0]; !strings.Contains(m.Body, id) {
		t.Fatalf("bus b's queue got %s, want event %s", m.Body, id)
	}
	// B's routing is stored and counted at once: once both its rules
	// count the event, nothing more is forwarded.
	testenv.Eventually(t, wait, "bus b's rules matching", func() bool {
		return rn.Events.RuleStats(rn.Events.RuleARN("b", "b2c")).MatchedEvents == 1 &&
			rn.Events.RuleStats(rn.Events.RuleARN("b", "b2a")).MatchedEvents == 1
	})
	wantStats(t, rn, "b", "b2c", 1, 0) // its only target is a bus
	wantStats(t, rn, "b", "b2a", 1, 1) // its queue, not its bus
	drain(t, rn, clock, "qa", 1, 0)
	wantStats(t, rn, "default", "a2q", 1, 1)
	wantStats(t, rn, "c", "c2q", 0, 0)
	empty(t, rn, "qa")
	empty(t, rn, "qb")
	empty(t, rn, "qc")
}

// TestAReplayedEventFromAnotherBusIsNotArchived: a replayed event that a
// rule forwards to another bus (an event bus target) reaches that bus's
// other targets, with its "replay-name", goes to no third bus, and is
// not archived there: replayed events are never archived
// (eb-archive.html). A transformed payload of a replayed event keeps its
// "replay-name" too. Before, the forwarded replay was archived on the
// receiving bus again, and forwarded on by its bus targets.
func TestAReplayedEventFromAnotherBusIsNotArchived(t *testing.T) {
	rn, clock := start(t)
	ctx := context.Background()
	createBuses(t, rn, "b", "c")
	qb := newQueue(t, rn, "qb", nil)
	newQueue(t, rn, "qc", nil)
	a, err := rn.Events.CreateArchive(ctx, eventbus.Archive{ArchiveName: "a", EventSourceArn: rn.Events.ARN("default")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rn.Events.CreateArchive(ctx, eventbus.Archive{ArchiveName: "onb", EventSourceArn: rn.Events.ARN("b")}); err != nil {
		t.Fatal(err)
	}
	pat := `{"source":["shop.orders"]}`
	rule(t, rn, eventbus.Rule{Name: "a2b", EventPattern: pat}, eventbus.Target{Id: "b", Arn: rn.Events.ARN("b")})
	rule(t, rn, eventbus.Rule{Name: "b2q", EventBusName: "b", EventPattern: pat},
		eventbus.Target{Id: "q", Arn: qb}, eventbus.Target{Id: "c", Arn: rn.Events.ARN("c")})
	rule(t, rn, eventbus.Rule{Name: "c2q", EventBusName: "c", EventPattern: pat}, eventbus.Target{Id: "q", Arn: rn.Queues.ARN("qc")})
	put(t, rn, orderEvent("paid", 1))
	drain(t, rn, clock, "qb", 1, 0)
	archived := func(want int64) {
		t.Helper()
		testenv.Eventually(t, wait, "the archive on b", func() bool {
			d, err := rn.Events.DescribeArchive(ctx, "onb")
			return err == nil && d.EventCount == want
		})
	}
	archived(1) // the original, forwarded

	if _, err := rn.Events.StartReplay(ctx, eventbus.Replay{ReplayName: "again", EventSourceArn: a.ArchiveArn, EventStartTime: t0,
		EventEndTime: t0.Add(time.Minute), Destination: eventbus.ReplayDestination{Arn: rn.Events.ARN("default")}}); err != nil {
		t.Fatal(err)
	}
	replayed := drain(t, rn, clock, "qb", 1, 0)[0].Body
	if !strings.Contains(replayed, `"replay-name":"again"`) {
		t.Fatalf("bus b's queue got %s, want the replayed event", replayed)
	}
	// What the replay's bus target does, waited for: the event as it is,
	// then a transformed payload of it.
	if err := rn.Events.PutOnBus(ctx, rn.Events.ARN("b"), []byte(replayed), nil); err != nil {
		t.Fatal(err)
	}
	if err := rn.Events.PutOnBus(ctx, rn.Events.ARN("b"), []byte(`{"state":"paid"}`), []byte(replayed)); err != nil {
		t.Fatal(err)
	}
	for _, m := range drain(t, rn, clock, "qb", 2, 0) {
		if !strings.Contains(m.Body, `"replay-name":"again"`) {
			t.Errorf("bus b's queue got %s, want a replayed event", m.Body)
		}
	}
	if d, err := rn.Events.DescribeArchive(ctx, "onb"); err != nil || d.EventCount != 1 {
		t.Fatalf("archive on b: %+v %v, want the original event only", d, err)
	}
	wantStats(t, rn, "b", "b2q", 4, 4) // the queue each time, never bus c
	wantStats(t, rn, "c", "c2q", 0, 0)
	empty(t, rn, "qc")
}
