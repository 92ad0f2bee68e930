//go:build !unix

package testproc

import (
	"os"
	"syscall"
)

// Without process groups, the process alone is killed.
func sysProcAttr() *syscall.SysProcAttr { return nil }

func killGroup(p *os.Process) error {
	if p == nil {
		return nil
	}
	return p.Kill()
}
