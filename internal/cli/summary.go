package cli

import (
	"strconv"
	"time"

	"github.com/llmbench/llmbench/internal/client"
	"github.com/llmbench/llmbench/internal/engine"
	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/report"
)

// runConfig is the configuration stored in summary.json ("load" and "workload" plus the
// settings that shaped the requests), enough to understand and repeat the run. It never
// holds the API key; secret-looking header values are redacted.
type loadConfig struct {
	Mode           string        `json:"mode"` // run or simulate
	Levels         []levelConfig `json:"levels"`
	Search         string        `json:"search,omitempty"`
	SearchMax      float64       `json:"search_max,omitempty"`
	Arrival        string        `json:"arrival,omitempty"`
	MaxConcurrency int           `json:"max_concurrency,omitempty"`
	Requests       int           `json:"requests,omitempty"`
	Duration       string        `json:"duration,omitempty"`
	Warmup         int           `json:"warmup,omitempty"`
	WarmupTime     string        `json:"warmup_time,omitempty"`
	Cooldown       string        `json:"cooldown,omitempty"`
	Shard          string        `json:"shard,omitempty"`
	StartAt        string        `json:"start_at,omitempty"`
	SimProfile     string        `json:"sim_profile,omitempty"`
	Timeout        string        `json:"timeout,omitempty"`
	IdleTimeout    string        `json:"idle_timeout,omitempty"`
	IgnoreEOS      bool          `json:"ignore_eos"`
	Insecure       bool          `json:"insecure_tls,omitempty"`
	HTTP2          bool          `json:"http2,omitempty"`
	ReadStamps     bool          `json:"read_stamps,omitempty"` // events timed at read, not kernel receive
	KeepAlive      *bool         `json:"keep_alive,omitempty"`  // run: whether connections were reused
	Headers        []string      `json:"headers,omitempty"`
	ExtraBody      any           `json:"extra_body,omitempty"`
}

type levelConfig struct {
	Concurrency int     `json:"concurrency,omitempty"`
	Rate        float64 `json:"rate,omitempty"`
	Requests    int     `json:"requests,omitempty"`
}

func (l levelConfig) name() string {
	return loadName(engine.Level{Concurrency: l.Concurrency, Rate: l.Rate})
}

type workloadConfig struct {
	Dataset      string  `json:"dataset"`
	Tokenizer    string  `json:"tokenizer"`
	InputTokens  string  `json:"input_tokens"`
	OutputTokens string  `json:"output_tokens"`
	PrefixTokens int     `json:"prefix_tokens,omitempty"`
	PrefixGroups int     `json:"prefix_groups,omitempty"`
	TraceSpeed   float64 `json:"trace_speed,omitempty"`
	Turns        int     `json:"turns,omitempty"`
	ThinkTime    string  `json:"think_time,omitempty"`
}

func durString(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}

// newSummary describes the run before it starts; execute fills the levels.
func newSummary(cfg *benchConfig, start time.Time) *report.Summary {
	mode := "run"
	if !cfg.live {
		mode = "simulate"
	}
	b := cfg.base
	lc := loadConfig{Mode: mode, Search: cfg.search, Requests: cfg.requests,
		Duration: durString(b.Duration), Warmup: b.Warmup, WarmupTime: durString(b.WarmupTime),
		Cooldown: durString(b.Cooldown), MaxConcurrency: b.MaxConcurrency, IgnoreEOS: cfg.ignoreEOS,
		Insecure: cfg.insecure, HTTP2: cfg.http2, ReadStamps: cfg.readStamps}
	if len(cfg.extraBody) > 0 {
		lc.ExtraBody = cfg.extraBody
	}
	if cfg.search != "" {
		lc.SearchMax = cfg.searchMax
	}
	if cfg.search == "rate" || (len(cfg.levels) > 0 && cfg.levels[0].Rate > 0) {
		lc.Arrival = b.Arrival.String()
	}
	if cfg.shards > 1 {
		lc.Shard = engineShard(cfg.shard, cfg.shards)
	}
	if !cfg.startAt.IsZero() {
		lc.StartAt = cfg.startAt.UTC().Format(time.RFC3339Nano)
	}
	if cfg.live {
		lc.Timeout, lc.IdleTimeout = durString(cfg.timeout), durString(cfg.idleTimeout)
		lc.KeepAlive = &cfg.keepAlive
		for k, vs := range cfg.headers {
			for _, v := range vs {
				if client.SecretHeader(k) {
					v = "REDACTED"
				}
				lc.Headers = append(lc.Headers, k+": "+v)
			}
		}
	}
	if !cfg.live || cfg.inProcess {
		lc.SimProfile = cfg.simProfile
	}
	for _, l := range cfg.levels {
		lc.Levels = append(lc.Levels, levelConfig{Concurrency: l.Concurrency, Rate: l.Rate, Requests: l.Requests})
	}
	w := cfg.workload
	wc := workloadConfig{Dataset: w.Dataset, Tokenizer: cfg.tokenizer, InputTokens: w.InputTokens.String(),
		OutputTokens: w.OutputTokens.String(), PrefixTokens: w.PrefixTokens, TraceSpeed: w.TraceSpeed}
	if w.Turns > 1 {
		wc.Turns, wc.ThinkTime = w.Turns, durString(w.ThinkTime)
	}
	if w.PrefixTokens > 0 {
		wc.PrefixGroups = w.PrefixGroups
	}
	if wc.Dataset == "" {
		wc.Dataset = "random"
	}
	pcts := cfg.metrics.Percentiles
	if len(pcts) == 0 {
		pcts = metrics.DefaultPercentiles
	}
	return &report.Summary{
		Schema:       report.SchemaV1,
		Version:      Version,
		StartedAt:    start.UTC(),
		RunStartUnix: float64(start.UnixMicro()) / 1e6,
		Seed:         cfg.seed,
		Target:       report.NewTarget(cfg.url, cfg.api, cfg.model),
		Workload:     wc,
		Load:         lc,
		Percentiles:  pcts,
		SLO:          cfg.sloSpec,
	}
}

func engineShard(i, n int) string { return strconv.Itoa(i) + "/" + strconv.Itoa(n) }

// newLevel names a level and attaches its figures.
func newLevel(l engine.Level, m metrics.Level) report.Level {
	return report.Level{Name: loadName(l), Concurrency: l.Concurrency, Rate: l.Rate, Level: m}
}
