// Package specflags is the command line of a bench.Spec, the run that run, simulate and plan
// describe: its flags bound (each with the Spec's fields it sets), read and checked into a
// Spec with every problem said at once (Flags.Resolve, --config's file included, and the
// values that did not parse, which Lenient keeps for every command), a Spec written back as
// the flags that resolve to it again (Args), and bench's problems with the Spec said by the
// flags behind them (Named, Invalid). It names flags so that bench need not; cli holds the
// commands, their exit codes and what they print.
package specflags

import (
	"strings"

	"github.com/llmbench/llmbench/internal/bench"
	"github.com/llmbench/llmbench/internal/client"
	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/sim"

	"github.com/spf13/pflag"
)

// Flags are the flags shared by run and simulate. A flag whose value is a field of
// bench.Spec as it is binds to spec, which starts as bench.DefaultSpec (the defaults the flags
// show); the rest are kept here as typed, for the resolver to parse and check.
type Flags struct {
	spec    bench.Spec
	con     Console
	fs      *pflag.FlagSet
	writers map[string]flagWriter // how the flags are written back (Args)

	// Target (run only).
	url, apiKeyFile        string
	moreURLs               []string // --url given again: the endpoints to balance over
	balance, sessionHeader string
	headers                []string
	extraBody              string
	temperature, topP      float64 // used when set (Changed)
	imageSize              string  // --image-size WxH
	chatTemplate           string
	gpuMetrics             []string

	// What a request carries beside its prompt.
	stream bool // --stream (generation APIs; false: one JSON document)
	tools  int  // --tools N generated function definitions

	// Load.
	concurrency, rate, arrival string
	stages                     string // --stages: one level whose load changes over time
	warmup                     string
	shard                      string
	startAt                    string
	maxErrorRate               string

	// Workload, judging and outputs.
	inputTokens, outputTokens string
	agent                     agentFlags
	percentiles               string
	config                    string // --config: flags from a YAML file
	price                     Prices
}

// Bind binds run's flags (simulate's, live false), their defaults bench's (DefaultSpec), in
// the order Args writes them back (plan's check command keeps it).
func (f *Flags) Bind(pfs *pflag.FlagSet, live bool) {
	d := bench.DefaultSpec()
	fs := newSpecFlagSet(pfs)
	f.spec, f.fs, f.writers = d, pfs, fs.writers
	if f.spec.Live = live; live {
		f.bindTarget(fs, d)
	} else { // a simulation has no server to reach or scrape
		f.spec.Server, f.spec.Telemetry = bench.Server{}, bench.Telemetry{}
	}
	apis := "API: " + strings.Join(client.APIs(), ", ")
	if !live {
		apis = "API whose requests to simulate: " + strings.Join(bench.SimAPIs, ", ")
	}
	specVar(fs, fs.StringVar, &f.spec.API, "api", d.API, apis, "API")
	f.bindInputs(fs, d)
	// Not the default profile, which plan's --model-shape and --model-config take as not given.
	specVar(fs, fs.StringVar, &f.spec.SimProfile, "sim", d.SimProfile, "simulator profile: textbook, h200-llama-3.1-8b, or a YAML file (used when there is no --url)", "SimProfile",
		func(c specRun) []string { return when(c.SimProfile != sim.DefaultProfile, c.SimProfile) })

	f.bindLoad(fs, live, d)

	f.bindWorkload(fs)
	specVar(fs, fs.StringVar, &f.percentiles, "percentiles", strings.Join(numList(d.Judge.Metrics.Percentiles), ","), "percentiles to report", "Judge.Metrics.Percentiles",
		func(c specRun) []string { return numList(c.Judge.Metrics.Percentiles) })
	specVar(fs, fs.StringVar, &f.spec.Judge.SLO, "slo", "", "SLOs, quoted for the shell: per-request bounds 'ttft<=500ms,tpot<=50ms' (goodput) and level verdicts 'ttft:p99<=1s,goodput>=0.95'", "Judge.SLO,Judge.Metrics.SLOs")
	f.price.bind(fs, live)
	f.agent.bind(fs, &f.spec.Workload.Agent)
	f.bindBalance(fs, live)

	o := &f.spec.Output
	specVar(fs, fs.StringVar, &o.Dir, "output-dir", "", "results folder (default llmbench-results/<UTC timestamp>)", "Output.Dir")
	specVar(fs, fs.BoolVar, &o.Overwrite, "overwrite", false, "replace the run already in --output-dir (without it, a folder that holds a run is refused)", "Output.Overwrite")
	specVar(fs, fs.BoolVar, &f.con.NoProgress, "no-progress", false, "no progress bar on stderr", "") // the console's: no part of the Spec
	specVar(fs, fs.BoolVar, &f.con.Quiet, "quiet", false, "print only the ladder table and the results folder (no per-level blocks)", "")
	specVar(fs, fs.BoolVar, &f.con.Wide, "wide", false, "print every column of the ladder table (by default it fits 100 columns)", "")
	specVar(fs, fs.StringVar, &o.ResultFormat, "result-format", "", "also write vLLM's result files, per-request arrays included (vllm.json, or vllm-<level>.json for each level of a ladder): vllm", "Output.ResultFormat")
	defRecords := d.Output.Records
	if !live {
		defRecords = record.FormatCompact // millions of requests: a fifteenth of the bytes
	}
	specVar(fs, fs.StringVar, (*string)(&o.Records), "records", string(defRecords), "format of the raw records: jsonl (records.jsonl, one JSON object per line) or compact (records.bin, docs/metrics.md)", "Output.Records")
	specVar(fs, fs.StringVar, &f.config, "config", "", "read flags from a YAML run configuration (`concurrency: [1, 4, 16]`, ...); flags given on the command line win; no secrets in it", "", none)
}

// BindSimulate binds simulate's flags: run's that a simulation takes, and the model to serve.
func (f *Flags) BindSimulate(fs *pflag.FlagSet) {
	f.Bind(fs, false)
	f.bindModelConfig(specFlagSet{fs, f.writers})
}

// bindModelConfig binds simulate's model to serve.
func (f *Flags) bindModelConfig(fs specFlagSet) {
	specVar(fs, fs.StringVar, &f.spec.ModelConfig, "model-config", "", "serve the model of this Hugging Face config.json (`PATH`) on --sim's roofline profile instead of its own model", "ModelConfig")
}
