package cputime

import (
	"runtime"
	"testing"
	"time"
)

// Spinning shows up as CPU time. How much of the wall time the spinning gets depends on
// what else the machine runs (beside another CPU-bound process, 50 ms of wall time read 8
// ms of CPU), so the test spins until the process's CPU time has grown by 20 ms, and holds
// only that it does grow, and by no more than the cores could give in the wall time taken.
func TestProcessCounts(t *testing.T) {
	before, ok := Process()
	if !ok {
		t.Skipf("no process CPU time on %s", runtime.GOOS)
	}
	start := time.Now()
	x, d := 0, time.Duration(0)
	for d < 20*time.Millisecond {
		if time.Since(start) > 30*time.Second {
			t.Fatalf("30 s of spinning (%d rounds) took %v of CPU", x, d)
		}
		for range 1 << 16 {
			x++
		}
		after, _ := Process()
		d = after - before
	}
	// The clock's granularity (a tick, at most 10 ms) on top of the cores' share.
	if wall := time.Since(start); d > time.Duration(runtime.NumCPU())*wall+10*time.Millisecond {
		t.Errorf("%v of spinning took %v of CPU, more than %d cores give", wall, d, runtime.NumCPU())
	}
}
