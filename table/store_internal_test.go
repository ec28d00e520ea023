package table

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
)

// A write stall of the index store holds every table write of the
// process: the operator must see when it began, why, and how long it
// lasted.
func TestIndexStoreWriteStallsAreLoggedWithReasonAndLength(t *testing.T) {
	var buf bytes.Buffer
	l := stallListener(slog.New(slog.NewTextHandler(&buf, nil)))
	l.WriteStallBegin(pebble.WriteStallBeginInfo{Reason: "memtable count limit reached"})
	l.WriteStallEnd()
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d log lines, want 2:\n%s", len(lines), buf.String())
	}
	if !strings.Contains(lines[0], "level=WARN") || !strings.Contains(lines[0], `reason="memtable count limit reached"`) {
		t.Errorf("stall start logged as %q; want a warning with the reason", lines[0])
	}
	if !strings.Contains(lines[1], "level=WARN") || !strings.Contains(lines[1], "duration=") {
		t.Errorf("stall end logged as %q; want a warning with the duration", lines[1])
	}
}
