package cli

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/internal/bench"
)

// report takes --quiet and --wide as run does: --quiet prints the ladder table alone.
func TestReportQuietAndWide(t *testing.T) {
	dir := t.TempDir()
	if code, _, stderr := runCLI(t, t.Context(), "simulate", "--sim", "textbook", "--concurrency", "1,4", "--requests", "8",
		"--output-tokens", "8", "--output-dir", dir, "--no-progress"); code != 0 {
		t.Fatalf("simulate: exit %d\n%s", code, stderr)
	}
	code, stdout, stderr := runCLI(t, t.Context(), "report", dir, "--quiet", "--wide")
	if code != 0 {
		t.Fatalf("report --quiet --wide: exit %d\n%s", code, stderr)
	}
	if strings.Contains(stdout, "Serving Benchmark Result") || !strings.Contains(stdout, "Ladder") {
		t.Errorf("report --quiet prints level blocks or no ladder:\n%s", stdout)
	}
}

// A model list cut off by --timeout says the timeout is too short, and what to do.
func TestModelListTimeoutSaysSo(t *testing.T) {
	timeout := &url.Error{Op: "Get", URL: "http://x/v1/models", Err: context.DeadlineExceeded}
	err := benchError(&bench.ModelError{Err: timeout})
	if msg := fmt.Sprint(err); !strings.Contains(msg, "shorter than the server takes to answer: raise --timeout") {
		t.Errorf("got %q", msg)
	}
	err = benchError(&bench.ModelError{Err: fmt.Errorf("connection refused")})
	if msg := fmt.Sprint(err); strings.Contains(msg, "--timeout") || !strings.Contains(msg, "did not answer") {
		t.Errorf("got %q", msg)
	}
}

// An embeddings ladder's table shows inputs/s per level and E2EL, not tok/s and dashes,
// and its sweet-spot line speaks of input throughput.
func TestEmbeddingsLadderTable(t *testing.T) {
	code, stdout, stderr := runCLI(t, t.Context(), "simulate", "--sim", "textbook", "--api", "openai-embeddings",
		"--concurrency", "1,4,16", "--requests", "32", "--batch-size", "8", "--output-dir", t.TempDir(), "--no-progress", "--quiet")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	for _, want := range []string{"inputs/s", "E2EL P50", "E2EL P99", "input throughput"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the ladder lacks %q:\n%s", want, stdout)
		}
	}
	for _, bad := range []string{"tok/s", "TTFT P50", "output throughput"} {
		if strings.Contains(stdout, bad) {
			t.Errorf("the ladder shows %q:\n%s", bad, stdout)
		}
	}
}

// A multi-turn level's block has a per-turn table, the prompt growing with the history.
func TestPerTurnTable(t *testing.T) {
	code, stdout, stderr := runCLI(t, t.Context(), "simulate", "--sim", "textbook", "--turns", "3", "--concurrency", "4",
		"--output-dir", t.TempDir(), "--no-progress")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	for _, want := range []string{"Per Turn (ms)", "turn  completed failed  input tok  TTFT P50", "\n1 ", "\n3 "} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the level block lacks %q:\n%s", want, stdout)
		}
	}
}
