package cli

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/llmbench/llmbench/internal/bench"
	"github.com/llmbench/llmbench/internal/console"
	"github.com/llmbench/llmbench/internal/fielderr"
	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/plan"
	"github.com/llmbench/llmbench/internal/progress"
	"github.com/llmbench/llmbench/internal/sim"
	"github.com/llmbench/llmbench/internal/specflags"
)

func newPlanCmd(stdio Stdio) *cobra.Command {
	var f planFlags
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Size a deployment: the cheapest GPUs, TP, settings and replicas meeting the SLOs",
		Long: `plan simulates every engine configuration of a search space (--gpu, --tp, --dtype,
--max-num-seqs, --max-batched-tokens, --prefill, --speculative) behind every --router, finds
for each the fewest replicas whose whole fleet meets the SLOs (every --slo verdict term) at
the traffic (--rate R with the workload flags, or a trace with its own arrivals), and ranks
them by cost.
One replica's capacity bounds the search; every count is checked by simulating the fleet
with its router, and the chosen one's fleet one replica smaller misses the SLOs. The model is
a --model-shape preset (the roofline, on every GPU and TP), or a --sim profile: a roofline one
carries to other GPUs and TP, a linear or table one (a calibrated server) plans replicas of
that server only. It writes DIR/plan.json (every candidate), DIR/plan.html (the Pareto front of
throughput per GPU against tokens/s per user) and DIR/best.yaml, the chosen deployment as a
profile that simulate --sim and serve --sim accept.`,
		Example: `  llmbench plan --rate 50 --slo 'ttft:p99<=500ms,tpot:p99<=50ms' --gpu h100,h200 --tp 1,2
  llmbench plan --model-config deepseek-v3/config.json --gpu h200,b200,mi325x --tp 8 --dp 1,2 \
    --expert-parallel false,true --rate 5 --slo 'ttft:p99<=3s,tpot:p99<=80ms'
  llmbench plan --model-shape llama-3.1-70b --gpu h100,h200,b200 --tp 2,4,8 --dtype bf16,fp8 \
    --rate 20 --input-tokens 2048 --output-tokens 256 --slo 'ttft:p99<=2s,tpot:p99<=60ms'
  llmbench plan --sim fitted.yaml --rate 8 --slo 'tpot:p99<=40ms' \
    --router round-robin,least-outstanding
  llmbench simulate --sim llmbench-results/plan/best.yaml --rate 50 \
    --slo 'ttft:p99<=500ms,tpot:p99<=50ms'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runPlan(cmd.Context(), stdio, &f, time.Now())
		},
	}
	f.bind(cmd.Flags())
	cmd.Annotations = map[string]string{resolvesFlagErrors: "resolve"}
	return cmd
}

// resolve checks every flag, reporting all problems at once, and builds the plan's
// configuration; stdio hears the notes on what the plan will and will not do.
func (f *planFlags) resolve(stdio Stdio, now time.Time) (*bench.Spec, specflags.Console, plan.Config, error) {
	fs := f.fs
	cfg, con, err := f.bench.Resolve(false, now) // applies --config first, so Changed sees its flags
	errs := fielderr.Split(err)
	for _, name := range slices.Sorted(maps.Keys(planRefused)) {
		if fs.Changed(name) {
			errs = append(errs, fmt.Errorf("--%s: %s", name, planRefused[name]))
		}
	}
	if f.model.Shape != "" && fs.Changed("sim") {
		errs = append(errs, errors.New("--model-shape and --sim: give one (a model preset on the roofline, or a profile)"))
	}
	if f.model.Shape != "" && f.model.Config != "" {
		errs = append(errs, errors.New("--model-shape and --model-config: give one (a model preset, or a config.json)"))
	}
	space, err := f.lists.Parse()
	if err != nil {
		errs = append(errs, planError(err))
	}
	base, baseErr := f.base()
	if baseErr != nil {
		errs = append(errs, baseErr)
	} else if err := space.Validate(base); err != nil && len(errs) > 0 {
		errs = append(errs, planError(err)) // with the others; plan.Config.Validate reports it otherwise
	}
	if len(errs) > 0 {
		return nil, con, plan.Config{}, usageError(errors.Join(unwrapUsage(errs)...))
	}
	if err := f.outputDir(cfg, now); err != nil {
		errs = append(errs, err)
	}
	pc := f.cfg
	pc.Space, pc.Names, pc.Workers = space, planNames, runtime.GOMAXPROCS(0)
	fit, err := pc.ForSpec(cfg, base, plan.Given{Rate: fs.Changed("rate"), Length: fs.Changed("duration") || fs.Changed("requests")})
	if err != nil {
		errs = append(errs, planTrafficError(err))
	} else {
		say(stdio.Err, adaptNotes(cfg, fit)...)
	}
	if len(errs) == 0 {
		if err := pc.Validate(); err != nil {
			errs = append(errs, planError(err))
		}
	}
	if len(errs) > 0 {
		return nil, con, plan.Config{}, usageError(errors.Join(unwrapUsage(errs)...))
	}
	return cfg, con, pc, nil
}

func runPlan(ctx context.Context, stdio Stdio, f *planFlags, now time.Time) error {
	cfg, con, pc, err := f.resolve(stdio, now)
	if err != nil {
		return err
	}
	base := pc.Base
	if base.Cost.Kind != sim.CostRoofline {
		fmt.Fprintf(stdio.Err, "note: profile %s has a %s cost model, which describes one server on its own GPU and TP: the plan searches replicas of that server (and the engine settings given), not other GPUs, TP or precisions\n", base.Name, base.Cost.Kind)
	}
	if gpuPrice := cfg.Judge.Pricing.USDPerGPUHour; gpuPrice != nil && len(pc.Space.GPUs) > 1 {
		fmt.Fprintf(stdio.Err, "note: --gpu-price %g prices every GPU searched alike, so they compare on speed alone\n", *gpuPrice)
	} else if base.USDPerGPUHour() <= 0 && gpuPrice == nil && len(pc.Space.GPUs) == 0 {
		fmt.Fprintln(stdio.Err, unpricedNote(base))
	}
	if slices.Contains(pc.Space.Prefill, sim.PrefillDisaggregated) || base.Engine.Prefill == sim.PrefillDisaggregated && len(pc.Space.Prefill) == 0 {
		fmt.Fprintln(stdio.Err, "note: a disaggregated deployment's prefill pool is not counted in its GPUs or cost (engine.prefill_workers; docs/simulator.md)")
	}
	if c := base.Calibration; c != nil {
		printValidity(stdio, c, cfg)
	}
	if !metrics.JudgesQueueing(cfg.Judge.Metrics.SLOs) {
		fmt.Fprintln(stdio.Err, "note: --slo has no ttft or e2el term: a fleet too small for the traffic queues its requests, which shows in TTFT and E2EL only (TPOT stays bounded by the batch limit), so the plan may choose fleets that cannot keep up: add e.g. ttft:p99<=2s")
	}
	fmt.Fprintln(stdio.Out, console.Wrap(pc.Headline(cfg), 0, 2, console.Width))

	var watch plan.Watch
	watch.Follow(&pc)
	start := time.Now()
	bar := progress.NewLine(stdio.Err, con.NoProgress, func() string {
		return watch.Now().Line(len(pc.Space.Routers), time.Since(start))
	})
	pl, runErr := plan.Run(ctx, pc)
	bar.Finish()
	if pl == nil {
		return withCode(ExitFailure, runErr)
	}
	pc.Describe(pl, cfg, Version)
	check := f.checkCommand(cfg, pl.BestCandidate(), pc.Traffic.Fixed)
	if err := plan.WriteFiles(cfg.Output.Dir, pl, check); err != nil {
		return withCode(ExitFailure, planError(err))
	}
	fmt.Fprintln(stdio.Out)
	plan.WriteTable(stdio.Out, pl, 20, con.Wide)
	for _, w := range pl.Warnings {
		fmt.Fprintf(stdio.Err, "warning: %s\n", w)
	}
	if pl.Best != nil {
		fmt.Fprintf(stdio.Out, "\nIts profile: %s; check it with\n  %s\n", filepath.Join(cfg.Output.Dir, "best.yaml"), console.ShellFold(check, 2))
	}
	fmt.Fprintf(stdio.Out, "\nResults: %s\n", cfg.Output.Dir)
	switch {
	case ctx.Err() != nil:
		return withCode(ExitInterrupted, nil)
	case runErr != nil:
		return withCode(ExitFailure, runErr)
	case pl.Best == nil && pl.Confidence == plan.ConfidenceInterval:
		return withCode(ExitSLOFailed, errors.New("no candidate met the SLOs at the traffic at its prediction intervals' edge: plan.json says why each missed (a larger --max-replicas, other GPUs, looser SLOs, or --confidence point: the simulated figures alone)"))
	case pl.Best == nil:
		return withCode(ExitSLOFailed, errors.New("no candidate met the SLOs at the traffic: plan.json says why each missed (a larger --max-replicas, other GPUs, or looser SLOs)"))
	}
	return nil
}
