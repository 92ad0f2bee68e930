package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/internal/testtier"
)

// summaryMap reads dir/summary.json as untyped JSON, as a script would.
func summaryMap(t *testing.T, dir string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// path walks untyped JSON by keys and indices.
func path(v any, keys ...any) any {
	for _, k := range keys {
		switch k := k.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			a, _ := v.([]any)
			if k >= len(a) {
				return nil
			}
			v = a[k]
		}
	}
	return v
}

// A closed-loop level of 2 requests per slot never reaches a steady state, and says so
// with what to change; one of 20 does.
func TestSteadyStatePerSlot(t *testing.T) {
	for _, tc := range []struct {
		requests string
		reached  bool
	}{{"32", false}, {"320", true}} {
		dir := t.TempDir()
		code, stdout, stderr := runCLI(t, context.Background(), "simulate", "--sim", "textbook", "--concurrency", "16",
			"--requests", tc.requests, "--output-tokens", "100", "--output-dir", dir)
		if code != 0 {
			t.Fatalf("exit %d\n%s", code, stderr)
		}
		ss := path(summaryMap(t, dir), "levels", 0, "steady_state")
		if got := path(ss, "reached"); got != tc.reached {
			t.Fatalf("--requests %s: steady_state %v, want reached %v", tc.requests, ss, tc.reached)
		}
		if tc.reached {
			if path(ss, "start_s") == nil || path(ss, "metrics", "tpot_ms", "p50") == nil {
				t.Errorf("a reached steady state without its window and figures: %v", ss)
			}
			continue
		}
		if r, _ := path(ss, "reason").(string); !strings.Contains(r, "too few requests per slot") {
			t.Errorf("reason %q", r)
		}
		if a, _ := path(ss, "advice").(string); !strings.Contains(a, "--requests") {
			t.Errorf("advice %q", a)
		}
		if !strings.Contains(stdout, "NOT REACHED") {
			t.Errorf("the console does not flag it:\n%s", stdout)
		}
	}
}

// --max-error-rate stops a failing level with its own end reason and exit code 4.
func TestMaxErrorRateStop(t *testing.T) {
	dir := t.TempDir()
	// Prompts past the simulated KV cache (845,632 tokens) are refused with a 400.
	code, _, stderr := runCLI(t, context.Background(), "simulate", "--sim", "textbook", "--concurrency", "4",
		"--requests", "200", "--input-tokens", "uniform:1000:3000000", "--max-error-rate", "30%", "--output-dir", dir)
	if code != ExitLevelErrors {
		t.Fatalf("exit %d, want %d\n%s", code, ExitLevelErrors, stderr)
	}
	s := summaryMap(t, dir)
	if r := path(s, "levels", 0, "end_reason"); r != "max_error_rate" {
		t.Errorf("end_reason %v", r)
	}
	if n, _ := path(s, "levels", 0, "failed").(float64); n < 10 || n > 60 {
		t.Errorf("failed %v: stopped after the minimum of 20 finished, give or take the in-flight ones", n)
	}
	if got := path(s, "load", "max_error_rate"); got != 0.3 {
		t.Errorf("load.max_error_rate %v", got)
	}
}

// --stop-on-saturation ends a rate ladder at the first oversaturated level, records the
// rate, and exits 0; without it the ladder goes on.
func TestStopOnSaturation(t *testing.T) {
	testtier.Long(t, "a ladder of 300 s levels on the virtual clock")
	args := []string{"simulate", "--sim", "textbook", "--rate", "6,8,12,14", "--duration", "300s",
		"--input-tokens", "512", "--output-tokens", "100", "--records", "compact"}
	dir := t.TempDir()
	code, stdout, stderr := runCLI(t, context.Background(), append(args, "--stop-on-saturation", "--output-dir", dir)...)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	s := summaryMap(t, dir)
	levels, _ := s["levels"].([]any)
	if len(levels) != 3 || path(s, "levels", 2, "end_reason") != "oversaturated" || path(s, "levels", 1, "end_reason") != "duration" {
		t.Fatalf("levels %d, end reasons %v %v %v", len(levels), path(s, "levels", 0, "end_reason"), path(s, "levels", 1, "end_reason"), path(s, "levels", 2, "end_reason"))
	}
	if r := path(s, "oversaturated", "rate"); r != 12.0 {
		t.Errorf("oversaturated %v", s["oversaturated"])
	}
	if !strings.Contains(stdout, "--stop-on-saturation") || !strings.Contains(stdout, "oversaturated") {
		t.Errorf("the console does not say why the ladder ended:\n%s", stdout)
	}
	dir = t.TempDir()
	if code, _, stderr := runCLI(t, context.Background(), append(args, "--output-dir", dir)...); code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if levels, _ := summaryMap(t, dir)["levels"].([]any); len(levels) != 4 {
		t.Errorf("without --stop-on-saturation: %d levels, want 4", len(levels))
	}
}

// --repeat 3: each run's figures, the figures across runs with t-intervals, each run's
// seed; report recomputes them from the records.
func TestRepeatSummary(t *testing.T) {
	dir := t.TempDir()
	code, stdout, stderr := runCLI(t, context.Background(), "simulate", "--sim", "textbook", "--rate", "5",
		"--requests", "100", "--output-tokens", "normal:100:30", "--repeat", "3", "--output-dir", dir)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	check := func(s map[string]any) {
		t.Helper()
		if runs, _ := path(s, "levels", 0, "runs").([]any); len(runs) != 3 {
			t.Fatalf("levels[0].runs: %d", len(runs))
		}
		iv := path(s, "levels", 0, "across_runs", "tpot_ms", "p50")
		if path(iv, "n") != 3.0 || path(iv, "mean") == nil || path(iv, "std") == nil || path(iv, "ci95", 1) == nil {
			t.Errorf("across_runs.tpot_ms.p50 %v", iv)
		}
		if lo, hi := path(iv, "ci95", 0), path(iv, "ci95", 1); lo.(float64) >= hi.(float64) {
			t.Errorf("a degenerate interval %v: the runs were not seeded apart", iv)
		}
		if path(s, "levels", 0, "across_runs", "output_throughput", "n") != 3.0 {
			t.Errorf("across_runs.output_throughput %v", path(s, "levels", 0, "across_runs", "output_throughput"))
		}
		pooled, _ := path(s, "levels", 0, "completed").(float64)
		if pooled != 300 {
			t.Errorf("levels[0].completed %v, want every run's 300", pooled)
		}
		if seeds, _ := path(s, "levels", 0, "run_seeds").([]any); len(seeds) != 3 || seeds[0] != 1.0 {
			t.Errorf("run_seeds %v", seeds)
		}
	}
	check(summaryMap(t, dir))
	if !strings.Contains(stdout, "Across 3 Runs") || !strings.Contains(stdout, " ± ") {
		t.Errorf("the console has no across-run figures:\n%s", stdout)
	}
	out := t.TempDir()
	if code, _, stderr := runCLI(t, context.Background(), "report", dir, "--output-dir", out); code != 0 {
		t.Fatalf("report: exit %d\n%s", code, stderr)
	}
	check(summaryMap(t, out))
}

// compare of two repeated runs tests across runs, and says so.
func TestCompareAcrossRuns(t *testing.T) {
	dirs := [2]string{t.TempDir(), t.TempDir()}
	for i, in := range []string{"512", "2048"} {
		if code, _, stderr := runCLI(t, context.Background(), "simulate", "--sim", "textbook", "--rate", "5", "--requests", "100",
			"--input-tokens", in, "--output-tokens", "normal:100:30", "--repeat", "3", "--output-dir", dirs[i]); code != 0 {
			t.Fatalf("exit %d\n%s", code, stderr)
		}
	}
	code, stdout, stderr := runCLI(t, context.Background(), "compare", dirs[0], dirs[1], "--format", "json")
	if code != 0 {
		t.Fatalf("compare: exit %d\n%s", code, stderr)
	}
	var c struct {
		AcrossRuns bool `json:"across_runs"`
		Levels     []struct {
			Figures []struct {
				Name        string `json:"name"`
				Test        string `json:"test"`
				Significant *bool  `json:"significant"`
			} `json:"figures"`
		} `json:"levels"`
	}
	if err := json.Unmarshal([]byte(stdout), &c); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	if !c.AcrossRuns || len(c.Levels) != 1 {
		t.Fatalf("comparison %+v", c)
	}
	tested := map[string]string{}
	for _, f := range c.Levels[0].Figures {
		tested[f.Name] = f.Test
		if f.Name == "TTFT P50 (ms)" && (f.Significant == nil || !*f.Significant) {
			t.Errorf("TTFT with 4× the prompt not beyond noise across runs: %+v", f)
		}
	}
	if tested["output throughput (tok/s)"] != "welch_across_runs" || tested["TTFT P50 (ms)"] != "welch_across_runs" {
		t.Errorf("tests %v", tested)
	}
	if _, text, _ := runCLI(t, context.Background(), "compare", dirs[0], dirs[1]); !strings.Contains(text, "Welch") {
		t.Errorf("the table does not say how it tested:\n%s", text)
	}
}

// A rate search cuts its bracket at an oversaturated probe: on the textbook profile, whose
// TTFT stays flat past capacity (prefill is disaggregated: requests queue for decode), a
// TTFT SLO alone would pass every rate; the saturation stop finds the capacity (10.23 req/s).
func TestSearchCutsAtSaturation(t *testing.T) {
	dir := t.TempDir()
	code, _, stderr := runCLI(t, context.Background(), "simulate", "--sim", "textbook", "--search", "rate",
		"--slo", "ttft:p99<=1s", "--duration", "400s", "--input-tokens", "512", "--output-tokens", "100", // 400 s: the first probe, 1 req/s, decides a P99
		"--records", "compact", "--output-dir", dir)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	s := summaryMap(t, dir)
	rate, _ := path(s, "slo_limit", "rate").(float64)
	if rate < 0.9*10.23 || rate > 10.23 {
		t.Errorf("slo_limit %v, want within 90-100%% of the capacity 10.23 req/s", s["slo_limit"])
	}
	if path(s, "oversaturated") == nil {
		t.Error("no probe was oversaturated")
	}
}
