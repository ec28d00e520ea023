package eventbus_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/eventbus"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/queue"
	"github.com/runnel-dev/runnel/target"
)

func TestArchiveAndReplay(t *testing.T) {
	rn, clock := start(t)
	ctx := context.Background()
	q := newQueue(t, rn, "q", nil)
	rule(t, rn, eventbus.Rule{Name: "paid", EventPattern: `{"detail":{"state":["paid"]}}`}, eventbus.Target{Id: "q", Arn: q})
	a, err := rn.Events.CreateArchive(ctx, eventbus.Archive{ArchiveName: "orders", EventSourceArn: rn.Events.ARN("default"),
		EventPattern: `{"source":["shop.orders"]}`})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rn.Events.CreateArchive(ctx, eventbus.Archive{ArchiveName: "orders", EventSourceArn: rn.Events.ARN("default")}); !errors.Is(err, awserr.ErrResourceAlreadyExists) {
		t.Errorf("second archive of the name: %v", err)
	}
	put(t, rn, orderEvent("paid", 1), orderEvent("new", 2))
	other := orderEvent("paid", 3)
	other.Source = "elsewhere" // not archived: the archive's pattern
	put(t, rn, other)
	drain(t, rn, clock, "q", 2, 0)
	clock.Advance(time.Hour)
	put(t, rn, orderEvent("paid", 4)) // after the replay's range
	drain(t, rn, clock, "q", 1, 0)
	d, err := rn.Events.DescribeArchive(ctx, "orders")
	if err != nil || d.EventCount != 3 {
		t.Fatalf("DescribeArchive: %+v %v, want 3 events", d, err)
	}
	if _, err := rn.Events.StartReplay(ctx, eventbus.Replay{ReplayName: "r1", EventSourceArn: a.ArchiveArn,
		EventStartTime: t0, EventEndTime: t0.Add(time.Minute), Destination: eventbus.ReplayDestination{Arn: rn.Events.ARN("other")}}); !errors.Is(err, awserr.ErrValidation) {
		t.Errorf("cross-bus replay: %v, want ValidationException", err)
	}
	if _, err := rn.Events.StartReplay(ctx, eventbus.Replay{ReplayName: "r1", EventSourceArn: a.ArchiveArn,
		EventStartTime: t0, EventEndTime: t0.Add(time.Minute), Destination: eventbus.ReplayDestination{Arn: rn.Events.ARN("default")}}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, wait, "replay completed", func() bool {
		r, err := rn.Events.DescribeReplay(ctx, "r1")
		return err == nil && r.State == eventbus.ReplayCompleted
	})
	// Only the paid event of the range matches the rule again, marked.
	m := drain(t, rn, clock, "q", 1, 0)[0]
	var ev map[string]any
	json.Unmarshal([]byte(m.Body), &ev)
	if ev["replay-name"] != "r1" || ev["detail"].(map[string]any)["amount"] != 1.0 {
		t.Errorf("replayed event %s", m.Body)
	}
	empty(t, rn, "q")
	if d, _ := rn.Events.DescribeArchive(ctx, "orders"); d.EventCount != 3 {
		t.Errorf("replayed events were archived again: %d events", d.EventCount)
	}
	if _, err := rn.Events.CancelReplay(ctx, "r1"); !errors.Is(err, awserr.ErrIllegalStatus) {
		t.Errorf("cancel of a completed replay: %v, want IllegalStatusException", err)
	}
}

func TestArchiveRetention(t *testing.T) {
	rn, clock := start(t)
	ctx := context.Background()
	q := newQueue(t, rn, "q", nil)
	rule(t, rn, eventbus.Rule{Name: "all", EventPattern: `{"source":["shop.orders"]}`}, eventbus.Target{Id: "q", Arn: q})
	a, err := rn.Events.CreateArchive(ctx, eventbus.Archive{ArchiveName: "a", EventSourceArn: "default", RetentionDays: 1})
	if err != nil {
		t.Fatal(err)
	}
	put(t, rn, orderEvent("old", 1))
	drain(t, rn, clock, "q", 1, 0)
	clock.Advance(25 * time.Hour)
	put(t, rn, orderEvent("new", 2))
	drain(t, rn, clock, "q", 1, 0)
	if _, err := rn.Events.StartReplay(ctx, eventbus.Replay{ReplayName: "r", EventSourceArn: a.ArchiveArn,
		EventStartTime: t0, EventEndTime: t0.Add(48 * time.Hour), Destination: eventbus.ReplayDestination{Arn: a.EventSourceArn}}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, wait, "replay completed", func() bool {
		r, _ := rn.Events.DescribeReplay(ctx, "r")
		return r != nil && r.State == eventbus.ReplayCompleted
	})
	testenv.Eventually(t, wait, "the expired event trimmed", func() bool {
		d, err := rn.Events.DescribeArchive(ctx, "a")
		return err == nil && d.EventCount == 1
	})
	m := drain(t, rn, clock, "q", 1, 0)[0]
	var ev struct{ Detail struct{ State string } }
	json.Unmarshal([]byte(m.Body), &ev)
	if ev.Detail.State != "new" {
		t.Errorf("replayed %s; the event past the 1-day retention must not be", m.Body)
	}
	empty(t, rn, "q")
}

func TestScheduledRuleFiresOnTheClock(t *testing.T) {
	rn, clock := start(t)
	q := newQueue(t, rn, "ticks", nil)
	rule(t, rn, eventbus.Rule{Name: "tick", ScheduleExpression: "rate(5 minutes)"}, eventbus.Target{Id: "q", Arn: q})
	if _, err := rn.Events.PutRule(context.Background(), eventbus.Rule{Name: "x", EventBusName: "default", ScheduleExpression: "rate(5 minute)"}); !errors.Is(err, awserr.ErrValidation) {
		t.Errorf("rate(5 minute): %v, want ValidationException", err)
	}
	empty(t, rn, "ticks")
	clock.Advance(5 * time.Minute)
	m := drain(t, rn, clock, "ticks", 1, 0)[0]
	var ev map[string]any
	json.Unmarshal([]byte(m.Body), &ev)
	if ev["detail-type"] != "Scheduled Event" || ev["source"] != "aws.events" || ev["time"] != "2026-01-01T00:05:00Z" {
		t.Errorf("scheduled event %s", m.Body)
	}
	clock.Advance(4 * time.Minute)
	time.Sleep(50 * time.Millisecond) // nothing may come early
	empty(t, rn, "ticks")
	clock.Advance(time.Minute)
	drain(t, rn, clock, "ticks", 1, 0)
	// Disabled for 20 minutes: nothing of that time fires once enabled.
	ctx := context.Background()
	if err := rn.Events.SetRuleState(ctx, "default", "tick", eventbus.Disabled); err != nil {
		t.Fatal(err)
	}
	clock.Advance(20 * time.Minute)
	if err := rn.Events.SetRuleState(ctx, "default", "tick", eventbus.Enabled); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	empty(t, rn, "ticks")
	clock.Advance(5 * time.Minute)
	drain(t, rn, clock, "ticks", 1, 0)
}

// A crash after a scheduled rule's deliveries are stored but before the
// occurrence is recorded fires it again at restart; each target still
// gets it once, with one event id.
func TestScheduledRuleCrashBetweenStoringAndRecording(t *testing.T) {
	dir := t.TempDir()
	clock := clockwork.NewFakeClockAt(t0)
	reached := testenv.CrashHook(t, eventbus.SetCrashAfterStore)
	rn := testenv.Start(t, testenv.Options{Dir: dir, Clock: clock, Targets: target.Options{Passive: true}})
	a, b := newQueue(t, rn, "a", nil), newQueue(t, rn, "b", nil)
	rule(t, rn, eventbus.Rule{Name: "tick", ScheduleExpression: "rate(5 minutes)"}, eventbus.Target{Id: "a", Arn: a}, eventbus.Target{Id: "b", Arn: b})
	clock.Advance(5 * time.Minute)
	reached()
	rn.Crash()
	eventbus.SetCrashAfterStore(nil)
	rn = testenv.Start(t, testenv.Options{Dir: dir, Clock: clock})
	testenv.Eventually(t, 10*time.Second, "all copies settled", func() bool {
		st := rn.Targets.Stats()
		return st.Delivered+st.Duplicates >= 4
	})
	for _, q := range []string{"a", "b"} {
		drain(t, rn, clock, q, 1, 0)
		empty(t, rn, q)
	}
	// The first process may have fired the occurrence more than once
	// before the crash (each try stops at the hook): at least 2 dropped.
	if st := rn.Targets.Stats(); st.Delivered != 2 || st.Duplicates < 2 {
		t.Errorf("stats %+v, want 2 delivered and at least 2 duplicates dropped", st)
	}
}

// An event PutEvents accepted survives a crash before its delivery.
func TestAcceptedEventsSurviveACrash(t *testing.T) {
	dir := t.TempDir()
	clock := clockwork.NewFakeClockAt(t0)
	open := func(passive bool) *runnel.Runnel {
		o := testenv.Options{Dir: dir, Clock: clock}
		o.Mappings.Passive = passive
		return testenv.Start(t, o)
	}
	rn := open(true) // accepts, delivers nothing
	q := newQueue(t, rn, "q", nil)
	rule(t, rn, eventbus.Rule{Name: "r", EventPattern: `{"source":["shop.orders"]}`}, eventbus.Target{Id: "q", Arn: q})
	out := put(t, rn, orderEvent("a", 1), orderEvent("b", 2))
	rn.Crash()
	rn = open(false)
	got := map[string]bool{}
	for _, m := range drain(t, rn, clock, "q", 2, 0) {
		var ev struct{ ID string }
		json.Unmarshal([]byte(m.Body), &ev)
		got[ev.ID] = true
	}
	if !got[out.Entries[0].EventId] || !got[out.Entries[1].EventId] {
		t.Errorf("delivered %v, want both accepted events", got)
	}
}

// A replay started by a process that does not run replays (Passive)
// runs when a process that does opens; a cancelled one ends CANCELLED
// without sending anything.
func TestReplaysResumeAndCancelAcrossARestart(t *testing.T) {
	dir := t.TempDir()
	clock := clockwork.NewFakeClockAt(t0)
	o := testenv.Options{Dir: dir, Clock: clock}
	o.Mappings.Passive = true
	rn := testenv.Start(t, o)
	ctx := context.Background()
	q := newQueue(t, rn, "q", nil)
	a, err := rn.Events.CreateArchive(ctx, eventbus.Archive{ArchiveName: "a", EventSourceArn: "default"})
	if err != nil {
		t.Fatal(err)
	}
	put(t, rn, orderEvent("x", 1), orderEvent("y", 2))
	rule(t, rn, eventbus.Rule{Name: "all", EventPattern: `{"source":["shop.orders"]}`}, eventbus.Target{Id: "q", Arn: q})
	for _, name := range []string{"kept", "cancelled"} {
		if _, err := rn.Events.StartReplay(ctx, eventbus.Replay{ReplayName: name, EventSourceArn: a.ArchiveArn, EventStartTime: t0,
			EventEndTime: t0.Add(time.Minute), Destination: eventbus.ReplayDestination{Arn: a.EventSourceArn}}); err != nil {
			t.Fatal(err)
		}
	}
	c, err := rn.Events.CancelReplay(ctx, "cancelled")
	if err != nil || c.State != eventbus.ReplayCancelling {
		t.Fatalf("CancelReplay: %+v %v", c, err)
	}
	rn.Close()
	rn = testenv.Start(t, testenv.Options{Dir: dir, Clock: clock})
	for name, want := range map[string]string{"kept": eventbus.ReplayCompleted, "cancelled": eventbus.ReplayCancelled} {
		testenv.Eventually(t, wait, name+" "+want, func() bool {
			r, err := rn.Events.DescribeReplay(ctx, name)
			return err == nil && r.State == want
		})
	}
	for _, m := range drain(t, rn, clock, "q", 2, 0) {
		if !strings.Contains(m.Body, `"replay-name":"kept"`) {
			t.Errorf("delivered %s, want only the kept replay's events", m.Body)
		}
	}
	empty(t, rn, "q")
}

// TestAReplayWithinFiveMinutesReachesAFIFOQueue: a replay sent within five
// minutes of the original event reaches a FIFO queue target again. The
// replayed event keeps its id, so a deduplication id without the replay's
// name took it for the original's duplicate and dropped it.
func TestAReplayWithinFiveMinutesReachesAFIFOQueue(t *testing.T) {
	clock := clockwork.NewFakeClockAt(t0)
	rn := testenv.Start(t, testenv.Options{Clock: clock})
	ctx := context.Background()
	fifo := newQueue(t, rn, "again.fifo", map[string]string{queue.AttrFifoQueue: "true"})
	a, err := rn.Events.CreateArchive(ctx, eventbus.Archive{ArchiveName: "a", EventSourceArn: rn.Events.ARN("default")})
	if err != nil {
		t.Fatal(err)
	}
	rule(t, rn, eventbus.Rule{Name: "all", EventPattern: `{"source":["shop.orders"]}`},
		eventbus.Target{Id: "Target0", Arn: fifo, SqsParameters: &eventbus.SqsParameters{MessageGroupId: "g"}})
	put(t, rn, orderEvent("x", 1))
	drain(t, rn, clock, "again.fifo", 1, 0)
	if _, err := rn.Events.StartReplay(ctx, eventbus.Replay{ReplayName: "soon", EventSourceArn: a.ArchiveArn, EventStartTime: t0,
		EventEndTime: t0.Add(time.Minute), Destination: eventbus.ReplayDestination{Arn: rn.Events.ARN("default")}}); err != nil {
		t.Fatal(err)
	}
	m := drain(t, rn, clock, "again.fifo", 1, 0)[0]
	if !strings.Contains(m.Body, `"replay-name":"soon"`) {
		t.Errorf("delivered %s, want the replayed event", m.Body)
	}
}

// Before, a replay whose remaining archived events were gone (the archive
// deleted) waited for them for ever: it stayed RUNNING, and a cancel left
// it CANCELLING, until a restart.
func TestAReplayWhoseArchiveIsDeletedEnds(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cancel bool
		want   string
	}{{"deleted", false, eventbus.ReplayFailed}, {"deleted and cancelled", true, eventbus.ReplayCancelled}} {
		t.Run(tc.name, func(t *testing.T) {
			rn, _ := start(t)
			ctx := context.Background()
			a, err := rn.Events.CreateArchive(ctx, eventbus.Archive{ArchiveName: "a", EventSourceArn: "default"})
			if err != nil {
				t.Fatal(err)
			}
			put(t, rn, orderEvent("x", 1), orderEvent("y", 2), orderEvent("z", 3))
			stepped, release := make(chan struct{}), make(chan struct{})
			var once sync.Once
			eventbus.SetReplayStepped(func(string) { once.Do(func() { close(stepped); <-release }) })
			t.Cleanup(func() { eventbus.SetReplayStepped(nil) })
			if _, err := rn.Events.StartReplay(ctx, eventbus.Replay{ReplayName: "r", EventSourceArn: a.ArchiveArn, EventStartTime: t0,
				EventEndTime: t0.Add(time.Minute), Destination: eventbus.ReplayDestination{Arn: a.EventSourceArn}}); err != nil {
				t.Fatal(err)
			}
			<-stepped // the first event replayed, two left
			if err := rn.Events.DeleteArchive(ctx, "a"); err != nil {
				t.Fatal(err)
			}
			if tc.cancel {
				if _, err := rn.Events.CancelReplay(ctx, "r"); err != nil {
					t.Fatal(err)
				}
			}
			close(release)
			var r *eventbus.Replay
			testenv.Eventually(t, wait, tc.want, func() bool {
				r, err = rn.Events.DescribeReplay(ctx, "r")
				return err == nil && r.State == tc.want
			})
			if tc.want == eventbus.ReplayFailed && r.StateReason != "the archive no longer exists" {
				t.Fatalf("StateReason %q", r.StateReason)
			}
		})
	}
}
