package bench

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/report"
)

// A run written again elsewhere is a whole run there, its records beside its recomputed
// files; a folder holding another run's records is refused.
func TestRewrite(t *testing.T) {
	cfg := testConfig(t)
	if _, err := Run(context.Background(), cfg, time.Now(), fakeLevels); err != nil {
		t.Fatal(err)
	}
	dir := cfg.Output.Dir
	sum, err := report.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "again", "run")
	if _, err := Rewrite(dir, out, "vllm", sum, metrics.Config{Percentiles: sum.Percentiles}); err != nil {
		t.Fatal(err)
	}
	want := []string{"records.jsonl", "report.html", "summary.csv", "summary.json", "vllm-0.json", "vllm-1.json"}
	if got := RunFiles(out); !slices.Equal(got, want) {
		t.Errorf("rewritten run's files %v, want %v", got, want)
	}
	if _, err := Rewrite(dir, dir, "", sum, metrics.Config{Percentiles: sum.Percentiles}); err != nil {
		t.Errorf("in place: %v", err)
	}
	other := testConfig(t)
	other.Levels = other.Levels[:1]
	if _, err := Run(context.Background(), other, time.Now(), fakeLevels); err != nil {
		t.Fatal(err)
	}
	if _, err := Rewrite(dir, other.Output.Dir, "", sum, metrics.Config{Percentiles: sum.Percentiles}); !errors.As(err, new(*record.OccupiedError)) {
		t.Errorf("into another run: %v, want an *record.OccupiedError", err)
	}
}
