package observe_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/mapping"
	"github.com/runnel-dev/runnel/observe"
)

// TestAnAlarmWhoseResourceIsGoneGoesToInsufficientData: CloudWatch keeps
// an alarm whose metric stops reporting and, with the default
// TreatMissingData "missing", moves it to INSUFFICIENT_DATA when its
// evaluation range has no data points (CloudWatch User Guide,
// "Configuring how CloudWatch alarms treat missing data"). A deleted
// dead-letter queue or a disabled mapping reports no data: its alarm
// changes to INSUFFICIENT_DATA once, the hooks hear it (Previous ALARM),
// and when the resource is back the alarm changes from
// INSUFFICIENT_DATA. A read error (here a cancelled context) is not the
// resource leaving: its alarm keeps its state and no hook runs. Before,
// the alarm was dropped silently: the webhook never heard the incident
// end, and a queue back in ALARM fired with Previous "" as a new alarm;
// a transient read error dropped and later re-fired it the same way.
func TestAnAlarmWhoseResourceIsGoneGoesToInsufficientData(t *testing.T) {
	rn, clock := start(t)
	h := newHooks(t)
	ctx := context.Background()
	g := newGate()
	defer g.open()
	arn := createStream(t, rn, "s")
	fn := kinesisFunction(t, rn, function.Config{Timeout: 900}, func(ctx context.Context, ev events.KinesisEvent) error { return g.wait(ctx) })
	put(t, rn, "s", "r1")
	id := createMapping(t, rn, mapping.Config{EventSourceArn: arn, FunctionName: fn, BatchSize: 1})
	dlq := createQueue(t, rn, "orders-dlq", nil)
	send(t, rn, dlq, 2)
	testenv.Eventually(t, wait, "the record in flight", func() bool {
		s, err := rn.Mappings.Status(id)
		return err == nil && len(s.Shards) == 1 && s.Shards[0].PendingRecords == 1
	})
	a, err := observe.NewAlarms(rn, h.config(observe.Config{}))
	if err != nil {
		t.Fatal(err)
	}
	step := func(ctx context.Context, what, want string) {
		t.Helper()
		if cs := a.Evaluate(ctx); names(cs) != want {
			t.Fatalf("%s: changes %q, want %q", what, names(cs), want)
		}
	}
	ages, queue := "iterator-age:"+id, "dlq-depth:orders-dlq"
	step(ctx, "start", queue+" ALARM")
	clock.Advance(61 * time.Second)
	step(ctx, "61 s", ages+" ALARM")
	if _, snap := a.LastEvaluation(); len(snap.Errors) != 0 {
		t.Fatalf("a snapshot without a failure has errors: %q", snap.Errors)
	}

	// A read that fails: the queue and the mapping may still be there.
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	step(cancelled, "a snapshot that could not read the queues", "")
	if _, snap := a.LastEvaluation(); len(snap.Errors) == 0 {
		t.Fatal("the cancelled snapshot read everything: the test does not test a read error")
	}
	for _, n := range []string{ages, queue} {
		if al := alarm(t, a, n); al.State != observe.StateAlarm {
			t.Fatalf("after a read error: %+v", al)
		}
	}

	// The operator disables the stuck mapping and deletes the DLQ.
	if _, err := rn.Mappings.UpdateEventSourceMapping(ctx, mapping.Config{UUID: id, Enabled: ptr(false)}); err != nil {
		t.Fatal(err)
	}
	if err := rn.Queues.DeleteQueue(ctx, dlq); err != nil {
		t.Fatal(err)
	}
	clock.Advance(10 * time.Second)
	step(ctx, "mapping disabled, DLQ deleted", queue+" INSUFFICIENT_DATA,"+ages+" INSUFFICIENT_DATA")
	c := h.last()
	if c.Previous != observe.StateAlarm || !strings.Contains(c.Message, "no data") {
		t.Fatalf("the hook's last change: %+v", c)
	}
	if al := alarm(t, a, queue); al.State != observe.StateInsufficientData || !al.Since.Equal(clock.Now()) {
		t.Fatalf("the deleted DLQ's alarm: %+v", al)
	}
	clock.Advance(10 * time.Second)
	step(ctx, "still gone", "") // once

	// The DLQ is created again (60 s after its deletion) with a message.
	clock.Advance(60 * time.Second)
	send(t, rn, createQueue(t, rn, "orders-dlq", nil), 1)
	step(ctx, "the DLQ back", queue+" ALARM")
	if c := h.last(); c.Previous != observe.StateInsufficientData {
		t.Fatalf("the DLQ back: %+v, want Previous INSUFFICIENT_DATA", c)
	}
	h.check(queue+" ALARM", ages+" ALARM", queue+" INSUFFICIENT_DATA", ages+" INSUFFICIENT_DATA", queue+" ALARM")
}
