package fanout_test

import (
	"context"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/demo/fanout"
	"github.com/runnel-dev/runnel/internal/testenv"
)

// TestFanoutReconciles: every consumer gets exactly the events its filter
// matches, the webhook that fails for a while included (retried by its
// delivery policy), or has them in its dead-letter queue; nothing is lost.
func TestFanoutReconciles(t *testing.T) {
	res, err := fanout.Run(context.Background(), fanout.Config{DataDir: t.TempDir(), Events: 300, FailFor: 1500 * time.Millisecond,
		Timeout: time.Minute, Logger: testenv.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Exact || res.Lost != 0 || len(res.Consumers) != 5 || res.WebhookFailures == 0 {
		t.Fatalf("not exact: %+v", res)
	}
	for _, c := range res.Consumers {
		if c.Expected == 0 || c.Delivered+c.DeadLettered != c.Expected {
			t.Errorf("%s: %+v", c.Name, c)
		}
	}
	if res.Consumers[0].Expected != 300 || res.Stats.Published != 300 {
		t.Errorf("fanout-all expected %d, published %d", res.Consumers[0].Expected, res.Stats.Published)
	}
}
