package testenv

import (
	"syscall"
	"testing"
	"time"
)

// CPUTime is the process's CPU time so far, user and system (an
// embedded NATS server's included).
func CPUTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// ReportCPU reports the CPU time per op since start (CPUTime) as
// "cpu-us/op": on a loaded machine a steadier measure of the work per
// op than ns/op.
func ReportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64((CPUTime()-start).Microseconds())/float64(b.N), "cpu-us/op")
}
