package bench

import (
	"maps"
	"slices"
	"time"

	"github.com/llmbench/llmbench/internal/chattemplate"
	"github.com/llmbench/llmbench/internal/client"
	"github.com/llmbench/llmbench/internal/load"
	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/rundesc"
	"github.com/llmbench/llmbench/internal/search"
	"github.com/llmbench/llmbench/internal/workload"
)

// Spec is what a run or simulate was asked to do: its target's settings, ladder and
// workload, as summary.json's "load" and "workload" describe it (Describe), how its levels
// are judged, what it reads beside them and where its files go. How the console shows the
// run is the caller's.
type Spec struct {
	Live      bool         // run over HTTP (else simulate)
	API       string       // the API requests are sent to (client.APIs)
	InProcess bool         // run against the in-process simulator (no server URL given)
	Levels    []load.Level // the ladder; empty for a search
	Base      load.Level   // the load settings every level shares (shard included)
	Requests  int          // each level's request count (0: a default per level)
	// Search, when set, finds the largest load of its axis up to SearchMax whose
	// percentile SLOs pass.
	Search    search.Axis
	SearchMax float64
	StartAt   time.Time // a live run's t = 0 (zero: now), so shards on several machines start together
	// Repeat runs each level that many times; StopOnSaturation ends the ladder at an
	// oversaturated level (Base.MaxErrorRate is the error-rate limit).
	Repeat           int
	StopOnSaturation bool // end the ladder at the first oversaturated level
	// Server is a live run's server and transport; SimProfile the simulated deployment, and
	// ModelConfig, when set, a Hugging Face config.json whose model it serves on
	// SimProfile's roofline instead of its own.
	Server
	SimProfile  string
	ModelConfig string

	Workload  workload.Config
	Tokenizer string
	// ChatTemplate sizes chat prompts with the run's tokenizer once it is loaded (UseChat);
	// ChatOnServer has the server count them instead (a server tokenizer, no template).
	ChatTemplate *chattemplate.Template
	ChatOnServer bool
	Seed         int64 // fixes every level's arrivals and prompts
	SeedDrawn    bool  // Seed was drawn for this run, not given
	// DefaultLoad says no load was given (no concurrency, rate or search): the default
	// ladder, which a trace's own arrivals replace (FitToSource).
	DefaultLoad bool
	// Images are the images each prompt carries (none: N 0).
	Images workload.ImageConfig
	// NoStream (whole responses), BatchSize (embeddings), Documents and QueryTokens (rerank).
	NoStream                          bool
	BatchSize, Documents, QueryTokens int
	// Tools and ToolChoice: the functions every request offered and the tool_choice sent;
	// ToolsFile the file they were read from ("": generated from Seed).
	Tools      []workload.ToolDef
	ToolChoice workload.ToolChoice
	ToolsFile  string

	Judge     Judge
	Telemetry Telemetry
	Output    Output // the run's files (Config.Validate checks their formats)
}

// Judge is how the levels are judged and priced.
type Judge struct {
	Metrics metrics.Config // the percentiles reported and the SLOs judged
	SLO     string         // the SLOs as given, as summary.json says them
	// Pricing is the prices given for the run; Price its price once known (a simulated
	// deployment's comes with its profile), nil when it has none.
	Pricing Pricing
	Price   *metrics.Price
}

// Pricing is the prices given for a run, each nil or 0 when not given: a price per
// GPU-hour, a GPU count, or per-token prices (a hosted API's). Source names what gave them,
// as the user knows it (summary.json's price.source).
type Pricing struct {
	USDPerGPUHour *float64
	GPUs          int
	Tokens        *metrics.TokenPrice
	Source        string
}

// Telemetry is what a live run reads beside its requests, every Interval: the server's
// /metrics and the GPUs'.
type Telemetry struct {
	MetricsURL string // "" the target's own /metrics when it serves one; "none" none
	Interval   time.Duration
	GPUs       []string // GPU exporters' /metrics (dcgm-exporter, AMD device-metrics-exporter)
	NoGPU      bool     // no GPU figures: not this machine's nvidia-smi either
}

// Decide is the requests a level needs for its SLO verdict to be decided
// (metrics.DecidingSamples).
func (r Spec) Decide() int { return metrics.DecidingSamples(r.Judge.Metrics.SLOs) }

// Finish numbers a level, seeds it from Seed and gives it a default length (FinishLevel).
func (r Spec) Finish(l load.Level, index, requests int) load.Level {
	return FinishLevel(l, index, requests, r.Seed, r.Decide())
}

// Describe is the run's description. Settings that do not apply are left out of the load:
// the arrival process of a closed-loop ladder, the timeouts and headers of a simulation, the
// profile of a run against a real server. Header values that look secret are redacted.
func (r Spec) Describe() (rundesc.Load, rundesc.Workload) { return r.load(), r.workload() }

func (r Spec) load() rundesc.Load {
	b := r.Base
	l := rundesc.Load{Mode: rundesc.ModeSimulate, Search: string(r.Search), Requests: r.Requests,
		Duration: durString(b.Duration), Warmup: b.Warmup, WarmupTime: durString(b.WarmupTime),
		Cooldown: durString(b.Cooldown), MaxConcurrency: b.MaxConcurrency, IgnoreEOS: r.IgnoreEOS,
		Insecure: r.Insecure, HTTP2: r.HTTP2, ReadStamps: r.ReadStamps, ExtraBody: r.ExtraBody,
		MaxErrorRate: b.MaxErrorRate, StopOnSaturation: r.StopOnSaturation,
		Temperature: r.Temperature, TopP: r.TopP}
	if r.Repeat > 1 {
		l.Repeat = r.Repeat
	}
	if r.Live {
		l.Mode = rundesc.ModeRun
	}
	if r.Search != "" {
		l.SearchMax = r.SearchMax
	}
	if r.Search == "rate" || (len(r.Levels) > 0 && r.Levels[0].Rate > 0) {
		l.Arrival = b.Arrival.String()
	}
	if b.Shards > 1 {
		l.Shard = rundesc.ShardString(b.Shard, b.Shards)
	}
	if !r.StartAt.IsZero() {
		l.StartAt = r.StartAt.UTC().Format(time.RFC3339Nano)
	}
	if r.Live {
		l.Timeout, l.IdleTimeout = durString(r.Timeout), durString(r.IdleTimeout)
		l.KeepAlive, l.TestRequest = &r.KeepAlive, &r.TestRequest
		for _, k := range slices.Sorted(maps.Keys(r.Headers)) {
			for _, v := range r.Headers[k] {
				if client.SecretHeader(k) {
					v = "REDACTED"
				}
				l.Headers = append(l.Headers, k+": "+v)
			}
		}
	}
	if !r.Live || r.InProcess {
		l.SimProfile = r.SimProfile
	}
	for _, lv := range r.Levels {
		l.Levels = append(l.Levels, levelDesc(lv))
	}
	return l
}

// chatSource names what counted chat prompts ("" for nothing).
func chatSource(c workload.ChatCounter) string {
	if c == nil {
		return ""
	}
	return c.Source()
}

// workload describes the run's workload; the dataset is "random" unless one was given.
func (r Spec) workload() rundesc.Workload {
	w := r.Workload
	d := rundesc.Workload{Dataset: w.Dataset, Tokenizer: r.Tokenizer, InputTokens: w.InputTokens.String(),
		ChatTemplate: chatSource(w.Chat), ChatPrefixTokens: workload.ChatPrefixTokens(w.Chat),
		OutputTokens: w.OutputTokens.String(), PrefixTokens: w.PrefixTokens, TraceSpeed: w.TraceSpeed,
		TraceOffset: durString(w.TraceOffset)}
	if w.Turns > 1 {
		d.Turns, d.ThinkTime = w.Turns, durString(w.ThinkTime)
	}
	if a := w.Agent; a.On() {
		d.Agentic = &rundesc.Agentic{CallsPerTask: a.Calls.String(), ToolLatencyMs: a.ToolLatency.String(), ToolResultTokens: a.ToolResultTokens.String(),
			FanOut: a.FanOut, CompactAt: a.CompactAt, CompactTo: a.CompactTo}
	}
	if w.PrefixTokens > 0 {
		d.PrefixGroups = w.PrefixGroups
	}
	if d.Dataset == "" {
		d.Dataset = "random"
	}
	if r.NoStream {
		d.Stream = new(bool)
	}
	d.BatchSize, d.Documents = r.BatchSize, r.Documents
	if r.Documents > 0 {
		d.QueryTokens = r.QueryTokens
	}
	for _, t := range r.Tools {
		d.Tools = append(d.Tools, t.Name)
	}
	d.ToolChoice = string(r.ToolChoice)
	return d
}

// levelDesc is l's load as the description says it.
func levelDesc(l load.Level) rundesc.Level {
	return rundesc.Level{Concurrency: l.Concurrency, Rate: l.Rate, Requests: l.Requests, Stages: l.Stages.String()}
}

func durString(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}
