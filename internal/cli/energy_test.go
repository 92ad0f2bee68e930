package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/internal/gpumetrics"
)

// simulate estimates a GPU preset's energy per level (levels[].gpu, marked an estimate);
// a linear profile, which models no GPU, gets none.
func TestSimulateEstimatesEnergy(t *testing.T) {
	dir := t.TempDir()
	if code, _, stderr := runCLI(t, context.Background(), "simulate", "--concurrency", "1,16", "--requests", "32",
		"--output-dir", filepath.Join(dir, "roof"), "--no-progress", "--quiet"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	s := readSummaryT(t, filepath.Join(dir, "roof"))
	var perToken []float64
	for _, l := range s.Levels {
		g := l.GPU
		if g == nil || g.Source != gpumetrics.SourceEstimate || g.PowerW == nil || g.JoulesPerOutputToken == nil {
			t.Fatalf("%s: gpu %+v", l.Name, g)
		}
		if *g.PowerW < 75 || *g.PowerW > 700 {
			t.Errorf("%s: %.0f W outside an H200's idle 75 W and limit 700 W", l.Name, *g.PowerW)
		}
		perToken = append(perToken, *g.JoulesPerOutputToken)
	}
	if !(perToken[1] < perToken[0]/4) {
		t.Errorf("J per output token %v: batching 16 should cost far less a token than 1", perToken)
	}
	if code, _, _ := runCLI(t, context.Background(), "simulate", "--sim", "textbook", "--concurrency", "2", "--requests", "8",
		"--output-dir", filepath.Join(dir, "linear"), "--no-progress", "--quiet"); code != 0 || readSummaryT(t, filepath.Join(dir, "linear")).Levels[0].GPU != nil {
		t.Errorf("the linear textbook profile got an energy estimate (exit %d)", code)
	}
}

// plan prices the fleets' estimated power with --electricity and --pue, writes
// candidates[].power_kw, and refuses bad values naming their flags.
func TestPlanEnergyFlags(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "plan")
	code, stdout, stderr := runCLI(t, context.Background(), "plan", "--rate", "4", "--input-tokens", "512", "--output-tokens", "64",
		"--slo", "tpot:p99<=40ms", "--gpu", "h100", "--tp", "1", "--electricity", "0.1", "--pue", "1.5", "--output-dir", dir, "--no-progress")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	b, err := os.ReadFile(filepath.Join(dir, "plan.json"))
	if err != nil {
		t.Fatal(err)
	}
	var raw struct {
		PUE        float64                      `json:"pue"`
		Candidates []map[string]json.RawMessage `json:"candidates"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	var kw, energy float64
	if err := json.Unmarshal(raw.Candidates[0]["power_kw"], &kw); err != nil || !(kw > 0) {
		t.Fatalf("power_kw %s: %v", raw.Candidates[0]["power_kw"], err)
	}
	if err := json.Unmarshal(raw.Candidates[0]["energy_usd_per_hour"], &energy); err != nil || !near(energy, kw*1.5*0.1) {
		t.Errorf("energy_usd_per_hour %g, want power_kw %g × PUE 1.5 × 0.1", energy, kw)
	}
	if raw.PUE != 1.5 || !strings.Contains(stdout, "its GPUs draw about") {
		t.Errorf("pue %g; console:\n%s", raw.PUE, stdout)
	}
	code, _, stderr = runCLI(t, context.Background(), "plan", "--rate", "4", "--slo", "tpot:p99<=40ms", "--electricity", "-1",
		"--pue", "0.9", "--objective", "speed", "--output-dir", filepath.Join(t.TempDir(), "bad"))
	for _, want := range []string{"--electricity: -1", "--pue: 0.9", `--objective: "speed"`} {
		if code != ExitUsage || !strings.Contains(stderr, want) {
			t.Errorf("exit %d, stderr %q; want a usage error naming %s", code, stderr, want)
		}
	}
}

func near(a, b float64) bool { d := a - b; return d < 1e-9 && d > -1e-9 }
