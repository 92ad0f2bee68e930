package validate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/llmbench/llmbench/internal/bench"
	"github.com/llmbench/llmbench/internal/load"
	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/predict"
	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/report"
	"github.com/llmbench/llmbench/internal/schedule"
	"github.com/llmbench/llmbench/internal/sim"
	"github.com/llmbench/llmbench/internal/workload"
)

// Percentiles are the percentiles a row's simulation derives: those the tables measure.
var Percentiles = []float64{50, 90, 95, 99}

// Result is one row held against its simulation.
type Result struct {
	ID        string             `json:"id"`
	Group     predict.Group      `json:"group"`
	Source    Source             `json:"source"`
	Predicted map[string]float64 `json:"predicted"`
	Measured  map[string]float64 `json:"measured"`
	// ErrorPct is (predicted − measured) / measured in %, per figure both have.
	ErrorPct map[string]float64 `json:"error_pct"`
	// Interval is the prediction's interval per figure; null until intervals are built.
	Interval    map[string][2]float64 `json:"interval"`
	Assumptions []string              `json:"assumptions,omitempty"`
	Skipped     string                `json:"skipped,omitempty"`
	// Capacity is the row's capacity question answered (validate --capacity; rows that
	// state their limits).
	Capacity *Capacity `json:"capacity,omitempty"`
}

// Simulate runs row r's workload on its deployment through bench.Run with bench.Virtual,
// as 'llmbench simulate' does, in a scratch folder under tmp, and compares. A row the
// simulator refuses (its profile, its deployment) comes back skipped with the simulator's
// reason; err is only what kept the comparison from being made at all.
func Simulate(ctx context.Context, r Row, seed int64, tmp string) (Result, error) {
	res := Result{ID: r.ID, Group: r.Group, Source: r.Source, Measured: r.Measured, Assumptions: r.Assumptions}
	if r.Skip != "" {
		res.Skipped = r.Skip
		return res, nil
	}
	lv, skip, err := simulateLevel(ctx, r, r.Workload, "", slices.Collect(maps.Keys(r.Measured)), seed, tmp)
	if err != nil || skip != "" {
		res.Skipped = skip
		return res, err
	}
	if res.Predicted, err = Figures(lv, r.Measured); err != nil {
		return res, fmt.Errorf("row %s: %w", r.ID, err)
	}
	res.ErrorPct = errorPct(res.Predicted, r.Measured)
	return res, nil
}

// simulateLevel runs workload w on row r's deployment and returns its one level, or why
// the simulator refuses the row (skip). The level derives only the latency metrics that
// figures (Figures' names) and the SLO terms read, and, when none of them is per-token,
// the simulation records each request's first token and its end rather than every token:
// those figures come out the same, several times faster (metrics.Config.NeedsTokenEvents).
// With SLO terms (slo, as --slo takes them) the level is judged as a run's are, its verdict
// (report.Level.SLO) failing a level that fell behind, but over the whole level: the
// over-saturation rule, which ends a level early, stays off, since it can stop a batching
// server still filling near its capacity (one B200 replica of MLPerf's Llama-2-70B at 95 % of
// it, after 39 s of a level it keeps up with for 600), and a capacity probe there is the
// question asked.
// A row compared with its measurement runs unjudged.
func simulateLevel(ctx context.Context, r Row, w Workload, slo string, figures []string, seed int64, tmp string) (lv *report.Level, skip string, err error) {
	p, err := rowProfile(r)
	if err != nil {
		return nil, "the simulator refuses the profile: " + err.Error(), nil
	}
	wc, lvl, err := rowWorkload(w, seed)
	if err != nil {
		return nil, "", fmt.Errorf("row %s: %w", r.ID, err)
	}
	lvl.DetectSaturation = false
	slos, err := metrics.ParseSLOs(slo)
	if err != nil {
		return nil, "", fmt.Errorf("row %s: %w", r.ID, err)
	}
	src, err := workload.New(wc, nil)
	if err != nil {
		return nil, "", fmt.Errorf("row %s: %w", r.ID, err)
	}
	dir, err := os.MkdirTemp(tmp, "row-")
	if err != nil {
		return nil, "", err
	}
	defer os.RemoveAll(dir)
	judge := metrics.Config{Percentiles: Percentiles, SLOs: slos, Only: latencyMetrics(figures, slos)}
	var opts []load.VirtualOption
	if !judge.NeedsTokenEvents() && !slices.ContainsFunc(figures, tokenTimed) {
		opts = append(opts, load.FirstAndLastTokens())
	}
	cfg := bench.Config{Spec: bench.Spec{Levels: []load.Level{lvl}, Repeat: 1, Seed: seed,
		Judge:  bench.Judge{Metrics: judge, SLO: slo},
		Output: bench.Output{Dir: filepath.Join(dir, "run"), Records: record.FormatCompact}},
		Console: bench.Console{Out: io.Discard, Quiet: true}}
	out, err := bench.Run(ctx, cfg, time.Unix(0, 0), bench.Virtual(p, seed, &bench.Sources{Workload: wc, First: src}, nil, nil, opts...))
	if err != nil {
		return nil, "", fmt.Errorf("row %s: %w", r.ID, err)
	}
	var de *bench.DeployError
	switch {
	case errors.As(out.Err, &de):
		return nil, "the simulator refuses the deployment: " + de.Err.Error(), nil
	case out.Err != nil:
		return nil, "", fmt.Errorf("row %s: %w", r.ID, out.Err)
	case len(out.Summary.Levels) != 1:
		return nil, "", fmt.Errorf("row %s: the simulation ended with no level", r.ID)
	}
	return &out.Summary.Levels[0], "", nil
}

// tokenTimed says a level's figure outside the latency metrics needs every token's time:
// the peak output throughput, tokens in the busiest 1 s (metrics.Config.NeedsTokenEvents).
func tokenTimed(figure string) bool { return figure == "peak_output_throughput" }

// latencyMetrics are the registry metrics that figures ("ttft_ms.p99") and the SLO terms
// name, for metrics.Config.Only; none (every metric) when figures name none, as a row
// measuring only throughputs does.
func latencyMetrics(figures []string, slos []metrics.SLO) []string {
	var keys []string
	add := func(k string) {
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	for _, f := range figures {
		if i := strings.LastIndexByte(f, '.'); i > 0 {
			if m, ok := metrics.Lookup(f[:i]); ok {
				add(m.Key)
			}
		}
	}
	if len(keys) == 0 {
		return nil
	}
	for _, s := range slos {
		if s.Metric != "" {
			add(s.Metric)
		}
	}
	return keys
}

// rowProfile is the row's deployment as simulate would load it from a --sim file.
func rowProfile(r Row) (sim.Profile, error) {
	if r.ProfileFile != "" {
		return sim.LoadProfile(r.ProfileFile)
	}
	b, err := yaml.Marshal(r.Profile)
	if err != nil {
		return sim.Profile{}, err
	}
	return sim.ParseProfile(b, ".")
}

// rowWorkload is the row's load as simulate's flags would make it.
func rowWorkload(w Workload, seed int64) (workload.Config, load.Level, error) {
	in, err := workload.ParseDist(w.InputTokens)
	if err != nil {
		return workload.Config{}, load.Level{}, fmt.Errorf("input_tokens: %w", err)
	}
	out, err := workload.ParseDist(w.OutputTokens)
	if err != nil {
		return workload.Config{}, load.Level{}, fmt.Errorf("output_tokens: %w", err)
	}
	if (w.Concurrency > 0) == (w.Rate > 0) {
		return workload.Config{}, load.Level{}, errors.New("a row's workload is a closed loop (concurrency) or a rate, one of them")
	}
	if w.Requests < 1 {
		return workload.Config{}, load.Level{}, fmt.Errorf("requests %d: must be at least 1", w.Requests)
	}
	var arrival schedule.Arrival // Poisson
	if w.Arrival != "" {
		if arrival, err = schedule.ParseArrival(w.Arrival); err != nil {
			return workload.Config{}, load.Level{}, err
		}
	}
	wc := workload.Config{InputTokens: in, OutputTokens: out, Seed: seed, LengthsOnly: true,
		PrefixTokens: w.PrefixTokens, PrefixGroups: w.PrefixGroups}
	lvl := bench.FinishLevel(load.Level{Concurrency: w.Concurrency, Rate: w.Rate, Arrival: arrival, Warmup: w.Warmup}, 0, w.Requests, seed, 0)
	return wc, lvl, nil
}

// Figures are a simulated level's figures under summary.json's names (ttft_ms.p50,
// output_throughput), those named in want.
func Figures(l *report.Level, want map[string]float64) (map[string]float64, error) {
	b, err := json.Marshal(l)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	got := map[string]float64{}
	stats, _ := m["metrics"].(map[string]any) // the latency metrics' statistics
	for k := range want {
		if v, ok := lookup(m, k); ok {
			got[k] = v
		} else if v, ok := lookup(stats, k); ok {
			got[k] = v
		}
	}
	return got, nil
}

// lookup finds "a.b" in a summary level's JSON: the metric a, its statistic b.
func lookup(m map[string]any, key string) (float64, bool) {
	if v, ok := m[key].(float64); ok {
		return v, true
	}
	for i := len(key) - 1; i > 0; i-- {
		if key[i] != '.' {
			continue
		}
		sub, ok := m[key[:i]].(map[string]any)
		if !ok {
			continue
		}
		return lookup(sub, key[i+1:])
	}
	return 0, false
}

func errorPct(pred, meas map[string]float64) map[string]float64 {
	e := map[string]float64{}
	for k, m := range meas {
		p, ok := pred[k]
		if !ok || m == 0 || math.IsNaN(p) {
			continue
		}
		e[k] = 100 * (p - m) / m
	}
	return e
}
