//go:build unix && !linux

package testproc

import "syscall"

// sysProcAttr: a group of its own. There is no parent-death signal outside Linux: the
// interrupt handler and t.Cleanup kill the group, a -timeout panic does not.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
