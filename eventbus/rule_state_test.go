package eventbus_test

import (
	"context"
	"strings"
	"testing"

	"github.com/runnel-dev/runnel/eventbus"
)

// TestARuleEnabledWithCloudTrailEventsKeepsItsState: PutRule's State
// ENABLED_WITH_ALL_CLOUDTRAIL_MANAGEMENT_EVENTS (API_PutRule State enum)
// is kept and answered by DescribeRule and ListRules as given, and the
// rule routes events as an ENABLED one. Before, it was stored and read
// back as ENABLED.
func TestARuleEnabledWithCloudTrailEventsKeepsItsState(t *testing.T) {
	rn, clock := start(t)
	q := newQueue(t, rn, "q", nil)
	const state = eventbus.EnabledWithAllCloudTrailManagementEvents
	rule(t, rn, eventbus.Rule{Name: "ct", EventPattern: `{"source":["shop.orders"]}`, State: state}, eventbus.Target{Id: "q", Arn: q})
	if r, err := rn.Events.DescribeRule("", "ct"); err != nil || r.State != state {
		t.Fatalf("DescribeRule: %+v %v, want State %s", r, err, state)
	}
	if rs, err := rn.Events.ListRules("", ""); err != nil || len(rs) != 1 || rs[0].State != state {
		t.Fatalf("ListRules: %+v %v, want State %s", rs, err, state)
	}
	id := put(t, rn, orderEvent("paid", 1)).Entries[0].EventId
	if m := drain(t, rn, clock, "q", 1, 0)[0]; !strings.Contains(m.Body, id) {
		t.Errorf("delivered %s, want event %s", m.Body, id)
	}
	if _, err := rn.Events.PutRule(context.Background(), eventbus.Rule{Name: "bad", EventPattern: `{}`, State: "ON"}); err == nil ||
		!strings.Contains(err.Error(), "'state'") || !strings.Contains(err.Error(), state) {
		t.Errorf("State ON: %v, want a ValidationException naming state and its values", err)
	}
}
