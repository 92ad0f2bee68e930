// Package rundesc is the run's description in summary.json: the load ("load") and the
// workload ("workload") as typed values, built from what the CLI resolved from its flags,
// enough to understand and repeat the run. It never holds the API key; secret-looking header
// values are redacted. docs/metrics.md documents the fields.
package rundesc

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/llmbench/llmbench/internal/client"
	"github.com/llmbench/llmbench/internal/load"
	"github.com/llmbench/llmbench/internal/workload"
)

// Mode is the subcommand that produced the run.
type Mode string

// Modes.
const (
	ModeRun      Mode = "run"      // real time, over HTTP
	ModeSimulate Mode = "simulate" // the simulator on a virtual clock
)

// Load is summary.json's "load": the levels and the settings that shaped the requests.
type Load struct {
	Mode           Mode    `json:"mode"`
	Levels         []Level `json:"levels"` // the planned ladder; null for a search
	Search         string  `json:"search,omitempty"`
	SearchMax      float64 `json:"search_max,omitempty"`
	Arrival        string  `json:"arrival,omitempty"`
	MaxConcurrency int     `json:"max_concurrency,omitempty"`
	Requests       int     `json:"requests,omitempty"`
	Duration       string  `json:"duration,omitempty"`
	Warmup         int     `json:"warmup,omitempty"`
	WarmupTime     string  `json:"warmup_time,omitempty"`
	Cooldown       string  `json:"cooldown,omitempty"`
	Shard          string  `json:"shard,omitempty"` // I/N (--shard)
	StartAt        string  `json:"start_at,omitempty"`
	// Stopping rules and repeats (--max-error-rate, --stop-on-saturation, --repeat).
	MaxErrorRate     float64        `json:"max_error_rate,omitempty"`
	StopOnSaturation bool           `json:"stop_on_saturation,omitempty"`
	Repeat           int            `json:"repeat,omitempty"`
	SimProfile       string         `json:"sim_profile,omitempty"`
	Timeout          string         `json:"timeout,omitempty"`
	IdleTimeout      string         `json:"idle_timeout,omitempty"`
	IgnoreEOS        bool           `json:"ignore_eos"`
	Insecure         bool           `json:"insecure_tls,omitempty"`
	HTTP2            bool           `json:"http2,omitempty"`
	ReadStamps       bool           `json:"read_stamps,omitempty"`  // events timed at read, not kernel receive
	KeepAlive        *bool          `json:"keep_alive,omitempty"`   // run: whether connections were reused
	TestRequest      *bool          `json:"test_request,omitempty"` // run: whether one unrecorded request went first
	Headers          []string       `json:"headers,omitempty"`
	ExtraBody        map[string]any `json:"extra_body,omitempty"`
	Temperature      *float64       `json:"temperature,omitempty"` // --temperature, when given
	TopP             *float64       `json:"top_p,omitempty"`       // --top-p, when given
	// A merged run (llmbench merge): the shards it holds and what merge warned about.
	MergedShards  []string `json:"merged_shards,omitempty"`
	MergeWarnings []string `json:"merge_warnings,omitempty"`
}

// Level is one planned level of "load.levels".
type Level struct {
	Concurrency int     `json:"concurrency,omitempty"`
	Rate        float64 `json:"rate,omitempty"`
	Requests    int     `json:"requests,omitempty"`
	// Stages is a staged level's schedule (--stages), whose peak Concurrency or Rate is.
	Stages string `json:"stages,omitempty"`
}

// LevelOf is l's load as the description says it.
func LevelOf(l load.Level) Level {
	return Level{Concurrency: l.Concurrency, Rate: l.Rate, Requests: l.Requests, Stages: l.Stages.String()}
}

// Name is the level's name in summary.json and on the console: "concurrency 8", "rate
// 2.5/s", "stages 30s:2,1m0s:2->16".
func (l Level) Name() string {
	if l.Stages != "" {
		return "stages " + l.Stages
	}
	if l.Concurrency > 0 {
		return "concurrency " + strconv.Itoa(l.Concurrency)
	}
	return "rate " + strconv.FormatFloat(l.Rate, 'g', 4, 64) + "/s"
}

// Workload is summary.json's "workload": what the requests were made of.
type Workload struct {
	Dataset   string `json:"dataset"`
	Tokenizer string `json:"tokenizer"`
	// ChatTemplate is the file of the chat template chat prompts were sized with, or
	// "server" when the server formatted and counted them (their input tokens then count
	// the formatted conversation); absent when none was.
	ChatTemplate string `json:"chat_template,omitempty"`
	// ChatPrefixTokens is the tokens the chat template puts before every prompt's text
	// (workload.ChatPrefixTokens), which a prompt cache serving is no prefix-cache hit;
	// absent without a template.
	ChatPrefixTokens int     `json:"chat_prefix_tokens,omitempty"`
	InputTokens      string  `json:"input_tokens"`
	OutputTokens     string  `json:"output_tokens"`
	PrefixTokens     int     `json:"prefix_tokens,omitempty"`
	PrefixGroups     int     `json:"prefix_groups,omitempty"`
	TraceSpeed       float64 `json:"trace_speed,omitempty"`
	TraceOffset      string  `json:"trace_offset,omitempty"`
	Turns            int     `json:"turns,omitempty"`
	ThinkTime        string  `json:"think_time,omitempty"`
	// Stream is false for a generation run with --stream=false (absent otherwise);
	// BatchSize is an embeddings run's inputs per request; Documents and QueryTokens a
	// rerank run's documents per request and query length.
	Stream      *bool `json:"stream,omitempty"`
	BatchSize   int   `json:"batch_size,omitempty"`
	Documents   int   `json:"documents,omitempty"`
	QueryTokens int   `json:"query_tokens,omitempty"`
	// Tools are the names of the functions every request offered (--tools, --tools-file),
	// and ToolChoice the tool_choice sent; absent without tools.
	Tools      []string `json:"tools,omitempty"`
	ToolChoice string   `json:"tool_choice,omitempty"`
	// Agentic is an agentic run's tasks (--workload agentic); absent otherwise.
	Agentic *Agentic `json:"agentic,omitempty"`
}

// Agentic describes an agentic workload's tasks as its flags gave them.
type Agentic struct {
	CallsPerTask     string `json:"calls_per_task"`
	ToolLatencyMs    string `json:"tool_latency_ms"`
	ToolResultTokens string `json:"tool_result_tokens"`
	FanOut           int    `json:"fan_out"`
	CompactAt        int    `json:"compact_at,omitempty"`
	CompactTo        int    `json:"compact_to,omitempty"`
}

// Run is what a run or simulate was asked to do, as the CLI resolved it from its flags.
type Run struct {
	Live      bool         // run over HTTP (else simulate)
	InProcess bool         // run against the in-process simulator (no --url)
	Levels    []load.Level // the ladder; empty for a search
	Base      load.Level   // the load settings every level shares (shard included)
	Requests  int          // --requests (0: a default per level)
	Search    string       // "", "concurrency" or "rate"
	SearchMax float64
	StartAt   time.Time
	// Repeat runs each level that many times; StopOnSaturation ends the ladder at an
	// oversaturated level (Base.MaxErrorRate is the error-rate limit).
	Repeat           int
	StopOnSaturation bool
	// Target settings.
	SimProfile           string
	Timeout, IdleTimeout time.Duration
	KeepAlive            bool
	TestRequest          bool
	IgnoreEOS            bool
	Insecure, HTTP2      bool
	ReadStamps           bool
	Headers              http.Header
	ExtraBody            map[string]any
	Temperature, TopP    *float64

	Workload  workload.Config
	Tokenizer string
	// NoStream (--stream=false), BatchSize (embeddings), Documents and QueryTokens (rerank).
	NoStream                          bool
	BatchSize, Documents, QueryTokens int
	// Tools and ToolChoice: the functions every request offered and the tool_choice sent.
	Tools      []workload.ToolDef
	ToolChoice workload.ToolChoice
}

// Describe is the run's description. Settings that do not apply are left out of the load:
// the arrival process of a closed-loop ladder, the timeouts and headers of a simulation, the
// profile of a run against a real server. Header values that look secret are redacted.
func (r Run) Describe() (Load, Workload) { return r.load(), r.workload() }

func (r Run) load() Load {
	b := r.Base
	l := Load{Mode: ModeSimulate, Search: r.Search, Requests: r.Requests,
		Duration: durString(b.Duration), Warmup: b.Warmup, WarmupTime: durString(b.WarmupTime),
		Cooldown: durString(b.Cooldown), MaxConcurrency: b.MaxConcurrency, IgnoreEOS: r.IgnoreEOS,
		Insecure: r.Insecure, HTTP2: r.HTTP2, ReadStamps: r.ReadStamps, ExtraBody: r.ExtraBody,
		MaxErrorRate: b.MaxErrorRate, StopOnSaturation: r.StopOnSaturation,
		Temperature: r.Temperature, TopP: r.TopP}
	if r.Repeat > 1 {
		l.Repeat = r.Repeat
	}
	if r.Live {
		l.Mode = ModeRun
	}
	if r.Search != "" {
		l.SearchMax = r.SearchMax
	}
	if r.Search == "rate" || (len(r.Levels) > 0 && r.Levels[0].Rate > 0) {
		l.Arrival = b.Arrival.String()
	}
	if b.Shards > 1 {
		l.Shard = ShardString(b.Shard, b.Shards)
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
		l.Levels = append(l.Levels, LevelOf(lv))
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
func (r Run) workload() Workload {
	w := r.Workload
	d := Workload{Dataset: w.Dataset, Tokenizer: r.Tokenizer, InputTokens: w.InputTokens.String(),
		ChatTemplate: chatSource(w.Chat), ChatPrefixTokens: workload.ChatPrefixTokens(w.Chat),
		OutputTokens: w.OutputTokens.String(), PrefixTokens: w.PrefixTokens, TraceSpeed: w.TraceSpeed,
		TraceOffset: durString(w.TraceOffset)}
	if w.Turns > 1 {
		d.Turns, d.ThinkTime = w.Turns, durString(w.ThinkTime)
	}
	if a := w.Agent; a.On() {
		d.Agentic = &Agentic{CallsPerTask: a.Calls.String(), ToolLatencyMs: a.ToolLatency.String(), ToolResultTokens: a.ToolResultTokens.String(),
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

func durString(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}

// ShardString is load.shard for shard i of n: "I/N".
func ShardString(i, n int) string { return strconv.Itoa(i) + "/" + strconv.Itoa(n) }

// ParseShard reads load.shard (or --shard): "I/N" with 0 <= I < N; "" is the whole run, 0/1.
func ParseShard(s string) (i, n int, err error) {
	if s == "" {
		return 0, 1, nil
	}
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 0 || i >= n {
		return 0, 0, fmt.Errorf("%q must be I/N with 0 <= I < N", s)
	}
	return i, n, nil
}
