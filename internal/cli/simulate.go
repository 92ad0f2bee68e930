package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"time"

	"github.com/spf13/cobra"

	"github.com/llmbench/llmbench/internal/bench"
	"github.com/llmbench/llmbench/internal/calibrate"
	"github.com/llmbench/llmbench/internal/load"
	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/report"
	"github.com/llmbench/llmbench/internal/sim"
	"github.com/llmbench/llmbench/internal/specflags"
	"github.com/llmbench/llmbench/internal/workload"
)

func newSimulateCmd(stdio Stdio) *cobra.Command {
	var f specflags.Flags
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
			spec, con, err := f.Resolve(false, time.Now())
			if err != nil {
				return usageError(err)
			}
			return runSimulate(cmd.Context(), stdio, spec, con)
		},
	}
	f.BindSimulate(cmd.Flags())
	cmd.Annotations = map[string]string{resolvesFlagErrors: "resolve"}
	return cmd
}

func runSimulate(ctx context.Context, stdio Stdio, cfg *bench.Spec, con specflags.Console) error {
	say(stdio.Err, undecidedNote(cfg))
	p, err := cfg.SimulatedProfile()
	if err != nil {
		return invalidUsage(err)
	}
	src, err := cfg.VirtualSource()
	if err != nil {
		return invalidUsage(err)
	}
	say(stdio.Err, adaptNotes(cfg, cfg.FitToSource(workload.Describe(src)))...)
	cfg.Model = p.ModelName()
	if err := priceProfile(stdio, cfg, p); err != nil {
		return err
	}
	if os.Getenv("GOGC") == "" {
		// Nothing here is timed against a wall clock: a heap 1.25x the live data (the
		// levels' distributions, the record writer's buffers) instead of Go's default 2x
		// keeps the peak low for little CPU (docs/performance.md).
		defer debug.SetGCPercent(debug.SetGCPercent(25))
	}
	if !con.Quiet {
		fmt.Fprintln(stdio.Out, simulatingLine(cfg.SimProfile, cfg.ModelConfig, p))
	}
	if c := p.Calibration; c != nil {
		printValidity(stdio, c, cfg)
	}
	say(stdio.Err, cfg.LimitNote(p.Deployment))
	runLevel := func(p sim.Profile, est *bench.Estimates) bench.LevelRunner {
		virtual := cfg.VirtualLevels(p, src, est)
		return func(ctx context.Context, lvl load.Level, sink func(*record.Record)) (load.EndReason, error) {
			reason, err := virtual(ctx, lvl, sink)
			var de *bench.DeployError
			if errors.As(err, &de) {
				err = usageError(fmt.Errorf("--sim: %w", de.Err)) // the run's summary says it so too
			}
			return reason, err
		}
	}
	bc := benchOf(stdio, cfg, con).Simulating(p)
	out, err := bench.Run(ctx, bc, time.Now(), runLevel(p, bc.Estimates))
	concluded := conclude(ctx, stdio, cfg, con, out, err)
	if err == nil && p.Calibration != nil && cfg.Search == "" {
		slow := p
		slow.Pace = 1 + paceSlower
		sayPaceSensitivity(ctx, stdio, benchOf(stdio, cfg, con), out.Summary, runLevel(slow, nil))
	}
	return concluded
}

// paceSlower is how much slower than calibrated simulate runs a calibrated profile's server
// again, for its open loops' sensitivity: a pace drift that calibrate warns of
// (calibrate.DriftWarnPct), and what llama.cpp's server on a busy host drifted by within
// minutes (docs/measurements.md).
const paceSlower = calibrate.DriftWarnPct / 100

// printValidity says a calibrated profile's validity range and where the run leaves it
// (bench.Spec.Validity).
func printValidity(stdio Stdio, c *sim.Calibration, cfg *bench.Spec) {
	line, warnings := cfg.Validity(c)
	fmt.Fprintln(stdio.Out, line)
	say(stdio.Err, warnings...)
}

// sayPaceSensitivity says how far the open loops' latencies move on a server paceSlower
// slower (bench.PaceSensitivity).
func sayPaceSensitivity(ctx context.Context, stdio Stdio, bc bench.Config, sum *report.Summary, slower bench.LevelRunner) {
	lines, err := bench.PaceSensitivity(ctx, bc, sum, slower, paceSlower)
	if err != nil {
		fmt.Fprintf(stdio.Err, "warning: the pace sensitivity was not simulated: %v\n", err)
	}
	if len(lines) > 0 {
		fmt.Fprintln(stdio.Out)
		say(stdio.Out, lines...)
	}
}

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

// describeDeployment is how p serves its model, in parentheses after its name; "" for one
// GPU in the model's precisions.
func describeDeployment(p sim.Profile) string {
	if d := p.DescribeServing(); d != "" {
		return " (" + d + ")"
	}
	return ""
}
