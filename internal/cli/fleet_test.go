package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/internal/testtier"
)

// fleetArgs writes a profile of two replicas behind round-robin and returns the flags of a
// load on it: at concurrency 8 each replica decodes 4 in lock-step, the textbook's
// concurrency-4 step (10.88 ms), at twice its throughput.
func fleetArgs(t *testing.T) []string {
	t.Helper()
	prof := filepath.Join(t.TempDir(), "fleet.yaml")
	if err := os.WriteFile(prof, []byte(`cost: {kind: linear, prefill_ms_per_token: 0.02, decode_step_ms: 8, decode_growth: 0.12}
engine: {prefill: disaggregated}
deployment: {replicas: 2, router: round-robin}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	return []string{"--sim", prof, "--concurrency", "8", "--requests", "32", "--input-tokens", "512", "--output-tokens", "100", "--no-progress"}
}

// fleetTPOT is the TPOT P50 of fleetArgs' load, in ms.
const fleetTPOT = 10.88

// TestSimulateAndServeFleet: a profile's deployment of two replicas behind round-robin is
// simulated as a whole (fleetArgs).
func TestSimulateAndServeFleet(t *testing.T) {
	args := fleetArgs(t)
	dir := t.TempDir()
	code, stdout, stderr := runCLI(t, context.Background(), append([]string{"simulate", "--output-dir", dir}, args...)...)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "(2 replicas of tp 1 = 2 GPUs, router round-robin)") {
		t.Errorf("console does not describe the fleet:\n%s", stdout)
	}
	s := readSummaryT(t, dir)
	p50, _ := s.Levels[0].Metrics.Stat("tpot").Get(50)
	if d := p50.Value/fleetTPOT - 1; d > 0.01 || d < -0.01 {
		t.Errorf("TPOT P50 %.2f ms, want 10.88 (4 per replica)", p50.Value)
	}
	if tput := s.Levels[0].OutputThroughput; tput < 2*368*0.98 || tput > 2*368*1.02 {
		t.Errorf("output throughput %.1f tok/s, want twice one replica's 368", tput)
	}
}

// TestLiveFleetAgreesWithSimulate: a live run against the in-process fleet agrees with the
// simulated TPOT.
func TestLiveFleetAgreesWithSimulate(t *testing.T) {
	testtier.Accuracy(t, "live TPOT against a served fleet within 10 % of the simulated")
	args := fleetArgs(t)
	live := t.TempDir()
	if code, stdout, stderr := runCLI(t, context.Background(), append([]string{"run", "--output-dir", live}, args...)...); code != 0 {
		t.Fatalf("run exit %d\n%s\n%s", code, stdout, stderr)
	}
	lp, _ := readSummaryT(t, live).Levels[0].Metrics.Stat("tpot").Get(50)
	// Within 1 % on an idle machine; 10 % leaves room for a loaded CI host.
	if d := lp.Value/fleetTPOT - 1; d > 0.10 || d < -0.10 {
		t.Errorf("live TPOT P50 %.2f ms against the served fleet, simulated %.2f", lp.Value, fleetTPOT)
	}
}
