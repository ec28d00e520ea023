package trades

import (
	"testing"

	"github.com/runnel-dev/runnel/table"
)

func TestDefaultMemoryLimit(t *testing.T) {
	for _, c := range []struct {
		total int
		index string
		want  int
	}{
		{0, table.IndexMemory, 12 << 10},        // unknown: the published machine's figure
		{24105, table.IndexMemory, 12 << 10},    // the published machine (MemTotal 24,684,084 kB)
		{64 << 10, table.IndexMemory, 12 << 10}, // capped
		{8 << 10, table.IndexMemory, 5 << 10},   // five eighths of a small machine
		{0, table.IndexDisk, 2560},              // the index store: under 3 GiB of RSS
		{24105, table.IndexDisk, 2560},
		{2 << 10, table.IndexDisk, 1280}, // five eighths of a small machine
	} {
		if got := defaultMemoryLimitMiB(c.total, c.index); got != c.want {
			t.Errorf("defaultMemoryLimitMiB(%d, %s) = %d, want %d", c.total, c.index, got, c.want)
		}
	}
}
