package cli

import (
	"context"
	"fmt"
	"os"
	"runtime/debug"
	"time"

	"github.com/spf13/cobra"

	"github.com/llmbench/llmbench/internal/load"
	"github.com/llmbench/llmbench/internal/record"
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
	if os.Getenv("GOGC") == "" {
		// Nothing here is timed against a wall clock: a heap 1.25x the live data (the
		// levels' distributions, the record writer's buffers) instead of Go's default 2x
		// keeps the peak low for little CPU (docs/performance.md).
		defer debug.SetGCPercent(debug.SetGCPercent(25))
	}
	if !cfg.quiet {
		fmt.Fprintf(stdio.Out, "Simulating profile %s%s on a virtual clock\n", cfg.simProfile, describeDeployment(p))
	}
	var clock time.Duration // the run's virtual timeline: levels follow one another
	sources := &runSources{cfg: cfg, first: src}
	runLevel := func(ctx context.Context, lvl load.Level, sink func(*record.Record)) (load.EndReason, error) {
		src, err := sources.get(lvl)
		if err != nil {
			return "", err
		}
		pr := p
		pr.Seed = cfg.runSeed(lvl.Repeat) // a repeated level's runs: the simulator's noise too
		srv, err := newVirtualServer(pr)
		if err != nil {
			return "", usageError(fmt.Errorf("--sim: %w", err))
		}
		shaped := func(r *record.Record) { cfg.shapeVirtual(r); sink(r) }
		end, reason, err := load.RunVirtual(ctx, lvl, clock, src, srv, shaped)
		clock = end
		if err != nil {
			return load.EndInterrupted, err
		}
		return reason, nil
	}
	return execute(ctx, stdio, cfg, time.Now(), runLevel)
}

// newVirtualServer is profile p's deployment on a virtual clock: its one engine as it is
// (the hot path of a single replica stays direct), or its replicas behind their router.
func newVirtualServer(p sim.Profile) (load.VirtualServer, error) {
	if p.Deployment.Replicas > 1 {
		f, err := sim.NewFleet(p)
		if err != nil {
			return nil, err
		}
		return f, nil
	}
	v, err := sim.NewVirtual(p)
	if err != nil {
		return nil, err
	}
	return v, nil
}

// describeDeployment names a deployment other than one GPU in the model's precision, for
// the console; "" for that one.
func describeDeployment(p sim.Profile) string {
	if d := p.Deployment.String(); d != "" {
		return " (" + d + ")"
	}
	return ""
}
