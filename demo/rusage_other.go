//go:build !linux

package demo

// childrenPeakRSSMiB is 0 where the children's peak resident set is not
// read (Linux only).
func childrenPeakRSSMiB() float64 { return 0 }
