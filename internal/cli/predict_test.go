package cli

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// simulate states how far its figures can be trusted: a roofline profile's levels carry the
// 90 % prediction interval of the validation rows (summary.json and the console), a linear
// model's, which stands for no measured server, none.
func TestSimulatePredictionInterval(t *testing.T) {
	dir := t.TempDir()
	code, stdout, stderr := runCLI(t, context.Background(), "simulate", "--concurrency", "4", "--requests", "40",
		"--output-dir", filepath.Join(dir, "roof"), "--no-progress")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	for _, want := range []string{"Prediction Interval (90%)", "(90% PI ", "the validation's closed-loop groups' errors"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("console lacks %q:\n%s", want, stdout)
		}
	}
	l := readSummaryT(t, filepath.Join(dir, "roof")).Levels[0]
	iv := l.PredictionInterval
	if iv == nil {
		t.Fatal("no prediction_interval")
	}
	p, _ := l.Metrics.Stat("tpot").Get(50)
	r, ok := iv.Get("tpot_ms.p50")
	if !ok || !(r[0] < r[1]) || r[0] <= 0 {
		t.Errorf("tpot_ms.p50 interval %v around %.2f", r, p.Value)
	}
	if _, ok := iv.Get("output_throughput"); !ok {
		t.Error("no output_throughput interval")
	}
	code, stdout, _ = runCLI(t, context.Background(), "simulate", "--sim", "textbook", "--concurrency", "4", "--requests", "8",
		"--output-dir", filepath.Join(dir, "linear"), "--no-progress")
	if code != 0 || strings.Contains(stdout, "Prediction Interval") || readSummaryT(t, filepath.Join(dir, "linear")).Levels[0].PredictionInterval != nil {
		t.Errorf("the textbook (linear) profile got an interval (exit %d)", code)
	}
}
