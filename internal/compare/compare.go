// Package compare sets two runs side by side, level by level: the figures of each, their
// changes, which changes exceed noise and which are regressions beyond a threshold.
package compare

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/llmbench/llmbench/internal/fielderr"
	"github.com/llmbench/llmbench/internal/gpumetrics"
	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/report"
	"github.com/llmbench/llmbench/internal/rundesc"
)

// Config is what a comparison is asked for.
type Config struct {
	A, B  string  // the runs' names as the user gave them (their folders)
	Alpha float64 // significance level of the tests, in (0, 1)
	// Threshold, when set, is the relative worsening that makes a figure a regression.
	Threshold *float64
}

// Validate reports every problem with c at once, in field order.
func (c Config) Validate() error {
	var errs []error
	if c.Alpha <= 0 || c.Alpha >= 1 {
		errs = append(errs, fielderr.New("Alpha", "%v must be between 0 and 1", c.Alpha))
	}
	if c.Threshold != nil && !(*c.Threshold >= 0) {
		errs = append(errs, fielderr.New("Threshold", "%v is negative", *c.Threshold))
	}
	return errors.Join(errs...)
}

// ErrNoCommonLevel: the runs share no load, so there is nothing to compare.
var ErrNoCommonLevel = errors.New("the two runs have no load level in common")

// Comparison is a comparison's result, also compare's JSON output.
type Comparison struct {
	A     string  `json:"a"` // the run folders as given
	B     string  `json:"b"`
	RunA  RunInfo `json:"run_a"`
	RunB  RunInfo `json:"run_b"`
	Alpha float64 `json:"alpha"`
	// Targets says that A and B measured different targets (servers, models, profiles):
	// a comparison of those, under the same load.
	Targets  string   `json:"targets,omitempty"`
	Warnings []string `json:"warnings"` // what differs besides the target
	Levels   []Level  `json:"levels"`
	// With a threshold: the threshold and what passed it.
	Threshold   *float64 `json:"fail_on_regression,omitempty"`
	Regressions []string `json:"regressions,omitempty"`
	// AcrossRuns says some level was compared across its runs (both sides had --repeat).
	AcrossRuns bool `json:"across_runs"`
}

// RunInfo names one side of a comparison.
type RunInfo struct {
	Target     string `json:"target"` // URL, or the simulator's profile
	API        string `json:"api"`
	Model      string `json:"model"`
	StartedAt  string `json:"started_at"`
	Mode       string `json:"mode"`
	SimProfile string `json:"sim_profile,omitempty"`
}

// Level is the comparison of one load level of A with B's level of the same load.
type Level struct {
	Load    string   `json:"load"`
	IndexA  int      `json:"index_a"`
	IndexB  int      `json:"index_b"`
	Figures []Figure `json:"figures"`
}

// Figure is one figure of a level in A and B, and its change.
type Figure struct {
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
	// Kind is the way the figure improves, which decides its verdict.
	Kind metrics.FigureKind `json:"-"`
}

// Runs compares a and b (their levels recomputed from records, with exact distributions),
// matching levels by load; levels of A with no counterpart in B are left out.
func Runs(a, b *report.Summary, cfg Config) (Comparison, error) {
	if err := cfg.Validate(); err != nil {
		return Comparison{}, err
	}
	out := Comparison{A: cfg.A, B: cfg.B, RunA: describeRun(a), RunB: describeRun(b), Alpha: cfg.Alpha, Warnings: differences(a, b)}
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
			out.Levels = append(out.Levels, compareLevels(la, lb, ia, ib, cfg.Alpha))
			out.AcrossRuns = out.AcrossRuns || (la.AcrossRuns != nil && lb.AcrossRuns != nil)
			break
		}
	}
	if len(out.Levels) == 0 {
		return Comparison{}, ErrNoCommonLevel
	}
	if cfg.Threshold != nil {
		t := *cfg.Threshold
		out.Threshold = &t
		out.Regressions = regressions(out, t)
	}
	return out, nil
}

func describeRun(s *report.Summary) RunInfo {
	r := RunInfo{Target: s.Target.URL, API: s.Target.API, Model: s.Target.Model,
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
	// An estimate gets no verdict: it is not a change the server made.
	if ga, gb := gpuSource(a), gpuSource(b); ga != "" && gb != "" && (gpumetrics.Estimated(ga) || gpumetrics.Estimated(gb)) {
		diff("GPU figures' sources (no verdict on them)", ga, gb)
	}
	// "N unit, extra", the extra left out when empty (a warm-up without --warmup-time).
	with := func(n int, unit, extra string) string {
		if n == 1 {
			unit = strings.TrimSuffix(unit, "s")
		}
		if extra == "" {
			return fmt.Sprintf("%d %s", n, unit)
		}
		return fmt.Sprintf("%d %s, %s", n, unit, extra)
	}
	diff("turns and think time", with(wa.Turns, "turns", wa.ThinkTime), with(wb.Turns, "turns", wb.ThinkTime))
	diff("shared prefix", fmt.Sprint(wa.PrefixTokens, "x", wa.PrefixGroups), fmt.Sprint(wb.PrefixTokens, "x", wb.PrefixGroups))
	agentic := func(g *rundesc.Agentic) string {
		if g == nil {
			return "none"
		}
		return fmt.Sprintf("%+v", *g)
	}
	diff("agentic tasks", agentic(wa.Agentic), agentic(wb.Agentic))
	diff("APIs", a.Target.API, b.Target.API)
	la, lb := a.Load, b.Load
	diff("arrivals", la.Arrival, lb.Arrival)
	diff("requests per level", fmt.Sprint(la.Requests), fmt.Sprint(lb.Requests))
	diff("level duration", la.Duration, lb.Duration)
	diff("warm-up", with(la.Warmup, "requests", la.WarmupTime), with(lb.Warmup, "requests", lb.WarmupTime))
	diff("in-flight cap", fmt.Sprint(la.MaxConcurrency), fmt.Sprint(lb.MaxConcurrency))
	diff("ignore_eos settings", fmt.Sprint(la.IgnoreEOS), fmt.Sprint(lb.IgnoreEOS))
	return out
}

// regressions lists the figures of c that got worse by more than threshold: a latency up
// (and beyond noise), a throughput or goodput down.
func regressions(c Comparison, threshold float64) []string {
	var out []string
	for _, l := range c.Levels {
		for _, f := range l.Figures {
			if f.Relative == nil {
				continue
			}
			r := *f.Relative
			worse := false
			bad := r // how far it moved the wrong way: up for a latency or a tally, down for a throughput
			if f.Kind == metrics.KindThroughput {
				bad = -r
			}
			switch {
			case f.Significant != nil: // tested: a per-request distribution, or any figure across runs (--repeat)
				worse = *f.Significant && bad > threshold
			case f.Kind == metrics.KindThroughput:
				worse = bad > threshold
			}
			if worse {
				out = append(out, fmt.Sprintf("%s %s %+.1f%%", l.Load, f.Name, 100*r))
			}
		}
	}
	return out
}

func num(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

// levelFigure is one of a level's own figures (not a registry metric's), with its kind.
type levelFigure struct {
	name, across string // display name; key under across_runs ("" for none)
	kind         metrics.FigureKind
	get          func(l *report.Level) (float64, bool)
	gpu          bool // a GPU figure: measured by an exporter, or the simulator's estimate
}

var levelFigures = []levelFigure{
	{"request throughput (req/s)", "request_throughput", metrics.KindThroughput, func(l *report.Level) (float64, bool) { return l.RequestThroughput, true }, false},
	{"output throughput (tok/s)", "output_throughput", metrics.KindThroughput, func(l *report.Level) (float64, bool) { return l.OutputThroughput, true }, false},
	{"goodput (req/s)", "goodput", metrics.KindThroughput, func(l *report.Level) (float64, bool) {
		if l.Goodput == nil {
			return 0, false
		}
		return *l.Goodput, true
	}, false},
	{"failed requests", "", metrics.KindCount, func(l *report.Level) (float64, bool) { return float64(l.Failed), true }, false},
	// GPU energy, where both runs have it (measured, or a simulated level's estimate): tokens per joule falls as a
	// throughput does; power is a tally without a verdict.
	{"GPU energy per output token (J)", "", metrics.KindLatency, gpuFigure(func(g *gpumetrics.Summary) *float64 { return g.JoulesPerOutputToken }), true},
	{"output tokens per GPU joule", "", metrics.KindThroughput, gpuFigure(func(g *gpumetrics.Summary) *float64 { return g.OutputTokensPerJoule }), true},
	{"GPU power, all GPUs (W)", "", metrics.KindCount, gpuFigure(func(g *gpumetrics.Summary) *float64 { return g.PowerW }), true},
}

// gpuSource is the source of a run's GPU figures ("" when no level has them).
func gpuSource(s *report.Summary) string {
	for _, l := range s.Levels {
		if l.GPU != nil {
			return l.GPU.Source
		}
	}
	return ""
}

// gpuFigure reads one of a level's GPU figures; none where the level has none.
func gpuFigure(get func(*gpumetrics.Summary) *float64) func(l *report.Level) (float64, bool) {
	return func(l *report.Level) (float64, bool) {
		if l.GPU == nil || get(l.GPU) == nil {
			return 0, false
		}
		return *get(l.GPU), true
	}
}

func compareLevels(a, b *report.Level, ia, ib int, alpha float64) Level {
	lc := Level{Load: a.Load().String(), IndexA: ia, IndexB: ib}
	plain := func(name string, kind metrics.FigureKind, va, vb float64) {
		f := Figure{Name: name, A: num(va), B: num(vb), Kind: kind}
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
	for _, lf := range levelFigures {
		va, okA := lf.get(a)
		vb, okB := lf.get(b)
		if !okA || !okB {
			continue
		}
		kind := lf.kind
		if lf.gpu && (gpumetrics.Estimated(a.GPU.Source) || gpumetrics.Estimated(b.GPU.Source)) {
			kind = metrics.KindCount
		}
		plain(lf.name, kind, va, vb)
		if lf.across != "" && across {
			x, okA := a.AcrossRuns.Level[lf.across]
			y, okB := b.AcrossRuns.Level[lf.across]
			welch(x, y, okA, okB)
		}
	}
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
			plain(fmt.Sprintf("%s P%v (%s)", m.Short, q, m.Unit), m.Kind, pa.Value, pb.Value)
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
