package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/llmbench/llmbench/internal/compare"
	"github.com/llmbench/llmbench/internal/report"
)

// testdata/v1-run is a run folder (summary.json, records.jsonl) written by llmbench before
// summary.json's schema v2, by
//
//	llmbench simulate --sim textbook --concurrency 1,4 --requests 8 --output-dir testdata/v1-run
//
// report and compare still read such folders: report rewrites the summary as v2 with the
// same description, compare reads it beside a v2 run.
func TestV1RunFolder(t *testing.T) {
	v1 := filepath.Join("testdata", "v1-run")
	out := t.TempDir()
	code, _, stderr := runCLI(t, context.Background(), "report", v1, "--output-dir", out)
	if code != 0 {
		t.Fatalf("report of a v1 folder: exit %d\n%s", code, stderr)
	}
	objects := func(dir string) map[string]json.RawMessage {
		b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	in, back := objects(v1), objects(out)
	if string(in["schema"]) != `"`+report.SchemaV1+`"` || string(back["schema"]) != `"`+report.SchemaV3+`"` {
		t.Errorf("schemas %s -> %s, want v1 -> v3", in["schema"], back["schema"])
	}
	for _, k := range []string{"workload", "load", "target", "end_reason", "seed", "started_at", "percentiles"} {
		var a, b any
		json.Unmarshal(in[k], &a)
		json.Unmarshal(back[k], &b)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: v1 %s, rewritten %s", k, in[k], back[k])
		}
	}
	a, b := readSummaryT(t, v1), readSummaryT(t, out)
	if len(a.Levels) != 2 || len(b.Levels) != 2 {
		t.Fatalf("%d and %d levels, want 2", len(a.Levels), len(b.Levels))
	}
	for i := range a.Levels {
		if a.Levels[i].Name != b.Levels[i].Name || a.Levels[i].Completed != 8 || b.Levels[i].Completed != 8 {
			t.Errorf("level %d: %q %d completed, recomputed %q %d", i, a.Levels[i].Name, a.Levels[i].Completed, b.Levels[i].Name, b.Levels[i].Completed)
		}
	}
	for _, f := range []string{"summary.csv", "report.html"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}

	v2 := t.TempDir()
	if code, _, stderr := runCLI(t, context.Background(), "simulate", "--sim", "textbook", "--concurrency", "1,4",
		"--requests", "8", "--no-progress", "--output-dir", v2); code != 0 {
		t.Fatalf("simulate: exit %d\n%s", code, stderr)
	}
	for _, pair := range [][2]string{{v1, v1}, {v1, v2}, {v2, v1}} {
		code, stdout, stderr := runCLI(t, context.Background(), "compare", pair[0], pair[1], "--format", "json")
		if code != 0 {
			t.Fatalf("compare %s %s: exit %d\n%s", pair[0], pair[1], code, stderr)
		}
		var c compare.Comparison
		if err := json.Unmarshal([]byte(stdout), &c); err != nil || len(c.Levels) != 2 {
			t.Errorf("compare %s %s: %v, %d levels matched, want 2\n%s", pair[0], pair[1], err, len(c.Levels), stdout)
		}
	}
}
