package trades

import "testing"

func TestDefaultMemoryLimit(t *testing.T) {
	for _, c := range []struct{ total, want int }{
		{0, 12 << 10},        // unknown: the published machine's figure
		{24105, 12 << 10},    // the published machine (MemTotal 24,684,084 kB)
		{64 << 10, 12 << 10}, // capped
		{8 << 10, 5 << 10},   // five eighths of a small machine
	} {
		if got := defaultMemoryLimitMiB(c.total); got != c.want {
			t.Errorf("defaultMemoryLimitMiB(%d) = %d, want %d", c.total, got, c.want)
		}
	}
}
