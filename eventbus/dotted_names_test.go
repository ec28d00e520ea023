package eventbus_test

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel/eventbus"
	"github.com/runnel-dev/runnel/internal/testenv"
)

// TestABusNamedWithADotMadeThroughOneProcessTakesEventsThroughAnother:
// an event bus name is [/\.\-_A-Za-z0-9]+, up to 256 characters
// (EventBridge API Reference, CreateEventBus, Name), so "shop." is one,
// and a bus belongs to the account and Region, whichever endpoint made
// it. Before, the buses bucket's watch handed process b the key
// "shop=2E" (the bucket's escape of a name ending in '.'): b held the bus
// under that name, answered ResourceNotFoundException to PutEvents on
// "shop.", and ListEventBuses listed the bus twice on process a.
func TestABusNamedWithADotMadeThroughOneProcessTakesEventsThroughAnother(t *testing.T) {
	clock := clockwork.NewFakeClockAt(t0)
	a := testenv.Start(t, testenv.Options{Clock: clock, ListenAddr: "127.0.0.1:0"})
	b := testenv.Start(t, testenv.Options{Clock: clock, NATSURL: a.Engine.ClientURL()})
	ctx := context.Background()
	buses := map[string]string{"shop.": "qend", ".shop": "qstart", "sh..op": "qmid"}
	for bus, qn := range buses {
		if _, err := a.Events.CreateEventBus(ctx, bus, ""); err != nil {
			t.Fatal(err)
		}
		q := newQueue(t, a, qn, nil)
		rule(t, a, eventbus.Rule{Name: "r", EventBusName: bus, EventPattern: `{"source":["shop.orders"]}`}, eventbus.Target{Id: "q", Arn: q})
	}
	for bus := range buses {
		testenv.Eventually(t, 15*time.Second, "the bus "+bus+" and its rule's target known to process b", func() bool {
			tg, err := b.Events.ListTargetsByRule(bus, "r")
			return err == nil && len(tg) == 1
		})
		ev := orderEvent("x", 1)
		ev.EventBusName = bus
		out := put(t, b, ev)
		if out.FailedEntryCount != 0 {
			t.Fatalf("PutEvents on %q through process b: %+v", bus, out.Entries)
		}
	}
	for _, rn := range []*eventbusProcess{{"a", a.Events}, {"b", b.Events}} {
		if l := rn.s.ListEventBuses("sh"); len(l) != 2 {
			t.Errorf("ListEventBuses(sh) on process %s: %d buses, want 2 (shop., sh..op): %+v", rn.name, len(l), l)
		}
		if l := rn.s.ListEventBuses(".sh"); len(l) != 1 {
			t.Errorf("ListEventBuses(.sh) on process %s: %d buses, want 1: %+v", rn.name, len(l), l)
		}
	}
	for _, qn := range buses {
		drain(t, a, clock, qn, 1, time.Second)
	}
}

type eventbusProcess struct {
	name string
	s    *eventbus.Service
}
