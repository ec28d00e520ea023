package process

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/runnel-dev/runnel/function"
)

// pySlowInit takes 2.5 s of module-level init, then its handler 1 s and
// reports the time it had left when called.
const pySlowInit = `import time
time.sleep(2.5)
def handler(event, context):
    left = context.get_remaining_time_in_millis()
    time.sleep(1)
    return {"remaining": left}
`

// A cold start's init does not count against the function's Timeout:
// the Invoke phase, which the Timeout limits, starts when the invocation
// is handed to a ready runtime. "The Init phase is limited to 10
// seconds. If all three tasks do not complete within 10 seconds, Lambda
// retries the Init phase at the time of the first function invocation
// with the configured function timeout" (AWS Lambda developer guide,
// lambda-runtime-environment.html). Before, the deadline (process's and
// package function's) was set before the environment was acquired: a
// function with 2.5 s of init and a 1 s handler under Timeout 3 timed
// out on every cold start, and the timeout made the next call cold
// again, forever. get_remaining_time_in_millis on the cold call is
// about the Timeout.
func TestAColdStartsInitDoesNotCountAgainstTheTimeout(t *testing.T) {
	pf, sink := managed(t, "python3.12", "slow.handler", map[string]string{"slow.py": pySlowInit}, func(c *Config) { c.Timeout = 3 })
	// Through package function, as the Invoke endpoint runs it (its own
	// deadline was the other half of the bug).
	fn, err := function.New(function.Config{FunctionName: "fn", Timeout: 3}, pf, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		res, err := fn.Invoke(context.Background(), []byte(`{}`))
		if err != nil || res.Failed() {
			t.Fatalf("invocation %d: %+v %v\nlog:\n%s", i, res.Error, err, strings.Join(sink.messages("/aws/lambda/fn"), "\n"))
		}
		var m struct{ Remaining float64 }
		if err := json.Unmarshal(res.Payload, &m); err != nil {
			t.Fatal(err)
		}
		// The handler is called at most a second or so after its runtime is
		// ready (awaitFlush and scheduling on a loaded machine), never
		// after the 2.5 s of init.
		if m.Remaining < 2000 || m.Remaining > 3000 {
			t.Errorf("invocation %d: get_remaining_time_in_millis %v at the handler's start, want about 3000", i, m.Remaining)
		}
	}
	if st := pf.Stats(); st.ColdStarts != 1 {
		t.Errorf("cold starts %d, want 1 (the first invocation must not time out and lose its environment)", st.ColdStarts)
	}

	// Straight through package process too: Lambda-Runtime-Deadline-Ms is
	// the Timeout after the runtime is ready.
	pf2, _ := managed(t, "python3.12", "slow.handler", map[string]string{"slow.py": pySlowInit}, func(c *Config) { c.Timeout = 3 })
	m := invokeJSON(t, pf2, "cold-1", `{}`)
	if r, _ := m["remaining"].(float64); r < 2000 {
		t.Errorf("process: get_remaining_time_in_millis %v at the cold handler's start, want about 3000", r)
	}
}

// An init that hangs is still bounded: past the init limit (10 s on
// Lambda; shortened here) the rest of the init counts against the
// invocation's Timeout, which then ends it as a timeout, with the
// timeout's line, END and REPORT in the log.
func TestAHungInitIsBoundedByTheInitLimitAndTheTimeout(t *testing.T) {
	old := initTimeout
	initTimeout = 1 * time.Second
	t.Cleanup(func() { initTimeout = old })
	f, sink := managed(t, "python3.12", "hang.handler", map[string]string{"hang.py": "import time\ntime.sleep(60)\ndef handler(e, c):\n    return 1\n"},
		func(c *Config) { c.Timeout = 1 })
	start := time.Now()
	ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "hung"})
	_, err := f.Invoke(ctx, []byte(`{}`))
	ie, ok := err.(*function.InvokeError)
	if !ok || ie.Type != function.TimeoutErrorType {
		t.Fatalf("error %v, want a timeout", err)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("a hung init took %v to end, want about 2 s", d)
	}
	log := strings.Join(sink.messages("/aws/lambda/fn"), "\n")
	if !regexp.MustCompile(`START RequestId: hung .*\n.*Task timed out after 1.00 seconds\nEND RequestId: hung\nREPORT RequestId: hung\t`).MatchString(log) {
		t.Errorf("log:\n%s", log)
	}
}

// When the in-process API's caller cancels an invocation of a process
// function (package function's contract: a cancelled context ends the
// invocation), package function waits for the process function to stop
// the environment and write END and REPORT before it returns, so the
// invocation's Tail ends with them, as a Lambda log does (SPEC §6.5:
// Tail is the last 4 KB of the invocation's log). Before, it returned at
// once and the Tail ended at the handler's output.
func TestACancelledInvocationsTailEndsWithEndAndReport(t *testing.T) {
	pf, _ := managed(t, "python3.12", "slow.handler", map[string]string{"slow.py": "import time\ndef handler(e, c):\n    print('sleeping')\n    time.sleep(30)\n"}, nil)
	fn, err := function.New(function.Config{FunctionName: "fn", Timeout: 5}, pf, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		ctx, tail := function.WithLogTail(context.Background())
		ctx, cancel := context.WithCancel(ctx)
		go func() {
			// Cancel once the handler runs (its output is in the tail).
			for !strings.Contains(string(tail.Bytes()), "sleeping") {
				time.Sleep(10 * time.Millisecond)
			}
			cancel()
		}()
		res, err := fn.Invoke(ctx, []byte(`{}`))
		cancel()
		if err != nil || res.Error == nil || res.Error.Type != "Canceled" {
			t.Fatalf("invocation %d: %+v %v, want a Canceled function error", i, res, err)
		}
		log := string(tail.Bytes())
		if !regexp.MustCompile(`sleeping\nEND RequestId: \S+\nREPORT RequestId: \S+\t[^\n]*\n$`).MatchString(log) {
			t.Errorf("invocation %d: tail:\n%s", i, log)
		}
	}
}
