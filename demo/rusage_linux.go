//go:build linux

package demo

import "syscall"

// childrenPeakRSSMiB is the peak resident set, in MiB, of the largest
// child process this process has waited for (getrusage RUSAGE_CHILDREN,
// ru_maxrss in KiB on Linux); 0 when it cannot be read.
func childrenPeakRSSMiB() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru) != nil {
		return 0
	}
	return float64(ru.Maxrss) / 1024
}
