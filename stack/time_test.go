package stack_test

import (
	"strings"
	"testing"

	"github.com/runnel-dev/runnel/stack"
)

// TestABadTimeInTheStackFileNamesItsFieldAndResource: a schedule's
// StartDate and EndDate, and a mapping's StartingPositionTimestamp, are
// timestamps (Scheduler API_CreateSchedule: StartDate, EndDate; Lambda
// API_CreateEventSourceMapping: StartingPositionTimestamp), here Unix
// seconds or RFC 3339. A bad one is refused with the field and the
// resource named, and NaN or Inf is no time at all. Before, every bad time
// was reported as "StartingPositionTimestamp" with no resource, and NaN
// or Inf parsed to a time hundreds of millions of years away.
func TestABadTimeInTheStackFileNamesItsFieldAndResource(t *testing.T) {
	schedule := func(field, value string) string {
		return `
Schedules:
  - Name: nightly
    ScheduleExpression: rate(1 minute)
    ` + field + `: ` + value + `
    FlexibleTimeWindow: {Mode: "OFF"}
    Target: {Arn: fn, RoleArn: "arn:aws:iam::000000000000:role/s"}
`
	}
	mapping := func(value string) string {
		return `
EventSourceMappings:
  - EventSourceArn: orders
    FunctionName: fn
    StartingPosition: AT_TIMESTAMP
    StartingPositionTimestamp: ` + value + "\n"
	}
	for _, c := range []struct {
		doc  string
		want []string
	}{
		{schedule("EndDate", "2026-13-01"), []string{"Schedules[0] (nightly)", "ValidationException", "EndDate", `"2026-13-01"`, "RFC 3339"}},
		{schedule("StartDate", "NaN"), []string{"Schedules[0] (nightly)", "StartDate", `"NaN"`, "between 0 and 253402300799"}},
		{schedule("EndDate", "+Inf"), []string{"Schedules[0] (nightly)", "EndDate", `"+Inf"`, "between 0 and"}},
		{schedule("StartDate", "1e300"), []string{"StartDate", "between 0 and"}},
		{mapping("-Inf"), []string{"EventSourceMappings[0] (orders -> fn)", "InvalidParameterValueException", "StartingPositionTimestamp", `"-Inf"`}},
		{mapping("yesterday"), []string{"EventSourceMappings[0] (orders -> fn)", "StartingPositionTimestamp", `"yesterday"`}},
	} {
		_, err := stack.Parse([]byte(c.doc))
		if err == nil {
			t.Errorf("%s: taken, want an error", c.doc)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error %q does not say %q", err, w)
			}
		}
		if strings.Contains(c.doc, "Schedules") && strings.Contains(err.Error(), "StartingPositionTimestamp") {
			t.Errorf("a schedule's bad date is reported as %q", err)
		}
	}
	// Good times still parse, both ways.
	s, err := stack.Parse([]byte(schedule("StartDate", "1767225600.5") + "    EndDate: 2027-01-01T00:00:00Z\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Schedules[0].StartDate.UTC().Format("2006-01-02T15:04:05.000Z"); got != "2026-01-01T00:00:00.500Z" {
		t.Errorf("StartDate 1767225600.5 = %s", got)
	}
	if got := s.Schedules[0].EndDate.UTC().Format("2006-01-02"); got != "2027-01-01" {
		t.Errorf("EndDate = %s", got)
	}
}
