package observe_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/function/async"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/observe"
)

// TestAnAsyncBacklogThatDoesNotDrainAlarms: the alarms table of seed 004
// lists "Async age: AsyncEventAge climbing toward 6 h — Async backlog not
// draining"; runnel had no such rule. An event accepted with
// InvocationType Event that waits to run longer than the threshold (here
// behind a function of reserved concurrency 1 whose one invocation
// hangs) puts the function's async-event-age alarm in ALARM; once the
// backlog has run it is OK again.
func TestAnAsyncBacklogThatDoesNotDrainAlarms(t *testing.T) {
	rn, clock := start(t)
	h := newHooks(t)
	name := fmt.Sprintf("observe-a%d", seq.Add(1))
	started, release := make(chan struct{}, 2), make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	function.Register(name, func(ctx context.Context, in struct{}) (string, error) {
		started <- struct{}{}
		<-release
		return "ok", nil
	})
	one := 1
	if _, err := rn.Functions.CreateFunction(context.Background(), function.Config{FunctionName: name, Handler: name, Timeout: 900, ReservedConcurrentExecutions: &one}); err != nil {
		t.Fatal(err)
	}
	a, err := observe.NewAlarms(rn, h.config(observe.Config{AsyncEventAge: time.Minute}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for range 2 {
		if _, err := rn.Async.Invoke(ctx, name, async.Event, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	<-started // the first runs and hangs; the second waits
	clock.Advance(30 * time.Second)
	if cs := a.Evaluate(ctx); names(cs) != "" {
		t.Fatalf("an event waiting 30 s (threshold 1 min): changes %q", names(cs))
	}
	clock.Advance(time.Minute)
	want := "async-event-age:" + name + " ALARM"
	if cs := a.Evaluate(ctx); names(cs) != want {
		t.Fatalf("an event waiting 90 s: changes %q, want %q", names(cs), want)
	}
	if al := alarm(t, a, "async-event-age:"+name); al.Value < 90_000 || al.Threshold != 60_000 {
		t.Fatalf("alarm %+v; want the oldest event's age (90 s) against 60 s", al)
	}
	once.Do(func() { close(release) })
	<-started // the second runs
	testenv.Eventually(t, wait, "both events run", func() bool { return rn.Async.Stats(name).Succeeded == 2 })
	clock.Advance(10 * time.Second)
	if cs := a.Evaluate(ctx); names(cs) != "async-event-age:"+name+" OK" {
		t.Fatalf("the backlog drained: changes %q", names(cs))
	}
	h.check(want, "async-event-age:"+name+" OK")
}
