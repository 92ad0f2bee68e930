// Package testtier is the one switch between the two tiers of tests (docs/testing.md).
//
// The default tier is what `go test ./...` runs: hermetic, and free of wall-clock bounds
// that a loaded machine can break, so it passes on a busy 2-core laptop. The accuracy tier
// holds the tests whose point is real time (a dispatcher's lateness, a calibration's
// predictions against a live server, event-time error under load): they run only when
// LLMBENCH_ACCURACY=1, as .ci/run's own steps set it.
package testtier

import (
	"os"
	"runtime/debug"
	"testing"
)

// Env is the variable that turns the accuracy tier on.
const Env = "LLMBENCH_ACCURACY"

// Enabled reports whether the accuracy tier is on.
func Enabled() bool { return os.Getenv(Env) == "1" }

// Accuracy skips t unless the accuracy tier is on; what says what real-clock figure the
// test holds, for the skip message.
func Accuracy(t testing.TB, what string) {
	t.Helper()
	if !Enabled() {
		t.Skipf("accuracy tier (%s): run with %s=1 go test -run '^%s$' (docs/testing.md)", what, Env, t.Name())
	}
}

// Long skips t under -short: a slow test that asserts no wall-clock bound, left out of the
// quick loop while editing but part of the default tier.
func Long(t testing.TB, why string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("-short: %s", why)
	}
}

// GCPercent is the collector's target in the test binaries that call Main. Their tests
// simulate thousands of short runs and fits whose live heap is a few MiB, so at Go's default
// 100 the collector ran every few MiB allocated, and its fixed cost per cycle (stopping each
// goroutine, sweeping, returning pages to the OS) took a third to a half of their CPU: at 400
// TestBatchMeansCoverage took 3.0-3.2 s of user CPU against 5.9-6.8 s, at 68-84 MiB peak RSS
// against 24-26 MiB (docs/testing.md, "The budget"). No test measures the heap it runs with.
const GCPercent = 400

// Main runs a package's tests at GCPercent, unless GOGC is set in the environment:
//
//	func TestMain(m *testing.M) { os.Exit(testtier.Main(m)) }
func Main(m *testing.M) int {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(GCPercent)
	}
	return m.Run()
}
