package cli

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden/")

// goldenCases are commands whose whole output — exit code, console, summary.json or
// plan.json and best.yaml — is held byte for byte (timestamps and the results folder
// masked): a change to how a run is described, resolved or shaped that changes what a user
// sees shows here first. Simulations only, each with --seed, so the figures are exact.
var goldenCases = []struct {
	name string
	args []string
}{
	{"ladder-slo", []string{"simulate", "--sim", "textbook", "--concurrency", "1,4,16", "--input-tokens", "512", "--output-tokens", "100", "--slo", "tpot:p99<=30ms"}},
	{"stages", []string{"simulate", "--stages", "10s:2,20s:2->8", "--slo", "ttft:p99<=1s"}},
	{"embeddings", []string{"simulate", "--api", "openai-embeddings", "--batch-size", "8", "--input-tokens", "256", "--concurrency", "4", "--requests", "40"}},
	{"rate-repeat", []string{"simulate", "--sim", "textbook", "--rate", "2,4", "--repeat", "2", "--requests", "50", "--input-tokens", "uniform:128:896"}},
	{"stop-on-saturation", []string{"simulate", "--sim", "textbook", "--rate", "5,40,60", "--stop-on-saturation", "--duration", "60s", "--input-tokens", "512", "--output-tokens", "100"}},
	{"search", []string{"simulate", "--sim", "textbook", "--search", "concurrency", "--slo", "tpot:p99<=30ms", "--requests", "100"}},
	{"tools", []string{"simulate", "--api", "openai-chat", "--tools", "4", "--tool-choice", "required", "--concurrency", "4", "--requests", "40"}},
	{"unstreamed-turns", []string{"simulate", "--stream=false", "--turns", "3", "--think-time", "1s", "--concurrency", "4", "--requests", "40", "--prefix-tokens", "256", "--prefix-groups", "2"}},
	{"trace", []string{"simulate", "--dataset", "mooncake:testdata/golden/trace.jsonl"}},
	{"plan", []string{"plan", "--rate", "8", "--input-tokens", "512", "--output-tokens", "128", "--slo", "ttft:p99<=500ms,tpot:p99<=40ms", "--gpu", "h100", "--tp", "1"}},
	{"usage-errors", []string{"simulate", "--concurrency", "0", "--rate", "-1", "--input-tokens", "x"}},
}

// TestGolden runs goldenCases and compares what each wrote with testdata/golden/NAME.txt;
// go test ./internal/cli -run TestGolden -update rewrites them.
func TestGolden(t *testing.T) {
	for _, c := range goldenCases {
		t.Run(c.name, func(t *testing.T) {
			out := goldenOut(t)
			args := append(append([]string{}, c.args...), "--seed", "1", "--no-progress", "--output-dir", out)
			code, stdout, stderr := runCLI(t, context.Background(), args...)
			var b strings.Builder
			fmt.Fprintf(&b, "$ llmbench %s\nexit %d\n--- stdout\n%s--- stderr\n%s", strings.Join(c.args, " "), code, stdout, stderr)
			for _, f := range []string{"summary.json", "plan.json", "best.yaml"} {
				if data, err := os.ReadFile(filepath.Join(out, f)); err == nil {
					fmt.Fprintf(&b, "--- %s\n%s", f, data)
				}
			}
			got := maskGolden(b.String(), out)
			path := filepath.Join("testdata", "golden", c.name+".txt")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (go test ./internal/cli -run TestGolden -update writes it)", err)
			}
			if got != string(want) {
				t.Errorf("%s differs from what the command now writes (go test ./internal/cli -run TestGolden -update rewrites it after a change meant to show):\n%s", path, firstDiff(string(want), got))
			}
		})
	}
}

// goldenOutLen is the length of every case's results folder: the console wraps lines that
// hold it (plan's check command) before maskGolden replaces it, so a folder as long as its
// temporary directory's random name would move the breaks from run to run.
const goldenOutLen = 96

// goldenOut is a results folder of goldenOutLen bytes in a temporary directory.
func goldenOut(t *testing.T) string {
	dir := t.TempDir() + string(filepath.Separator)
	if len(dir) >= goldenOutLen {
		t.Fatalf("temporary directory %s is longer than the golden results folder's %d bytes: raise goldenOutLen", dir, goldenOutLen)
	}
	return dir + strings.Repeat("r", goldenOutLen-len(dir))
}

var goldenStamps = regexp.MustCompile(`\d{4}-\d{2}-\d{2}T[\d:.]+Z|"run_start_unix": [\d.]+`)

// maskGolden replaces what differs from run to run: the results folder and the start time.
func maskGolden(s, out string) string {
	s = strings.ReplaceAll(s, out, "RESULTS")
	return goldenStamps.ReplaceAllString(s, "TIME")
}

// firstDiff shows the first line where want and got part, with its neighbours.
func firstDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(w), len(g)); i++ {
		if i < len(w) && i < len(g) && w[i] == g[i] {
			continue
		}
		line := func(l []string) string {
			if i < len(l) {
				return l[i]
			}
			return "(end)"
		}
		return fmt.Sprintf("line %d:\n want %s\n  got %s", i+1, line(w), line(g))
	}
	return "(same lines, different ends)"
}
