// Package record holds the raw per-request record: the one flat fact from which every
// figure is recomputed (docs/design.md §7.1). Times are offsets from the run's start, taken as
// t.Sub(runStart) on Go's monotonic clock, never via wall-clock round trips.
package record

import (
	"time"
)

// Error kinds: short, stable strings that appear in records and summaries.
const (
	KindConnect        = "connect"
	KindHTTPStatus     = "http_status"
	KindStreamError    = "stream_error"
	KindMalformedEvent = "malformed_event"
	KindDisconnect     = "disconnect"
	KindIncomplete     = "incomplete"
	KindTimeout        = "timeout"
	KindIdleTimeout    = "idle_timeout"
	KindEmpty          = "empty_output"
	KindCanceled       = "canceled"
	// KindMismatch: a complete response that does not answer the request (embeddings: not
	// one vector per input, or vectors of different dimensions; rerank: not one score per
	// document).
	KindMismatch = "response_mismatch"
)

// Output token count sources (docs/design.md §1).
const (
	SourceUsage     = "usage"
	SourceTokenizer = "tokenizer"
	SourceEvents    = "events"
)

// Error describes why a request failed. Status is the HTTP status when there was one.
type Error struct {
	Kind    string `json:"kind"`
	Status  int    `json:"status,omitempty"`
	Message string `json:"message,omitempty"`
	// RetryAfter is the server's Retry-After (429, 503), as a delay; 0 when it gave none.
	// llmbench never re-sends such a request: it is a failure the server chose.
	RetryAfter time.Duration `json:"-"`
}

// Record is one request's outcome. A zero Sent with Error set means it was never sent.
// FirstToken and LastToken are derived from Events, so they cannot disagree with them.
type Record struct {
	Level  int  // index of the load level in the run
	Index  int  // request index within the level (warm-up requests included)
	Warmup bool // sent but excluded from metrics (warm-up or cool-down)
	// KernelStamps says the event times are the kernel's receive times of their bytes
	// (Linux, HTTP/1.1), not the times our goroutine read them (see ReadLag).
	KernelStamps bool
	// Retried says the request was sent a second time, on a new connection, because its
	// first send met a connection the server had closed before any byte of a response came
	// back (the client's rule: docs/real-servers.md). Sent is the re-send's.
	Retried bool
	// TTFTUpperBound says the first token event arrived in the same read, with the same
	// receive stamp, as a later one: its own arrival is unknown, and TTFT is at most this.
	TTFTUpperBound bool
	FinalCall      bool // an agentic task's last call (see Call)
	// Endpoint is the 1-based --url the request was sent to when the run balanced over
	// several (0: one endpoint, and records.jsonl omits it). Beside the bools, in padding.
	Endpoint int16

	// Turn is the request's 1-based turn in a multi-turn conversation (1 = the first
	// request of the conversation) and Conversation that conversation's number in the
	// level; Turn 0 marks a single-turn request, whose records.jsonl line omits both.
	Conversation int
	Turn         int

	Scheduled time.Duration // when the plan wanted it sent
	Sent      time.Duration // just before the request was written
	Done      time.Duration // stream closed or request failed

	// Unstreamed says the response came as one JSON document, not a stream (--stream=false,
	// embeddings, rerank): no token event was timed, so TTFT, TPOT, ITL and chunk gap mean
	// nothing; a generation's output tokens are one event at the document's arrival.
	Unstreamed bool
	// HasCachedPromptTokens says the server reported CachedPromptTokens for the request.
	HasCachedPromptTokens bool
	// Stage is the 1-based stage of a staged level (--stages) the request was scheduled in
	// (0: the level has no stages, and records.jsonl omits it). Beside the two bools, in padding.
	Stage int16
	// Inputs is the number of inputs of an embeddings request and Documents that of a
	// rerank request (0 for generation requests).
	Inputs, Documents int32
	// Images is the number of images the request carried and ImageBytes their encoded size
	// (before base64); InputTokens counts the text only.
	Images, ImageBytes int32
	// ToolCallTokens is how many of the OutputTokens were tool calls' (the functions' names
	// and argument text); 0 when the answer called no tool. (Beside the int32s, in padding.)
	ToolCallTokens int32
	// Text is the generated text, kept with --save-text only (nil otherwise): the answer as
	// the stream carried it, reasoning included.
	Text *string
	// Repeat is the 1-based run of a level repeated with --repeat (each run with seeds of
	// its own); 0 for a level run once, whose records.jsonl line omits it.
	Repeat int32
	// CachedPromptTokens is how many of the prompt's tokens the server said it served from
	// its prompt cache, when HasCachedPromptTokens (records.jsonl's cached_tokens): usage's
	// prompt_tokens_details.cached_tokens (vLLM, SGLang, OpenAI, llama.cpp) or
	// input_tokens_details.cached_tokens (Responses), else llama.cpp's timings.cache_n. A
	// server that says nothing of it leaves both zero: absent, not 0. (Placed beside the
	// struct's other small fields, where they fill its padding.)
	CachedPromptTokens int32
	// Call is the request's 1-based step in an agentic task (Task's number in the level):
	// a parent's call, or one of a fan-out's Sub-agents (1..K; 0 for the parent's calls).
	// ToolTime is the tool's latency the task spent before this call (0 for the first call,
	// the sub-agents and the call that joins them), FinalCall marks the task's last call.
	// Call 0 marks a request outside any task, whose records.jsonl line omits them.
	Task      int32
	Call, Sub int16
	ToolTime  time.Duration

	ResponseID         string
	InputTokens        int // tokens the client intended to send (every input; a rerank's query and documents)
	ServerPromptTokens int // usage.prompt_tokens when the server reported it; 0 otherwise
	OutputTokens       int // N, from OutputTokensSource
	OutputTokensSource string

	Events Events
	Error  *Error

	// FirstContent is the arrival of the first event with answer text when an earlier
	// event carried only reasoning (reasoning models); 0 when it is the first token.
	FirstContent time.Duration
	// FirstToolCall is the arrival of the first event with tool-call text (a function's
	// name or arguments), when ToolCallTokens > 0; 0 otherwise.
	FirstToolCall time.Duration
	// Server holds the server's own timings for the request; nil when it reported none.
	Server *ServerTimings

	// ReadLag is, with KernelStamps, the longest that received bytes of the request waited
	// for the client to read them: the client's own lateness, which the kernel's stamps
	// keep out of the figures.
	ReadLag time.Duration

	// Phases are the request's HTTP phases (httptrace); nil when none were measured (the
	// virtual-clock simulator, records of older runs).
	Phases *Phases
}

// Phases are the HTTP phases of one request, each measured only when it happened: DNS,
// Connect and TLS only on a new connection (they are before Sent, so they are the
// client's time, not TTFT), Write and Headers on every request that got that far.
// Sent + Write + Headers is when the response headers arrived.
type Phases struct {
	DNS     time.Duration // name resolution
	Connect time.Duration // TCP connect
	TLS     time.Duration // TLS handshake
	Write   time.Duration // Sent to the whole request written
	Headers time.Duration // request written to the first byte of the response (its headers)
	Has     PhaseSet      // which of the above were measured
}

// PhaseSet is a set of measured phases.
type PhaseSet uint8

// The phases of a request, in the order they happen.
const (
	PhaseDNS PhaseSet = 1 << iota
	PhaseConnect
	PhaseTLS
	PhaseWrite
	PhaseHeaders
)

// ServerTimings are a server's own figures for one request (llama.cpp "timings", Ollama
// eval_count/eval_duration, TGI details), set beside the client's to show how much of
// TTFT and TPOT is network and client. Zero fields were not reported.
type ServerTimings struct {
	PromptTokens int           // prompt tokens the server evaluated (after any prefix cache)
	Prefill      time.Duration // prompt evaluation time
	OutputTokens int           // generated tokens the server timed
	Decode       time.Duration // generation time of those tokens
	Queue        time.Duration // time queued before prefill
	Total        time.Duration // the server's whole handling time
}

// OK reports whether the request succeeded.
func (r *Record) OK() bool { return r.Error == nil }

// PromptCache is what the server said of r's prompt and its prompt cache: the tokens it
// served from the cache, when it said (said), and the prompt's length by the server's
// count — usage's prompt_tokens (which includes the cached tokens), else the tokens the
// client intended; but where the server said its cache and timed its prefill, the tokens
// it evaluated plus those cached (llama.cpp's prompt_n excludes the cache).
func (r *Record) PromptCache() (cached, prompt int, said bool) {
	prompt = r.InputTokens
	if r.ServerPromptTokens > 0 {
		prompt = r.ServerPromptTokens
	}
	if !r.HasCachedPromptTokens {
		return 0, prompt, false
	}
	cached = int(r.CachedPromptTokens)
	if r.Server != nil && r.Server.PromptTokens > 0 {
		prompt = cached + r.Server.PromptTokens
	}
	return cached, max(prompt, cached), true
}

// FirstToken is the arrival of the first token-carrying event; ok is false when there was none.
func (r *Record) FirstToken() (t time.Duration, ok bool) {
	if r.Events.Len() == 0 {
		return 0, false
	}
	return r.Events.Time(0), true
}

// LastToken is the arrival of the last token-carrying event.
func (r *Record) LastToken() (t time.Duration, ok bool) {
	n := r.Events.Len()
	if n == 0 {
		return 0, false
	}
	return r.Events.Time(n - 1), true
}
