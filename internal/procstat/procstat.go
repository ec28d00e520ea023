// Package procstat reads the process's own resource figures for reports.
package procstat

import (
	"os"
	"strconv"
	"strings"
)

// PeakRSSMiB is the process's peak resident set (VmHWM of
// /proc/self/status) in MiB on Linux; 0 elsewhere.
func PeakRSSMiB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			f := strings.Fields(line)
			if len(f) < 2 {
				return 0
			}
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}

// MemTotalMiB is the machine's physical memory (MemTotal of /proc/meminfo)
// in MiB on Linux; 0 elsewhere or when it cannot be read.
func MemTotalMiB() int {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	return memTotalMiB(string(b))
}

func memTotalMiB(meminfo string) int {
	for _, line := range strings.Split(meminfo, "\n") {
		if strings.HasPrefix(line, "MemTotal:") {
			f := strings.Fields(line)
			if len(f) < 2 {
				return 0
			}
			kb, _ := strconv.Atoi(f[1])
			return kb / 1024
		}
	}
	return 0
}
