package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/llmbench/llmbench/internal/console"
	"github.com/llmbench/llmbench/internal/fielderr"
	"github.com/llmbench/llmbench/internal/gpumetrics"
	"github.com/llmbench/llmbench/internal/load"
	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/predict"
	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/report"
	"github.com/llmbench/llmbench/internal/search"
	"github.com/llmbench/llmbench/internal/servermetrics"
	"github.com/llmbench/llmbench/internal/workload"
)

// LevelRunner runs one level and calls sink for every finished request: live against a
// client in real time (Live), or a simulated deployment on a virtual clock (Virtual).
type LevelRunner func(ctx context.Context, lvl load.Level, sink func(*record.Record)) (load.EndReason, error)

// Outcome is what a run measured: its summary, as written, and the error that stopped
// it, if one did (what was measured until then is kept).
type Outcome struct {
	Summary *report.Summary
	Err     error
	// Uncounted, after a live run, are its chat prompts sized by message text alone.
	Uncounted UncountedChats
}

// Run runs cfg's levels (or its search) from start, the run's t = 0, with run; it streams
// records to the records file, prints each level as it ends, and writes the summary files.
// Its error is one that kept it from starting or from writing its results.
func Run(ctx context.Context, cfg Config, start time.Time, run LevelRunner) (Outcome, error) {
	if err := cfg.Validate(); err != nil {
		return Outcome{}, err
	}
	w, err := createRun(cfg.Output)
	if err != nil {
		return Outcome{}, err
	}
	sum := newSummary(&cfg, start)
	// summary.json exists from the start and is rewritten after every level, so a run
	// killed outright still leaves its configuration for 'llmbench report'.
	sum.EndReason = report.EndRunning
	if err := writeSummaryJSON(cfg.Output.Dir, sum); err != nil {
		return Outcome{}, err
	}
	l := &ladder{ctx: ctx, cfg: &cfg, w: w, runLevel: run, sum: sum, start: start,
		col: report.NewCollector(cfg.Judge.Metrics)}
	wl := cfg.Workload
	l.col.SharedPrefix = wl.PrefixTokens + workload.ChatPrefixTokens(wl.Chat)
	if cfg.Output.ResultFormat == "vllm" {
		l.col.KeepVLLMRequests()
	}
	var runErr error
	if cfg.Search != "" {
		runErr = l.search()
	} else {
		runErr = l.levels()
	}
	if err := w.Close(); err != nil && runErr == nil {
		runErr = fmt.Errorf("records.jsonl: %w", err)
	}
	sum.EndReason = report.EndCompleted
	switch {
	case ctx.Err() != nil:
		sum.EndReason = report.EndInterrupted
	case runErr != nil:
		sum.EndReason = report.EndError(runErr)
	}
	sum.Judge()
	if err := WriteResults(cfg.Output.Dir, cfg.Output.ResultFormat, sum, l.col); err != nil {
		return Outcome{}, &ResultsError{Dir: cfg.Output.Dir, Err: err}
	}
	return Outcome{Summary: sum, Err: runErr}, nil
}

// createRun makes the run's folder, empties it of an earlier run's files (with
// Overwrite), and creates its records file.
func createRun(out Output) (*record.Writer, error) {
	if err := os.MkdirAll(out.Dir, 0o755); err != nil {
		return nil, &fielderr.Error{Field: "Output.Dir", Err: err}
	}
	if out.Overwrite {
		// The earlier run's files go, so that none of them is taken for this run's.
		for _, f := range RunFiles(out.Dir) {
			if err := os.Remove(filepath.Join(out.Dir, f)); err != nil {
				return nil, &fielderr.Error{Field: "Output.Overwrite", Err: err}
			}
		}
	}
	w, err := record.Create(filepath.Join(out.Dir, out.Records.FileName()))
	if err != nil {
		return nil, &fielderr.Error{Field: "Output.Dir", Err: err}
	}
	return w, nil
}

// newSummary describes the run before it starts; the ladder fills the levels.
func newSummary(cfg *Config, start time.Time) *report.Summary {
	ld, wl := cfg.Spec.Describe() // the ladder as it runs: a trace's own arrivals, say, replace the default one
	pcts := cfg.Judge.Metrics.Percentiles
	if len(pcts) == 0 {
		pcts = metrics.DefaultPercentiles
	}
	var delay *float64
	if at := cfg.StartAt; !at.IsZero() {
		ms := float64(start.Sub(at).Microseconds()) / 1e3
		delay = &ms
	}
	return &report.Summary{
		Schema:       report.SchemaV3,
		Version:      cfg.Describe.Version,
		StartedAt:    start.UTC(),
		RunStartUnix: float64(start.UnixMicro()) / 1e6,
		StartDelayMs: delay,
		Seed:         cfg.Seed,
		Target:       cfg.Describe.Target,
		Workload:     wl,
		Load:         ld,
		Percentiles:  pcts,
		SLO:          cfg.Judge.SLO,
		Price:        cfg.Judge.Price,
	}
}

// ladder runs levels one after another into one summary.
type ladder struct {
	ctx      context.Context
	cfg      *Config
	w        *record.Writer
	runLevel LevelRunner
	sum      *report.Summary
	start    time.Time         // the run's t = 0
	col      *report.Collector // every record, as it finishes: the levels' figures and the page's charts
}

// levels runs the configured levels in turn, until one fails or a stop rule ends the
// ladder.
func (r *ladder) levels() error {
	for _, lvl := range r.cfg.Levels {
		if r.ctx.Err() != nil {
			return nil
		}
		l, err := r.run(lvl)
		if err != nil {
			return err
		}
		if r.cfg.StopOnSaturation && l.EndReason == report.EndOversaturated {
			if r.cfg.Console.Stopped != nil {
				r.cfg.Console.Stopped(l.Name)
			}
			return nil
		}
	}
	return nil
}

// run runs one level (each of its runs, with Repeat), aggregates it, prints it and
// appends it to the summary.
func (r *ladder) run(lvl load.Level) (*report.Level, error) {
	lvl.Index = len(r.sum.Levels)
	var server *servermetrics.Summary
	var reason load.EndReason
	var seeds []int64
	var err error
	var gpu gpuRuns
	for k := 1; k <= r.cfg.Repeat; k++ {
		run := forRun(lvl, k, r.cfg.Repeat, r.cfg.Seed)
		if r.cfg.Repeat > 1 {
			seeds = append(seeds, RunSeed(r.cfg.Seed, k))
		}
		reason, server, err = r.runOnce(run, &gpu)
		if err != nil || reason != load.EndRequests && reason != load.EndDuration && reason != load.EndTrace {
			break // interrupted, failed, or stopped by a rule: no further runs
		}
	}
	l := report.Level{Name: LevelName(lvl), Concurrency: lvl.Concurrency, Rate: lvl.Rate, Level: r.col.Level(lvl.Index)}
	l.Partial = reason == load.EndInterrupted
	l.EndReason = string(reason)
	l.RunSeeds = seeds
	l.PrefixCacheHits = r.col.PrefixCacheHits(lvl.Index)
	l.Endpoints = r.col.Endpoints(lvl.Index, r.sum.Target.Endpoints)
	l.Stages = r.col.Stages(lvl.Index, report.StagesOf(lvl.Stages))
	l.PredictionInterval = r.cfg.Predict.Apply(&l.Level, predict.LoadKind(lvl.Closed(), lvl.Arrival))
	l.Server = server
	l.GPU = gpumetrics.Summarize(gpu.series, gpu.windows, l.TotalOutputTokens, l.Completed)
	if l.GPU == nil {
		l.GPU = r.cfg.Estimates.Summary(lvl.Index)
	}
	r.warnGPU(gpu.series, l.Name)
	r.sum.Levels = append(r.sum.Levels, l)
	r.sum.Judge() // the picks and what a stop means for the level, as the summary will say them
	if r.cfg.ConnStats != nil {
		st := r.cfg.ConnStats()
		r.sum.Target.ClosesConnections, r.sum.Target.ClosedConnections = st.ClosesConnections, st.ClosedConnections
	}
	out := r.cfg.Console.Out
	if len(r.sum.Levels) > 1 && !r.cfg.Console.Quiet {
		fmt.Fprintln(out)
	}
	if werr := writeSummaryJSON(r.cfg.Output.Dir, r.sum); werr != nil && err == nil {
		err = werr
	}
	if !r.cfg.Console.Quiet {
		report.ConsoleLevel(out, r.sum, len(r.sum.Levels)-1, report.ConsoleOptions{})
		servermetrics.WriteConsole(out, l.Server)
		if l.Server != nil && len(r.sum.Target.Endpoints) > 1 {
			fmt.Fprintf(out, "(the first endpoint's /metrics: %s)\n", r.sum.Target.Endpoints[0])
		}
		gpumetrics.WriteConsole(out, l.GPU)
		if h := l.PrefixCacheHits; h != nil && *h > 0 && report.PrefixHitsFlatter(r.sum.Workload) {
			fmt.Fprintln(out, console.Wrap(report.PrefixHitsText(*h), 0, 2, console.Width))
		}
		if why := report.ClientBehind(l.Level); why != "" {
			fmt.Fprintln(out, console.Wrap(report.ClientBehindText(why), 0, 2, console.Width))
		}
	}
	return &r.sum.Levels[len(r.sum.Levels)-1], err
}

// gpuRuns is what the GPU exporters said during a level's runs, and each run's measured
// window.
type gpuRuns struct {
	series  []gpumetrics.Series
	windows []gpumetrics.Window
}

// warnGPU warns, once a run for each exporter, of one whose scrapes failed during a level.
func (r *ladder) warnGPU(series []gpumetrics.Series, level string) {
	g := &r.cfg.GPU
	if r.cfg.Console.Warn == nil {
		return
	}
	for _, s := range series {
		if w := s.Warning("level " + level); w != "" && !g.Warned[s.URL] {
			if g.Warned == nil {
				g.Warned = map[string]bool{}
			}
			g.Warned[s.URL] = true
			r.cfg.Console.Warn(errors.New(w))
		}
	}
}

// runOnce runs one level (or one run of a repeated level), writing and aggregating its
// records; it returns why it ended and what the server's /metrics said during it, and adds
// what the GPU exporters said, and the run's measured window, to gpu.
func (r *ladder) runOnce(lvl load.Level, gpu *gpuRuns) (load.EndReason, *servermetrics.Summary, error) {
	name := LevelName(lvl)
	if lvl.Repeat > 0 {
		name += fmt.Sprintf(" (run %d/%d)", lvl.Repeat, r.cfg.Repeat)
	}
	bar := r.progress(name, lvl)
	// Records are written and aggregated by a goroutine of their own, so that neither the
	// load generator (a request's goroutine, or the virtual clock's loop) nor the figures
	// wait for the other; a record is not touched by its producer once handed over.
	recs := make(chan *record.Record, 8192)
	var writeErr error
	stored := make(chan struct{})
	var window gpumetrics.WindowOf
	go func() {
		defer close(stored)
		for rec := range recs {
			if err := r.w.Write(rec); err != nil && writeErr == nil {
				writeErr = err
			}
			window.Add(rec)
			r.col.Add(rec)
		}
	}()
	sink := func(rec *record.Record) {
		bar.Add(rec) // before it is handed over: the records goroutine owns it then
		recs <- rec
	}
	var scraper *servermetrics.Scraper
	if sc := r.cfg.Scrape; sc.URL != "" {
		scraper = servermetrics.Start(r.ctx, sc.URL, sc.Interval, r.start, sc.Client)
	}
	var gpuScrapers []*gpumetrics.Scraper
	for _, u := range r.cfg.GPU.URLs {
		gpuScrapers = append(gpuScrapers, gpumetrics.Start(r.ctx, u, r.cfg.GPU.Interval, r.start, r.cfg.GPU.Client))
	}
	if l := r.cfg.GPU.Local; l != nil {
		gpuScrapers = append(gpuScrapers, gpumetrics.StartLocal(r.ctx, l, r.cfg.GPU.Interval, r.start))
	}
	reason, err := r.runLevel(r.ctx, lvl, sink)
	close(recs) // runLevel returns once every record is handed to sink
	<-stored
	bar.Finish()
	var server *servermetrics.Summary
	// The exporters' last scrapes go together, and beside the server's.
	stopped := make([]gpumetrics.Series, len(gpuScrapers))
	var wg sync.WaitGroup
	for i, g := range gpuScrapers {
		wg.Go(func() { stopped[i] = g.Stop() })
	}
	if scraper != nil {
		server = servermetrics.Summarize(scraper.Stop())
	}
	wg.Wait()
	gpu.series = append(gpu.series, stopped...)
	if w, ok := window.Window(); ok {
		gpu.windows = append(gpu.windows, w)
	}
	if err == nil && writeErr != nil {
		err = fmt.Errorf("%s: %w", r.cfg.Output.Records.FileName(), writeErr)
	}
	return reason, server, err
}

// progress is the console's progress of one level's run, or none.
func (r *ladder) progress(name string, lvl load.Level) Progress {
	if r.cfg.Console.Progress == nil {
		return noProgress{}
	}
	return r.cfg.Console.Progress(name, lvl.Requests+lvl.Warmup, lvl.Duration)
}

type noProgress struct{}

func (noProgress) Add(*record.Record) {}
func (noProgress) Finish()            {}

// search finds the largest load whose percentile SLOs pass (search.Largest). Every probe is
// kept as a level of the run.
func (r *ladder) search() error {
	probe := func(load float64) (bool, error) {
		lvl := r.cfg.Base
		if r.cfg.Search == search.Concurrency {
			lvl.Concurrency, lvl.Rate = int(load), 0
		} else {
			lvl.Rate, lvl.Concurrency = load, 0
		}
		lvl = FinishLevel(lvl, len(r.sum.Levels), r.cfg.Requests, r.cfg.Seed, r.cfg.Decide())
		l, err := r.run(lvl)
		if err != nil {
			return false, err
		}
		// The level's verdict, as the summary gives it: an oversaturated level, or one judged
		// on too few samples, does not pass (metrics.FailBehind, MinSamples).
		return l.SLO != nil && l.SLO.Pass, nil
	}
	best, err := search.Largest(r.ctx, r.cfg.Search, r.cfg.SearchMax, probe)
	if err != nil || r.ctx.Err() != nil {
		return err
	}
	return r.refine(best, probe)
}

// refine spends search.RefineLevels more levels on a grid about the search's answer best
// (search.Grid): bisection's last steps each rest on one noisy verdict, and its levels,
// placed by those verdicts, understate the levels' noise; the grid's levels, placed by best
// alone, give the limit estimated from every level (slo_limit_estimate) both more levels
// near the limit and an honest reading of their noise (report's Summary.bisected tells the
// two apart).
func (r *ladder) refine(best float64, probe search.Probe) error {
	var run []float64
	for _, l := range r.sum.Levels {
		run = append(run, max(float64(l.Concurrency), l.Rate))
	}
	for _, load := range search.Grid(r.cfg.Search, best, r.cfg.SearchMax, run) {
		if r.ctx.Err() != nil {
			return nil
		}
		if _, err := probe(load); err != nil {
			return err
		}
	}
	return nil
}
