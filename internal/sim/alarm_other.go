//go:build !linux

package sim

import "time"

// fineTimer exists on Linux only, where Go's timers are coarse (alarm_linux.go); elsewhere
// the runtime waits for timers with sub-ms precision (kqueue, Windows' high-resolution
// timers) and the Go timer paces the loop alone.
type fineTimer struct{}

func newFineTimer() *fineTimer { return nil }

func (*fineTimer) C() <-chan struct{} { return nil }
func (*fineTimer) set(time.Duration)  {}
func (*fineTimer) stop()              {}
func (*fineTimer) close()             {}
