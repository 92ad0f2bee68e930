package plan

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/bench"
	"github.com/llmbench/llmbench/internal/fielderr"
	"github.com/llmbench/llmbench/internal/sim"
)

// TestWriteFiles: a plan that met the SLOs writes plan.json, plan.html and best.yaml, the
// chosen profile headed by the command that checks it.
func TestWriteFiles(t *testing.T) {
	base := textbook(t)
	base.Deployment.Router = sim.RouterRoundRobin
	pl, err := Run(context.Background(), Config{Base: base, Traffic: traffic(t, 20, "constant", 512, 128),
		Metrics: slos(t, "tpot:p99<=20ms"), MaxReplicas: 64, Workers: 1, Price: listPrice})
	if err != nil || pl.BestCandidate() == nil {
		t.Fatalf("Run: %v (best %v)", err, pl.BestCandidate())
	}
	dir := filepath.Join(t.TempDir(), "a", "plan") // made, with its parent
	if err := WriteFiles(dir, pl, "llmbench simulate --sim best.yaml"); err != nil {
		t.Fatal(err)
	}
	for _, name := range Files {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Error(err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "best.yaml")); !strings.Contains(string(b), "Check it:\n#   llmbench simulate --sim best.yaml") || pl.BestProfile != "best.yaml" {
		t.Errorf("best.yaml (plan's best_profile %q):\n%s", pl.BestProfile, b)
	}
	var field *fielderr.Error
	if err := WriteFiles(filepath.Join(dir, "plan.json", "sub"), pl, ""); !errors.As(err, &field) || field.Field != "Output.Dir" {
		t.Errorf("a folder under a file: %v, want an error of Output.Dir", err)
	}
}

// TestCheckOutput: a folder holding any of an earlier plan's files is refused, unless the
// plan is to replace them; a plan's default folder is named for when it was made.
func TestCheckOutput(t *testing.T) {
	dir := t.TempDir()
	if err := CheckOutput(bench.Output{Dir: dir}); err != nil {
		t.Errorf("an empty folder: %v", err)
	}
	if err := CheckOutput(bench.Output{Dir: filepath.Join(dir, "none")}); err != nil {
		t.Errorf("a folder not made yet: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "plan.html"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var held *HeldError
	if err := CheckOutput(bench.Output{Dir: dir}); !errors.As(err, &held) || *held != (HeldError{Dir: dir, File: "plan.html"}) {
		t.Errorf("a folder with plan.html: %v", err)
	}
	if err := CheckOutput(bench.Output{Dir: dir, Overwrite: true}); err != nil {
		t.Errorf("overwriting: %v", err)
	}
	if got := DefaultDir(time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("x", 3600))); got != "llmbench-results/plan-20260102T020405Z" {
		t.Errorf("DefaultDir: %s", got)
	}
}
