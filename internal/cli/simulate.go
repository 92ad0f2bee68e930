package cli

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"time"

	"github.com/spf13/cobra"

	"github.com/llmbench/llmbench/internal/bench"
	"github.com/llmbench/llmbench/internal/load"
	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/report"
	"github.com/llmbench/llmbench/internal/sim"
	"github.com/llmbench/llmbench/internal/tokenizer"
	"github.com/llmbench/llmbench/internal/workload"
)

func newSimulateCmd(stdio Stdio) *cobra.Command {
	var f benchFlags
	cmd := &cobra.Command{
		Use:   "simulate",
		Short: "Predict a deployment offline: the simulator and the load on a virtual clock",
		Long: `simulate takes the same load, workload and output flags as run, but runs the simulated
inference engine and the load generator on a virtual clock with no HTTP: a whole ladder of
thousands of requests in seconds. It writes the same records, summary and report as run.`,
		Example: `  llmbench simulate --sim textbook --concurrency 1,4,16,64 --input-tokens 512 --output-tokens 100
  llmbench simulate --sim profile.yaml --rate 1,2,4,8 --requests 2000 --slo 'tpot:p99<=50ms'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := f.resolve(false, time.Now())
			if err != nil {
				return err
			}
			return runSimulate(cmd.Context(), stdio, cfg)
		},
	}
	f.bind(cmd.Flags(), false)
	return cmd
}

func runSimulate(ctx context.Context, stdio Stdio, cfg *benchConfig) error {
	p, err := sim.LoadProfile(cfg.simProfile)
	if err != nil {
		return usageError(fmt.Errorf("--sim: %w", err))
	}
	p.Seed = cfg.seed
	cfg.simTools = p.Tools
	// Lengths only: a tokenizer counts only datasets that bring text (o200k_base unless
	// --tokenizer names another), but a mistyped name is refused as run refuses it.
	var tok tokenizer.Tokenizer
	if cfg.tokenizer != "o200k_base" {
		if tok, err = tokenizer.Load(cfg.tokenizer); err != nil {
			return usageError(fmt.Errorf("--tokenizer: %w", err))
		}
	}
	src, err := workload.New(cfg.workload, tok)
	if err == nil {
		src, err = cfg.wrapSource(src, nil)
	}
	if err != nil {
		return usageError(err)
	}
	cfg.adaptToSource(stdio, workload.Describe(src))
	cfg.model = p.ModelName()
	if cfg.price, err = cfg.pricing.price(profilePrice(p), p.GPUs()); err != nil {
		return err
	}
	if cfg.price == nil {
		fmt.Fprintln(stdio.Err, unpricedNote(p))
	}
	if os.Getenv("GOGC") == "" {
		// Nothing here is timed against a wall clock: a heap 1.25x the live data (the
		// levels' distributions, the record writer's buffers) instead of Go's default 2x
		// keeps the peak low for little CPU (docs/performance.md).
		defer debug.SetGCPercent(debug.SetGCPercent(25))
	}
	if !cfg.quiet {
		fmt.Fprintf(stdio.Out, "Simulating profile %s%s on a virtual clock\n", cfg.simProfile, describeDeployment(p))
	}
	if c := p.Calibration; c != nil {
		printValidity(stdio, c, cfg)
	}
	virtual := bench.Virtual(p, cfg.seed, &bench.Sources{Workload: cfg.workload, First: src,
		Shape: func(s workload.Source) (workload.Source, error) { return cfg.wrapSource(s, nil) }}, cfg.shapeVirtual)
	runLevel := func(ctx context.Context, lvl load.Level, sink func(*record.Record)) (load.EndReason, error) {
		reason, err := virtual(ctx, lvl, sink)
		var de *bench.DeployError
		if errors.As(err, &de) {
			err = usageError(fmt.Errorf("--sim: %w", de.Err)) // the run's summary says it so too
		}
		return reason, err
	}
	return execute(ctx, stdio, cfg, time.Now(), runLevel)
}

// printValidity states a calibrated profile's validity range and warns when the run asks
// for loads far outside it (issue: trust shown, not claimed).
func printValidity(stdio Stdio, c *sim.Calibration, cfg *benchConfig) {
	line := fmt.Sprintf("Calibrated on %s (%s): prompts %d–%d tokens, outputs %d–%d, %d–%d requests in flight",
		c.Source, c.Date, c.PromptTokens[0], c.PromptTokens[1], c.OutputTokens[0], c.OutputTokens[1], c.Concurrency[0], c.Concurrency[1])
	if e := c.Error; !math.IsNaN(e.TTFTP50) {
		line += fmt.Sprintf("; held-out error TTFT P50 %.1f%%, TPOT P50 %.1f%%", e.TTFTP50, e.TPOTP50)
	}
	fmt.Fprintln(stdio.Out, report.Wrap(line, 0, 2, report.ConsoleWidth))
	inFlight := 0
	for _, l := range cfg.levels {
		inFlight = max(inFlight, l.Concurrency, l.MaxConcurrency)
	}
	w := cfg.workload
	for _, s := range c.Outside(distRange(w.InputTokens), distRange(w.OutputTokens), inFlight) {
		fmt.Fprintf(stdio.Err, "warning: %s: an extrapolation of the calibrated profile, not a prediction it was checked on\n", s)
	}
}

// distRange is a length distribution's [shortest, longest] likely value (a normal's mean ± 3
// standard deviations); zero for a dataset that brings its own lengths.
func distRange(d workload.Dist) [2]int {
	switch d.Kind {
	case "fixed":
		return [2]int{int(d.A), int(d.A)}
	case "uniform":
		return [2]int{int(d.A), int(d.B)}
	case "normal":
		return [2]int{max(1, int(d.A-3*d.B)), int(d.A + 3*d.B)}
	}
	return [2]int{}
}

// describeDeployment names a deployment other than one GPU in the model's precision, for
// the console; "" for that one.
func describeDeployment(p sim.Profile) string {
	if d := p.Deployment.String(); d != "" {
		return " (" + d + ")"
	}
	return ""
}
