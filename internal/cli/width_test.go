package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/llmbench/llmbench/internal/console"
)

// TestREADMEExamplesFit: the README's example commands that need no server (the
// in-process simulator, simulate, plan, report, compare, calibrate of run folders) print no console line wider than
// 100 columns, counted in runes, on stdout or stderr. Requests are fewer than the README's
// where only the run's length would change.
func TestREADMEExamplesFit(t *testing.T) {
	t.Parallel() // live runs waiting on the real clock beside plan's CPU (runCLI says who runs in parallel)
	dir := t.TempDir()
	out := func(name string) string { return filepath.Join(dir, name) }
	examples := [][]string{
		{"simulate", "--sim", "textbook", "--concurrency", "1,4,16,64", "--input-tokens", "512", "--output-tokens", "100",
			"--slo", "tpot:p99<=30ms", "--output-dir", out("ladder")},
		{"simulate", "--sim", "textbook", "--concurrency", "1,4,16,64", "--input-tokens", "512", "--output-tokens", "100",
			"--slo", "tpot:p99<=30ms", "--wide", "--output-dir", out("ladder-wide")},
		{"run", "--concurrency", "16", "--requests", "64", "--gpu-price", "3.5", "--gpus", "1",
			"--slo", "ttft<=300ms,tpot<=6ms", "--output-dir", out("run")},
		{"simulate", "--sim", "textbook", "--rate", "5", "--requests", "100", "--input-tokens", "uniform:128:896",
			"--output-tokens", "normal:100:30", "--repeat", "3", "--output-dir", out("repeat")},
		{"simulate", "--sim", "textbook", "--rate", "6,8,10,12,14", "--duration", "300s", "--input-tokens", "512",
			"--output-tokens", "100", "--stop-on-saturation", "--output-dir", out("saturation")},
		{"simulate", "--sim", "textbook", "--turns", "4", "--think-time", "2s", "--concurrency", "16", "--output-dir", out("turns")},
		{"simulate", "--sim", "../../bench/agents-8b.yaml", "--workload", "agentic", "--calls-per-task", "uniform:3:8",
			"--tool-latency", "uniform:200:2000", "--tool-result-tokens", "uniform:100:800", "--fan-out", "2", "--input-tokens", "3000",
			"--output-tokens", "200", "--concurrency", "16", "--duration", "60s", "--slo", "task:p99<=40s,ttft:p99<=2s", "--output-dir", out("agents")},
		{"report", out("run"), "--gpu-price", "2.5", "--gpus", "8"},
		{"compare", out("ladder"), out("ladder-wide")},
		// calibrate's fit of run folders prints what a probe's fit prints (the settings, their
		// provenance, the errors, the profile's paths).
		{"run", "--sim", "textbook", "--concurrency", "1,2,4", "--requests", "8", "--output-dir", out("live-ladder")},
		{"calibrate", out("live-ladder"), "--output", out("fitted.yaml")},
		{"plan", "--rate", "40", "--input-tokens", "1024", "--output-tokens", "256", "--slo", "ttft:p99<=500ms,tpot:p99<=40ms",
			"--gpu", "l40s,h100,h200,b200", "--tp", "1,2", "--output-dir", out("plan")},
	}
	check := func(t *testing.T, args []string) {
		args = append(args, "--no-progress")
		if args[0] == "compare" || args[0] == "report" || args[0] == "calibrate" {
			args = args[:len(args)-1]
		}
		code, stdout, stderr := runCLI(t, t.Context(), args...)
		if code != 0 && code != ExitSLOFailed {
			t.Errorf("llmbench %s: exit %d\n%s", strings.Join(args, " "), code, stderr)
		}
		if strings.Contains(strings.Join(args, " "), "--wide") {
			return // --wide shows more than fits
		}
		for _, l := range strings.Split(stdout+stderr, "\n") {
			if n := utf8.RuneCountInString(l); n > console.Width {
				t.Errorf("llmbench %s: a %d-column line:\n%s", args[0], n, l)
			}
		}
	}
	// The examples that read no other's folder run at once (the live runs wait on the real
	// clock while plan computes); report, compare and calibrate then read theirs.
	reads := func(args []string) bool { return args[0] == "compare" || args[0] == "report" || args[0] == "calibrate" }
	t.Run("first", func(t *testing.T) {
		for i, args := range examples {
			if !reads(args) {
				t.Run(fmt.Sprint(i, "-", args[0]), func(t *testing.T) {
					t.Parallel()
					check(t, args)
				})
			}
		}
	})
	for _, args := range examples {
		if reads(args) {
			check(t, args)
		}
	}
}

// TestHelpFitsATerminal: every command's --help, the root's too, fits 100 columns (flag
// usages wrapped under their own column; examples broken with \).
func TestHelpFitsATerminal(t *testing.T) {
	var names [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		names = append(names, path)
		for _, sub := range c.Commands() {
			if !sub.Hidden {
				walk(sub, append(slices.Clone(path), sub.Name()))
			}
		}
	}
	walk(newRoot(Stdio{}), nil)
	for _, path := range names {
		_, stdout, stderr := runCLI(t, context.Background(), append(path, "--help")...)
		for _, line := range strings.Split(stdout+stderr, "\n") {
			if n := utf8.RuneCountInString(line); n > console.Width {
				t.Errorf("llmbench %s --help: a line of %d columns:\n%s", strings.Join(path, " "), n, line)
			}
		}
	}
	if len(names) < 10 {
		t.Fatalf("walked %d commands", len(names))
	}
}
