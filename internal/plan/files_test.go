package plan

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
	dir := t.TempDir()
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
}
