package cli

import (
	"context"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestReportSaysWhatTheConsoleSays: every caveat the console prints beside a run's figures
// (a steady state not reached, a level stopped, a verdict failed or undecided, percentiles
// on too few samples, no sweet spot and why, failures, the client behind, flattering cache
// hits) is in report.html too, for a reader who sees only the page.
func TestReportSaysWhatTheConsoleSays(t *testing.T) {
	dir := t.TempDir()
	runs := [][]string{
		{"simulate", "--sim", "../../bench/linear16.yaml", "--rate", "2,20", "--duration", "60s", "--input-tokens", "512",
			"--output-tokens", "100", "--slo", "tpot:p99<=30ms"},
		{"simulate", "--concurrency", "1,4", "--requests", "4", "--output-tokens", "16"},
	}
	markers := map[string]func(line string) string{
		"NOT REACHED": func(string) string { return "NOT REACHED" },
		"Level stopped:": func(l string) string {
			return "Level stopped: " + strings.Fields(strings.TrimPrefix(l, "Level stopped:"))[0]
		},
		"too few samples": func(string) string { return "too few samples" },
		"Sweet spot (*): n": func(l string) string {
			return "Sweet spot: " + strings.TrimSpace(strings.TrimPrefix(l, "Sweet spot (*):"))
		},
		"Client behind":     func(string) string { return "Client behind" },
		"Prefix cache hits": func(string) string { return "Prefix cache hits" },
		"FAILURES":          func(string) string { return "FAILURES" },
		"Verdict:":          verdictMarker,
	}
	tags := regexp.MustCompile(`<[^>]+>`)
	seen := 0
	for i, args := range runs {
		out := filepath.Join(dir, string(rune('a'+i)))
		code, stdout, stderr := runCLI(t, context.Background(), append(args, "--output-dir", out)...)
		if code != ExitOK && code != ExitSLOFailed {
			t.Fatalf("%v: exit %d\n%s", args, code, stderr)
		}
		page, err := os.ReadFile(filepath.Join(out, "report.html"))
		if err != nil {
			t.Fatal(err)
		}
		text := strings.Join(strings.Fields(html.UnescapeString(tags.ReplaceAllString(string(page), " "))), " ")
		for _, line := range strings.Split(stdout+"\n"+stderr, "\n") {
			for m, want := range markers {
				if !strings.Contains(line, m) {
					continue
				}
				w := want(line)
				if w == "" {
					continue
				}
				seen++
				if !strings.Contains(text, w) {
					t.Errorf("%v: the console says %q; report.html lacks %q", args[:3], strings.TrimSpace(line), w)
				}
			}
		}
	}
	if seen < 6 {
		t.Errorf("only %d caveats seen on the consoles: the runs no longer show what they should", seen)
	}
}

// verdictMarker is what report.html must say of a console verdict line that did not pass:
// its word and the start of its reason ("" for a pass).
func verdictMarker(line string) string {
	v := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "Verdict:"))
	if strings.HasPrefix(v, "pass") {
		return ""
	}
	if i := strings.Index(v, "("); i > 0 && len(v) > i+20 {
		return "SLO verdict: " + v[:i+20] // the word and the reason's first words, before the console wraps it
	}
	return "SLO verdict: " + strings.Fields(v)[0]
}
