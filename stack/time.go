package stack

import (
	"fmt"
	"strconv"
	"time"

	"gopkg.in/yaml.v3"
)

// yamlTime is StartingPositionTimestamp in a stack file: Unix seconds (as
// the Lambda API takes it) or an RFC 3339 time.
type yamlTime struct{ time.Time }

func (t *yamlTime) UnmarshalYAML(n *yaml.Node) error {
	if f, err := strconv.ParseFloat(n.Value, 64); err == nil {
		sec := int64(f)
		t.Time = time.Unix(sec, int64((f-float64(sec))*1e9)).UTC()
		return nil
	}
	v, err := time.Parse(time.RFC3339, n.Value)
	if err != nil {
		return fmt.Errorf("StartingPositionTimestamp: %q is neither Unix seconds nor RFC 3339", n.Value)
	}
	t.Time = v
	return nil
}
