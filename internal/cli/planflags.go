package cli

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/llmbench/llmbench/internal/bench"
	"github.com/llmbench/llmbench/internal/console"
	"github.com/llmbench/llmbench/internal/plan"
	"github.com/llmbench/llmbench/internal/sim"
	"github.com/llmbench/llmbench/internal/specflags"
	"github.com/llmbench/llmbench/internal/suggest"
)

// planFlags are plan's flags as typed: simulate's traffic, workload, SLO and pricing flags
// (specflags.Flags), the model, the search space, and the plan's bounds and ranking, bound
// straight into the plan's Config.
type planFlags struct {
	bench specflags.Flags
	fs    *pflag.FlagSet // simulate's flags and plan's own
	model plan.Model
	lists plan.SpaceText // the search space
	cfg   plan.Config
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
}

// bind binds plan's flags: simulate's, some refused (hidden), and the search space.
func (f *planFlags) bind(fs *pflag.FlagSet) {
	f.fs = fs
	f.bench.Bind(fs, false)
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
	// simulate's flags behind plan's fields: the model's profile, the SLOs judged, the folder.
	for name, field := range map[string]string{"sim": "Model.Profile", "slo": "Metrics.SLOs", "output-dir": "Output.Dir"} {
		_ = fs.SetAnnotation(name, planFields, []string{field})
	}
	planVar(fs, fs.StringVar, &f.model.Shape, "model-shape", "", "the model, a preset ("+strings.Join(sim.ModelPresets(), ", ")+"), priced by the roofline on each --gpu (instead of --sim)", "Model.Shape")
	planVar(fs, fs.StringVar, &f.model.Config, "model-config", "", "the model as a Hugging Face config.json (`PATH`: dense, GQA, sliding windows, mixtures of experts, MLA), on --sim's roofline profile or the default one", "Model.Config")
	planVar(fs, fs.StringVar, &f.lists.DPs, "dp", "", "data-parallel attention groups per replica to try, `N,N,...` (a mixture of experts'; default: the profile's)", "Space.DPs")
	planVar(fs, fs.StringVar, &f.lists.ExpertParallel, "expert-parallel", "", "expert parallelism to try: false, true or false,true (a mixture of experts'; default: the profile's)", "Space.ExpertParallel")
	planVar(fs, fs.StringVar, &f.lists.GPUs, "gpu", "", "GPU presets to try, `a,b,...` ("+strings.Join(sim.GPUPresets(), ", ")+"; default: the profile's GPU)", "Space.GPUs")
	planVar(fs, fs.StringVar, &f.lists.TPs, "tp", "", "tensor-parallel GPUs per replica to try, `N,N,...` (powers of two; default: the profile's)", "Space.TPs")
	planVar(fs, fs.StringVar, &f.lists.Dtypes, "dtype", "", "weight precisions to try: "+strings.Join(sim.WeightDtypes(), ",")+" (the KV cache takes bf16's or fp8's; default: the profile's)", "Space.Dtypes")
	planVar(fs, fs.StringVar, &f.lists.MaxNumSeqs, "max-num-seqs", "", "engine batch limits to try, `N,N,...` (default: the profile's)", "Space.MaxNumSeqs")
	planVar(fs, fs.StringVar, &f.lists.MaxBatchedTokens, "max-batched-tokens", "", "per-step token budgets to try, `N,N,...` (default: the profile's)", "Space.MaxBatchedTokens")
	planVar(fs, fs.StringVar, &f.lists.Prefill, "prefill", "", "prefill placements to try: colocated,disaggregated (default: the profile's)", "Space.Prefill")
	planVar(fs, fs.StringVar, &f.lists.Routers, "router", "", "routers to try in front of the replicas: round-robin,least-outstanding,prefix-affinity (default: the profile's)", "Space.Routers")
	fs.Lookup("wide").Usage = "print every column of the table (GPUs, horizon, engine settings; by default it fits 100 columns)"
	planVar(fs, fs.StringVar, &f.lists.Speculative, "speculative", "", "speculative decoding to try, `off,K:A,...` (K draft tokens, acceptance A; drafting as the --sim profile's speculative: states)", "Space.Speculative")
	planVar(fs, fs.IntVar, &f.cfg.MaxReplicas, "max-replicas", 64, "the largest fleet to try; a configuration that needs more misses the SLOs", "MaxReplicas")
	planVar(fs, fs.Float64Var, &f.cfg.Electricity, "electricity", 0, "electricity's price, `USD` per kWh: each fleet's estimated power (docs/simulator.md#energy) priced beside its GPU-hours, in $/hour and $/M out (default: energy not priced)", "Electricity")
	planVar(fs, fs.Float64Var, &f.cfg.PUE, "pue", 1, "power usage effectiveness: the facility's power over the GPUs' (cooling, power delivery), in [1, 5]; the power priced and the tokens/s per kW are the GPUs' times it", "PUE")
	planVar(fs, fs.StringVar, &f.cfg.Confidence, "confidence", plan.ConfidenceAuto, "what a fleet must meet the SLOs at: interval (each term's figure at the unfavourable edge of its 90% prediction interval, how far the simulator was measured from real servers, and at the point), point (the simulated figures alone) or auto (interval where every term's interval is within ×2 of its figure, else point)", "Confidence")
	planVar(fs, fs.StringVar, &f.cfg.Objective, "objective", plan.ObjectiveCost, "what ranks the fleets meeting the SLOs: cost (the lowest price an hour) or energy (the least estimated power)", "Objective")
}

// planFields annotates a flag of plan's with the plan's fields it sets, as plan's errors key
// them (plan.Config's, Model.* and Space.*), whose problems are said as the flag's
// (planFlagNames).
const planFields = "plan-fields"

// planVar binds plan's own flag name to p by bind (fs's Var of p's type), with the plan's
// field it sets.
func planVar[T any](fs *pflag.FlagSet, bind func(*T, string, T, string), p *T, name string, def T, usage, field string) {
	bind(p, name, def, usage)
	_ = fs.SetAnnotation(name, planFields, []string{field})
}

// planFlagNames are the flags that set plan's fields (their planFields), by field, for
// plan's errors.
var planFlagNames = func() map[string]string {
	var f planFlags
	fs := pflag.NewFlagSet("", pflag.ContinueOnError)
	f.bind(fs)
	return specflags.FieldFlags(fs, planFields)
}()

// planTrafficErrors say plan's refusals of the traffic as the flags behind them.
var planTrafficErrors = map[error]string{
	plan.ErrTraceRate: "--rate: the trace brings its own arrivals (drop --rate; --trace-speed scales them)",
	plan.ErrOneRate:   "--rate: give the one arrival rate to plan for, e.g. --rate 20 (requests/s)",
}

// planTrafficError says plan.SpecTraffic's error as the flags behind it.
func planTrafficError(err error) error {
	if msg, ok := planTrafficErrors[err]; ok {
		return errors.New(msg)
	}
	return invalidUsage(err)
}

// planNames are plan's flags as its console, HTML and warnings point to them.
var planNames = plan.Names{Wide: "--wide", Confidence: "--confidence", Length: "--duration, --requests",
	DropLength: "drop --duration and --requests"}

// planError names the flags behind plan.Config's and plan.Model's problems.
func planError(err error) error { return specflags.NamedFlags(err, planFlagNames) }

// planTraffic says whether plan's flag fl shapes the traffic and its verdict: one plan takes
// that sets the Spec's fields, but the model's (the check simulates best.yaml) and the
// outputs' (the check writes its own). Given to plan, it is given to the simulate that
// checks best.yaml.
func planTraffic(fl *pflag.Flag) bool {
	_, refused := planRefused[fl.Name]
	fields := specflags.Fields(fl)
	return !refused && len(fields) > 0 && !slices.ContainsFunc(fields, func(field string) bool {
		return field == "" || field == "SimProfile" || strings.HasPrefix(field, "Output.")
	})
}

// checkCommand is the simulate command that re-simulates best.yaml at the traffic, over the
// horizon the plan judged it over (unless the traffic's length was fixed): the run's own
// arguments (specflags.Args), restricted to the traffic flags given.
func (f *planFlags) checkCommand(cfg *bench.Spec, best *plan.Candidate, fixed bool) string {
	args := []string{"llmbench", "simulate", "--sim", console.ShellQuote(filepath.Join(cfg.Output.Dir, "best.yaml"))}
	for _, a := range specflags.Args(cfg, specflags.Console{}, false, func(name string) bool {
		fl := f.fs.Lookup(name) // simulate's flags are plan's
		return fl.Changed && planTraffic(fl)
	}) {
		args = append(args, console.ShellQuote(a))
	}
	if best != nil && !fixed {
		args = append(args, "--duration", fmtDuration(time.Duration(best.HorizonS*float64(time.Second))))
	}
	return strings.Join(args, " ")
}

// base is the profile the space is built on (plan.Model.Base).
func (f *planFlags) base() (sim.Profile, error) {
	f.model.Profile, f.model.ProfileGiven = f.fs.Lookup("sim").Value.String(), f.fs.Changed("sim")
	base, err := f.model.Base()
	if err != nil && f.model.Shape != "" {
		return base, fmt.Errorf("%w%s", planError(err), suggest.DidYouMean(f.model.Shape, sim.ModelPresets()))
	}
	return base, planError(err)
}

// outputDir sets the plan's folder (a timestamped one by default) and refuses one that
// already holds a plan, unless --overwrite.
func (f *planFlags) outputDir(cfg *bench.Spec, now time.Time) error {
	if !f.fs.Changed("output-dir") {
		cfg.Output.Dir = plan.DefaultDir(now)
	}
	var held *plan.HeldError
	if errors.As(plan.CheckOutput(cfg.Output), &held) {
		return fmt.Errorf("--output-dir %s already holds a plan (%s): give another folder, or --overwrite to replace it", held.Dir, held.File)
	}
	return nil
}

// fmtDuration writes a whole number of seconds as a flag value: "300s".
func fmtDuration(d time.Duration) string {
	return strconv.FormatInt(int64(d.Round(time.Second)/time.Second), 10) + "s"
}
