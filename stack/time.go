package stack

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/runnel-dev/runnel/awserr"
)

// maxUnixSeconds is 9999-12-31T23:59:59Z, the last time RFC 3339 writes.
const maxUnixSeconds = 253402300799

// yamlTime is a time in a stack file (a mapping's
// StartingPositionTimestamp, a schedule's StartDate and EndDate): Unix
// seconds, 0..253402300799 with a fraction allowed (as the Lambda and
// Scheduler APIs take it), or an RFC 3339 time (2006-01-02T15:04:05Z).
// A value that is neither (NaN and Inf included) is kept in err, and
// Parse reports it with the field and the resource (checkTimes): the
// decoder does not know which field it fills.
type yamlTime struct {
	time.Time
	err error
}

func (t *yamlTime) UnmarshalYAML(n *yaml.Node) error {
	t.Time, t.err = parseTime(n)
	return nil
}

func parseTime(n *yaml.Node) (time.Time, error) {
	if f, err := strconv.ParseFloat(n.Value, 64); err == nil {
		// Before, NaN and Inf were taken: NaN became a time in year
		// -292277022657, Inf one in 292277026596.
		if math.IsNaN(f) || f < 0 || f > maxUnixSeconds {
			return time.Time{}, fmt.Errorf("%q (line %d) is out of range: Unix seconds must be between 0 and %d (9999-12-31T23:59:59Z)", n.Value, n.Line, maxUnixSeconds)
		}
		sec := math.Floor(f)
		return time.Unix(int64(sec), int64((f-sec)*1e9)).UTC(), nil
	}
	v, err := time.Parse(time.RFC3339, n.Value)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q (line %d) is neither Unix seconds nor an RFC 3339 time (2006-01-02T15:04:05Z)", n.Value, n.Line)
	}
	return v, nil
}

// checkTimes reports the first bad time of the file, naming the item, the
// resource and the field, with the error code of the service that takes
// it: EventSourceMappings[0] (orders -> fn): InvalidParameterValueException:
// StartingPositionTimestamp: ..., or Schedules[0] (nightly):
// ValidationException: EndDate: .... Before, every bad time was reported
// as StartingPositionTimestamp, with no resource.
func (s *Stack) checkTimes() error {
	for i, m := range s.EventSourceMappings {
		if t := m.StartingPositionTimestamp; t != nil && t.err != nil {
			return fmt.Errorf("EventSourceMappings[%d] (%s -> %s): %w", i, m.EventSourceArn, m.FunctionName,
				awserr.New(awserr.ErrInvalidParameterValue, "StartingPositionTimestamp: %v", t.err))
		}
	}
	for i, sc := range s.Schedules {
		for _, f := range []struct {
			name string
			t    *yamlTime
		}{{"StartDate", sc.StartDate}, {"EndDate", sc.EndDate}} {
			if f.t != nil && f.t.err != nil {
				return fmt.Errorf("Schedules[%d] (%s): %w", i, sc.Name, awserr.New(awserr.ErrValidation, "%s: %v", f.name, f.t.err))
			}
		}
	}
	return nil
}
