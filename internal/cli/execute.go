package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/llmbench/llmbench/internal/bench"
	"github.com/llmbench/llmbench/internal/client"
	"github.com/llmbench/llmbench/internal/load"
	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/report"
	"github.com/llmbench/llmbench/internal/search"
)

// execute runs cfg's benchmark with runLevel (bench.Run), then says what the console says
// after a run and maps its outcome to an exit code.
func execute(ctx context.Context, stdio Stdio, cfg *benchConfig, start time.Time, runLevel bench.LevelRunner) error {
	out, err := bench.Run(ctx, cfg.bench(stdio), start, runLevel)
	if err != nil {
		return benchFieldError(err)
	}
	sum := out.Summary
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
	return exitStatus(ctx, sum, out.Err)
}

// bench is the benchmark cfg's flags configure, its console stdio.
func (c *benchConfig) bench(stdio Stdio) bench.Config {
	return bench.Config{
		Levels: c.levels, Search: search.Axis(c.search), SearchMax: c.searchMax, Base: c.base, Requests: c.requests,
		Repeat: c.repeat, StopOnSaturation: c.stopOnSaturation, Seed: c.seed,
		Metrics: c.metrics,
		Describe: bench.Describe{Version: Version, Target: report.NewTarget(c.url, c.api, c.model), Run: c.describe(),
			SLO: c.sloSpec, Price: c.price},
		Output: bench.Output{Dir: c.outputDir, Overwrite: c.overwrite, Records: c.records, ResultFormat: c.resultFormat},
		Scrape: bench.Scrape{URL: c.metricsURL, Interval: c.metricsInterval, Client: c.metricsClient},
		Console: bench.Console{Out: stdio.Out, Quiet: c.quiet,
			Progress: func(name string, total int, d time.Duration) bench.Progress {
				return newProgress(stdio.Err, name, total, d, c.noProgress)
			}},
		ConnStats: c.connStats,
	}
}

// benchFlagNames are the flags that set bench.Config's fields, for its errors.
var benchFlagNames = map[string]string{
	"Output.Dir": "output-dir", "Output.Overwrite": "overwrite", "Output.Records": "records",
	"Output.ResultFormat": "result-format", "Repeat": "repeat", "Search": "search", "SearchMax": "search-max",
}

// benchFieldError names the flag of each of bench's field errors in err.
func benchFieldError(err error) error {
	var joined interface{ Unwrap() []error }
	if errors.As(err, &joined) {
		var errs []error
		for _, e := range joined.Unwrap() {
			errs = append(errs, benchFieldError(e))
		}
		return errors.Join(errs...)
	}
	var fe *bench.FieldError
	if errors.As(err, &fe) {
		if name, ok := benchFlagNames[fe.Field]; ok {
			return fmt.Errorf("--%s: %w", name, fe.Err)
		}
	}
	return err
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
