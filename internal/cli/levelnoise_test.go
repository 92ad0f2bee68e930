package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/llmbench/llmbench/internal/metrics"
)

// TestSimulateLevelsDrawNoiseOfTheirOwn: two identical levels of a noisy profile measure
// different P99s. A live server's levels do not replay one another's step noise; when the
// simulator's did, every level of a run shared one offset, and a fit over the levels (the
// SLO limit estimate) could not see the noise at all.
func TestSimulateLevelsDrawNoiseOfTheirOwn(t *testing.T) {
	dir := t.TempDir()
	prof := filepath.Join(dir, "noisy.yaml")
	yaml := "cost:\n  kind: linear\n  prefill_ms_per_token: 0.02\n  decode_step_ms: 8\n  decode_growth: 0.12\n  step_noise: 0.1\n"
	if err := os.WriteFile(prof, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "run")
	code, _, stderr := runCLI(t, t.Context(), "simulate", "--sim", prof, "--concurrency", "8,8", "--requests", "64",
		"--input-tokens", "64", "--output-tokens", "32", "--output-dir", out, "--quiet")
	if code != ExitOK {
		t.Fatalf("simulate: exit %d\n%s", code, stderr)
	}
	s := readSummaryT(t, out)
	var p99 []float64
	for _, l := range s.Levels {
		st := l.Metrics.Stat(metrics.KeyTPOT)
		q, _ := st.Get(99)
		p99 = append(p99, q.Value)
	}
	if len(p99) != 2 || p99[0] == p99[1] {
		t.Errorf("TPOT P99 of two identical noisy levels: %v, want two draws of the noise", p99)
	}
}
