package cputime

import (
	"runtime"
	"testing"
	"time"
)

// Spinning for a while shows up as CPU time.
func TestProcessCounts(t *testing.T) {
	before, ok := Process()
	if !ok {
		t.Skipf("no process CPU time on %s", runtime.GOOS)
	}
	x := 0
	for deadline := time.Now().Add(50 * time.Millisecond); time.Now().Before(deadline); {
		x++
	}
	after, _ := Process()
	if d := after - before; d < 10*time.Millisecond || d > time.Minute {
		t.Errorf("50 ms of spinning (%d rounds) took %v of CPU", x, d)
	}
}
