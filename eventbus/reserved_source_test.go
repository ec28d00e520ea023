package eventbus_test

import (
	"testing"

	"github.com/runnel-dev/runnel/eventbus"
)

// TestAReservedSourceIsNotAuthorized: an entry whose Source starts with
// "aws." fails with ErrorCode NotAuthorizedForSourceException and
// ErrorMessage "Not authorized for the source." (AWS's answer, quoted in
// aws-samples/serverless-patterns PR #3089; SPEC-fanout-tables §2.1: not
// retryable); the other entries are put. Before, it failed with
// InvalidArgument.
func TestAReservedSourceIsNotAuthorized(t *testing.T) {
	rn, _ := start(t)
	out := put(t, rn, eventbus.PutEventsRequestEntry{Source: "aws.ec2", DetailType: "x", Detail: `{}`}, orderEvent("ok", 1))
	if out.FailedEntryCount != 1 || out.Entries[1].EventId == "" {
		t.Fatalf("result %+v", out)
	}
	if e := out.Entries[0]; e.ErrorCode != "NotAuthorizedForSourceException" || e.ErrorMessage != "Not authorized for the source." || e.EventId != "" {
		t.Errorf("entry %+v, want NotAuthorizedForSourceException: Not authorized for the source.", e)
	}
}
