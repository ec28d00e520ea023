package nodeproc

import "syscall"

// sysProcAttr makes the kernel kill a node with SIGKILL when the process
// that started it dies, so that a killed demo or test leaves no node
// behind.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
