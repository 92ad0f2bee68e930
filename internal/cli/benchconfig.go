package cli

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/llmbench/llmbench/internal/fielderr"
	"github.com/llmbench/llmbench/internal/route"
	"github.com/llmbench/llmbench/internal/search"

	"github.com/llmbench/llmbench/internal/bench"
	"github.com/llmbench/llmbench/internal/chattemplate"
	"github.com/llmbench/llmbench/internal/client"
	"github.com/llmbench/llmbench/internal/load"
	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/schedule"
	"github.com/llmbench/llmbench/internal/tokenizer"
	"github.com/llmbench/llmbench/internal/workload"
)

// consoleOpts are how the console shows a run, beside its bench.Spec: they change no file.
type consoleOpts struct {
	quiet      bool // the ladder and the results folder only
	wide       bool // the whole ladder table
	noProgress bool
}

// resolve validates every flag and reports all problems at once.
func (f *benchFlags) resolve(live bool, now time.Time) (*bench.Spec, consoleOpts, error) {
	if f.config != "" && f.fs != nil {
		if err := applyConfig(f.fs, f.config); err != nil {
			return nil, consoleOpts{}, usageError(err)
		}
	}
	con := consoleOpts{quiet: f.quiet, wide: f.wide, noProgress: f.noProgress}
	drawn := live && f.drawSeed()
	r := &resolver{f: f, live: live, c: &bench.Spec{Live: live, Server: bench.Server{Model: f.model}, SimProfile: f.sim,
		ModelConfig: f.modelConfig, Tokenizer: f.tokenizer, NoStream: !f.stream, API: f.api, Seed: f.seed, SeedDrawn: drawn}}
	if f.fs != nil {
		r.errs = append(r.errs, flagErrors(f.fs)...) // values that did not parse, the rest checked beside them
	}
	if live {
		r.target()
	}
	r.balancing()
	ladder := r.load()
	r.search(ladder)
	r.spec("API")
	r.inputs()
	r.c.SearchMax = f.searchMax
	if r.c.SearchMax == 0 {
		r.c.SearchMax = map[search.Axis]float64{search.Concurrency: 1024, search.Rate: 1000}[r.c.Search]
	}
	r.judging()
	r.workload()
	r.outputs(now)
	r.levels(ladder)
	// bench owns the rules of its Spec and Config, said here among the flags' own (said); its
	// console is the caller's, so a stand-in writer passes.
	bc := benchOf(Stdio{Out: io.Discard}, r.c, con)
	if errs := r.said(fielderr.Split(bc.Validate())); len(errs) > 0 {
		return nil, con, usageError(errors.Join(errs...))
	}
	return r.c, con, nil
}

// drawSeed gives a run against a real server (--url) without --seed a seed of its own, so
// that a second run does not send the first's prompts, which a server's prompt cache would
// answer; it reports whether it drew one. A run of shards keeps --seed's default: the shards,
// on machines of their own, slice one plan.
func (f *benchFlags) drawSeed() bool {
	if f.url == "" || f.shard != "" || f.fs == nil || f.fs.Changed("seed") {
		return false
	}
	f.seed = rand.Int64N(1<<31) + 1
	return true
}

// balancing reads --balance and --session-header: run's spread over several --url,
// simulate's router over the profile's replicas (simProfile applies it).
func (r *resolver) balancing() {
	f, c := r.f, r.c
	if c.Balance = f.balance; c.Balance == "" && len(f.moreURLs) > 0 {
		c.Balance = route.RoundRobin
	}
	r.spec("Balance", "Balance,More")
	explicit := f.fs != nil && f.fs.Changed("session-header")
	if c.Balance == route.Session || explicit {
		c.SessionHeader = f.sessionHeader
	}
	r.spec("SessionHeader")
}

// resolver gathers a bench.Spec from the flags, and every problem with them.
type resolver struct {
	f    *benchFlags
	c    *bench.Spec
	live bool
	errs []error
}

func (r *resolver) add(err error) {
	if err != nil {
		r.errs = append(r.errs, err)
	}
}

// target reads run's target flags: the server, its API, credentials and transport.
func (r *resolver) target() {
	f, c := r.f, r.c
	c.IgnoreEOS, c.Timeout, c.IdleTimeout, c.KeepAlive, c.TestRequest = f.ignoreEOS, f.timeout, f.idleTimeout, f.keepAlive, f.testRequest
	c.Insecure, c.HTTP2, c.ReadStamps, c.CACert, c.SaveText, c.Endpoint = f.insecure, f.http2, f.readStamps, f.caCert, f.saveText, f.endpoint
	if f.url != "" {
		r.add(parseTarget(f.url))
		c.URL = strings.TrimRight(f.url, "/")
	}
	for _, u := range f.moreURLs {
		r.add(parseTarget(u))
		c.More = append(c.More, strings.TrimRight(u, "/"))
	}
	if !slices.Contains(client.APIs(), f.api) {
		hint := didYouMean(f.api, client.APIs())
		switch strings.ToLower(f.api) {
		case "vllm", "sglang", "openai", "lmdeploy", "trt-llm", "tensorrt-llm", "llama.cpp", "llama-server":
			hint = " (--api names the API, not the server: " + f.api + " serves openai-chat and openai-completions)"
		}
		r.add(fmt.Errorf("--api: %q is not one of %s%s", f.api, strings.Join(client.APIs(), ", "), hint))
	} else if f.url == "" && !slices.Contains(bench.SimAPIs, f.api) {
		r.add(fmt.Errorf("--api %s needs --url: the built-in simulator speaks %s", f.api, strings.Join(bench.SimAPIs, ", ")))
	}
	var err error
	c.APIKey, err = resolveAPIKey(f.apiKey, f.apiKeyFile)
	r.add(err)
	c.Headers, err = parseHeaders(f.headers)
	r.add(err)
	if c.ExtraBody, err = client.ParseExtraBody(f.extraBody); err != nil {
		r.add(fmt.Errorf("--extra-body: %w", err))
	}
	r.spec("Timeout", "IdleTimeout", "Telemetry.Interval")
	if f.metricsURL != "" && f.metricsURL != "none" {
		if err := parseTarget(f.metricsURL); err != nil {
			r.add(fmt.Errorf("--metrics-url: %q must be an http:// or https:// URL", f.metricsURL))
		}
	}
	c.Telemetry.MetricsURL, c.Telemetry.Interval = f.metricsURL, f.metricsInterval
	c.Telemetry.GPUs, c.Telemetry.NoGPU = nil, false
	for _, u := range f.gpuMetrics {
		if u == "none" {
			if len(f.gpuMetrics) > 1 {
				r.add(errors.New("--gpu-metrics none: given with URLs; none reads no GPU metrics at all"))
			}
			c.Telemetry.GPUs, c.Telemetry.NoGPU = nil, true
			break
		}
		if err := parseTarget(u); err != nil {
			r.add(fmt.Errorf("--gpu-metrics: %q must be an http:// or https:// URL of a dcgm-exporter's or AMD device-metrics-exporter's /metrics, or none", u))
		}
		c.Telemetry.GPUs = append(c.Telemetry.GPUs, u)
	}
}

// ladderFlags are the load flags' values the levels are built from.
type ladderFlags struct {
	concurrency, rates []float64
	stages             schedule.Stages
	arrival            schedule.Arrival
	warmN              int
	warmD              time.Duration
	unparsed           bool // --concurrency or --rate did not parse
}

// load reads the load flags: the ladder, its levels' lengths, warm-up and sharding.
func (r *resolver) load() ladderFlags {
	f, c := r.f, r.c
	var l ladderFlags
	var err, errC, errR error
	l.concurrency, errC = parseList("concurrency", f.concurrency, true)
	l.rates, errR = parseList("rate", f.rate, false)
	r.add(errC)
	r.add(errR)
	l.unparsed = errC != nil || errR != nil
	if l.arrival, err = schedule.ParseArrival(f.arrival); err != nil {
		r.add(fmt.Errorf("--arrival: %w", err))
	}
	if l.warmN, l.warmD, err = load.ParseWarmup(f.warmup); err != nil {
		r.add(fmt.Errorf("--warmup: %w", err))
	}
	c.Base.Shard, c.Base.Shards, err = parseShard(f.shard)
	r.add(err)
	if f.startAt != "" {
		t, err := time.Parse(time.RFC3339, f.startAt)
		if err != nil {
			r.add(fmt.Errorf("--start-at: %q is not an RFC 3339 time like 2026-01-02T15:04:05Z", f.startAt))
		}
		c.StartAt = t
	}
	if f.stages != "" {
		if l.stages, err = schedule.ParseStages(f.stages); err != nil {
			r.add(fmt.Errorf("--stages: %w", err))
			l.unparsed = true
		}
		for _, other := range []struct {
			name string
			set  bool
		}{{"concurrency", f.concurrency != ""}, {"rate", f.rate != ""}, {"search", f.search != ""},
			{"requests", f.requests != 0}, {"duration", f.duration != 0}} {
			if other.set {
				r.add(fmt.Errorf("--stages and --%s: the stages set the level's load and length; drop --%s", other.name, other.name))
			}
		}
	}
	// Rules about the flags themselves; those of a level are load's (checkLevels).
	if len(l.concurrency) > 0 && len(l.rates) > 0 {
		// Two lists, one ladder: each level built has one of them, so no level sees this.
		r.add(errors.New("--concurrency and --rate: give one (closed or open loop), not both"))
	}
	r.spec("Requests,Base.Duration")
	if f.requests == 0 && f.fs != nil && f.fs.Changed("requests") {
		// 0 is the flag's "unset": given, it would silently become each level's default.
		r.add(errors.New("--requests 0: a level measures at least one request; leave --requests out for each level's default length"))
	}
	return l
}

// search reads the flags of what runs beside the ladder: repeats, the error-rate stop
// and the SLO search.
func (r *resolver) search(l ladderFlags) {
	f, c := r.f, r.c
	c.Repeat, c.StopOnSaturation = f.repeat, f.stopOnSaturation
	if f.repeat > 1 && f.search != "" {
		r.add(errors.New("--repeat and --search: a search probes each load once; repeat the level it finds instead"))
	}
	var err error
	if c.Base.MaxErrorRate, err = load.ParseMaxErrorRate(f.maxErrorRate); err != nil {
		r.add(fmt.Errorf("--max-error-rate: %w", err))
	}
	switch f.search {
	case "":
	case "concurrency", "rate":
		c.Search = search.Axis(f.search)
		if len(l.concurrency)+len(l.rates) > 0 {
			r.add(errors.New("--search finds the load itself: drop --concurrency/--rate"))
		}
	default:
		r.add(fmt.Errorf("--search: %q is not concurrency or rate", f.search))
	}
}

// judging reads the flags that judge and price the levels: percentiles, SLOs, prices.
func (r *resolver) judging() {
	f, c := r.f, r.c
	pcts, err := metrics.ParsePercentiles(f.percentiles)
	if err != nil {
		r.add(fmt.Errorf("--percentiles: %w", err))
	}
	slos, err := metrics.ParseSLOs(f.slo)
	if err != nil {
		r.add(fmt.Errorf("--slo: %w", err))
	}
	c.Judge.Metrics, c.Judge.SLO = metrics.Config{Percentiles: pcts, SLOs: slos}, f.slo
	r.spec("Judge.Metrics.SLOs[],API", "Judge.Metrics.SLOs[],NoStream")
	if c.Judge.Pricing, err = f.price.parse(); err != nil {
		r.add(err)
	} else if r.live && f.url != "" {
		c.Judge.Price, err = price(c.Judge.Pricing, nil, 1) // a server of its own: only the flags price it
		r.add(err)
	}
	r.spec("Search,Judge.Metrics.SLOs")
}

// workload reads the flags that shape the requests: lengths, dataset, sampling, chat.
func (r *resolver) workload() {
	f, c, live := r.f, r.c, r.live
	in, out, errIn, errOut := f.lengths()
	r.add(errIn)
	r.add(errOut)
	c.Workload = workload.Config{Dataset: f.dataset, InputTokens: in, OutputTokens: out,
		PrefixTokens: f.prefixTokens, PrefixGroups: f.prefixGroups, Seed: f.seed,
		TraceSpeed: f.traceSpeed, TraceOffset: f.traceOffset, LengthsOnly: !live, Turns: f.turns, ThinkTime: f.thinkTime}
	if f.fs != nil {
		var errs []error
		c.Workload.Agent, errs = f.agent.agent(f.fs)
		for _, err := range errs {
			r.add(err)
		}
	}
	if live && f.fs != nil { // sent only when given
		if f.fs.Changed("temperature") {
			c.Temperature = &f.temperature
		}
		if f.fs.Changed("top-p") {
			c.TopP = &f.topP
		}
	}
	r.spec("Temperature", "TopP")
	if live {
		var err error
		c.ChatTemplate, err = resolveChatTemplate(f.chatTemplate, f.tokenizer, f.api)
		r.add(err)
		c.ChatOnServer = f.chatTemplate == "" && f.tokenizer == "server" && client.AppliesChatTemplate(f.api)
		if f.api == client.APIOllamaGenerate && f.turns > 1 {
			// Its prompt is the whole conversation joined, which Ollama formats as one
			// user message: the turns are not the template's messages, so message text
			// alone is sized (and the server's count differs by the template's tokens).
			c.ChatTemplate, c.ChatOnServer = nil, false
		}
	}
	r.spec("Tokenizer")
	if f.turns < 1 {
		r.add(fmt.Errorf("--turns %d: a conversation has at least one turn (1: single requests)", f.turns))
	} else if errOut == nil && errIn == nil {
		r.add(c.Workload.Validate())
	}
}

// lengths reads --input-tokens and --output-tokens (run, simulate, plan and dataset).
func (f *benchFlags) lengths() (in, out workload.Dist, errIn, errOut error) {
	in, err := workload.ParseDist(f.inputTokens)
	if err != nil {
		errIn = fmt.Errorf("--input-tokens: %w", err)
	}
	out, err = workload.ParseDist(f.outputTokens)
	if err != nil {
		errOut = fmt.Errorf("--output-tokens: %w", err)
	}
	return in, out, errIn, errOut
}

// outputs reads the flags of the run's files.
func (r *resolver) outputs(now time.Time) {
	f, c := r.f, r.c
	c.Output = bench.Output{Dir: f.outputDir, Overwrite: f.overwrite, Records: record.Format(f.records), ResultFormat: f.resultFormat}
	if c.Output.Dir == "" {
		c.Output.Dir = "llmbench-results/" + now.UTC().Format("20060102T150405Z")
	}
	if files := bench.RunFiles(c.Output.Dir); len(files) > 0 && !f.overwrite {
		r.add(fmt.Errorf("--output-dir %s already holds a run (%s): give another folder, or --overwrite to replace it", c.Output.Dir, strings.Join(files, ", ")))
	}
}

// levels sets the ladder (bench's default when no load is given) on the load flags' Base,
// and says each of its levels' problems once under the flag that set the field at fault.
func (r *resolver) levels(l ladderFlags) {
	f, c := r.f, r.c
	b := &c.Base // its shard and error-rate limit are set already (load, search)
	b.Arrival, b.MaxConcurrency, b.Duration, c.Requests = l.arrival, f.maxConcurrency, f.duration, f.requests
	b.Warmup, b.WarmupTime, b.Cooldown = l.warmN, l.warmD, f.cooldown
	c.SetLoads(l.concurrency, l.rates, l.stages, l.unparsed)
	said := map[string]bool{}
	for _, err := range c.LevelErrors(f.rate != "") {
		if err = levelError(err); !said[err.Error()] {
			said[err.Error()] = true
			r.add(err)
		}
	}
}

// resolveChatTemplate finds the chat template the chat APIs' prompts are sized with:
// --chat-template's, else the one beside --tokenizer's tokenizer.json (a HuggingFace model
// folder holds both), else none. APIs that send the prompt as it is have none.
func resolveChatTemplate(flag, tok, api string) (*chattemplate.Template, error) {
	applies := client.AppliesChatTemplate(api)
	switch {
	case flag == "none":
		return nil, nil
	case flag != "" && !applies:
		return nil, fmt.Errorf("--chat-template: --api %s sends its prompt as it is; the APIs a server formats with a chat template are %s", api, strings.Join(client.ChatTemplateAPIs(), ", "))
	case flag != "":
		tm, err := chattemplate.Load(flag)
		if err != nil {
			return nil, fmt.Errorf("--chat-template: %w", err)
		}
		return tm, nil
	case !applies || tok == "server" || slices.Contains(tokenizer.Encodings(), tok):
		return nil, nil
	}
	path, err := tokenizer.Resolve(tok)
	if err != nil {
		return nil, nil // --tokenizer's own error is reported where it is loaded
	}
	tm, err := chattemplate.Find(filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("--tokenizer %s: %w (--chat-template none sizes message text alone)", tok, err)
	}
	return tm, nil
}
