package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/spf13/pflag"

	"github.com/llmbench/llmbench/internal/calibrate"
	"github.com/llmbench/llmbench/internal/console"
	"github.com/llmbench/llmbench/internal/sim"
	"github.com/llmbench/llmbench/internal/specflags"
	"github.com/llmbench/llmbench/internal/testtier"
)

func TestCalibrateUsageErrors(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "fit.yaml")
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"calibrate", "--output", out}, []string{"give --url URL to probe a server, or run folders to fit"}},
		{[]string{"calibrate", "--url", "http://127.0.0.1:1", dir, "--output", out}, []string{"give --url or run folders, not both"}},
		{[]string{"calibrate", dir}, []string{"--output FILE.yaml is required"}},
		{[]string{"calibrate", dir, "--output", filepath.Join(dir, "fit.json")}, []string{"name a .yaml file"}},
		{[]string{"calibrate", dir, "--output", out, "--max-concurrency", "4", "--model-shape", "llama-3.1-8b"},
			[]string{"--max-concurrency applies to probing a server", "--model-shape and --gpu go together"}},
		{[]string{"calibrate", "--url", "http://127.0.0.1:1", "--output", out, "--model-shape", "gpt-9", "--gpu", "tpu", "--max-input-tokens", "10"},
			[]string{`--model-shape "gpt-9": not a preset`, `--gpu "tpu": not a preset`, "--max-input-tokens: 10 must be at least 64"}},
	} {
		code, _, stderr := runCLI(t, t.Context(), tc.args...)
		if code != ExitUsage {
			t.Errorf("%v: exit %d, want %d (usage)\n%s", tc.args, code, ExitUsage, stderr)
		}
		for _, w := range tc.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("%v: stderr lacks %q:\n%s", tc.args, w, stderr)
			}
		}
	}
}

// TestCalibrateRunFolders fits a profile to a ladder run against the in-process simulator
// (a live run over HTTP), writes the three files, refuses to overwrite them, and the
// profile is one simulate takes, stating its validity range.
func TestCalibrateRunFolders(t *testing.T) {
	testtier.Long(t, "a ladder on the real clock (about 3 s)")
	dir := t.TempDir()
	ladder := filepath.Join(dir, "ladder")
	if code, _, stderr := runCLI(t, t.Context(), "run", "--sim", "textbook", "--concurrency", "1,2,4", "--requests", "8",
		"--input-tokens", "64", "--output-tokens", "24", "--output-dir", ladder, "--quiet", "--no-progress"); code != ExitOK {
		t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	fit := filepath.Join(dir, "fits", "fit.yaml") // a folder not made yet: calibrate makes it
	code, stdout, stderr := runCLI(t, t.Context(), "calibrate", ladder, "--output", fit)
	if code != ExitOK {
		t.Fatalf("calibrate: exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"Fitting 3 probe points", "Fitted settings:", "cost.decode_step_ms", "engine.max_num_seqs", "Profile: " + fit} {
		if !strings.Contains(stdout, want) {
			t.Errorf("console lacks %q:\n%s", want, stdout)
		}
	}
	for _, f := range []string{fit, filepath.Join(dir, "fits", "fit.calibration.json"), filepath.Join(dir, "fits", "fit.calibration.html")} {
		if st, err := os.Stat(f); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	p, err := sim.LoadProfile(fit)
	if err != nil {
		t.Fatalf("the fitted profile does not load: %v", err)
	}
	// textbook's decode step is 8 ms at one sequence; the fit sees it through HTTP and the
	// wall clock, which a loaded machine (race tests beside it) skews by a fifth or more, so
	// this holds it to a factor of two: units and the wiring, not the fit's precision (the
	// virtual-clock tests in internal/calibrate hold that to 3 %).
	if p.Cost.Kind != sim.CostLinear || p.Calibration == nil || p.Cost.DecodeStepMs < 4 || p.Cost.DecodeStepMs > 16 {
		t.Errorf("fitted cost %+v, calibration %+v", p.Cost, p.Calibration)
	}
	if code, _, stderr := runCLI(t, t.Context(), "calibrate", ladder, "--output", fit); code != ExitUsage || !strings.Contains(stderr, "exists") {
		t.Errorf("a second calibrate over the same output: exit %d, want %d with 'exists'\n%s", code, ExitUsage, stderr)
	}
	code, stdout, stderr = runCLI(t, t.Context(), "simulate", "--sim", fit, "--concurrency", "64", "--requests", "64",
		"--input-tokens", "64", "--output-tokens", "24", "--output-dir", filepath.Join(dir, "sim"), "--quiet")
	if code != ExitOK {
		t.Fatalf("simulate --sim fit.yaml: exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stdout, "Calibrated on ") || !strings.Contains(stderr, "64 requests in flight, beyond 2× the most probed (4)") {
		t.Errorf("simulate states no validity range or no warning:\n%s\n%s", stdout, stderr)
	}
}

// TestProbeStepConfig: a probe step runs as run runs the flags that say it: the Spec
// calibrate builds from bench.DefaultSpec is the one run resolves from those flags.
func TestProbeStepConfig(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	dir := t.TempDir()
	trace := filepath.Join(dir, "trace.jsonl")
	if err := os.WriteFile(trace, []byte(`{"timestamp": 0, "input_length": 8, "output_length": 2}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The flags that say a probe's steps.
	type probeFlags struct {
		url, api, tokenizer, model, apiKey string
		headers                            []string
		overwrite, quiet                   bool
	}
	for _, tc := range []struct {
		f         probeFlags
		step      calibrate.Step
		n         int
		keepAlive bool
		trace     string
	}{
		{probeFlags{url: "http://127.0.0.1:8080/", api: "openai-chat", tokenizer: "o200k_base"},
			calibrate.Step{Name: "prefill-32", Concurrency: 1, Requests: 8, InputTokens: 32, OutputTokens: 4}, 1, true, ""},
		{probeFlags{url: "http://127.0.0.1:8080", api: "openai-completions", tokenizer: "cl100k_base", model: "m", apiKey: "k",
			headers: []string{"X-A: b"}, overwrite: true},
			calibrate.Step{Name: "decode-c4", Concurrency: 4, Requests: 16, InputTokens: 64, OutputTokens: 128}, 7, false, ""},
		{probeFlags{url: "http://127.0.0.1:8080", api: "openai-chat", tokenizer: "o200k_base"},
			calibrate.Step{Name: "mixed", Requests: 1, Trace: []calibrate.TraceRow{{Input: 8, Output: 2}}}, 12, true, trace},
		{probeFlags{url: "http://127.0.0.1:8080", api: "openai-chat", tokenizer: "server", quiet: true},
			calibrate.Step{Name: "decode-c2", Concurrency: 2, Requests: 32, InputTokens: 32, OutputTokens: 64}, 3, true, ""},
	} {
		hdr, err := specflags.Headers(tc.f.headers)
		if err != nil {
			t.Fatal(err)
		}
		p := &calibrate.ProbeRun{URL: tc.f.url, API: tc.f.api, Model: tc.f.model, APIKey: tc.f.apiKey, Headers: hdr,
			Tokenizer: tc.f.tokenizer, Seed: 1000, Dir: dir, Overwrite: tc.f.overwrite}
		out := filepath.Join(dir, tc.step.Name)
		got := p.StepSpec(tc.step, tc.n, out, tc.trace, tc.keepAlive)
		// The command line calibrate gave run for the step before it ran steps itself.
		args := []string{"--url", tc.f.url, "--api", tc.f.api, "--tokenizer", tc.f.tokenizer, "--seed", fmt.Sprint(p.Seed + int64(tc.n)),
			"--output-dir", out, "--quiet", "--no-progress=" + fmt.Sprint(tc.f.quiet), "--percentiles", "50,99", "--metrics-interval", "100ms", "--gpu-metrics", "none",
			fmt.Sprintf("--test-request=%t", tc.n == 1)}
		if tc.f.model != "" {
			args = append(args, "--model", tc.f.model)
		}
		if tc.f.apiKey != "" {
			args = append(args, "--api-key", tc.f.apiKey)
		}
		for _, h := range tc.f.headers {
			args = append(args, "--header", h)
		}
		if tc.f.overwrite {
			args = append(args, "--overwrite")
		}
		if !tc.keepAlive {
			args = append(args, "--keep-alive=false")
		}
		if tc.trace != "" {
			args = append(args, "--dataset", "mooncake:"+tc.trace, "--rate", "1", "--requests", fmt.Sprint(tc.step.Requests))
		} else {
			args = append(args, "--concurrency", fmt.Sprint(tc.step.Concurrency), "--requests", fmt.Sprint(tc.step.Requests),
				"--input-tokens", fmt.Sprint(tc.step.InputTokens), "--output-tokens", fmt.Sprint(tc.step.OutputTokens))
		}
		var bf specflags.Flags
		fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
		bf.Bind(fs, true)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		want, wantCon, err := bf.Resolve(true, time.Now())
		if err != nil {
			t.Fatalf("%s: run's flags: %v", tc.step.Name, err)
		}
		want.ModelChecked = tc.n > 1 // the first step checked --model; run has no later steps
		if !reflect.DeepEqual(got, want) || wantCon != (specflags.Console{Quiet: true, NoProgress: tc.f.quiet}) {
			t.Errorf("%s: the step's configuration\n%+v\nis not run's\n%+v", tc.step.Name, *got, *want)
		}
	}
}

// TestSimulateStatesTheErrorOfItsLoad: simulate --sim states the held-out error of the
// kind of load it runs (closed or open loop), warns of an open loop the calibration never
// probed or ran far slower, and of prompts the server would cut.
func TestSimulateStatesTheErrorOfItsLoad(t *testing.T) {
	dir := t.TempDir()
	write := func(name, calibration string) string {
		path := filepath.Join(dir, name)
		y := `model: llama-3.1-8b
gpu: h100
cost:
  kind: linear
  prefill_ms_per_token: 0.01
  decode_step_ms: 5
  decode_growth: 0.1
deployment:
  max_model_len: 2048
  truncate_prompts: true
calibration:
  source: http://127.0.0.1:11434
  date: "2026-12-02"
  prompt_tokens: [32, 2048]
  output_tokens: [16, 64]
  concurrency: [1, 4]
  error_pct:
    ttft_p50: 30
    tpot_p50: 20
` + calibration
		if err := os.WriteFile(path, []byte(y), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	byLoad := write("by-load.yaml", `  error_pct_by_load:
    closed:
      ttft_p50: 12.5
      tpot_p50: 4
    open:
      ttft_p50: 21
      tpot_p50: 9
  open_rates: [1, 2]
`)
	old := write("old.yaml", "")
	verdict := write("verdict.yaml", `  open_rates: [2, 2]
  not_trusted:
    - load: closed
      concurrency: [1, 1]
      prompt_tokens: [128, 984]
      error_pct: 78.9
    - load: open
      rate_per_s: [2, 2]
      prompt_tokens: [384, 384]
      error_pct: 38.6
  not_probed:
    prompt_tokens: 32
    concurrency: 1
`)
	for _, tc := range []struct {
		name, profile string
		load          []string
		out, err      []string
		notErr        string
	}{
		{"closed", byLoad, []string{"--concurrency", "2"}, []string{"held-out error of closed loops TTFT P50 12.5%, TPOT P50 4.0%"}, nil, "open loop"},
		{"open", byLoad, []string{"--rate", "2"}, []string{"held-out error of open loops TTFT P50 21.0%, TPOT P50 9.0%"}, nil, "open loop at"},
		{"open, far", byLoad, []string{"--rate", "4"}, nil, []string{"an open loop at 4 req/s, beyond 1.5× the fastest probed (2 req/s)"}, ""},
		{"open, never probed", old, []string{"--rate", "2"}, []string{"held-out error TTFT P50 30.0%"}, []string{"an open loop, and the calibration probed none"}, ""},
		{"not trusted", verdict, []string{"--concurrency", "1,2", "--input-tokens", "512"}, nil, []string{
			"warning: concurrency 1: calibrate found this profile up to 79% off for closed loops at concurrency 1, prompts of 128–984 tokens, and did not trust it there",
			"warning: concurrency 2: calibrate probed no closed loop of prompts over 32 tokens at more than 1 in flight"}, ""},
		{"not trusted, open", verdict, []string{"--rate", "2.5", "--input-tokens", "384"}, nil, []string{
			"warning: rate 2.5/s: calibrate found this profile up to 39% off for open loops at 2 req/s, prompts of 384 tokens"}, "probed no closed loop"},
		{"trusted", verdict, []string{"--concurrency", "4", "--input-tokens", "32"}, nil, nil, "calibrate"},
		{"cut", byLoad, []string{"--concurrency", "1", "--input-tokens", "3000"}, nil, []string{"prompts up to 3000 tokens, and the server cuts any longer than its 2048-token context"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr := simulateQuiet(t, filepath.Join(dir, tc.name), tc.profile, append([]string{"--requests", "8", "--output-tokens", "16"}, tc.load...)...)
			flat := func(s string) string { return strings.Join(strings.Fields(s), " ") }
			for _, w := range tc.out {
				if !strings.Contains(flat(stdout), w) {
					t.Errorf("stdout lacks %q:\n%s", w, stdout)
				}
			}
			for _, w := range tc.err {
				if !strings.Contains(flat(stderr), w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if tc.notErr != "" && strings.Contains(flat(stderr), tc.notErr) {
				t.Errorf("stderr says %q:\n%s", tc.notErr, stderr)
			}
		})
	}
}

// TestSimulateStatesItsPaceSensitivity: simulate --sim of a calibrated profile runs its
// open loops again with the server 10 % slower and says how far they move; one near the
// knee (a single slot at 88 % of its capacity) is named as holding only at the calibrated
// pace, one far below it moves with the pace and no more, and closed loops and uncalibrated
// profiles are not rerun.
func TestSimulateStatesItsPaceSensitivity(t *testing.T) {
	dir := t.TempDir()
	profile := func(name, calibration string) string {
		path := filepath.Join(dir, name)
		// One slot, 80 ms a request of 16 tokens: capacity 12.5 req/s.
		y := "model: llama-3.1-8b\ngpu: h100\ncost:\n  kind: linear\n  prefill_ms_per_token: 0.01\n  decode_step_ms: 5\n  decode_growth: 0.1\n" +
			"engine:\n  max_num_seqs: 1\n" + calibration
		if err := os.WriteFile(path, []byte(y), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	calibrated := profile("calibrated.yaml", "calibration:\n  source: http://127.0.0.1:8080\n  date: \"2026-12-04\"\n  prompt_tokens: [32, 2048]\n  output_tokens: [16, 64]\n  concurrency: [1, 2]\n  open_rates: [6, 6]\n")
	plain := profile("plain.yaml", "")
	for _, tc := range []struct {
		name, profile string
		load          []string
		want, notWant []string
	}{
		{"near the knee", calibrated, []string{"--rate", "11", "--requests", "400"}, []string{"Pace sensitivity: the open loops again with the server 10% slower", "rate 11/s: TTFT P50", "Pace-bound (rate 11/s)"}, nil},
		{"far below it", calibrated, []string{"--rate", "1", "--requests", "40"}, []string{"Pace sensitivity", "(+10%)"}, []string{"Pace-bound"}},
		{"closed", calibrated, []string{"--concurrency", "1", "--requests", "8"}, nil, []string{"Pace sensitivity"}},
		{"uncalibrated", plain, []string{"--rate", "11", "--requests", "40"}, nil, []string{"Pace sensitivity"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdout, _ := simulateQuiet(t, filepath.Join(dir, tc.name), tc.profile, append([]string{"--input-tokens", "32", "--output-tokens", "16"}, tc.load...)...)
			flat := strings.Join(strings.Fields(stdout), " ")
			for _, w := range tc.want {
				if !strings.Contains(flat, w) {
					t.Errorf("stdout lacks %q:\n%s", w, stdout)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(flat, w) {
					t.Errorf("stdout says %q:\n%s", w, stdout)
				}
			}
			for _, l := range strings.Split(stdout, "\n") {
				if n := utf8.RuneCountInString(l); n > console.Width {
					t.Errorf("a line of %d columns:\n%s", n, l)
				}
			}
		})
	}
}

// simulateQuiet runs simulate --sim profile --quiet with args into out and returns what it
// printed; any exit but ExitOK fails the test.
func simulateQuiet(t *testing.T, out, profile string, args ...string) (stdout, stderr string) {
	t.Helper()
	code, stdout, stderr := runCLI(t, t.Context(), append([]string{"simulate", "--sim", profile, "--output-dir", out, "--quiet"}, args...)...)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	return stdout, stderr
}

// TestCalibrateStepFailureSaysWhy: a probe step the server refuses stops the calibration
// with the server's own error and what to do.
func TestCalibrateStepFailureSaysWhy(t *testing.T) {
	dir := t.TempDir()
	profile := filepath.Join(dir, "short.yaml")
	// A fast engine that refuses a prompt and its output past 600 tokens (and publishes no
	// /props, so the probe tries prompts of up to 4096).
	y := "cost:\n  kind: linear\n  prefill_ms_per_token: 0.0005\n  decode_step_ms: 0.2\n  decode_growth: 0.1\ndeployment:\n  max_model_len: 600\n"
	if err := os.WriteFile(profile, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	url, _, stop, err := startInProcessSim(t.Context(), profile, 1, func(s string) int { return len(strings.Fields(s)) }, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	code, _, stderr := runCLI(t, t.Context(), "calibrate", "--url", url, "--api", "openai-completions", "--quiet", "--output", filepath.Join(dir, "fit.yaml"))
	flat := strings.Join(strings.Fields(stderr), " ")
	for _, want := range []string{"probe step prefill-1024 failed", "http_status 400 ×8", "exceeds the model's maximum",
		"give --max-input-tokens below its context", "or --tokenizer with the model's own (o200k_base counts prompts"} {
		if !strings.Contains(flat, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if code != ExitLevelErrors {
		t.Errorf("exit %d, want %d", code, ExitLevelErrors)
	}
}
