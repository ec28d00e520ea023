package observe_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/function/async"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/observe"
)

// TestAFunctionsAsyncFailureQueuesAreDeadLetterQueues: where a function's
// failed asynchronous events go is its dead-letter queue, and the failure
// playbook (seed 004, failure 1) says to "configure an OnFailure
// destination (SQS preferred) on every async function; alarm on the
// DLQ's ApproximateNumberOfMessagesVisible > 0". Lambda sends them to the
// OnFailure destination of PutFunctionEventInvokeConfig's
// DestinationConfig and to the function's DeadLetterConfig queue (Lambda
// Developer Guide, "Capturing records of Lambda asynchronous
// invocations" and "Adding a dead-letter queue"). Before, neither queue
// was a dead-letter queue for the dlq-depth rule (only RedrivePolicy
// targets, mapping on-failure queues, SNS, EventBridge and Scheduler
// dead-letter queues and DLQ-named queues were), so messages in them
// raised no alarm.
func TestAFunctionsAsyncFailureQueuesAreDeadLetterQueues(t *testing.T) {
	rn, _ := start(t)
	ctx := context.Background()
	onFail := createQueue(t, rn, "orders-failures", nil)
	legacy := createQueue(t, rn, "orders-legacy", nil)
	fn := rawFunction(t, rn, function.Config{DeadLetterConfig: &function.DeadLetterConfig{TargetArn: rn.Queues.ARN("orders-legacy")}})
	if _, err := rn.Async.PutFunctionEventInvokeConfig(ctx, async.EventInvokeConfig{FunctionName: fn,
		DestinationConfig: &async.DestinationConfig{OnFailure: &async.OnFailure{Destination: rn.Queues.ARN("orders-failures")}}}); err != nil {
		t.Fatal(err)
	}
	send(t, rn, onFail, 3)
	send(t, rn, legacy, 2)
	a, err := observe.NewAlarms(rn, observe.Config{Logger: testenv.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	changes := names(a.Evaluate(ctx))
	for _, want := range []string{"dlq-depth:orders-failures ALARM", "dlq-depth:orders-legacy ALARM"} {
		if !strings.Contains(changes, want) {
			t.Errorf("changes %q lack %q", changes, want)
		}
	}
	if al := alarm(t, a, "dlq-depth:orders-failures"); al.Value != 3 || !strings.Contains(al.Message, "asynchronous on-failure destination of function "+fn) {
		t.Errorf("on-failure queue: %+v", al)
	}
	if al := alarm(t, a, "dlq-depth:orders-legacy"); al.Value != 2 || !strings.Contains(al.Message, "DeadLetterConfig of function "+fn) {
		t.Errorf("DeadLetterConfig queue: %+v", al)
	}
	snap := observe.Take(ctx, rn, observe.TakeOptions{})
	for _, q := range snap.Queues {
		if q.Name == "orders-legacy" && !slices.Equal(q.DeadLetterFor, []string{"DeadLetterConfig of function " + fn}) {
			t.Errorf("orders-legacy: DeadLetterFor %q, want the reason once", q.DeadLetterFor)
		}
	}
}
