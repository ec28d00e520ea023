package demo

import (
	"context"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/runnel-dev/runnel/internal/testenv"
)

// TestFailedInvocationsCountInvocationsNotMessages: "N invocations, M
// failed" (JSON failed_invocations) counts invocations, so M is at most
// N: a Retry-DLQ invocation reporting three failed messages (Lambda's
// ReportBatchItemFailures) is one failed invocation. It used to add one
// per failed message, so M could exceed the invocations it was a share
// of.
func TestFailedInvocationsCountInvocationsNotMessages(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	p := &pipeline{streams: rn.Streams, flakyTries: map[string]int{}}
	ev := events.SQSEvent{Records: []events.SQSMessage{
		{MessageId: "a", Body: "not a pointer"},
		{MessageId: "b", Body: "not a pointer"},
		{MessageId: "c", Body: "not a pointer"},
	}}
	resp, err := p.HandleSQS(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.BatchItemFailures) != 3 {
		t.Fatalf("%d failed messages reported, want 3", len(resp.BatchItemFailures))
	}
	if inv, failed := p.invokes.Load(), p.failed.Load(); inv != 1 || failed != 1 {
		t.Fatalf("invocations %d, failed %d; want 1 and 1", inv, failed)
	}
}
