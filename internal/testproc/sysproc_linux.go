package testproc

import "syscall"

// sysProcAttr: a group of its own, and SIGKILL when the test binary's spawning thread
// (alive as long as the binary) dies, however it dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
