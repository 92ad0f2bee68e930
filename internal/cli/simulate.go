package cli

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/llmbench/llmbench/internal/bench"
	"github.com/llmbench/llmbench/internal/calibrate"
	"github.com/llmbench/llmbench/internal/console"
	"github.com/llmbench/llmbench/internal/figure"
	"github.com/llmbench/llmbench/internal/load"
	"github.com/llmbench/llmbench/internal/predict"
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
  llmbench simulate --sim profile.yaml --rate 1,2,4,8 --requests 2000 --slo 'tpot:p99<=50ms'
  llmbench simulate --model-config gpt-oss-120b/config.json --concurrency 1,64`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			spec, con, err := f.resolve(false, time.Now())
			if err != nil {
				return err
			}
			return runSimulate(cmd.Context(), stdio, spec, con)
		},
	}
	f.bindSimulate(cmd.Flags())
	cmd.Annotations = map[string]string{resolvesFlagErrors: "resolve"}
	return cmd
}

// bindSimulate binds simulate's flags: run's that a simulation takes, and the model to serve.
func (f *benchFlags) bindSimulate(fs *pflag.FlagSet) {
	f.bind(fs, false)
	fs.StringVar(&f.modelConfig, "model-config", "", "serve the model of this Hugging Face config.json (`PATH`) on --sim's roofline profile instead of its own model")
}

// simulationConfig is the run's bench configuration for a simulation of profile p: with
// its figures' prediction intervals and its GPUs' energy estimates.
func simulationConfig(stdio Stdio, cfg *bench.Spec, con consoleOpts, p sim.Profile) bench.Config {
	bc := benchOf(stdio, cfg, con)
	bc.Predict = predict.ForProfile(p)
	bc.Estimates = &bench.Estimates{}
	return bc
}

func runSimulate(ctx context.Context, stdio Stdio, cfg *bench.Spec, con consoleOpts) error {
	say(stdio.Err, cfg.UndecidedNote())
	p, err := sim.LoadProfile(cfg.SimProfile)
	if err != nil {
		return usageError(fmt.Errorf("--sim: %w", err))
	}
	if cfg.ModelConfig != "" {
		if p, err = p.WithModelConfig(cfg.ModelConfig); err != nil {
			return usageError(fmt.Errorf("--model-config: %w", err))
		}
	}
	if cfg.Balance != "" {
		if p.Deployment.Replicas < 2 {
			return usageError(fmt.Errorf("--balance %s: profile %s has one replica; the router spreads requests over a deployment of several (deployment.replicas)", cfg.Balance, cfg.SimProfile))
		}
		p.Deployment.Router = cfg.Balance
	}
	p.Seed = cfg.Seed
	// Lengths only: a tokenizer counts only datasets that bring text (o200k_base unless
	// --tokenizer names another), but a mistyped name is refused as run refuses it.
	var tok tokenizer.Tokenizer
	if cfg.Tokenizer != "o200k_base" {
		if tok, err = tokenizer.Load(cfg.Tokenizer); err != nil {
			return usageError(fmt.Errorf("--tokenizer: %w", err))
		}
	}
	src, err := workload.New(cfg.Workload, tok)
	if err == nil {
		src, err = cfg.WrapSource(src, nil)
	}
	if err != nil {
		return usageError(err)
	}
	say(stdio.Err, cfg.Adapt(workload.Describe(src))...)
	cfg.Model = p.ModelName()
	if cfg.Judge.Price, err = price(cfg.Judge.Pricing, profilePrice(p), p.GPUs()); err != nil {
		return err
	}
	if cfg.Judge.Price == nil {
		fmt.Fprintln(stdio.Err, unpricedNote(p))
	}
	if os.Getenv("GOGC") == "" {
		// Nothing here is timed against a wall clock: a heap 1.25x the live data (the
		// levels' distributions, the record writer's buffers) instead of Go's default 2x
		// keeps the peak low for little CPU (docs/performance.md).
		defer debug.SetGCPercent(debug.SetGCPercent(25))
	}
	if !con.quiet {
		fmt.Fprintln(stdio.Out, simulatingLine(cfg.SimProfile, cfg.ModelConfig, p))
	}
	if c := p.Calibration; c != nil {
		printValidity(stdio, c, cfg)
	}
	warnLimits(stdio, p, cfg)
	runLevel := func(p sim.Profile, est *bench.Estimates) bench.LevelRunner {
		virtual := bench.Virtual(p, cfg.Seed, &bench.Sources{Workload: cfg.Workload, First: src,
			Shape: func(s workload.Source) (workload.Source, error) { return cfg.WrapSource(s, nil) }}, cfg.ShapeVirtual(p.Tools), est)
		return func(ctx context.Context, lvl load.Level, sink func(*record.Record)) (load.EndReason, error) {
			reason, err := virtual(ctx, lvl, sink)
			var de *bench.DeployError
			if errors.As(err, &de) {
				err = usageError(fmt.Errorf("--sim: %w", de.Err)) // the run's summary says it so too
			}
			return reason, err
		}
	}
	bc := simulationConfig(stdio, cfg, con, p)
	out, err := bench.Run(ctx, bc, time.Now(), runLevel(p, bc.Estimates))
	concluded := conclude(ctx, stdio, cfg, con, out, err)
	if err == nil && p.Calibration != nil && cfg.Search == "" {
		slow := p
		slow.Pace = 1 + paceSlower
		if err := paceSensitivity(ctx, stdio, benchOf(stdio, cfg, con), out.Summary, runLevel(slow, nil)); err != nil {
			fmt.Fprintf(stdio.Err, "warning: the pace sensitivity was not simulated: %v\n", err)
		}
	}
	return concluded
}

// paceSlower is how much slower than calibrated simulate runs a calibrated profile's server
// again, for its open loops' sensitivity: a pace drift that calibrate warns of
// (calibrate.DriftWarnPct), and what llama.cpp's server on a busy host drifted by within
// minutes (docs/measurements.md).
const paceSlower = calibrate.DriftWarnPct / 100

// paceSensitivity simulates sum's open-loop levels again with slower (the same profile at a
// slower pace) and says how far each level's TTFT and TPOT P50 move. Near the knee an open
// loop's queue turns a small change of the server's pace into a large one of its latency,
// larger than any fit's error: a prediction there holds only while the server keeps the pace
// it was calibrated at, and the user should know it before buying GPUs by it.
func paceSensitivity(ctx context.Context, stdio Stdio, bc bench.Config, sum *report.Summary, slower bench.LevelRunner) error {
	moves, err := bench.PaceMoves(ctx, bc, sum, slower)
	if err != nil || len(moves) == 0 {
		return err
	}
	var lines, far []string
	for _, m := range moves {
		var parts []string
		moved := false
		for _, f := range m.Figures {
			moved = moved || f.Pct() > 2*100*paceSlower
			parts = append(parts, fmt.Sprintf("%s %.4g → %.4g ms (%+.0f%%)", strings.ToUpper(strings.Replace(f.Key.Name(), "_p", " P", 1)), f.From, f.To, f.Pct()))
		}
		lines = append(lines, m.Level+": "+strings.Join(parts, ", "))
		if moved {
			far = append(far, m.Level)
		}
	}
	head := fmt.Sprintf("Pace sensitivity: the open loops again with the server %.0f%% slower than calibrated (as a busy host or a drifting server runs; calibrate states the drift it saw):", 100*paceSlower)
	fmt.Fprintln(stdio.Out)
	fmt.Fprintln(stdio.Out, console.Wrap(head, 0, 2, console.Width))
	for _, l := range lines {
		fmt.Fprintln(stdio.Out, "  "+console.Wrap(l, 2, 4, console.Width))
	}
	if len(far) > 0 {
		fmt.Fprintln(stdio.Out, "  "+console.Wrap(fmt.Sprintf("Pace-bound (%s): latency that moves more than %.0f%% for a %.0f%% slower server (near the knee, or where batching buys little) is predicted only while the server keeps its calibrated pace; leave headroom",
			strings.Join(far, ", "), 2*100*paceSlower, 100*paceSlower), 2, 4, console.Width))
	}
	return nil
}

// printValidity states a calibrated profile's validity range and warns when the run asks
// for loads far outside it (issue: trust shown, not claimed).
func printValidity(stdio Stdio, c *sim.Calibration, cfg *bench.Spec) {
	line := fmt.Sprintf("Calibrated on %s (%s): prompts %d–%d tokens, outputs %d–%d, %d–%d requests in flight",
		c.Source, c.Date, c.PromptTokens[0], c.PromptTokens[1], c.OutputTokens[0], c.OutputTokens[1], c.Concurrency[0], c.Concurrency[1])
	inFlight, rate := 0, 0.0
	for _, l := range cfg.Levels {
		inFlight = max(inFlight, l.Concurrency, l.MaxConcurrency)
		rate = math.Max(rate, l.Rate)
	}
	open := rate > 0
	e, of := c.Error, ""
	switch {
	case open && !math.IsNaN(c.ErrorOpen[figure.TTFTP50]):
		e, of = c.ErrorOpen, " of open loops"
	case !open && !math.IsNaN(c.ErrorClosed[figure.TTFTP50]):
		e, of = c.ErrorClosed, " of closed loops"
	}
	if !math.IsNaN(e[figure.TTFTP50]) {
		line += fmt.Sprintf("; held-out error%s TTFT P50 %.1f%%, TPOT P50 %.1f%%", of, e[figure.TTFTP50], e[figure.TPOTP50])
	}
	fmt.Fprintln(stdio.Out, console.Wrap(line, 0, 2, console.Width))
	switch r := c.OpenRates; {
	case open && r[1] == 0:
		fmt.Fprintln(stdio.Err, "warning: an open loop, and the calibration probed none: its held-out error is that of closed loops (a calibration by this llmbench probes an open loop too)")
	case open && rate > openRateFar*r[1]:
		fmt.Fprintln(stdio.Err, fmt.Sprintf("warning: an open loop at %g req/s, beyond %g× the fastest probed (%.3g req/s): queueing grows faster than the probe's rates show, so this is an extrapolation of the calibrated profile, not a prediction it was checked on", rate, openRateFar, r[1]))
	}
	w := cfg.Workload
	for _, s := range c.Outside(w.InputTokens.Spread(), w.OutputTokens.Spread(), inFlight) {
		fmt.Fprintf(stdio.Err, "warning: %s: an extrapolation of the calibrated profile, not a prediction it was checked on\n", s)
	}
	// Levels in a load the calibration's verdict did not trust, each reason once with the
	// levels it concerns.
	prompts := w.InputTokens.Spread()
	var reasons []string
	levels := map[string][]string{}
	for _, l := range cfg.Levels {
		for _, r := range c.Untrusted(prompts, max(l.Concurrency, l.MaxConcurrency), l.Rate) {
			if levels[r] == nil {
				reasons = append(reasons, r)
			}
			levels[r] = append(levels[r], bench.LevelName(l))
		}
	}
	for _, r := range reasons {
		fmt.Fprintln(stdio.Err, console.Wrap(fmt.Sprintf("warning: %s: %s", strings.Join(levels[r], ", "), r), 0, 9, console.Width))
	}
}

// warnLimits warns of requests the deployment's max_model_len refuses or cuts.
func warnLimits(stdio Stdio, p sim.Profile, cfg *bench.Spec) {
	in, out, d := cfg.Workload.InputTokens.Spread()[1], cfg.Workload.OutputTokens.Spread()[1], p.Deployment
	switch {
	case d.MaxModelLen == 0 || in == 0:
	case d.TruncatePrompts && in > d.MaxModelLen:
		fmt.Fprintf(stdio.Err, "warning: prompts up to %d tokens, and the server cuts any longer than its %d-token context to their last %d tokens (deployment.truncate_prompts, as Ollama past num_ctx does): those are simulated as %d-token prompts, and the model never sees the rest\n",
			in, d.MaxModelLen, d.MaxModelLen, d.MaxModelLen)
	case !d.TruncatePrompts && in+out > d.MaxModelLen:
		fmt.Fprintf(stdio.Err, "warning: prompts up to %d tokens and outputs up to %d exceed the deployment's max_model_len of %d: the server refuses such requests (HTTP 400), and so does the simulation; the summary counts them as failed\n",
			in, out, d.MaxModelLen)
	}
}

// openRateFar is how far past the fastest open loop a calibration probed a rate lies
// outside it: queueing delay grows without bound as the rate nears capacity, so less far
// than the lengths' factor.
const openRateFar = 1.5

// simulatingLine names what simulate runs: the profile, or with --model-config the model it
// names on the profile's GPU and engine (the profile's own model is not what runs then).
func simulatingLine(profile, modelConfig string, p sim.Profile) string {
	if modelConfig == "" {
		return fmt.Sprintf("Simulating profile %s%s on a virtual clock", profile, describeDeployment(p))
	}
	gpu := p.GPU.Name
	if gpu == "" {
		gpu = "its GPU"
	}
	return fmt.Sprintf("Simulating %s (--model-config %s) on %s with profile %s's engine%s on a virtual clock",
		p.ModelName(), modelConfig, gpu, profile, describeDeployment(p))
}

// describeDeployment names a deployment other than one GPU in the model's precision, for
// the console; "" for that one.
func describeDeployment(p sim.Profile) string {
	d := p.Deployment.String()
	if p.Speculative.On() {
		if d != "" {
			d += ", "
		}
		d += "speculative decoding " + p.Speculative.String()
	}
	if d != "" {
		return " (" + d + ")"
	}
	return ""
}
