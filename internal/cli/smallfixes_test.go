package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Mistakes a newcomer makes get a message that says what to type instead, as a usage
// error (exit 2).
func TestUsageMistakesSayWhatToDo(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--concurency", "4"}, "unknown flag: --concurency (did you mean --concurrency?)"},
		{[]string{"run", "--api", "openai-chta"}, "(did you mean openai-chat?)"},
		{[]string{"run", "--api", "vllm"}, "--api names the API, not the server: vllm serves openai-chat and openai-completions"},
		{[]string{"simulate", "--turns", "0"}, "--turns 0: a conversation has at least one turn"},
		{[]string{"simulate", "--shard", "1/2"}, "unknown flag: --shard"},
		{[]string{"simulate", "--start-at", "2026-01-01T00:00:00Z"}, "unknown flag: --start-at"},
		{[]string{"simulate", "--tokenizer", "server"}, "simulate has no server to ask"},
		{[]string{"simulate", "--records", "csv"}, `--records: "csv" is not jsonl or compact`},
	} {
		code, _, stderr := runCLI(t, t.Context(), c.args...)
		if code != ExitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, %q; want exit %d and %q", c.args, code, stderr, ExitUsage, c.want)
		}
	}
}

func TestDatasetToStdout(t *testing.T) {
	code, stdout, stderr := runCLI(t, t.Context(), "dataset", "--requests", "3", "--input-tokens", "5", "--output", "-")
	if code != 0 || strings.Count(stdout, "\n") != 3 || !strings.Contains(stdout, `"input_tokens":5`) {
		t.Errorf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

func TestTopLevelHelpHasExamples(t *testing.T) {
	code, stdout, _ := runCLI(t, t.Context(), "--help")
	if code != 0 || !strings.Contains(stdout, "Examples:") || !strings.Contains(stdout, "llmbench run --url") {
		t.Errorf("exit %d:\n%s", code, stdout)
	}
}

// --config holds any flag for a repeatable scenario; the command line wins; secrets and
// unknown keys are refused, each with its line.
func TestRunConfigFile(t *testing.T) {
	dir := t.TempDir()
	cfg := writeTemp(t, "concurrency: [1, 2]\nrequests: 4\noutput-tokens: 3\nsim: textbook\n")
	code, _, stderr := runCLI(t, t.Context(), "simulate", "--config", cfg, "--requests", "2", "--output-dir", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	s := readSummaryT(t, dir)
	if len(s.Levels) != 2 || s.Levels[1].Concurrency != 2 || s.Load.Requests != 2 || s.Load.SimProfile != "textbook" {
		t.Errorf("levels %d, requests %d, profile %q: want the file's ladder and profile, the command line's requests",
			len(s.Levels), s.Load.Requests, s.Load.SimProfile)
	}
	bad := writeTemp(t, "concurency: 4\napi-key: sk-1234\nheader: ['Authorization: Bearer x', 'X-Team: a']\nrequests: many\n")
	code, _, stderr = runCLI(t, t.Context(), "run", "--config", bad, "--output-dir", t.TempDir())
	for _, want := range []string{":1: \"concurency\" is not a flag of this command (did you mean concurrency?)",
		":2: api-key: no secrets in a config file", ":3: header Authorization: no secrets", ":4: requests:"} {
		if code != ExitUsage || !strings.Contains(stderr, want) {
			t.Errorf("exit %d, stderr lacks %q:\n%s", code, want, stderr)
		}
	}
	if strings.Contains(stderr, "sk-1234") {
		t.Error("the refused key is echoed")
	}
}

// Per-request bounds alone are no gate, and the run says how to make them one.
func TestBoundsAloneSayHowToGate(t *testing.T) {
	code, _, stderr := runCLI(t, t.Context(), "simulate", "--sim", "textbook", "--concurrency", "2", "--requests", "4",
		"--output-tokens", "3", "--slo", "ttft<=1us", "--output-dir", t.TempDir())
	if code != 0 || !strings.Contains(strings.Join(strings.Fields(stderr), " "), "add goodput>=0.95") {
		t.Errorf("exit %d, stderr %s", code, stderr)
	}
	code, _, _ = runCLI(t, t.Context(), "simulate", "--sim", "textbook", "--concurrency", "2", "--requests", "4",
		"--output-tokens", "3", "--slo", "ttft<=1us,goodput>=0.95", "--output-dir", t.TempDir())
	if code != ExitSLOFailed {
		t.Errorf("with goodput>=0.95: exit %d, want %d", code, ExitSLOFailed)
	}
}

// --quiet prints the ladder and the results folder, no per-level blocks.
func TestQuiet(t *testing.T) {
	dir := t.TempDir()
	code, stdout, _ := runCLI(t, t.Context(), "simulate", "--sim", "textbook", "--concurrency", "2", "--requests", "4",
		"--output-tokens", "3", "--quiet", "--output-dir", dir)
	if code != 0 || strings.Contains(stdout, "Serving Benchmark Result") || !strings.Contains(stdout, "Ladder (latencies in ms)") ||
		!strings.Contains(stdout, "Results: "+dir) || strings.Contains(stdout, "Simulating") {
		t.Errorf("exit %d:\n%s", code, stdout)
	}
}

// A dataset smaller than the level is reused, and the run says so.
func TestDatasetReuseWarned(t *testing.T) {
	data := writeTemp(t, "{\"prompt\":\"hello there\"}\n{\"prompt\":\"a b c\"}\n{\"prompt\":\"x y\"}\n")
	code, _, stderr := runCLI(t, t.Context(), "simulate", "--sim", "textbook", "--dataset", "jsonl:"+data,
		"--concurrency", "2", "--requests", "10", "--output-tokens", "3", "--output-dir", t.TempDir())
	if code != 0 || !strings.Contains(stderr, "3 usable rows for levels of up to 10 requests: rows are reused") {
		t.Errorf("exit %d, stderr %s", code, stderr)
	}
}

// TestSearchDecidesP99: a search left to its default level lengths runs each level long
// enough for its P99 term to be decided (368 requests), so it finds a limit rather than
// stopping at its first level as undecided.
func TestSearchDecidesP99(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "search")
	code, stdout, stderr := runCLI(t, context.Background(), "simulate", "--sim", "textbook", "--search", "concurrency",
		"--slo", "tpot:p99<=30ms", "--input-tokens", "128", "--output-tokens", "32", "--output-dir", dir, "--quiet")
	if code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	sum := readSummaryT(t, dir)
	if sum.SLOLimit == nil {
		t.Fatalf("no SLO limit found:\n%s", stdout)
	}
	for i, l := range sum.Levels {
		if l.Completed < 368 {
			t.Errorf("level %d measured %d requests, too few to decide a P99", i, l.Completed)
		}
	}
}

// TestSimulateNamesTheModelConfig: with --model-config the header names the model that runs,
// not the profile's own.
func TestSimulateNamesTheModelConfig(t *testing.T) {
	code, stdout, stderr := runCLI(t, context.Background(), "simulate", "--model-config", "../sim/testdata/hf-configs/gpt-oss-120b/config.json",
		"--concurrency", "2", "--requests", "4", "--output-dir", filepath.Join(t.TempDir(), "run"))
	if code != ExitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	first := strings.SplitN(stdout, "\n", 2)[0]
	if !strings.Contains(first, "Simulating gpt-oss-120b") || strings.Contains(first, "Simulating profile h200-llama-3.1-8b") {
		t.Errorf("the header names the wrong model: %q", first)
	}
}

// TestChecksComeBeforeTheRun: what cannot be measured, or was given as nothing, is a usage
// error before the run, and every bad flag is reported at once, a value that does not parse
// among them (pflag stops at the first).
func TestChecksComeBeforeTheRun(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"run", "--stream=false", "--slo", "tpot:p99<=50ms,e2el:p99<=5s"}, []string{"--slo tpot:p99<=50ms: TPOT is timed from the stream"}},
		{[]string{"run", "--requests", "0"}, []string{"--requests 0: a level measures at least one request"}},
		{[]string{"run", "--duration", "5x", "--requests", "abc", "--concurrency", "0", "--slo", "ttft<=x"},
			[]string{`"5x" for "--duration"`, `"abc" for "--requests"`, "--concurrency", `slo term "ttft<=x"`}},
		{[]string{"simulate", "--duration", "5x", "--rate", "-1"}, []string{`"5x" for "--duration"`, "--rate"}},
		{[]string{"compare", "--alpha", "x", "a", "b"}, []string{`"x" for "--alpha"`}},
	} {
		code, _, stderr := runCLI(t, context.Background(), c.args...)
		if code != ExitUsage {
			t.Errorf("%v: exit %d, want %d (usage)\n%s", c.args, code, ExitUsage, stderr)
		}
		for _, w := range c.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("%v: stderr lacks %q:\n%s", c.args, w, stderr)
			}
		}
	}
}

// workload's problems with fields the flags set together are said with those flags.
func TestWorkloadErrorsNameFlags(t *testing.T) {
	agentic := []string{"simulate", "--workload", "agentic", "--requests", "5"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"simulate", "--prefix-groups", "3"}, "prefix groups: 3 groups need --prefix-tokens > 0"},
		{[]string{"dataset", "--output", "x.jsonl", "--prefix-groups", "3"}, "prefix groups: 3 groups need --prefix-tokens > 0"},
		{append(agentic, "--tool-result-tokens", "0"), "tool result tokens: required with --workload agentic (e.g. --tool-result-tokens 300)"},
		{append(agentic, "--compact-at", "-1"), "compaction: --compact-at -1 and --compact-to 0 must not be negative"},
		{append(agentic, "--compact-at", "100", "--compact-to", "200"), "compaction: --compact-to 200 must be in 1..99 (below --compact-at)"},
		{append(agentic, "--compact-to", "50"), "compaction: --compact-to 50 needs --compact-at"},
		{append(agentic, "--turns", "3"), "workload agentic: --turns and --think-time are chat's; a task's calls and tool latency are --calls-per-task and --tool-latency"},
	} {
		code, _, stderr := runCLI(t, t.Context(), c.args...)
		if code != ExitUsage || !strings.Contains(stderr, c.want+"\n") {
			t.Errorf("%v: exit %d, %q; want exit %d and %q", c.args, code, stderr, ExitUsage, c.want)
		}
	}
}

// serve reads --api-key-file by run's rule (client.APIKey): an empty or unreadable file, or
// both flags, is the usage error run gives, in run's words.
func TestServeAPIKeyFileAsRun(t *testing.T) {
	dir := t.TempDir()
	empty, missing, key := filepath.Join(dir, "empty"), filepath.Join(dir, "missing"), filepath.Join(dir, "key")
	if err := os.WriteFile(empty, []byte(" \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		flags []string
		want  string
	}{
		{[]string{"--api-key-file", empty}, "--api-key-file: " + empty + " is empty"},
		{[]string{"--api-key-file", missing}, "--api-key-file: open " + missing + ": no such file or directory"},
		{[]string{"--api-key", "x", "--api-key-file", key}, "--api-key and --api-key-file: give one, not both"},
	} {
		for _, cmd := range [][]string{{"serve", "--listen", "127.0.0.1:0"}, {"run", "--url", "http://127.0.0.1:1"}} {
			args := append(append([]string{}, cmd...), c.flags...)
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second) // a serve that took the file serves until then
			code, _, stderr := runCLI(t, ctx, args...)
			cancel()
			if code != ExitUsage || !strings.HasPrefix(stderr, "llmbench: "+c.want+"\n") {
				t.Errorf("%v: exit %d, %q; want exit %d and %q", args, code, stderr, ExitUsage, c.want)
			}
		}
	}
}
