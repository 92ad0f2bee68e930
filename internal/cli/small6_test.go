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
