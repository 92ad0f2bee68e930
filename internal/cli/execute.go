package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/llmbench/llmbench/internal/client"
	"github.com/llmbench/llmbench/internal/load"
	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/report"
	"github.com/llmbench/llmbench/internal/search"
	"github.com/llmbench/llmbench/internal/servermetrics"
	"github.com/llmbench/llmbench/internal/tokenizer"
	"github.com/llmbench/llmbench/internal/workload"
)

// levelRunner runs one level and calls sink for every finished request. run drives the
// engine in real time; simulate drives the simulator on a virtual clock.
type levelRunner func(ctx context.Context, lvl load.Level, sink func(*record.Record)) (load.EndReason, error)

// execute runs cfg's levels (or its search), streams records to records.jsonl, prints each
// level as it ends, and writes the summary files. Whatever happens, what was measured is kept.
func execute(ctx context.Context, stdio Stdio, cfg *benchConfig, start time.Time, runLevel levelRunner) error {
	if err := os.MkdirAll(cfg.outputDir, 0o755); err != nil {
		return fmt.Errorf("--output-dir: %w", err)
	}
	if cfg.overwrite {
		// The earlier run's files go, so that none of them is taken for this run's.
		for _, f := range runFiles(cfg.outputDir) {
			if err := os.Remove(filepath.Join(cfg.outputDir, f)); err != nil {
				return fmt.Errorf("--overwrite: %w", err)
			}
		}
	}
	w, err := record.Create(filepath.Join(cfg.outputDir, cfg.records.FileName()))
	if err != nil {
		return fmt.Errorf("--output-dir: %w", err)
	}
	sum := newSummary(cfg, start)
	// summary.json exists from the start and is rewritten after every level, so a run
	// killed outright still leaves its configuration for 'llmbench report'.
	sum.EndReason = report.EndRunning
	if err := writeSummaryJSON(cfg.outputDir, sum); err != nil {
		return err
	}
	r := &levelLoop{ctx: ctx, stdio: stdio, cfg: cfg, w: w, runLevel: runLevel, sum: sum, start: start,
		col: report.NewCollector(cfg.metrics)}
	if cfg.resultFormat == "vllm" {
		r.col.KeepVLLMRequests()
	}
	var runErr error
	if cfg.search != "" {
		runErr = r.search()
	} else {
		for _, lvl := range cfg.levels {
			if ctx.Err() != nil {
				break
			}
			var l *report.Level
			if l, runErr = r.run(lvl); runErr != nil {
				break
			}
			if cfg.stopOnSaturation && l.EndReason == report.EndOversaturated {
				fmt.Fprintf(stdio.Out, "\nThe ladder ends here (--stop-on-saturation): the server could not keep up with %s.\n", l.Name)
				break
			}
		}
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
	if err := writeResults(cfg.outputDir, cfg.resultFormat, sum, r.col); err != nil {
		return err
	}
	if cfg.live && !cfg.readStamps && !cfg.http2 && client.KernelStampsSupported() && !kernelStamped(sum) {
		fmt.Fprintln(stdio.Err, "note: the kernel gave no receive timestamps (SO_TIMESTAMPNS), so token events were timed when llmbench read them (docs/metrics.md)")
	}
	if len(sum.Levels) > 1 || (cfg.quiet && len(sum.Levels) > 0) {
		if !cfg.quiet {
			fmt.Fprintln(stdio.Out)
		}
		report.ConsoleLadder(stdio.Out, sum, report.ConsoleOptions{Wide: cfg.wide})
	}
	cfg.chatFailures(stdio)
	if len(cfg.metrics.SLOs) > 0 && !metrics.HasVerdict(cfg.metrics.SLOs) {
		fmt.Fprintln(stdio.Err, "note: --slo's per-request bounds define goodput but judge no level, so they never fail the run: add goodput>=0.95 (or a percentile term such as ttft:p99<=1s) to make them a gate (exit 3)")
	}
	fmt.Fprintf(stdio.Out, "\nResults: %s\n", cfg.outputDir)
	return exitStatus(ctx, sum, runErr)
}

// kernelStamped says whether any level has requests whose events the kernel stamped, or
// none completed (nothing to say then).
func kernelStamped(sum *report.Summary) bool {
	completed := 0
	for _, l := range sum.Levels {
		if l.ReadLag != nil {
			return true
		}
		completed += l.Completed
	}
	return completed == 0
}

// exitStatus maps the run's outcome to an exit code.
func exitStatus(ctx context.Context, sum *report.Summary, runErr error) error {
	if ctx.Err() != nil {
		return withCode(ExitInterrupted, nil)
	}
	if runErr != nil {
		return withCode(ExitFailure, runErr)
	}
	// A level stopped for errors, or without one successful request, is exit 4, before
	// the SLO verdicts: exit 3 means every level ran and none met them.
	for _, l := range sum.Levels {
		switch {
		case l.EndReason == report.EndMaxErrorRate:
			return withCode(ExitLevelErrors, fmt.Errorf("%s was stopped for errors (--max-error-rate): see its errors above and the records", l.Name))
		case l.EndReason == report.EndUnreachable:
			return withCode(ExitLevelErrors, fmt.Errorf("%s was stopped: its first %d requests all failed to connect (is the server up at --url?)", l.Name, load.UnreachableFirst))
		case l.Completed == 0 && l.Failed > 0:
			return withCode(ExitLevelErrors, fmt.Errorf("no request of %s succeeded: see its errors above and the records", l.Name))
		}
	}
	if passed, judged := sum.SLOPassed(); judged && !passed {
		return withCode(ExitSLOFailed, errors.New("no level met the SLOs"))
	}
	return nil
}

// writeResults writes summary.json, summary.csv, report.html (and vllm.json when asked)
// into dir, each atomically; the page's charts come from col, which aggregated sum's levels.
func writeResults(dir, resultFormat string, sum *report.Summary, col *report.Collector) error {
	var js bytes.Buffer
	if err := report.WriteJSON(&js, sum); err != nil {
		return err
	}
	errs := []error{
		report.WriteFileAtomic(filepath.Join(dir, "summary.json"), func(w io.Writer) error { _, err := w.Write(js.Bytes()); return err }),
		report.WriteFileAtomic(filepath.Join(dir, "summary.csv"), func(w io.Writer) error { return report.WriteCSV(w, sum) }),
		report.WriteFileAtomic(filepath.Join(dir, "report.html"), func(w io.Writer) error {
			return report.WriteHTML(w, sum, col.Charts(sum))
		}),
	}
	if resultFormat == "vllm" {
		for i := range sum.Levels {
			errs = append(errs, report.WriteFileAtomic(filepath.Join(dir, report.VLLMFile(sum, i)), func(w io.Writer) error {
				return report.WriteVLLM(w, sum, i, col.VLLMRequests(i))
			}))
		}
	}
	return errors.Join(errs...)
}

// runFiles lists the files of a run in dir (records, summaries, report.html, vLLM results);
// none when dir does not exist or holds no run. An empty folder is not a run: scripts
// create them.
func runFiles(dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		n := e.Name()
		switch {
		case e.IsDir():
		case n == record.FormatJSONL.FileName(), n == record.FormatCompact.FileName(),
			n == "summary.json", n == "summary.csv", n == "report.html", n == "vllm.json",
			strings.HasPrefix(n, "vllm-") && strings.HasSuffix(n, ".json"):
			out = append(out, n)
		}
	}
	return out
}

// writeSummaryJSON writes dir/summary.json atomically.
func writeSummaryJSON(dir string, sum *report.Summary) error {
	return report.WriteFileAtomic(filepath.Join(dir, "summary.json"), func(w io.Writer) error { return report.WriteJSON(w, sum) })
}

// runSources gives each run of a repeated level its workload, seeded by its run's seed
// (benchConfig.runSeed), built once; run 1 and a level run once have the run's own.
type runSources struct {
	cfg   *benchConfig
	tok   tokenizer.Tokenizer
	first workload.Source
	by    map[int64]workload.Source
}

func (s *runSources) get(lvl load.Level) (workload.Source, error) {
	seed := s.cfg.runSeed(lvl.Repeat)
	if seed == s.cfg.seed {
		return s.first, nil
	}
	if src, ok := s.by[seed]; ok {
		return src, nil
	}
	wc := s.cfg.workload
	wc.Seed = seed
	src, err := workload.New(wc, s.tok)
	if err != nil {
		return nil, err
	}
	if s.by == nil {
		s.by = map[int64]workload.Source{}
	}
	s.by[seed] = src
	return src, nil
}

// levelLoop runs levels one after another into one summary.
type levelLoop struct {
	ctx      context.Context
	stdio    Stdio
	cfg      *benchConfig
	w        *record.Writer
	runLevel levelRunner
	sum      *report.Summary
	start    time.Time         // the run's t = 0
	col      *report.Collector // every record, as it finishes: the levels' figures and the page's charts
}

// run runs one level (each of its runs, with --repeat), aggregates it, prints it and
// appends it to the summary.
func (r *levelLoop) run(lvl load.Level) (*report.Level, error) {
	lvl.Index = len(r.sum.Levels)
	var server *servermetrics.Summary
	var reason load.EndReason
	var seeds []int64
	var err error
	for k := 1; k <= r.cfg.repeat; k++ {
		run := r.cfg.forRun(lvl, k)
		if r.cfg.repeat > 1 {
			seeds = append(seeds, r.cfg.runSeed(k))
		}
		reason, server, err = r.runOnce(run)
		if err != nil || reason != load.EndRequests && reason != load.EndDuration && reason != load.EndTrace {
			break // interrupted, failed, or stopped by a rule: no further runs
		}
	}
	l := newLevel(lvl, r.col.Level(lvl.Index))
	l.Partial = reason == load.EndInterrupted
	l.EndReason = string(reason)
	l.RunSeeds = seeds
	l.Server = server
	r.sum.Levels = append(r.sum.Levels, l)
	r.sum.Judge() // the picks and what a stop means for the level, as the summary will say them
	if r.cfg.connStats != nil {
		st := r.cfg.connStats()
		r.sum.Target.ClosesConnections, r.sum.Target.ClosedConnections = st.ClosesConnections, st.ClosedConnections
	}
	if len(r.sum.Levels) > 1 && !r.cfg.quiet {
		fmt.Fprintln(r.stdio.Out)
	}
	if werr := writeSummaryJSON(r.cfg.outputDir, r.sum); werr != nil && err == nil {
		err = werr
	}
	if !r.cfg.quiet {
		report.ConsoleLevel(r.stdio.Out, r.sum, len(r.sum.Levels)-1, report.ConsoleOptions{})
		servermetrics.WriteConsole(r.stdio.Out, l.Server)
	}
	return &r.sum.Levels[len(r.sum.Levels)-1], err
}

// runOnce runs one level (or one run of a repeated level), writing and aggregating its
// records; it returns why it ended and what the server's /metrics said during it.
func (r *levelLoop) runOnce(lvl load.Level) (load.EndReason, *servermetrics.Summary, error) {
	name := loadName(lvl)
	if lvl.Repeat > 0 {
		name += fmt.Sprintf(" (run %d/%d)", lvl.Repeat, r.cfg.repeat)
	}
	bar := newProgress(r.stdio.Err, name, lvl.Requests+lvl.Warmup, lvl.Duration, r.cfg.noProgress)
	// Records are written and aggregated by a goroutine of their own, so that neither the
	// load generator (a request's goroutine, or the virtual clock's loop) nor the figures
	// wait for the other; a record is not touched by its producer once handed over.
	recs := make(chan *record.Record, 8192)
	var writeErr error
	stored := make(chan struct{})
	go func() {
		defer close(stored)
		for rec := range recs {
			if err := r.w.Write(rec); err != nil && writeErr == nil {
				writeErr = err
			}
			r.col.Add(rec)
		}
	}()
	sink := func(rec *record.Record) {
		bar.add(rec) // before it is handed over: the records goroutine owns it then
		recs <- rec
	}
	var scraper *servermetrics.Scraper
	if r.cfg.metricsURL != "" {
		scraper = servermetrics.Start(r.ctx, r.cfg.metricsURL, r.cfg.metricsInterval, r.start, r.cfg.metricsClient)
	}
	reason, err := r.runLevel(r.ctx, lvl, sink)
	close(recs) // runLevel returns once every record is handed to sink
	<-stored
	bar.finish()
	var server *servermetrics.Summary
	if scraper != nil {
		server = servermetrics.Summarize(scraper.Stop())
	}
	if err == nil && writeErr != nil {
		err = fmt.Errorf("%s: %w", r.cfg.records.FileName(), writeErr)
	}
	return reason, server, err
}

// search finds the largest load whose percentile SLOs pass (search.Largest). Every probe is
// kept as a level of the run.
func (r *levelLoop) search() error {
	_, err := search.Largest(r.ctx, search.Axis(r.cfg.search), r.cfg.searchMax, func(load float64) (bool, error) {
		lvl := r.cfg.base
		if r.cfg.search == "concurrency" {
			lvl.Concurrency, lvl.Rate = int(load), 0
		} else {
			lvl.Rate, lvl.Concurrency = load, 0
		}
		lvl = r.cfg.finishLevel(lvl, len(r.sum.Levels), r.cfg.requests)
		l, err := r.run(lvl)
		if err != nil {
			return false, err
		}
		// An oversaturated level fails whatever its figures: the bracket is cut there.
		return l.SLO != nil && l.SLO.Pass && l.EndReason != report.EndOversaturated, nil
	})
	return err
}
