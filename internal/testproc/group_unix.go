//go:build unix

package testproc

import (
	"os"
	"syscall"
)

// killGroup kills p's process group: p and whatever it started.
func killGroup(p *os.Process) error {
	if p == nil {
		return nil
	}
	if err := syscall.Kill(-p.Pid, syscall.SIGKILL); err != nil && err != syscall.ESRCH {
		return err
	}
	return nil
}
