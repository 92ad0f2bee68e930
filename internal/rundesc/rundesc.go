// Package rundesc is the run's description in summary.json: the load ("load") and the
// workload ("workload") as JSON types, enough to understand and repeat the run, which
// bench.Spec.Describe fills and merge and compare read back. It never holds the API key;
// secret-looking header values are redacted. docs/metrics.md documents the fields.
package rundesc

import (
	"fmt"
	"strconv"
	"strings"
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
	// (the chat template's own tokens), which a prompt cache serving is no prefix-cache hit;
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
