package procstat

import (
	"runtime"
	"testing"
)

func TestMemTotalMiB(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int
	}{
		{"MemTotal:       24570220 kB\nMemFree:        23615428 kB\n", 23994},
		{"MemFree:        1 kB\n", 0},
		{"MemTotal:\n", 0},
		{"", 0},
	} {
		if got := memTotalMiB(c.in); got != c.want {
			t.Errorf("memTotalMiB(%q) = %d, want %d", c.in, got, c.want)
		}
	}
	if runtime.GOOS == "linux" && MemTotalMiB() <= 0 {
		t.Error("MemTotalMiB() = 0 on Linux")
	}
}
