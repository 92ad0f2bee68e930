// Package metrics turns per-request records into per-level figures exactly as docs/design.md §2
// defines them: latency statistics with confidence intervals, throughputs, goodput, SLO
// verdicts, and the sweet spot and SLO limit of a ladder.
package metrics

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/llmbench/llmbench/internal/record"
)

// Config says how to aggregate.
type Config struct {
	Percentiles []float64 // empty: DefaultPercentiles
	SLOs        []SLO     // from ParseSLOs
	// Window, when > 0, also keeps every metric's distribution per Window-wide bucket of
	// the requests' done time, so Aggregator.Window can give figures over a sub-window of
	// the level found only at its end (a steady state).
	Window time.Duration
	// Only, when set, names the metrics (registry keys) to derive; the others are absent
	// from the level, as a metric no request gave is. For a caller that reads a few figures
	// of many levels (plan), since each metric costs its distribution.
	Only []string
}

// Validate reports every problem at once.
func (c Config) Validate() error {
	var errs []error
	seen := map[float64]bool{}
	for _, p := range c.Percentiles {
		if math.IsNaN(p) || p < 0 || p > 100 {
			errs = append(errs, fmt.Errorf("percentile %v: must be between 0 and 100", p))
		}
		if seen[p] {
			errs = append(errs, fmt.Errorf("percentile %v: listed twice", p))
		}
		seen[p] = true
	}
	for _, k := range c.Only {
		if _, ok := Lookup(k); !ok {
			errs = append(errs, fmt.Errorf("metric %q: not in the registry", k))
		}
	}
	for _, s := range c.SLOs {
		if len(c.Only) > 0 && s.Metric != "" && !slices.Contains(c.Only, s.Metric) {
			errs = append(errs, fmt.Errorf("slo %q: its metric is not among the metrics derived (Only)", s.String()))
		}
		if s.Kind < SLOBound || s.Kind > SLOErrorRate {
			errs = append(errs, fmt.Errorf("slo %q: unknown kind (build SLOs with ParseSLOs)", s.String()))
		}
	}
	return errors.Join(errs...)
}

// NeedsTokenEvents says whether the figures derived need every token's time: a per-token
// metric (ITL, chunk gap) among them, as every metric is without Only (and any an SLO
// bounds is among Only's, Validate). Without one, a level's TTFT, TPOT, E2EL, goodput and
// throughputs come out the same from each request's first token and its end; its peak
// output throughput (tokens per 1 s bucket) does not.
func (c Config) NeedsTokenEvents() bool {
	if len(c.Only) == 0 {
		return true
	}
	for _, k := range c.Only {
		if m, ok := Lookup(k); ok && m.PerToken {
			return true
		}
	}
	return false
}

func (c Config) percentiles() []float64 {
	if len(c.Percentiles) == 0 {
		return DefaultPercentiles
	}
	return c.Percentiles
}

// Level is one load level's figures: summary.json's levels[i] without the load description.
type Level struct {
	Completed int            `json:"completed"`
	Failed    int            `json:"failed"`   // errors other than canceled
	Canceled  int            `json:"canceled"` // cut off by the end of the run; neither good nor failed
	Errors    map[string]int `json:"errors"`   // failed requests by error kind
	// ErrorDetails breaks the failures down by kind and HTTP status, most common first, each
	// with the message of the first sent and what to do about it.
	ErrorDetails []ErrorDetail `json:"error_details"`

	// Retried counts the measured requests that were sent a second time on a new
	// connection (record.Record.Retried); TTFTUpperBound those whose first token arrived in
	// one read with a later one, so their TTFT is an upper bound.
	Retried        int `json:"retried"`
	TTFTUpperBound int `json:"ttft_upper_bound"`

	DurationS            float64 `json:"duration_s"`             // first sent to last done
	RequestThroughput    float64 `json:"request_throughput"`     // completed / duration
	OutputThroughput     float64 `json:"output_throughput"`      // sum N / duration
	TotalTokenThroughput float64 `json:"total_token_throughput"` // sum (input + N) / duration
	InputThroughput      float64 `json:"input_throughput"`       // sum input tokens / duration
	// InputsPerS (embeddings: inputs of completed requests / duration) and DocumentsPerS
	// (rerank: documents) are absent for other APIs.
	InputsPerS    *float64 `json:"inputs_per_s,omitempty"`
	DocumentsPerS *float64 `json:"documents_per_s,omitempty"`
	// Unstreamed says the level's requests came without streams (--stream=false,
	// embeddings, rerank): its metrics have no TTFT, TPOT, ITL or chunk gap.
	Unstreamed bool `json:"unstreamed,omitempty"`

	// Goodput figures are null when no SLO was given. GoodFraction is good / (completed + failed).
	Goodput                *float64 `json:"goodput"`                  // good requests / duration
	GoodputTokenThroughput *float64 `json:"goodput_token_throughput"` // sum N of good requests / duration
	GoodRequests           *int     `json:"good_requests"`
	GoodFraction           *float64 `json:"good_fraction"`

	TotalInputTokens  int `json:"total_input_tokens"`
	TotalOutputTokens int `json:"total_output_tokens"`
	// ToolCalls counts the completed requests answered with a tool call
	// (record.Record.ToolCallTokens > 0) and TotalToolCallTokens their tool-call tokens, part
	// of TotalOutputTokens; absent when no request called a tool.
	ToolCalls           int `json:"tool_calls,omitempty"`
	TotalToolCallTokens int `json:"total_tool_call_tokens,omitempty"`

	PeakConcurrency       int     `json:"peak_concurrency"`
	MeanConcurrency       float64 `json:"mean_concurrency"`        // time-average of in-flight requests
	LittlesLawConcurrency float64 `json:"littles_law_concurrency"` // request throughput x mean E2EL
	PeakOutputThroughput  float64 `json:"peak_output_throughput"`  // max tokens in a 1 s bucket

	// PromptTokens compares intended input tokens with the server's usage.prompt_tokens
	// over the completed requests that reported it; null when none did.
	PromptTokens *PromptTokens `json:"prompt_tokens"`
	// CachedTokens is what the server said per request of the prompt tokens its prompt
	// cache served (cached.go); null when it said nothing of it for any request.
	CachedTokens *CachedTokens `json:"cached_tokens"`

	// FirstContent is the time to the first answer-text token (after any reasoning), ms;
	// null unless some request reasoned first. ServerTimings compares the server's own
	// timings with the client's; null when no request carried any (servertimings.go).
	FirstContent  *Stats         `json:"first_content_ms"`
	ServerTimings *ServerTimings `json:"server_timings"`
	// ReadLag is, over the measured requests whose events the kernel stamped, each one's
	// longest wait between bytes arriving and the client reading them, ms: the client's
	// own lateness, kept out of every other figure by those stamps. Null without them.
	ReadLag *Stats `json:"read_lag_ms"`

	Metrics Metrics  `json:"metrics"`
	SLO     *Verdict `json:"slo,omitempty"` // present when SLO verdict terms were given

	// Turns breaks a multi-turn level down by turn (turns.go); absent for a single-turn one.
	Turns []TurnStats `json:"turns,omitempty"`
	// Tasks are an agentic level's task figures (tasks.go); absent for other levels.
	Tasks *TaskStats `json:"tasks,omitempty"`

	// SteadyState is the window where the level was stationary, with its figures over it
	// (steady.go); null when the level measured nothing.
	SteadyState *SteadyState `json:"steady_state"`

	// A level repeated with --repeat: Runs are each run's own figures (as a level's; the
	// level's own figures pool every run's requests), AcrossRuns every figure across them.
	// Both absent for a level run once.
	Runs       []Level     `json:"runs,omitempty"`
	AcrossRuns *AcrossRuns `json:"across_runs,omitempty"`

	// Dists are the exact distributions behind Metrics and ReadLag (by registry key), for
	// CDFs and significance tests; not serialised.
	Dists map[string]*Dist `json:"-"`
	// Anatomy is what report.html draws of the level's requests; not serialised.
	Anatomy *Anatomy `json:"-"`
}

// PromptTokens is the tokenizer-mismatch check: a server that counts the prompt differently
// than the client's tokenizer shows up here.
type PromptTokens struct {
	Requests     int     `json:"requests"`
	IntendedMean float64 `json:"intended_mean"`
	ServerMean   float64 `json:"server_mean"`
	// ImagesMean is the mean number of images those requests carried (absent without
	// any): the server's count includes their tokens, the intended one does not.
	ImagesMean float64 `json:"images_mean,omitempty"`
}

func us(d time.Duration) int64 { return int64(d / time.Microsecond) }

// sent reports whether a record was put on the wire (a zero Sent with an error: never sent).
func sent(r *record.Record) bool { return !(r.Error != nil && r.Sent == 0) }

// Sent says r reached the wire, and so counts towards a level's measured window (first sent
// to last done) whatever its outcome.
func Sent(r *record.Record) bool { return sent(r) }

// ErrorDetail is one kind of failure of a level: a kind and, for HTTP errors, a status.
type ErrorDetail struct {
	Kind         string `json:"kind"`
	Status       int    `json:"status"` // 0 for failures without an HTTP status
	Count        int    `json:"count"`
	FirstMessage string `json:"first_message"`
	Hint         string `json:"hint"` // "" when there is nothing to add
	// RetryAfterS is the longest Retry-After the server gave with this status (429, 503),
	// seconds; absent when it gave none.
	RetryAfterS float64 `json:"retry_after_s,omitempty"`

	first      time.Duration // Sent of the request FirstMessage is from
	firstIndex int
}

func countOutcome(lv *Level, r *record.Record) {
	if r.Error.Kind == record.KindCanceled {
		lv.Canceled++
		return
	}
	lv.Failed++
	kind := r.Error.Kind
	if kind == "" {
		kind = "unknown"
	}
	lv.Errors[kind]++
	i := slices.IndexFunc(lv.ErrorDetails, func(d ErrorDetail) bool { return d.Kind == kind && d.Status == r.Error.Status })
	if i < 0 {
		lv.ErrorDetails = append(lv.ErrorDetails, ErrorDetail{Kind: kind, Status: r.Error.Status, first: r.Sent})
		i = len(lv.ErrorDetails) - 1
	}
	d := &lv.ErrorDetails[i]
	d.Count++
	d.RetryAfterS = max(d.RetryAfterS, r.Error.RetryAfter.Seconds())
	// The first by send time (then index), so the order records arrive in does not matter.
	if d.Count == 1 || r.Sent < d.first || r.Sent == d.first && r.Index < d.firstIndex {
		d.first, d.firstIndex = r.Sent, r.Index
		d.FirstMessage, d.Hint = r.Error.Message, r.Error.Hint()
	}
}

// sortErrorDetails orders a level's failures most common first.
func sortErrorDetails(ds []ErrorDetail) {
	slices.SortStableFunc(ds, func(a, b ErrorDetail) int {
		switch {
		case a.Count != b.Count:
			return b.Count - a.Count
		case a.Kind != b.Kind:
			return strings.Compare(a.Kind, b.Kind)
		}
		return a.Status - b.Status
	})
}

// PeakOverlap is the most intervals open at once (requests in flight), each in flight over [sent, done):
// at equal times ends come first, so a closed-loop client that sends its next request the
// microsecond its last one ends does not count twice.
func PeakOverlap(starts, ends []int64) int {
	slices.Sort(starts)
	slices.Sort(ends)
	peak, cur, j := 0, 0, 0
	for _, s := range starts {
		for j < len(ends) && ends[j] <= s {
			cur--
			j++
		}
		cur++
		peak = max(peak, cur)
	}
	return peak
}
