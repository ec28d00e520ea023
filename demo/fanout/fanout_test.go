package fanout_test

import (
	"context"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/demo/fanout"
	"github.com/runnel-dev/runnel/internal/testenv"
)

// TestFanoutReconciles: every consumer, of the topic and of the bus, gets
// exactly the events its filter or pattern matches, the webhook and the
// bus queue that fail for a while included (retried by their policies),
// or has them in its dead-letter queue; nothing is lost.
func TestFanoutReconciles(t *testing.T) {
	res, err := fanout.Run(context.Background(), fanout.Config{DataDir: t.TempDir(), Events: 300, FailFor: 1500 * time.Millisecond,
		Timeout: time.Minute, Logger: testenv.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Exact || res.Lost != 0 || len(res.Consumers) != 9 || res.WebhookFailures == 0 {
		t.Fatalf("not exact: %+v", res)
	}
	vias := map[string]int{}
	for _, c := range res.Consumers {
		vias[c.Via]++
		if c.Expected == 0 || c.Delivered+c.DeadLettered != c.Expected || c.Unexpected != 0 {
			t.Errorf("%s: %+v", c.Name, c)
		}
	}
	if vias["topic"] != 5 || vias["bus"] != 4 {
		t.Errorf("consumers by way %v, want 5 through the topic and 4 through the bus", vias)
	}
	if res.Consumers[0].Expected != 300 || res.Stats.Published != 300 {
		t.Errorf("fanout-all expected %d, published %d", res.Consumers[0].Expected, res.Stats.Published)
	}
	if all := res.Consumers[5]; all.Name != "bus-all" || all.Expected != 300 {
		t.Errorf("bus-all: %+v", all)
	}
	// The bus consumer that refused events for a while: its target retried.
	if res.BusStats.Retried == 0 {
		t.Errorf("bus-big never failed: %+v", res.BusStats)
	}
}
