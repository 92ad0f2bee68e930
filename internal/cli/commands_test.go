package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/internal/compare"
)

// compare finds no difference beyond noise between a run and itself, and flags a shift.
func TestCompareIdenticalAndShifted(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	common := []string{"simulate", "--sim", "h200-llama-3.1-8b", "--concurrency", "4,16", "--requests", "80",
		"--output-tokens", "uniform:20:60"}
	if code, _, stderr := runCLI(t, context.Background(), append(common, "--input-tokens", "normal:400:100", "--output-dir", a)...); code != 0 {
		t.Fatal(stderr)
	}
	// Four times longer prompts: prefill, hence TTFT, grows.
	if code, _, stderr := runCLI(t, context.Background(), append(common, "--input-tokens", "normal:1600:100", "--output-dir", b)...); code != 0 {
		t.Fatal(stderr)
	}
	decode := func(out string) compare.Comparison {
		var c compare.Comparison
		if err := json.Unmarshal([]byte(out), &c); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return c
	}
	code, out, stderr := runCLI(t, context.Background(), "compare", a, a, "--format", "json")
	if code != 0 {
		t.Fatal(stderr)
	}
	same := decode(out)
	if len(same.Levels) != 2 {
		t.Fatalf("%d levels matched, want 2", len(same.Levels))
	}
	for _, l := range same.Levels {
		for _, f := range l.Figures {
			if f.Significant != nil && *f.Significant {
				t.Errorf("%s %s: identical runs differ beyond noise", l.Load, f.Name)
			}
			if f.Delta != nil && *f.Delta != 0 {
				t.Errorf("%s %s: identical runs differ by %v", l.Load, f.Name, *f.Delta)
			}
		}
	}
	code, out, stderr = runCLI(t, context.Background(), "compare", a, b, "--format", "json")
	if code != 0 {
		t.Fatal(stderr)
	}
	shifted := decode(out)
	found := false
	for _, l := range shifted.Levels {
		for _, f := range l.Figures {
			if f.Name == "TTFT P50 (ms)" {
				found = true
				if f.Significant == nil || !*f.Significant || *f.Delta <= 0 {
					t.Errorf("%s: TTFT grew with 4x prompts but compare says %+v", l.Load, f)
				}
			}
		}
	}
	if !found {
		t.Error("no TTFT P50 figure in the comparison")
	}
	for _, format := range []string{"table", "markdown"} {
		code, out, _ := runCLI(t, context.Background(), "compare", a, b, "--format", format)
		if code != 0 || !strings.Contains(out, "TTFT P50") || !strings.Contains(out, "concurrency 16") {
			t.Errorf("--format %s: exit %d\n%s", format, code, out)
		}
	}
	if code, _, _ := runCLI(t, context.Background(), "compare", a, b, "--format", "yaml"); code != ExitUsage {
		t.Errorf("--format yaml: exit %d, want %d", code, ExitUsage)
	}

	// It names both runs, and says the lengths differ.
	if shifted.A != a || shifted.B != b || shifted.RunA.Model == "" || len(shifted.Warnings) != 1 ||
		!strings.Contains(shifted.Warnings[0], "input lengths") || shifted.Targets != "" {
		t.Errorf("runs %q %q %+v, warnings %q, targets %q", shifted.A, shifted.B, shifted.RunA, shifted.Warnings, shifted.Targets)
	}
	if len(same.Warnings) != 0 {
		t.Errorf("identical runs: warnings %q", same.Warnings)
	}
	// A CI gate: 4x prompts make TTFT a regression beyond 5% and beyond noise; a run against
	// itself is none.
	code, out, stderr = runCLI(t, context.Background(), "compare", a, b, "--fail-on-regression", "5%")
	if code != ExitRegression || !strings.Contains(out, "REGRESSION: concurrency 4 TTFT P50") || !strings.Contains(stderr, "regressions beyond 5%") {
		t.Errorf("--fail-on-regression on a slower B: exit %d\n%s\n%s", code, out, stderr)
	}
	// The gate holds in every format: a JSON document lists the regressions and exits 5 too.
	code, out, _ = runCLI(t, context.Background(), "compare", a, b, "--fail-on-regression", "5%", "--format", "json")
	if c := decode(out); code != ExitRegression || len(c.Regressions) == 0 {
		t.Errorf("--fail-on-regression --format json on a slower B: exit %d, regressions %q", code, c.Regressions)
	}
	if code, out, _ := runCLI(t, context.Background(), "compare", a, a, "--fail-on-regression", "0.05"); code != 0 || !strings.Contains(out, "no regression beyond 5.0%") {
		t.Errorf("--fail-on-regression on the same run: exit %d\n%s", code, out)
	}
	if code, _, _ := runCLI(t, context.Background(), "compare", a, b, "--fail-on-regression", "lots"); code != ExitUsage {
		t.Errorf("--fail-on-regression lots: exit %d", code)
	}
	// Different targets are said to be a comparison of targets.
	c2 := t.TempDir()
	if code, _, stderr := runCLI(t, context.Background(), append(common, "--sim", "textbook", "--input-tokens", "normal:400:100", "--output-dir", c2)...); code != 0 {
		t.Fatal(stderr)
	}
	code, out, _ = runCLI(t, context.Background(), "compare", a, c2, "--format", "json")
	if c := decode(out); code != 0 || !strings.Contains(c.Targets, "two targets") {
		t.Errorf("different profiles: exit %d, targets %q", code, c.Targets)
	}
}

// llmbench tokenize --jsonl prints the reference implementations' ids, for the tokenizer
// files and reference ids committed in the tokenizer package's testdata.
func TestTokenizeMatchesReferences(t *testing.T) {
	const ref = "../tokenizer/testdata"
	texts, err := os.ReadFile(filepath.Join(ref, "reference/texts.json"))
	if err != nil {
		t.Fatal(err)
	}
	var list []string
	if err := json.Unmarshal(texts, &list); err != nil {
		t.Fatal(err)
	}
	var in bytes.Buffer
	for _, s := range list {
		b, _ := json.Marshal(s)
		in.Write(append(b, '\n'))
	}
	for spec, want := range map[string]string{
		"o200k_base":                      "reference/tt_o200k_base.json",
		"cl100k_base":                     "reference/tt_cl100k_base.json",
		ref + "/qwen3/tokenizer.json.gz":  "reference/ref_qwen3.json",
		ref + "/llama3/tokenizer.json.gz": "reference/ref_llama3.json",
		ref + "/gpt4o/tokenizer.json.gz":  "reference/ref_gpt4o.json",
	} {
		var out, errb bytes.Buffer
		code := Main(context.Background(), []string{"tokenize", "--tokenizer", spec, "--jsonl"},
			Stdio{In: bytes.NewReader(in.Bytes()), Out: &out, Err: &errb})
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", spec, code, errb.String())
		}
		wantB, err := os.ReadFile(filepath.Join(ref, want))
		if err != nil {
			t.Fatal(err)
		}
		var wantIDs [][]int
		json.Unmarshal(wantB, &wantIDs)
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		if len(lines) != len(wantIDs) {
			t.Fatalf("%s: %d lines for %d texts", spec, len(lines), len(wantIDs))
		}
		for i, line := range lines {
			var got []int
			json.Unmarshal([]byte(line), &got)
			if !equalInts(got, wantIDs[i]) {
				t.Errorf("%s: text %d %q:\n got %v\nwant %v", spec, i, list[i], got, wantIDs[i])
			}
		}
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
