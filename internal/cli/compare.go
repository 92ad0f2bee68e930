package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/spf13/cobra"

	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/report"
)

func newCompareCmd(stdio Stdio) *cobra.Command {
	var format, failOn string
	var alpha float64
	cmd := &cobra.Command{
		Use:   "compare A B",
		Short: "Set two runs side by side, level by level, with the differences that exceed noise",
		Long: `compare matches the levels of two runs by load (concurrency or rate) and prints, for each,
the headline figures of A and B, the absolute and relative change, and — for latencies —
whether the change is larger than noise: a two-sided Mann–Whitney U test on the per-request
values recomputed from both runs' records (significant when p < --alpha).

Comparing two servers, models or configurations under the same load is what it is for; it
says so when the targets differ, and warns when the workload, the lengths, the API or the
load differ, since the figures then measure different things. With --fail-on-regression it
is a CI gate: exit 5 when a latency got worse by more than the threshold and beyond noise, or
a throughput fell by more than it.`,
		Example: `  llmbench compare llmbench-results/before llmbench-results/after
  llmbench compare before after --format markdown >> pr-comment.md
  llmbench compare baseline/ candidate/ --fail-on-regression 5%   # exit 5 on a regression`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != "table" && format != "json" && format != "markdown" {
				return usageError(fmt.Errorf("--format: %q is not table, json or markdown", format))
			}
			if alpha <= 0 || alpha >= 1 {
				return usageError(fmt.Errorf("--alpha: %v must be between 0 and 1", alpha))
			}
			threshold := -1.0
			if failOn != "" {
				f, err := metrics.ParseFraction(failOn)
				if err != nil || f < 0 {
					return usageError(fmt.Errorf("--fail-on-regression: %q is not a fraction (0.05) or a percentage (5%%)", failOn))
				}
				threshold = f
			}
			a, err := loadRun(args[0])
			if err != nil {
				return withCode(ExitFailure, err)
			}
			b, err := loadRun(args[1])
			if err != nil {
				return withCode(ExitFailure, err)
			}
			cmp := compareRuns(a, b, alpha)
			cmp.A, cmp.B = args[0], args[1]
			if len(cmp.Levels) == 0 {
				return withCode(ExitFailure, errors.New("the two runs have no load level in common"))
			}
			if threshold >= 0 {
				cmp.Threshold = &threshold
				cmp.Regressions = regressions(cmp, threshold)
			}
			switch format {
			case "json":
				enc := json.NewEncoder(stdio.Out)
				enc.SetIndent("", "  ")
				return enc.Encode(cmp)
			case "markdown":
				writeComparison(stdio.Out, cmp, true)
			default:
				writeComparison(stdio.Out, cmp, false)
			}
			if len(cmp.Regressions) > 0 {
				return withCode(ExitRegression, fmt.Errorf("%d regressions beyond %s: %s", len(cmp.Regressions), failOn, strings.Join(cmp.Regressions, "; ")))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&failOn, "fail-on-regression", "", "exit 5 when a latency rises by more than this (beyond noise) or a throughput falls by more: a fraction (0.05) or a percentage (5%)")
	cmd.Flags().StringVar(&format, "format", "table", "output: table, json or markdown")
	cmd.Flags().Float64Var(&alpha, "alpha", 0.05, "significance level of the Mann–Whitney test")
	return cmd
}

// loadRun reads a run's summary and recomputes its levels (with their exact distributions)
// from records.jsonl, with the run's own percentiles and SLOs.
func loadRun(dir string) (*report.Summary, error) {
	sum, err := report.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	slos, err := metrics.ParseSLOs(sum.SLO)
	if err != nil {
		return nil, fmt.Errorf("%s: summary.json slo: %w", dir, err)
	}
	if _, err := recompute(dir, sum, metrics.Config{Percentiles: sum.Percentiles, SLOs: slos}, false); err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	return sum, nil
}

// comparison is compare's result, also its JSON output.
type comparison struct {
	A     string  `json:"a"` // the run folders as given
	B     string  `json:"b"`
	RunA  runInfo `json:"run_a"`
	RunB  runInfo `json:"run_b"`
	Alpha float64 `json:"alpha"`
	// Targets says that A and B measured different targets (servers, models, profiles):
	// a comparison of those, under the same load.
	Targets  string            `json:"targets,omitempty"`
	Warnings []string          `json:"warnings"` // what differs besides the target
	Levels   []levelComparison `json:"levels"`
	// With --fail-on-regression: the threshold and what passed it.
	Threshold   *float64 `json:"fail_on_regression,omitempty"`
	Regressions []string `json:"regressions,omitempty"`
	// AcrossRuns says some level was compared across its runs (both sides had --repeat).
	AcrossRuns bool `json:"across_runs"`
}

// runInfo names one side of a comparison.
type runInfo struct {
	Target     string `json:"target"` // URL, or the simulator's profile
	API        string `json:"api"`
	Model      string `json:"model"`
	StartedAt  string `json:"started_at"`
	Mode       string `json:"mode"`
	SimProfile string `json:"sim_profile,omitempty"`
}

func describeRun(s *report.Summary) runInfo {
	r := runInfo{Target: s.Target.URL, API: s.Target.API, Model: s.Target.Model,
		StartedAt: s.StartedAt.Format("2006-01-02T15:04:05Z07:00"), Mode: string(s.Load.Mode), SimProfile: s.Load.SimProfile}
	if r.Target == "" {
		r.Target = "simulator " + s.Load.SimProfile
	}
	return r
}

// differences are what two runs did differently besides their target, each a warning.
func differences(a, b *report.Summary) []string {
	var out []string
	diff := func(what, x, y string) {
		if x != y {
			out = append(out, fmt.Sprintf("%s differ (%q in A, %q in B)", what, x, y))
		}
	}
	wa, wb := a.Workload, b.Workload
	diff("dataset", wa.Dataset, wb.Dataset)
	diff("input lengths", wa.InputTokens, wb.InputTokens)
	diff("output lengths", wa.OutputTokens, wb.OutputTokens)
	diff("tokenizer", wa.Tokenizer, wb.Tokenizer)
	diff("turns and think time", fmt.Sprint(wa.Turns, " ", wa.ThinkTime), fmt.Sprint(wb.Turns, " ", wb.ThinkTime))
	diff("shared prefix", fmt.Sprint(wa.PrefixTokens, "x", wa.PrefixGroups), fmt.Sprint(wb.PrefixTokens, "x", wb.PrefixGroups))
	diff("APIs", a.Target.API, b.Target.API)
	la, lb := a.Load, b.Load
	diff("arrivals", la.Arrival, lb.Arrival)
	diff("requests per level", fmt.Sprint(la.Requests), fmt.Sprint(lb.Requests))
	diff("level duration", la.Duration, lb.Duration)
	diff("warm-up", fmt.Sprint(la.Warmup, " ", la.WarmupTime), fmt.Sprint(lb.Warmup, " ", lb.WarmupTime))
	diff("in-flight cap", fmt.Sprint(la.MaxConcurrency), fmt.Sprint(lb.MaxConcurrency))
	diff("ignore_eos settings", fmt.Sprint(la.IgnoreEOS), fmt.Sprint(lb.IgnoreEOS))
	return out
}

// regressions lists the figures of c that got worse by more than threshold: a latency up
// (and beyond noise), a throughput or goodput down.
func regressions(c comparison, threshold float64) []string {
	var out []string
	for _, l := range c.Levels {
		for _, f := range l.Figures {
			if f.Relative == nil {
				continue
			}
			r := *f.Relative
			worse := false
			switch {
			case f.Significant != nil: // a latency percentile
				worse = *f.Significant && r > threshold
			case strings.Contains(f.Name, "throughput") || strings.HasPrefix(f.Name, "goodput"):
				worse = r < -threshold
			}
			if worse {
				out = append(out, fmt.Sprintf("%s %s %+.1f%%", l.Load, f.Name, 100*r))
			}
		}
	}
	return out
}

type levelComparison struct {
	Load    string       `json:"load"`
	IndexA  int          `json:"index_a"`
	IndexB  int          `json:"index_b"`
	Figures []figureDiff `json:"figures"`
}

type figureDiff struct {
	Name     string   `json:"name"`
	A        *float64 `json:"a"`
	B        *float64 `json:"b"`
	Delta    *float64 `json:"delta"`
	Relative *float64 `json:"relative"` // (B - A) / A
	// PValue of the Mann–Whitney test on the per-request values; null for figures that are
	// not per-request distributions (throughputs).
	PValue      *float64 `json:"p_value"`
	Significant *bool    `json:"significant"`
	// Test is how PValue was had: mann_whitney on per-request values, or welch_across_runs
	// on the runs' values when both levels were repeated (--repeat), which also tests
	// throughputs; absent without a p-value.
	Test string `json:"test,omitempty"`
}

func num(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

// compareRuns matches levels by load; levels of A with no counterpart in B are left out.
func compareRuns(a, b *report.Summary, alpha float64) comparison {
	out := comparison{RunA: describeRun(a), RunB: describeRun(b), Alpha: alpha, Warnings: differences(a, b)}
	if ra, rb := out.RunA, out.RunB; ra.Target != rb.Target || ra.Model != rb.Model {
		out.Targets = fmt.Sprintf("A is %s (model %s), B is %s (model %s): a comparison of two targets under the same load", ra.Target, ra.Model, rb.Target, rb.Model)
	}
	if out.Warnings == nil {
		out.Warnings = []string{}
	}
	for ia := range a.Levels {
		la := &a.Levels[ia]
		for ib := range b.Levels {
			lb := &b.Levels[ib]
			if la.Load() != lb.Load() {
				continue
			}
			out.Levels = append(out.Levels, compareLevels(la, lb, ia, ib, alpha))
			out.AcrossRuns = out.AcrossRuns || (la.AcrossRuns != nil && lb.AcrossRuns != nil)
			break
		}
	}
	return out
}

func compareLevels(a, b *report.Level, ia, ib int, alpha float64) levelComparison {
	lc := levelComparison{Load: a.Load().String(), IndexA: ia, IndexB: ib}
	plain := func(name string, va, vb float64) {
		f := figureDiff{Name: name, A: num(va), B: num(vb)}
		if f.A != nil && f.B != nil {
			f.Delta = num(vb - va)
			if va != 0 {
				f.Relative = num((vb - va) / va)
			}
		}
		lc.Figures = append(lc.Figures, f)
	}
	// Both levels repeated: the runs' spread is the noise to beat (Welch's t-test).
	across := a.AcrossRuns != nil && b.AcrossRuns != nil
	welch := func(ia, ib metrics.Interval, okA, okB bool) bool {
		p := metrics.WelchP(ia, ib)
		if !across || !okA || !okB || math.IsNaN(p) {
			return false
		}
		f := &lc.Figures[len(lc.Figures)-1]
		sig := p < alpha
		f.PValue, f.Significant, f.Test = &p, &sig, "welch_across_runs"
		return true
	}
	level := func(key string) (metrics.Interval, metrics.Interval, bool, bool) {
		if !across {
			return metrics.Interval{}, metrics.Interval{}, false, false
		}
		x, okA := a.AcrossRuns.Level[key]
		y, okB := b.AcrossRuns.Level[key]
		return x, y, okA, okB
	}
	plain("request throughput (req/s)", a.RequestThroughput, b.RequestThroughput)
	welch(level("request_throughput"))
	plain("output throughput (tok/s)", a.OutputThroughput, b.OutputThroughput)
	welch(level("output_throughput"))
	if a.Goodput != nil && b.Goodput != nil {
		plain("goodput (req/s)", *a.Goodput, *b.Goodput)
		welch(level("goodput"))
	}
	plain("failed requests", float64(a.Failed), float64(b.Failed))
	for _, m := range metrics.Registry {
		if !m.Primary {
			continue
		}
		sa, sb := a.Metrics.Stat(m.Key), b.Metrics.Stat(m.Key)
		var p *float64
		if da, db := a.Dists[m.Key], b.Dists[m.Key]; da != nil && db != nil && da.Count() > 0 && db.Count() > 0 {
			p = num(metrics.SignificantDist(da, db))
		}
		for _, q := range []float64{50, 99} {
			pa, okA := sa.Get(q)
			pb, okB := sb.Get(q)
			if !okA || !okB {
				continue
			}
			plain(fmt.Sprintf("%s P%v (%s)", m.Short, q, m.Unit), pa.Value, pb.Value)
			if across {
				x, okA := a.AcrossRuns.Get(m.Key, metrics.Key(q))
				y, okB := b.AcrossRuns.Get(m.Key, metrics.Key(q))
				if welch(x, y, okA, okB) {
					continue
				}
			}
			f := &lc.Figures[len(lc.Figures)-1]
			if p != nil {
				sig := *p < alpha
				f.PValue, f.Significant, f.Test = p, &sig, "mann_whitney"
			}
		}
	}
	return lc
}

func writeComparison(w io.Writer, c comparison, markdown bool) {
	for _, r := range []struct {
		name, dir string
		run       runInfo
	}{{"A", c.A, c.RunA}, {"B", c.B, c.RunB}} {
		line := fmt.Sprintf("%s: %s — %s, %s, started %s", r.name, r.dir, r.run.Target, r.run.Model, r.run.StartedAt)
		if utf8.RuneCountInString(line) > report.ConsoleWidth { // the run's description under its folder
			line = fmt.Sprintf("%s: %s\n   %s, %s, started %s", r.name, r.dir, r.run.Target, r.run.Model, r.run.StartedAt)
		}
		fmt.Fprintln(w, line)
	}
	if c.Targets != "" {
		fmt.Fprintln(w, "note: "+report.Wrap(c.Targets, 6, 6, report.ConsoleWidth))
	}
	for _, warn := range c.Warnings {
		fmt.Fprintf(w, "warning: %s: the figures measure different things\n", warn)
	}
	fmt.Fprintln(w)
	for i, l := range c.Levels {
		if i > 0 {
			fmt.Fprintln(w)
		}
		t := table.NewWriter()
		t.SetOutputMirror(w)
		title := fmt.Sprintf("%s (A level %d, B level %d)", l.Load, l.IndexA, l.IndexB)
		t.AppendHeader(table.Row{"figure", "A", "B", "change", "relative", "p-value", "beyond noise"})
		for _, f := range l.Figures {
			t.AppendRow(table.Row{f.Name, fmtNum(f.A), fmtNum(f.B), fmtSigned(f.Delta), fmtPct(f.Relative), fmtP(f.PValue), fmtSig(f.Significant)})
		}
		if markdown {
			fmt.Fprintf(w, "**%s**\n\n", title)
			t.RenderMarkdown()
		} else {
			t.SetTitle(title)
			t.Render()
		}
	}
	fmt.Fprintf(w, "\nbeyond noise: two-sided Mann–Whitney U test on per-request values, p < %v\n", c.Alpha)
	if c.Threshold != nil {
		if len(c.Regressions) == 0 {
			fmt.Fprintf(w, "no regression beyond %.1f%%\n", 100**c.Threshold)
		}
		for _, r := range c.Regressions {
			fmt.Fprintf(w, "REGRESSION: %s\n", r)
		}
	}
	if c.AcrossRuns {
		fmt.Fprintf(w, "both runs were repeated (--repeat): throughputs and percentiles are tested across runs instead, by Welch's t-test on the runs' values, p < %v\n", c.Alpha)
	}
}

func fmtNum(v *float64) string {
	if v == nil {
		return "-"
	}
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", *v), "0"), ".")
}

func fmtSigned(v *float64) string {
	if v == nil {
		return "-"
	}
	s := fmtNum(v)
	if *v > 0 {
		s = "+" + s
	}
	return s
}

func fmtPct(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%+.1f%%", *v*100)
}

func fmtP(v *float64) string {
	if v == nil {
		return "-"
	}
	if *v < 0.0001 {
		return "<0.0001"
	}
	return fmt.Sprintf("%.4f", *v)
}

func fmtSig(b *bool) string {
	switch {
	case b == nil:
		return "-"
	case *b:
		return "yes"
	default:
		return "no"
	}
}
