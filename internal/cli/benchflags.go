package cli

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/llmbench/llmbench/internal/route"

	"github.com/spf13/pflag"

	"github.com/llmbench/llmbench/internal/bench"
	"github.com/llmbench/llmbench/internal/client"
	"github.com/llmbench/llmbench/internal/fielderr"
	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/rundesc"
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

// bindScrapes binds the flags of what a live run scrapes beside the benchmark: the
// server's /metrics and the GPU exporters'.
func (f *benchFlags) bindScrapes(fs *pflag.FlagSet) {
	fs.StringVar(&f.metricsURL, "metrics-url", "", `Prometheus endpoint to scrape during each level (default: the target's /metrics when it answers; "none" disables)`)
	fs.DurationVar(&f.metricsInterval, "metrics-interval", bench.DefaultInterval, "how often to scrape --metrics-url and --gpu-metrics")
	fs.StringArrayVar(&f.gpuMetrics, "gpu-metrics", nil, "`URL` of a GPU exporter's /metrics (NVIDIA dcgm-exporter, AMD device-metrics-exporter) to scrape during each level: power, energy, J per output token, utilisation (repeatable: one per node)")
}

// bind binds run's flags (simulate's, live false), their defaults bench's (DefaultSpec).
func (f *benchFlags) bind(fs *pflag.FlagSet, live bool) {
	d := bench.DefaultSpec()
	if f.fs = fs; live {
		fs.Var(&urlsValue{first: &f.url, more: &f.moreURLs}, "url", "base URL of the server, e.g. http://127.0.0.1:8000 (default: the built-in simulator, in-process); repeatable: the run balances over the endpoints by --balance")
		fs.StringVar(&f.model, "model", "", "model name (default: the first id from /v1/models)")
		fs.StringVar(&f.apiKey, "api-key", "", "API key sent as a bearer token (default: $OPENAI_API_KEY)")
		fs.StringVar(&f.apiKeyFile, "api-key-file", "", "read the API key from this file")
		fs.StringArrayVar(&f.headers, "header", nil, "extra HTTP header `K:V` (repeatable)")
		fs.StringVar(&f.extraBody, "extra-body", "", "JSON object merged into every request body")
		fs.IntVar(&f.images, "images", 0, "chat and Responses: synthetic images per request, sent as data URLs in image content parts (deterministic by --seed)")
		fs.StringVar(&f.imageSize, "image-size", "512x512", "with --images: each image's size `WxH` in pixels")
		fs.StringVar(&f.imageFormat, "image-format", "png", "with --images: png or jpeg")
		fs.StringVar(&f.endpoint, "endpoint", "", "the API's path on the server, e.g. /rerank (default: the API's own, e.g. /v1/rerank)")
		fs.BoolVar(&f.ignoreEOS, "ignore-eos", d.IgnoreEOS, "send ignore_eos so outputs have exactly --output-tokens (turn off for hosted APIs that reject it)")
		fs.Float64Var(&f.temperature, "temperature", 0, "sampling temperature to send (default: none sent, the server's own)")
		fs.Float64Var(&f.topP, "top-p", 0, "nucleus sampling top_p to send, in (0, 1] (default: none sent)")
		fs.DurationVar(&f.timeout, "timeout", d.Timeout, "per-request time limit (whole request)")
		fs.DurationVar(&f.idleTimeout, "idle-timeout", d.IdleTimeout, "fail a request when its stream sends no bytes for this long")
		fs.StringVar(&f.caCert, "ca-cert", "", "PEM file with an extra CA certificate for https targets")
		fs.BoolVar(&f.insecure, "insecure", false, "skip TLS certificate verification (recorded in the summary)")
		f.bindScrapes(fs)
		fs.BoolVar(&f.http2, "http2", false, "allow HTTP/2 (h2 over TLS, h2c over plain HTTP); default HTTP/1.1, one connection per stream")
		fs.BoolVar(&f.keepAlive, "keep-alive", d.KeepAlive, "reuse connections between requests; false opens a new one per request, as vLLM's client does (a request that meets a connection the server closed is re-sent once either way: docs/real-servers.md)")
		fs.BoolVar(&f.testRequest, "test-request", d.TestRequest, "send one request (the first level's first) before measuring, as vLLM's client does: a failure stops the run with its error (exit 4); an answer warms the server; it is not recorded")
		fs.BoolVar(&f.saveText, "save-text", false, "keep each response's generated text in records.jsonl (\"text\") and in --result-format vllm's generated_texts; records grow by the text's size")
		fs.StringVar(&f.chatTemplate, "chat-template", "", "the model's chat template, which the chat APIs' prompts are sized with so that the server's prompt_tokens is --input-tokens: a .jinja file, a tokenizer_config.json or a model folder (default: the one beside --tokenizer's tokenizer.json, if any); none: size message text alone")
		fs.BoolVar(&f.readStamps, "read-stamps", false, "time token events when llmbench reads them, not by the kernel's receive time of their bytes (the default on Linux over HTTP/1.1)")
	}
	apis := "API: " + strings.Join(client.APIs(), ", ")
	if !live {
		apis = "API whose requests to simulate: " + strings.Join(bench.SimAPIs, ", ")
	}
	fs.StringVar(&f.api, "api", d.API, apis)
	f.bindInputs(fs, d)
	fs.StringVar(&f.sim, "sim", d.SimProfile, "simulator profile: textbook, h200-llama-3.1-8b, or a YAML file (used when there is no --url)")

	fs.StringVar(&f.concurrency, "concurrency", "", "closed loop: concurrent requests, or a ladder `N,N,...` (default 1,4,16,64,256 when neither this nor --rate is given)")
	fs.StringVar(&f.rate, "rate", "", "open loop: requests per second, or a ladder `R,R,...`")
	fs.StringVar(&f.stages, "stages", "", "one level whose load changes over time, `STAGES` D:V (held) and D:V->V2 (ramped linearly), e.g. 60s:2,120s:2->20,60s:20; rates in requests/s, or concurrencies with a concurrency: prefix; figures per stage (docs/metrics.md)")
	fs.StringVar(&f.arrival, "arrival", d.Base.Arrival.String(), "open-loop arrivals: poisson, gamma:B (burstiness B; < 1 is burstier), constant")
	fs.IntVar(&f.maxConcurrency, "max-concurrency", 0, "open loop: cap on in-flight requests (waiting for a slot counts as schedule lag)")
	fs.IntVar(&f.requests, "requests", 0, "measured requests per level (default: whole rounds of the concurrency, at least 2 and 10 requests; open loop: 10 s of arrivals)")
	fs.DurationVar(&f.duration, "duration", 0, "measured time per level (instead of --requests)")
	fs.StringVar(&f.warmup, "warmup", "0", "per level: N requests, or a duration like 10s, sent before measuring and excluded")
	fs.DurationVar(&f.cooldown, "cooldown", 0, "with --duration: requests sent in the last D of a level are excluded")
	fs.StringVar(&f.search, "search", "", "find the largest load meeting the percentile SLOs: concurrency or rate")
	fs.Float64Var(&f.searchMax, "search-max", 0, "upper bound for --search (default 1024 concurrency or 1000 req/s)")
	fs.IntVar(&f.repeat, "repeat", d.Repeat, "run each level N times, each run with seeds of its own (arrivals, prompts, the simulator): figures across runs with t-distribution 95% intervals")
	fs.StringVar(&f.maxErrorRate, "max-error-rate", "", "stop a level when more than this fraction (0.3) or percentage (30%) of its last 50 finished requests failed, once 20 have; exit code 4 (default: off)")
	fs.BoolVar(&f.stopOnSaturation, "stop-on-saturation", false, "open loop: end the ladder at the first level stopped as oversaturated (the server cannot keep up: docs/metrics.md)")
	if live { // a simulation has no machines to share the load among
		fs.StringVar(&f.shard, "shard", "", "run the I-th of N disjoint slices of the plan: `I/N` (0-based)")
		fs.StringVar(&f.startAt, "start-at", "", "start at this RFC 3339 instant (to start shards together)")
	}

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

// bindInputs binds the flags of what a request carries beside its prompt: the stream,
// tools, embeddings' batches and rerank's documents.
func (f *benchFlags) bindInputs(fs *pflag.FlagSet, d bench.Spec) {
	fs.BoolVar(&f.stream, "stream", !d.NoStream, "stream the response (generation APIs); false asks for one JSON document: E2EL and throughput only, no TTFT, TPOT or ITL")
	fs.IntVar(&f.tools, "tools", 0, "chat, Responses and Ollama's chat: offer N generated function definitions in every request (plausible names and typed parameters, by --seed)")
	fs.StringVar(&f.toolsFile, "tools-file", "", "offer the function definitions of this JSON file in every request: an array of OpenAI tools, each {\"type\":\"function\",\"function\":{...}}")
	fs.StringVar(&f.toolChoice, "tool-choice", "", "with --tools or --tools-file: auto, required, none, or a function's name to call (default: none sent, the server's auto)")
	fs.IntVar(&f.batchSize, "batch-size", 1, "embeddings: inputs per request, each of --input-tokens tokens")
	fs.IntVar(&f.documents, "documents", bench.DefaultDocuments, "rerank: documents per request, each of --input-tokens tokens")
	fs.IntVar(&f.queryTokens, "query-tokens", bench.DefaultQueryTokens, "rerank: the query's length in tokens")
}

// bindWorkload binds the flags that shape the requests (shared with dataset).
func (f *benchFlags) bindWorkload(fs *pflag.FlagSet) {
	d := bench.DefaultSpec()
	fs.StringVar(&f.inputTokens, "input-tokens", d.Workload.InputTokens.String(), "prompt length in tokens: N, uniform:A:B, normal:MEAN:STD or lognormal:MEAN:STD")
	fs.StringVar(&f.outputTokens, "output-tokens", d.Workload.OutputTokens.String(), "output length in tokens (max_tokens): N, uniform:A:B, normal:MEAN:STD or lognormal:MEAN:STD")
	fs.StringVar(&f.tokenizer, "tokenizer", d.Tokenizer, "tokenizer for exact prompt lengths: o200k_base, cl100k_base, a tokenizer.json path, a HuggingFace model id in the local cache, or server (the target's /tokenize)")
	fs.StringVar(&f.dataset, "dataset", d.Workload.Dataset, "workload: random, jsonl:PATH, sharegpt:PATH, mooncake:PATH, azure:PATH, agent:PATH (recorded agent sessions)")
	fs.IntVar(&f.prefixTokens, "prefix-tokens", 0, "every prompt starts with one of --prefix-groups shared prefixes of exactly this many tokens")
	fs.IntVar(&f.prefixGroups, "prefix-groups", d.Workload.PrefixGroups, "number of distinct shared prefixes")
	fs.Float64Var(&f.traceSpeed, "trace-speed", d.Workload.TraceSpeed, "replay traces this many times faster")
	fs.DurationVar(&f.traceOffset, "trace-offset", 0, "start a trace's replay this far into it (the trace's own time from its first request, before --trace-speed): e.g. 1h replays from its second hour")
	fs.IntVar(&f.turns, "turns", d.Workload.Turns, "turns per conversation: each next turn carries the history (multi-turn chat)")
	fs.DurationVar(&f.thinkTime, "think-time", 0, "with --turns: the user's pause between a reply and the next turn")
	fs.Int64Var(&f.seed, "seed", d.Seed, "seed for prompts, lengths, arrivals and the simulator (run --url without --seed, unsharded: a new seed each run, printed and kept in summary.json)")
}

// parseList parses a comma list of positive numbers.
func parseList(name, s string, integer bool) ([]float64, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []float64
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		v, err := strconv.ParseFloat(part, 64)
		switch {
		case err != nil || math.IsNaN(v) || math.IsInf(v, 0):
			return nil, fmt.Errorf("--%s: %q is not a number", name, part)
		case v <= 0:
			return nil, fmt.Errorf("--%s: %q must be positive", name, part)
		case integer && v != math.Trunc(v):
			return nil, fmt.Errorf("--%s: %q must be a whole number", name, part)
		}
		out = append(out, v)
	}
	return out, nil
}

// parseShard reads --shard I/N.
func parseShard(s string) (i, n int, err error) {
	i, n, err = rundesc.ParseShard(s)
	if err != nil {
		return 0, 0, fmt.Errorf("--shard: %w", err)
	}
	return i, n, nil
}

// parseHeaders reads --header, each malformed one said under the flag.
func parseHeaders(hs []string) (http.Header, error) {
	h, err := client.ParseHeaders(hs)
	var errs []error
	for _, e := range fielderr.Split(err) {
		errs = append(errs, fmt.Errorf("--header: %w", e))
	}
	return h, errors.Join(errs...)
}

// bindBalance binds --balance (run: over several --url; simulate: the profile's replicas)
// and run's --session-header.
func (f *benchFlags) bindBalance(fs *pflag.FlagSet, live bool) {
	how := "the simulated deployment's router over its replicas (deployment.router), as run --balance spreads requests over several --url"
	if live {
		how = "with several --url: how requests are spread over them"
		fs.StringVar(&f.sessionHeader, "session-header", route.SessionHeader, "the header each request of a conversation or agentic task carries its session key in, with --balance session (or given, for a router in front of one --url); \"\" sends none")
	}
	fs.StringVar(&f.balance, "balance", "", how+": round-robin, least-outstanding, or session (a conversation's or agentic task's requests to one, by a hash of its key) (default round-robin; simulate: the profile's)")
}

// urlsValue is --url, repeatable: the first URL, and any given after it.
type urlsValue struct {
	first *string
	more  *[]string
	n     int
}

func (v *urlsValue) Set(s string) error {
	if v.n == 0 {
		*v.first = s
	} else {
		*v.more = append(*v.more, s)
	}
	v.n++
	return nil
}

func (v *urlsValue) String() string {
	if v.first == nil || *v.first == "" {
		return ""
	}
	return strings.Join(append([]string{*v.first}, *v.more...), ",")
}

func (v *urlsValue) Type() string { return "url" }

// parseTarget checks --url.
func parseTarget(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("--url: %q must be an http:// or https:// base URL such as http://127.0.0.1:8000", s)
	}
	return nil
}

// resolveAPIKey returns the key given (--api-key), else read from its file (--api-key-file),
// else $OPENAI_API_KEY; giving both is an error.
func resolveAPIKey(key, file string) (string, error) {
	if key != "" && file != "" {
		return "", errors.New("--api-key and --api-key-file: give one, not both")
	}
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("--api-key-file: %w", err)
		}
		k := strings.TrimSpace(string(b))
		if k == "" {
			return "", fmt.Errorf("--api-key-file: %s is empty", file)
		}
		return k, nil
	}
	if key != "" {
		return key, nil
	}
	return os.Getenv("OPENAI_API_KEY"), nil
}
