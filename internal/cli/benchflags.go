package cli

import (
	"strings"
	"time"

	"github.com/llmbench/llmbench/internal/bench"
	"github.com/llmbench/llmbench/internal/client"
	"github.com/llmbench/llmbench/internal/record"

	"github.com/spf13/pflag"
)

// benchFlags are the flags shared by run and simulate, as typed by the user.
type benchFlags struct {
	// Target (run only).
	url, api, model, apiKey, apiKeyFile string
	moreURLs                            []string // --url given again: the endpoints to balance over
	balance, sessionHeader              string
	headers                             []string
	extraBody                           string
	ignoreEOS                           bool
	temperature, topP                   float64 // used when set (Changed)
	fs                                  *pflag.FlagSet
	timeout, idleTimeout                time.Duration
	caCert                              string
	insecure, http2, readStamps         bool
	keepAlive                           bool
	saveText                            bool
	testRequest                         bool
	sim, modelConfig                    string // simulate's --model-config: the model served on --sim's roofline
	stream                              bool   // --stream (generation APIs; false: one JSON document)
	endpoint                            string // --endpoint: the API's path
	batchSize, documents, queryTokens   int    // embeddings, rerank
	images                              int    // --images per request
	imageSize, imageFormat              string // --image-size WxH, --image-format png|jpeg
	tools                               int    // --tools N generated function definitions
	toolsFile, toolChoice               string // --tools-file PATH, --tool-choice

	// Load.
	concurrency, rate, arrival string
	stages                     string // --stages: one level whose load changes over time
	maxConcurrency             int
	requests                   int
	duration                   time.Duration
	warmup                     string
	cooldown                   time.Duration
	search                     string
	searchMax                  float64
	shard                      string
	startAt                    string
	repeat                     int
	maxErrorRate               string
	stopOnSaturation           bool

	// Workload.
	inputTokens, outputTokens  string
	tokenizer, dataset         string
	chatTemplate               string
	prefixTokens, prefixGroups int
	traceSpeed                 float64
	traceOffset                time.Duration
	turns                      int
	thinkTime                  time.Duration
	seed                       int64
	agent                      agentFlags

	// Metrics and outputs.
	percentiles, slo string
	outputDir        string
	noProgress       bool
	wide             bool
	quiet            bool
	overwrite        bool
	config           string // --config: flags from a YAML file
	resultFormat     string
	records          string // --records: jsonl or compact
	metricsURL       string
	metricsInterval  time.Duration
	gpuMetrics       []string
	price            priceFlags
}

// bind binds run's flags (simulate's, live false), their defaults bench's (DefaultSpec).
func (f *benchFlags) bind(fs *pflag.FlagSet, live bool) {
	d := bench.DefaultSpec()
	if f.fs = fs; live {
		f.bindTarget(fs, d)
	}
	apis := "API: " + strings.Join(client.APIs(), ", ")
	if !live {
		apis = "API whose requests to simulate: " + strings.Join(bench.SimAPIs, ", ")
	}
	fs.StringVar(&f.api, "api", d.API, apis)
	f.bindInputs(fs, d)
	fs.StringVar(&f.sim, "sim", d.SimProfile, "simulator profile: textbook, h200-llama-3.1-8b, or a YAML file (used when there is no --url)")

	f.bindLoad(fs, live, d)

	f.bindWorkload(fs)
	f.agent.bind(fs)
	f.price.bind(fs, live)
	f.bindBalance(fs, live)

	fs.StringVar(&f.percentiles, "percentiles", strings.Join(numList(d.Judge.Metrics.Percentiles), ","), "percentiles to report")
	fs.StringVar(&f.slo, "slo", "", "SLOs, quoted for the shell: per-request bounds 'ttft<=500ms,tpot<=50ms' (goodput) and level verdicts 'ttft:p99<=1s,goodput>=0.95'")
	fs.StringVar(&f.outputDir, "output-dir", "", "results folder (default llmbench-results/<UTC timestamp>)")
	fs.BoolVar(&f.noProgress, "no-progress", false, "no progress bar on stderr")
	fs.BoolVar(&f.quiet, "quiet", false, "print only the ladder table and the results folder (no per-level blocks)")
	fs.BoolVar(&f.wide, "wide", false, "print every column of the ladder table (by default it fits 100 columns)")
	fs.StringVar(&f.config, "config", "", "read flags from a YAML run configuration (`concurrency: [1, 4, 16]`, ...); flags given on the command line win; no secrets in it")
	fs.BoolVar(&f.overwrite, "overwrite", false, "replace the run already in --output-dir (without it, a folder that holds a run is refused)")
	fs.StringVar(&f.resultFormat, "result-format", "", "also write vLLM's result files, per-request arrays included (vllm.json, or vllm-<level>.json for each level of a ladder): vllm")
	defRecords := d.Output.Records
	if !live {
		defRecords = record.FormatCompact // millions of requests: a fifteenth of the bytes
	}
	fs.StringVar(&f.records, "records", string(defRecords), "format of the raw records: jsonl (records.jsonl, one JSON object per line) or compact (records.bin, docs/metrics.md)")
}
