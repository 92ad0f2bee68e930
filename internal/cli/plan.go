package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/llmbench/llmbench/internal/atomicfile"
	"github.com/llmbench/llmbench/internal/console"
	"github.com/llmbench/llmbench/internal/load"
	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/plan"
	"github.com/llmbench/llmbench/internal/sim"
	"github.com/llmbench/llmbench/internal/tokenizer"
	"github.com/llmbench/llmbench/internal/workload"
)

// planFlags are plan's flags as typed: simulate's traffic, workload, SLO and pricing flags
// (benchFlags) and the search space.
type planFlags struct {
	bench                             benchFlags
	modelShape, modelConfig           string
	gpus, dtypes, prefill, routers    string
	tps, maxNumSeqs, maxBatchedTokens string
	dps, expertParallel               string
	maxReplicas                       int
	speculative                       string // speculative decoding settings to try: off, K:A
	electricity, pue                  float64
	objective                         string
	confidence                        string
}

// planRefused are simulate's flags that plan does not take, and why.
var planRefused = map[string]string{
	"concurrency":        "plan sizes a fleet for an arrival rate: give --rate R (or a trace with --dataset)",
	"max-concurrency":    "plan serves the traffic as it arrives, with no client-side cap",
	"search":             "plan searches deployments for the traffic given: give --rate R",
	"stages":             "plan sizes a fleet for one steady rate: give --rate R (its peak)",
	"search-max":         "plan searches deployments for the traffic given: give --rate R",
	"repeat":             "plan simulates each fleet once (the same seed as simulate, so best.yaml re-simulates to the same figures)",
	"stop-on-saturation": "plan judges every fleet at the traffic (a fleet that cannot keep up misses the SLOs)",
	"api":                "plan simulates chat completions",
	"balance":            "plan tries each --router over the replicas it sizes: give --router",
	"stream":             "plan simulates streamed chat completions",
	"batch-size":         "plan simulates chat completions",
	"documents":          "plan simulates chat completions",
	"query-tokens":       "plan simulates chat completions",
	"records":            "plan writes no records (plan.json, plan.html and best.yaml)",
	"result-format":      "plan writes no records (plan.json, plan.html and best.yaml)",
	"quiet":              "plan prints its table only",
	"tools":              "plan simulates requests without tools (neither their definitions' prompt tokens nor their calls): size for them with --input-tokens and --output-tokens",
	"tools-file":         "plan simulates requests without tools (neither their definitions' prompt tokens nor their calls): size for them with --input-tokens and --output-tokens",
	"tool-choice":        "plan simulates requests without tools (neither their definitions' prompt tokens nor their calls): size for them with --input-tokens and --output-tokens",
}

// planOwnFlags are plan's flags that neither shape the traffic nor are refused: the space
// searched and the model (best.yaml carries what was chosen), the ranking, and where and
// how the plan is written.
var planOwnFlags = []string{"sim", "model-shape", "model-config", "gpu", "tp", "dtype", "dp", "expert-parallel",
	"max-num-seqs", "max-batched-tokens", "prefill", "router", "speculative", "max-replicas", "confidence",
	"objective", "electricity", "pue", "config", "output-dir", "overwrite", "no-progress", "wide"}

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

// bind binds plan's flags: simulate's, some refused (hidden), and the search space.
func (f *planFlags) bind(fs *pflag.FlagSet) {
	f.bench.bind(fs, false)
	for name := range planRefused {
		_ = fs.MarkHidden(name)
	}
	for name, usage := range map[string]string{
		"rate":       "the traffic to plan for: its arrival rate, requests/s (`R`; a trace given with --dataset brings its own)",
		"sim":        "the model as a profile: textbook, h200-llama-3.1-8b, or a YAML file (a roofline one carries to --gpu and --tp; a linear or table one plans its replicas only)",
		"output-dir": "folder for plan.json, plan.html and best.yaml (default llmbench-results/plan-<UTC timestamp>)",
		"overwrite":  "replace the plan already in --output-dir",
		"gpu-price":  "USD per GPU-hour, for every GPU searched (default: each GPU preset's list price, or the profile's gpu.usd_per_hour)",
	} {
		fs.Lookup(name).Usage = usage
	}
	fs.StringVar(&f.modelShape, "model-shape", "", "the model, a preset ("+strings.Join(sim.ModelPresets(), ", ")+"), priced by the roofline on each --gpu (instead of --sim)")
	fs.StringVar(&f.modelConfig, "model-config", "", "the model as a Hugging Face config.json (`PATH`: dense, GQA, sliding windows, mixtures of experts, MLA), on --sim's roofline profile or the default one")
	fs.StringVar(&f.dps, "dp", "", "data-parallel attention groups per replica to try, `N,N,...` (a mixture of experts'; default: the profile's)")
	fs.StringVar(&f.expertParallel, "expert-parallel", "", "expert parallelism to try: false, true or false,true (a mixture of experts'; default: the profile's)")
	fs.StringVar(&f.gpus, "gpu", "", "GPU presets to try, `a,b,...` ("+strings.Join(sim.GPUPresets(), ", ")+"; default: the profile's GPU)")
	fs.StringVar(&f.tps, "tp", "", "tensor-parallel GPUs per replica to try, `N,N,...` (powers of two; default: the profile's)")
	fs.StringVar(&f.dtypes, "dtype", "", "weight precisions to try: "+strings.Join(sim.WeightDtypes(), ",")+" (the KV cache takes bf16's or fp8's; default: the profile's)")
	fs.StringVar(&f.maxNumSeqs, "max-num-seqs", "", "engine batch limits to try, `N,N,...` (default: the profile's)")
	fs.StringVar(&f.maxBatchedTokens, "max-batched-tokens", "", "per-step token budgets to try, `N,N,...` (default: the profile's)")
	fs.StringVar(&f.prefill, "prefill", "", "prefill placements to try: colocated,disaggregated (default: the profile's)")
	fs.StringVar(&f.routers, "router", "", "routers to try in front of the replicas: round-robin,least-outstanding,prefix-affinity (default: the profile's)")
	fs.Lookup("wide").Usage = "print every column of the table (GPUs, horizon, engine settings; by default it fits 100 columns)"
	fs.StringVar(&f.speculative, "speculative", "", "speculative decoding to try, `off,K:A,...` (K draft tokens, acceptance A; drafting as the --sim profile's speculative: states)")
	fs.IntVar(&f.maxReplicas, "max-replicas", 64, "the largest fleet to try; a configuration that needs more misses the SLOs")
	fs.Float64Var(&f.electricity, "electricity", 0, "electricity's price, `USD` per kWh: each fleet's estimated power (docs/simulator.md#energy) priced beside its GPU-hours, in $/hour and $/M out (default: energy not priced)")
	fs.Float64Var(&f.pue, "pue", 1, "power usage effectiveness: the facility's power over the GPUs' (cooling, power delivery), in [1, 5]; the power priced and the tokens/s per kW are the GPUs' times it")
	fs.StringVar(&f.confidence, "confidence", plan.ConfidenceAuto, "what a fleet must meet the SLOs at: interval (each term's figure at the unfavourable edge of its 90% prediction interval, how far the simulator was measured from real servers, and at the point), point (the simulated figures alone) or auto (interval where every term's interval is within ×2 of its figure, else point)")
	fs.StringVar(&f.objective, "objective", plan.ObjectiveCost, "what ranks the fleets meeting the SLOs: cost (the lowest price an hour) or energy (the least estimated power)")
}

// planSpaceFlags write plan's own flags back, as specFlags write the run's
// (TestSpecArgsRoundTrip): the model as given (its profile, Base, is what was made of it),
// the search space and the ranking.
var planSpaceFlags = []struct {
	name string
	vals func(f *planFlags, pc plan.Config) []string
}{
	{"model-shape", func(f *planFlags, _ plan.Config) []string { return str(f.modelShape) }},
	{"model-config", func(f *planFlags, _ plan.Config) []string { return str(f.modelConfig) }},
	{"gpu", func(f *planFlags, pc plan.Config) []string { return list(pc.Space.GPUs, strings.Clone) }},
	{"tp", func(f *planFlags, pc plan.Config) []string { return list(pc.Space.TPs, strconv.Itoa) }},
	{"dtype", func(f *planFlags, pc plan.Config) []string { return list(pc.Space.Dtypes, strings.Clone) }},
	{"dp", func(f *planFlags, pc plan.Config) []string { return list(pc.Space.DPs, strconv.Itoa) }},
	{"expert-parallel", func(f *planFlags, pc plan.Config) []string { return list(pc.Space.ExpertParallel, strconv.FormatBool) }},
	{"max-num-seqs", func(f *planFlags, pc plan.Config) []string { return list(pc.Space.MaxNumSeqs, strconv.Itoa) }},
	{"max-batched-tokens", func(f *planFlags, pc plan.Config) []string { return list(pc.Space.MaxBatchedTokens, strconv.Itoa) }},
	{"prefill", func(f *planFlags, pc plan.Config) []string { return list(pc.Space.Prefill, strings.Clone) }},
	{"router", func(f *planFlags, pc plan.Config) []string { return list(pc.Space.Routers, strings.Clone) }},
	{"speculative", func(f *planFlags, pc plan.Config) []string {
		return list(pc.Space.Speculative, plan.SpecSetting.String)
	}},
	{"max-replicas", func(f *planFlags, pc plan.Config) []string { return num(pc.MaxReplicas) }},
	{"confidence", func(f *planFlags, pc plan.Config) []string { return str(pc.Confidence) }},
	{"objective", func(f *planFlags, pc plan.Config) []string { return str(pc.Objective) }},
	{"electricity", func(f *planFlags, pc plan.Config) []string { return num(pc.Electricity) }},
	{"pue", func(f *planFlags, pc plan.Config) []string { return num(pc.PUE) }},
}

// planFiles are the files plan writes into its folder.
var planFiles = []string{"plan.json", "plan.html", "best.yaml"}

// resolve checks every flag, reporting all problems at once, and builds the plan's
// configuration; stdio hears the notes on what the plan will and will not do.
func (f *planFlags) resolve(stdio Stdio, now time.Time) (*benchConfig, plan.Config, error) {
	fs := f.bench.fs
	cfg, err := f.bench.resolve(false, now) // applies --config first, so Changed sees its flags
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	for _, name := range sortedNames(planRefused) {
		if fs.Changed(name) {
			errs = append(errs, fmt.Errorf("--%s: %s", name, planRefused[name]))
		}
	}
	if f.modelShape != "" && fs.Changed("sim") {
		errs = append(errs, errors.New("--model-shape and --sim: give one (a model preset on the roofline, or a profile)"))
	}
	if f.modelShape != "" && f.modelConfig != "" {
		errs = append(errs, errors.New("--model-shape and --model-config: give one (a model preset, or a config.json)"))
	}
	space := f.space(&errs)
	base, baseErr := f.base()
	if baseErr != nil {
		errs = append(errs, baseErr)
	} else if err := space.Validate(base); err != nil && len(errs) > 0 {
		errs = append(errs, planError(err)) // with the others; plan.Config.Validate reports it otherwise
	}
	if len(errs) > 0 {
		return nil, plan.Config{}, usageError(errors.Join(unwrapUsage(errs)...))
	}
	base.Seed = cfg.Seed
	if err := f.outputDir(cfg, now); err != nil {
		errs = append(errs, err)
	}
	traffic, err := f.traffic(stdio, cfg)
	if err != nil {
		errs = append(errs, err)
	}
	pc := plan.Config{Base: base, Space: space, Traffic: traffic, Metrics: cfg.metrics, MaxReplicas: f.maxReplicas,
		Electricity: f.electricity, PUE: f.pue, Objective: f.objective, Confidence: f.confidence, Names: planNames,
		Workers: runtime.GOMAXPROCS(0), Price: func(p sim.Profile) *metrics.Price {
			pr, _ := cfg.pricing.price(profilePrice(p), p.GPUs()) // the one error is --gpus, which plan has not
			return pr
		}}
	if len(errs) == 0 {
		if err := pc.Validate(); err != nil {
			errs = append(errs, planError(err))
		}
	}
	if len(errs) > 0 {
		return nil, plan.Config{}, usageError(errors.Join(unwrapUsage(errs)...))
	}
	return cfg, pc, nil
}

// planFlagNames are the flags that set plan.Config's fields, for its errors.
var planFlagNames = map[string]string{
	"Electricity": "electricity", "PUE": "pue", "Objective": "objective", "Confidence": "confidence",
	"Metrics.SLOs": "slo", "MaxReplicas": "max-replicas", "Space.GPUs": "gpu", "Space.TPs": "tp",
	"Space.Dtypes": "dtype", "Space.DPs": "dp", "Space.ExpertParallel": "expert-parallel",
	"Space.MaxNumSeqs": "max-num-seqs", "Space.MaxBatchedTokens": "max-batched-tokens",
	"Space.Prefill": "prefill", "Space.Routers": "router", "Space.Speculative": "speculative",
}

// planError names the flags behind plan.Config's problems.
// planNames are plan's flags as its console, HTML and warnings point to them.
var planNames = plan.Names{Wide: "--wide", Confidence: "--confidence", Length: "--duration, --requests",
	DropLength: "drop --duration and --requests"}

func planError(err error) error { return namedFlags(err, planFlagNames) }

// space reads the search space's lists, adding what is wrong with them to errs.
func (f *planFlags) space(errs *[]error) plan.Space {
	strs := func(flag, s string) []string {
		var out []string
		for _, v := range strings.Split(s, ",") {
			if v = strings.TrimSpace(v); v != "" {
				out = append(out, v)
			}
		}
		if s != "" && len(out) == 0 {
			*errs = append(*errs, fmt.Errorf("--%s: %q lists nothing", flag, s))
		}
		return out
	}
	ints := func(flag, s string) []int {
		v, err := parseList(flag, s, true)
		if err != nil {
			*errs = append(*errs, err)
		}
		out := make([]int, len(v))
		for i, x := range v {
			out[i] = int(min(x, 1e12))
		}
		return out
	}
	var spec []plan.SpecSetting
	if f.speculative != "" {
		var err error
		if spec, err = plan.ParseSpeculative(f.speculative); err != nil {
			*errs = append(*errs, fmt.Errorf("--speculative: %w", err))
		}
	}
	return plan.Space{GPUs: strs("gpu", f.gpus), Dtypes: strs("dtype", f.dtypes), Prefill: strs("prefill", f.prefill),
		Routers: strs("router", f.routers), TPs: ints("tp", f.tps), MaxNumSeqs: ints("max-num-seqs", f.maxNumSeqs),
		MaxBatchedTokens: ints("max-batched-tokens", f.maxBatchedTokens), Speculative: spec,
		DPs: ints("dp", f.dps), ExpertParallel: f.expertParallelList(strs("expert-parallel", f.expertParallel), errs)}
}

// expertParallelList reads --expert-parallel's values, true or false each.
func (f *planFlags) expertParallelList(vals []string, errs *[]error) []bool {
	var eps []bool
	for _, v := range vals {
		on, err := strconv.ParseBool(v)
		if err != nil {
			*errs = append(*errs, fmt.Errorf("--expert-parallel: %q is not true or false (give true,false to try both)", v))
		}
		eps = append(eps, on)
	}
	return eps
}

// base is the profile the space is built on: --model-shape's preset on the default
// profile's roofline and engine, or --sim's profile, serving --model-config's model if given.
func (f *planFlags) base() (sim.Profile, error) {
	if f.modelShape == "" {
		base, err := sim.LoadProfile(f.bench.sim)
		if err != nil {
			return base, fmt.Errorf("--sim: %w", err)
		}
		if f.modelConfig != "" {
			if base, err = base.WithModelConfig(f.modelConfig); err != nil {
				return base, fmt.Errorf("--model-config: %w", err)
			}
			if !f.bench.fs.Changed("sim") {
				base.Name = f.modelConfig
			}
		}
		return base, nil
	}
	base, _ := sim.LoadProfile(sim.DefaultProfile)
	m, ok := sim.ModelPreset(f.modelShape)
	base.Model, base.Name = m, f.modelShape
	if !ok {
		return base, fmt.Errorf("--model-shape: %q is not a model preset (%s)%s", f.modelShape, strings.Join(sim.ModelPresets(), ", "), didYouMean(f.modelShape, sim.ModelPresets()))
	}
	return base, nil
}

// outputDir sets the plan's folder (a timestamped one by default) and refuses one that
// already holds a plan, unless --overwrite.
func (f *planFlags) outputDir(cfg *benchConfig, now time.Time) error {
	if !f.bench.fs.Changed("output-dir") {
		cfg.outputDir = "llmbench-results/plan-" + now.UTC().Format("20060102T150405Z")
	}
	if cfg.overwrite {
		return nil
	}
	for _, name := range planFiles {
		if _, err := os.Stat(filepath.Join(cfg.outputDir, name)); err == nil {
			return fmt.Errorf("--output-dir %s already holds a plan (%s): give another folder, or --overwrite to replace it", cfg.outputDir, name)
		}
	}
	return nil
}

// traffic is the traffic to plan for: --rate's level, or a trace's own arrivals, each
// scaled as plan.Traffic asks. Scale 1 is exactly the level simulate runs with the same
// flags, so best.yaml re-simulates to the plan's figures.
func (f *planFlags) traffic(stdio Stdio, cfg *benchConfig) (plan.Traffic, error) {
	var tok tokenizer.Tokenizer
	var err error
	if cfg.Tokenizer != "o200k_base" {
		if tok, err = tokenizer.Load(cfg.Tokenizer); err != nil {
			return plan.Traffic{}, fmt.Errorf("--tokenizer: %w", err)
		}
	}
	src, err := workload.New(cfg.Workload, tok)
	if err != nil {
		return plan.Traffic{}, err
	}
	info := workload.Describe(src)
	rate := f.bench.fs.Changed("rate")
	switch {
	case info.Trace && rate:
		return plan.Traffic{}, errors.New("--rate: the trace brings its own arrivals (drop --rate; --trace-speed scales them)")
	case !info.Trace && (!rate || len(cfg.Levels) != 1):
		return plan.Traffic{}, errors.New("--rate: give the one arrival rate to plan for, e.g. --rate 20 (requests/s)")
	}
	cfg.adaptToSource(stdio, info) // a trace: one level of its own arrivals
	lvl := cfg.Levels[0]
	if info.Trace {
		return plan.Traffic{Rate: lvl.Rate, Fixed: true, Trace: true, At: func(scale float64, _ time.Duration) (load.Level, workload.Source, error) {
			l := lvl
			l.Rate *= scale
			return l, workload.Faster(src, scale), nil
		}}, nil
	}
	fixed := f.fixedLength()
	unit := ""
	if cfg.Workload.Agent.On() || strings.HasPrefix(cfg.Workload.Dataset, workload.DatasetAgent+":") {
		unit = "tasks/s" // --rate is task arrivals
	}
	return plan.Traffic{Rate: lvl.Rate, Fixed: fixed, Unit: unit, At: func(scale float64, horizon time.Duration) (load.Level, workload.Source, error) {
		l := cfg.Base
		l.Rate = lvl.Rate * scale
		if !fixed {
			l.Duration, l.Requests = horizon, 0
		}
		return cfg.finishLevel(l, 0, cfg.Requests), src, nil
	}}, nil
}

// fixedLength says the user gave the levels' length, so the plan does not choose horizons.
func (f *planFlags) fixedLength() bool {
	return f.bench.fs.Changed("duration") || f.bench.fs.Changed("requests")
}

func runPlan(ctx context.Context, stdio Stdio, f *planFlags, now time.Time) error {
	cfg, pc, err := f.resolve(stdio, now)
	if err != nil {
		return err
	}
	base := pc.Base
	if base.Cost.Kind != sim.CostRoofline {
		fmt.Fprintf(stdio.Err, "note: profile %s has a %s cost model, which describes one server on its own GPU and TP: the plan searches replicas of that server (and the engine settings given), not other GPUs, TP or precisions\n", base.Name, base.Cost.Kind)
	}
	if base.USDPerGPUHour() <= 0 && cfg.pricing.usdPerGPUHour == nil && len(pc.Space.GPUs) == 0 {
		fmt.Fprintln(stdio.Err, unpricedNote(base))
	}
	if cfg.pricing.usdPerGPUHour != nil && len(pc.Space.GPUs) > 1 {
		fmt.Fprintf(stdio.Err, "note: --gpu-price %g prices every GPU searched alike, so they compare on speed alone\n", *cfg.pricing.usdPerGPUHour)
	}
	if slices.Contains(pc.Space.Prefill, sim.PrefillDisaggregated) || base.Engine.Prefill == sim.PrefillDisaggregated && len(pc.Space.Prefill) == 0 {
		fmt.Fprintln(stdio.Err, "note: a disaggregated deployment's prefill pool is not counted in its GPUs or cost (engine.prefill_workers; docs/simulator.md)")
	}
	if c := base.Calibration; c != nil {
		printValidity(stdio, c, cfg)
	}
	if !queueingJudged(cfg.metrics.SLOs) {
		fmt.Fprintln(stdio.Err, "note: --slo has no ttft or e2el term: a fleet too small for the traffic queues its requests, which shows in TTFT and E2EL only (TPOT stays bounded by the batch limit), so the plan may choose fleets that cannot keep up: add e.g. ttft:p99<=2s")
	}
	n := pc.Configurations()
	unit := pc.Traffic.Unit
	if unit == "" {
		unit = "req/s"
	}
	fmt.Fprintln(stdio.Out, console.Wrap(fmt.Sprintf("Planning %s for %s %s (%s) to meet %s: %d %s, fleets of up to %d replicas",
		base.ModelName(), strconv.FormatFloat(pc.Traffic.Rate, 'g', 4, 64), unit, describeTraffic(cfg), cfg.sloSpec,
		n, plural(n, "candidate", "candidates"), pc.MaxReplicas), 0, 2, console.Width))

	var mu sync.Mutex
	var last plan.Progress
	start := time.Now()
	pc.Progress = func(p plan.Progress) { mu.Lock(); last = p; mu.Unlock() }
	bar := newLiveLine(stdio.Err, cfg.noProgress, func() string {
		mu.Lock()
		defer mu.Unlock()
		return planProgressLine(last, len(pc.Space.Routers), time.Since(start))
	})
	pl, runErr := plan.Run(ctx, pc)
	bar.finish()
	if pl == nil {
		return withCode(ExitFailure, runErr)
	}
	load, wl := cfg.Describe()
	pl.Schema, pl.Version, pl.Model, pl.Profile = plan.Schema, Version, base.ModelName(), base.Name
	pl.Load, pl.Workload, pl.SLO = load, wl, cfg.sloSpec
	check := f.checkCommand(cfg, pl.BestCandidate(), pc.Traffic.Fixed)
	if err := writePlan(cfg.outputDir, pl, check); err != nil {
		return withCode(ExitFailure, err)
	}
	fmt.Fprintln(stdio.Out)
	plan.WriteTable(stdio.Out, pl, 20, f.bench.wide)
	for _, w := range pl.Warnings {
		fmt.Fprintf(stdio.Err, "warning: %s\n", w)
	}
	if pl.Best != nil {
		fmt.Fprintf(stdio.Out, "\nIts profile: %s; check it with\n  %s\n", filepath.Join(cfg.outputDir, "best.yaml"), shellFold(check, 2))
	}
	fmt.Fprintf(stdio.Out, "\nResults: %s\n", cfg.outputDir)
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

// writePlan writes plan.json, plan.html and, when a candidate meets the SLOs, best.yaml
// into dir, each atomically.
func writePlan(dir string, pl *plan.Plan, check string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--output-dir: %w", err)
	}
	var errs []error
	if b := pl.BestCandidate(); b != nil {
		pl.BestProfile = "best.yaml"
		p := b.Profile()
		if p.Cost.Kind == sim.CostTable && !filepath.IsAbs(p.Cost.File) {
			// best.yaml lies elsewhere than the profile whose table it names.
			if abs, err := filepath.Abs(filepath.Join(filepath.Dir(pl.Profile), p.Cost.File)); err == nil {
				p.Cost.File = abs
			}
		}
		header := fmt.Sprintf("llmbench plan's chosen deployment: %s\nfor %s at %s %s meeting %s (plan.json's candidate 1).\nreplicas is the fewest that meet the SLOs; one fewer does not. Check it:\n  %s",
			b.Describe(), pl.Model, strconv.FormatFloat(pl.Rate, 'g', 4, 64), pl.RateUnit, pl.SLO, check)
		errs = append(errs, atomicfile.Write(filepath.Join(dir, "best.yaml"), func(w io.Writer) error {
			_, err := w.Write(p.YAML(header))
			return err
		}))
	}
	errs = append(errs,
		atomicfile.Write(filepath.Join(dir, "plan.json"), func(w io.Writer) error { return plan.WriteJSON(w, pl) }),
		atomicfile.Write(filepath.Join(dir, "plan.html"), func(w io.Writer) error { return plan.WriteHTML(w, pl) }))
	return errors.Join(errs...)
}

// planTrafficFlags are the flags that shape the traffic and its verdict: given to plan,
// they are given to the simulate that checks best.yaml.
var planTrafficFlags = []string{"rate", "arrival", "requests", "duration", "warmup", "cooldown", "max-error-rate",
	"input-tokens", "output-tokens", "tokenizer", "dataset", "prefix-tokens", "prefix-groups", "trace-speed",
	"trace-offset", "turns", "think-time", "seed", "percentiles", "slo", "gpu-price",
	"workload", "calls-per-task", "tool-latency", "tool-result-tokens", "fan-out", "compact-at", "compact-to"}

// checkCommand is the simulate command that re-simulates best.yaml at the traffic, over the
// horizon the plan judged it over (unless the traffic's length was fixed): the run's own
// arguments (specArgs), restricted to the traffic flags given.
func (f *planFlags) checkCommand(cfg *benchConfig, best *plan.Candidate, fixed bool) string {
	args := []string{"llmbench", "simulate", "--sim", shellQuote(filepath.Join(cfg.outputDir, "best.yaml"))}
	for _, a := range specArgs(cfg, func(name string) bool {
		return slices.Contains(planTrafficFlags, name) && f.bench.fs.Changed(name)
	}) {
		args = append(args, shellQuote(a))
	}
	if best != nil && !fixed {
		args = append(args, "--duration", fmtDuration(time.Duration(best.HorizonS*float64(time.Second))))
	}
	return strings.Join(args, " ")
}

// fmtDuration writes a whole number of seconds as a flag value: "300s".
func fmtDuration(d time.Duration) string {
	return strconv.FormatInt(int64(d.Round(time.Second)/time.Second), 10) + "s"
}

// shellQuote quotes s for a POSIX shell when it holds anything but plain characters.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./,:=+") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// describeTraffic names the traffic for the console: its arrivals and lengths, or its dataset.
func describeTraffic(cfg *benchConfig) string {
	if w := cfg.Workload; w.Dataset != "" && w.Dataset != "random" {
		return w.Dataset
	}
	return fmt.Sprintf("%s, %s → %s tokens", cfg.Base.Arrival.Kind, cfg.Workload.InputTokens, cfg.Workload.OutputTokens)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// planProgressLine is what plan's progress line says: pure, for tests.
func planProgressLine(p plan.Progress, routers int, elapsed time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "plan: %d/%d engine configurations", p.Done, p.Total)
	if routers > 1 {
		fmt.Fprintf(&b, " × %d routers", routers)
	}
	fmt.Fprintf(&b, ", %d meet the SLOs", p.Meeting)
	if c := p.Cheapest; c != nil {
		fmt.Fprintf(&b, ", cheapest %d × %s tp %d", c.Replicas, c.GPU, c.TP)
		if c.USDPerHour != nil {
			fmt.Fprintf(&b, " at %.2f USD/h", *c.USDPerHour)
		}
	}
	fmt.Fprintf(&b, ", %s", elapsed.Round(time.Second))
	if p.Done > 0 && p.Done < p.Total {
		left := time.Duration(float64(elapsed) / float64(p.Done) * float64(p.Total-p.Done))
		fmt.Fprintf(&b, ", ~%s left", left.Round(time.Second))
	}
	return b.String()
}

func sortedNames(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// unwrapUsage takes the usage errors resolve returned apart, so that they join with the
// others as one list.
func unwrapUsage(errs []error) []error {
	var out []error
	for _, err := range errs {
		var ue *UsageError
		if errors.As(err, &ue) {
			if j, ok := ue.Err.(interface{ Unwrap() []error }); ok {
				out = append(out, j.Unwrap()...)
				continue
			}
			out = append(out, ue.Err)
			continue
		}
		out = append(out, err)
	}
	return out
}

// queueingJudged says whether some SLO term bounds a metric that includes the time a
// request waits to be scheduled (TTFT, E2EL).
func queueingJudged(slos []metrics.SLO) bool {
	for _, s := range slos {
		switch s.Metric {
		case metrics.KeyTTFT, metrics.KeyTTFTFromSchedule, metrics.KeyE2EL:
			return true
		}
	}
	return false
}
