package async_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/function/async"
	"github.com/runnel-dev/runnel/internal/testenv"
)

// TestEveryAttemptOfAnEventRunsWithItsRequestID: Lambda retries an
// asynchronous event with the same request id ("Duplicate invocations
// that return errors or timeout and that have the same request ID
// indicate that the Lambda service retried the function",
// knowledge-center lambda-function-duplicate-invocations): the id Invoke
// returned, the one the destination record names. Each attempt ran with
// a new UUID, so a handler keyed on context.aws_request_id repeated its
// side effect on a retry, and the record's requestId was in no log line.
func TestEveryAttemptOfAnEventRunsWithItsRequestID(t *testing.T) {
	clock := newClock()
	rn := testenv.Start(t, testenv.Options{Clock: clock})
	dest := createQueue(t, rn, "failures", nil)
	var mu sync.Mutex
	var ids []string
	handler := "async-request-id"
	function.Register(handler, func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
		lc, _ := lambdacontext.FromContext(ctx)
		mu.Lock()
		ids = append(ids, lc.AwsRequestID)
		mu.Unlock()
		return nil, errors.New("fails every time")
	})
	if _, err := rn.Functions.CreateFunction(context.Background(), function.Config{FunctionName: "f", Handler: handler}); err != nil {
		t.Fatal(err)
	}
	put(t, rn, async.EventInvokeConfig{FunctionName: "f", MaximumRetryAttempts: ptr(1), DestinationConfig: onFailure(dest)})
	out := invoke(t, rn, "f", async.Event, `{"n":1}`)
	waitStats(t, rn, "f", "first attempt", func(s async.Stats) bool { return s.Retried == 1 })
	clock.Advance(time.Minute)
	waitStats(t, rn, "f", "retries exhausted", func(s async.Stats) bool { return s.DestinationDeliveries == 1 })
	mu.Lock()
	defer mu.Unlock()
	if len(ids) != 2 || ids[0] != out.RequestID || ids[1] != out.RequestID {
		t.Fatalf("attempts ran with request ids %v; want both %s, the id Invoke returned", ids, out.RequestID)
	}
	var rec struct {
		RequestContext struct{ RequestID string } `json:"requestContext"`
	}
	if err := json.Unmarshal([]byte(onlyMessage(t, rn, "failures").Body), &rec); err != nil || rec.RequestContext.RequestID != out.RequestID {
		t.Fatalf("the failure record names %q (%v); want %s", rec.RequestContext.RequestID, err, out.RequestID)
	}
}
