package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/record"
)

// TestRunWithTools: run --tools against the in-process simulator sends the definitions
// (chat and Responses), the simulator answers with tool calls (tool_choice required), and
// every record says all its output tokens were the call's; the level counts the calls and
// times the first tool-call token, which is the first token.
func TestRunWithTools(t *testing.T) {
	for _, api := range []string{"openai-chat", "openai-responses"} {
		dir := t.TempDir()
		code, stdout, stderr := runCLI(t, context.Background(), "run", "--sim", "textbook", "--api", api, "--tools", "3", "--tool-choice", "required",
			"--concurrency", "2", "--requests", "6", "--input-tokens", "32", "--output-tokens", "8", "--no-progress", "--metrics-url", "none", "--output-dir", dir)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", api, code, stderr)
		}
		recs, err := record.ReadAll(mustOpen(t, filepath.Join(dir, "records.jsonl")))
		if err != nil || len(recs) != 6 {
			t.Fatalf("%s: %d records (%v)", api, len(recs), err)
		}
		for _, r := range recs {
			ft, _ := r.FirstToken()
			if r.Error != nil || r.OutputTokens != 8 || r.ToolCallTokens != 8 || r.FirstToolCall != ft {
				t.Errorf("%s: record %d: output %d, tool-call tokens %d, first call %v, first token %v, error %+v",
					api, r.Index, r.OutputTokens, r.ToolCallTokens, r.FirstToolCall, ft, r.Error)
			}
		}
		sum := readSummaryT(t, dir)
		if w := sum.Workload; len(w.Tools) != 3 || w.ToolChoice != "required" {
			t.Errorf("%s: summary.json workload tools %v, tool_choice %q", api, w.Tools, w.ToolChoice)
		}
		l := sum.Levels[0]
		st, ok := l.Metrics.Get(metrics.KeyFirstToolCall)
		ttft, _ := l.Metrics.Get(metrics.KeyTTFT)
		if l.ToolCalls != 6 || l.TotalToolCallTokens != 48 || !ok || st.Count != 6 || st.Mean != ttft.Mean {
			t.Errorf("%s: %d calls, %d tokens, first_tool_call %+v (TTFT %+v)", api, l.ToolCalls, l.TotalToolCallTokens, st, ttft)
		}
		if !strings.Contains(stdout, "Tool calls (requests / tokens):") {
			t.Errorf("%s: the console leaves the tool calls out:\n%s", api, stdout)
		}
	}
}

func mustOpen(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// TestSimulateWithTools: simulate answers tools by the profile's rule too: with auto (the
// default, every request a call) all output is tool calls, with none no request calls one.
func TestSimulateWithTools(t *testing.T) {
	for choice, calls := range map[string]int{"auto": 20, "none": 0} {
		dir := t.TempDir()
		code, _, stderr := runCLI(t, context.Background(), "simulate", "--sim", "textbook", "--tools", "2", "--tool-choice", choice,
			"--concurrency", "4", "--requests", "20", "--input-tokens", "64", "--output-tokens", "4", "--no-progress", "--output-dir", dir)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", choice, code, stderr)
		}
		if l := readSummaryT(t, dir).Levels[0]; l.ToolCalls != calls || l.TotalToolCallTokens != 4*calls {
			t.Errorf("%s: %d calls carrying %d tokens, want %d", choice, l.ToolCalls, l.TotalToolCallTokens, calls)
		}
	}
}

// TestRepeatKeepsTools: a repeated level's later runs offer the tools too (their sources are
// shaped as the first run's), so every record of both runs is a tool call.
func TestRepeatKeepsTools(t *testing.T) {
	dir := t.TempDir()
	code, _, stderr := runCLI(t, context.Background(), "run", "--sim", "textbook", "--tools", "2", "--tool-choice", "required", "--repeat", "2",
		"--concurrency", "2", "--requests", "4", "--input-tokens", "32", "--output-tokens", "4", "--no-progress", "--metrics-url", "none",
		"--output-dir", dir, "--test-request=false")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	recs, err := record.ReadAll(mustOpen(t, filepath.Join(dir, "records.jsonl")))
	runs := map[int32]int{}
	for _, r := range recs {
		if r.ToolCallTokens != 4 {
			t.Errorf("run %d, request %d: %d tool-call tokens, want 4", r.Repeat, r.Index, r.ToolCallTokens)
		}
		runs[r.Repeat]++
	}
	if err != nil || runs[1] != 4 || runs[2] != 4 {
		t.Errorf("records per run %v (%v), want 4 in each of 2", runs, err)
	}
}

// TestToolFlagErrors: the tool flags where they do not apply, and bad definitions, are
// usage errors that say what to do.
func TestToolFlagErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "tools.json")
	os.WriteFile(bad, []byte(`[{"type":"function","function":{"name":"has space"}}]`), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--api", "openai-completions", "--tools", "2"}, "--tools, --tools-file are for openai-chat, openai-responses, ollama"},
		{[]string{"--tools", "-1"}, "--tools -1: must be in 0..256"},
		{[]string{"--tools", "2", "--tools-file", bad}, "give one"},
		{[]string{"--tools-file", bad}, `--tools-file: ` + bad + `: tool 0: name "has space"`},
		{[]string{"--tools-file", bad + ".missing"}, "--tools-file: tools file: open"},
		{[]string{"--tool-choice", "required"}, "no tools are offered"},
		{[]string{"--tools", "2", "--tool-choice", "lookup_nothing"}, `"lookup_nothing": not one of the tools`},
		{[]string{"--api", "ollama", "--url", "http://127.0.0.1:1", "--tools", "2", "--tool-choice", "auto"}, "ollama takes no tool_choice"},
	} {
		code, _, stderr := runCLI(t, context.Background(), append([]string{"run", "--requests", "1", "--concurrency", "1"}, tc.args...)...)
		if code != ExitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, %q; want a usage error with %q", tc.args, code, stderr, tc.want)
		}
	}
}

// TestSimulateAgenticToolCalls: simulate marks an agentic task's calls as tool calls by each
// request's own tool_choice: the task's last call and a compaction's summary answer in text
// (tool_choice none), every other call is a tool call under required.
func TestSimulateAgenticToolCalls(t *testing.T) {
	dir := t.TempDir()
	code, _, stderr := runCLI(t, context.Background(), "simulate", "--sim", "textbook", "--workload", "agentic", "--calls-per-task", "5",
		"--tool-latency", "0", "--tool-result-tokens", "100", "--input-tokens", "200", "--output-tokens", "16", "--compact-at", "400",
		"--compact-to", "40", "--tools", "2", "--tool-choice", "required", "--concurrency", "2", "--requests", "4",
		"--records", "jsonl", "--no-progress", "--output-dir", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	recs, err := record.ReadAll(mustOpen(t, filepath.Join(dir, "records.jsonl")))
	if err != nil {
		t.Fatal(err)
	}
	var text, calls int
	for _, r := range recs {
		answer := r.FinalCall || r.OutputTokens == 40 // the last call, or a summary of --compact-to tokens
		switch {
		case answer && r.ToolCallTokens != 0:
			t.Errorf("task %d call %d (final %v, %d tokens): %d tool-call tokens, want 0 (text)", r.Task, r.Call, r.FinalCall, r.OutputTokens, r.ToolCallTokens)
		case !answer && int(r.ToolCallTokens) != r.OutputTokens:
			t.Errorf("task %d call %d: %d tool-call tokens of %d, want all", r.Task, r.Call, r.ToolCallTokens, r.OutputTokens)
		}
		if answer {
			text++
		} else {
			calls++
		}
	}
	if text == 0 || calls == 0 {
		t.Errorf("%d text answers and %d tool calls: the workload should have both", text, calls)
	}
}
