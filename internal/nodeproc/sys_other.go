//go:build !linux

package nodeproc

import "syscall"

// sysProcAttr: no parent-death signal outside Linux; Cluster.Close stops
// the nodes.
func sysProcAttr() *syscall.SysProcAttr { return nil }
