package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// plan --model-config plans a config.json's model: gpt-oss-120b, as shipped, on H100 and
// L4 (24 GB: it does not fit), L4 marked as a GPU no measurement has checked; best.yaml
// names the config.json and re-simulates; an unknown architecture is refused.
func TestPlanModelConfig(t *testing.T) {
	cfgPath := filepath.Join("..", "sim", "testdata", "hf-configs", "gpt-oss-120b", "config.json")
	dir := t.TempDir()
	code, stdout, stderr := runCLI(t, context.Background(), "plan", "--model-config", cfgPath, "--gpu", "h100,l4", "--tp", "1",
		"--rate", "1", "--input-tokens", "256", "--output-tokens", "64", "--slo", "ttft:p90<=2s,tpot:p90<=60ms", "--max-replicas", "2",
		"--output-dir", dir, "--no-progress")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	pl := readPlan(t, dir)
	if pl.Model != "gpt-oss-120b" || len(pl.Candidates) != 2 || pl.Best == nil {
		t.Fatalf("model %q, %d candidates, best %v\n%s", pl.Model, len(pl.Candidates), pl.Best, stdout)
	}
	for _, c := range pl.Candidates {
		if c.DP != 1 || c.ExpertParallel || c.GPUCalibrated != (c.GPU == "h100") || (c.GPU == "l4") == c.Fits {
			t.Errorf("%s: dp %d, ep %v, calibrated %v, fits %v: %s", c.Describe(), c.DP, c.ExpertParallel, c.GPUCalibrated, c.Fits, c.Reason)
		}
	}
	if !strings.Contains(stdout, "Not calibrated on this GPU: l4") {
		t.Errorf("console does not mark l4:\n%s", stdout)
	}
	best, err := os.ReadFile(filepath.Join(dir, "best.yaml"))
	if err != nil || !strings.Contains(string(best), "model_config: ") {
		t.Fatalf("best.yaml: %v\n%s", err, best)
	}
	out := t.TempDir()
	if code, so, se := runCLI(t, context.Background(), "simulate", "--sim", filepath.Join(dir, "best.yaml"), "--rate", "1", "--requests", "50",
		"--input-tokens", "256", "--output-tokens", "64", "--output-dir", out, "--no-progress", "--quiet"); code != 0 {
		t.Errorf("simulate best.yaml: exit %d\n%s\n%s", code, so, se)
	}
	mamba := filepath.Join("..", "sim", "testdata", "hf-configs", "mamba-2.8b", "config.json")
	for _, args := range [][]string{
		{"plan", "--model-config", mamba, "--rate", "1", "--slo", "ttft:p90<=2s", "--output-dir", t.TempDir()},
		{"simulate", "--model-config", mamba, "--rate", "1", "--requests", "5", "--output-dir", t.TempDir()},
		{"calibrate", t.TempDir(), "--output", filepath.Join(t.TempDir(), "fit.yaml"), "--model-config", mamba, "--gpu", "h200"},
	} {
		code, so, se := runCLI(t, context.Background(), args...)
		if code == 0 || !strings.Contains(se, `architecture "MambaForCausalLM" is not one llmbench models`) || !strings.Contains(se, "state_size") {
			t.Errorf("%s: exit %d\n%s\n%s", args[0], code, so, se)
		}
	}
}
