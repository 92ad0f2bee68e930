// Package metrics turns per-request records into per-level figures exactly as docs/design.md §2
// defines them: latency statistics with confidence intervals, throughputs, goodput, SLO
// verdicts, and the sweet spot and SLO limit of a ladder.
package metrics

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/llmbench/llmbench/internal/record"
)

// MetricNames are the per-request latency metrics, in report order. JSON keys add "_ms".
var MetricNames = []string{"ttft", "tpot", "itl", "chunk_gap", "e2el", "schedule_lag", "ttft_from_schedule", "e2el_from_schedule"}

// Config says how to aggregate.
type Config struct {
	Percentiles []float64 // empty: DefaultPercentiles
	SLOs        []SLO     // from ParseSLOs
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
	for _, s := range c.SLOs {
		if s.Kind < SLOBound || s.Kind > SLOGoodput {
			errs = append(errs, fmt.Errorf("slo %q: unknown kind (build SLOs with ParseSLOs)", s.String()))
		}
	}
	return errors.Join(errs...)
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

	DurationS            float64 `json:"duration_s"`             // first sent to last done
	RequestThroughput    float64 `json:"request_throughput"`     // completed / duration
	OutputThroughput     float64 `json:"output_throughput"`      // sum N / duration
	TotalTokenThroughput float64 `json:"total_token_throughput"` // sum (input + N) / duration

	// Goodput figures are null when no SLO was given. GoodFraction is good / (completed + failed).
	Goodput                *float64 `json:"goodput"`                  // good requests / duration
	GoodputTokenThroughput *float64 `json:"goodput_token_throughput"` // sum N of good requests / duration
	GoodRequests           *int     `json:"good_requests"`
	GoodFraction           *float64 `json:"good_fraction"`

	TotalInputTokens  int `json:"total_input_tokens"`
	TotalOutputTokens int `json:"total_output_tokens"`

	PeakConcurrency       int     `json:"peak_concurrency"`
	MeanConcurrency       float64 `json:"mean_concurrency"`        // time-average of in-flight requests
	LittlesLawConcurrency float64 `json:"littles_law_concurrency"` // request throughput x mean E2EL
	PeakOutputThroughput  float64 `json:"peak_output_throughput"`  // max tokens in a 1 s bucket

	// PromptTokens compares intended input tokens with the server's usage.prompt_tokens
	// over the completed requests that reported it; null when none did.
	PromptTokens *PromptTokens `json:"prompt_tokens"`

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

	// Dists are the exact distributions behind Metrics (by MetricNames), for CDFs and
	// significance tests; not serialised.
	Dists map[string]*Dist `json:"-"`
}

// PromptTokens is the tokenizer-mismatch check: a server that counts the prompt differently
// than the client's tokenizer shows up here.
type PromptTokens struct {
	Requests     int     `json:"requests"`
	IntendedMean float64 `json:"intended_mean"`
	ServerMean   float64 `json:"server_mean"`
}

// Metrics holds the statistics of each latency metric in ms.
type Metrics struct {
	TTFT             Stats `json:"ttft_ms"`
	TPOT             Stats `json:"tpot_ms"`
	ITL              Stats `json:"itl_ms"`
	ChunkGap         Stats `json:"chunk_gap_ms"`
	E2EL             Stats `json:"e2el_ms"`
	ScheduleLag      Stats `json:"schedule_lag_ms"`
	TTFTFromSchedule Stats `json:"ttft_from_schedule_ms"`
	E2ELFromSchedule Stats `json:"e2el_from_schedule_ms"`
}

// Get returns the statistics of a metric by name (see MetricNames).
func (m *Metrics) Get(name string) (*Stats, bool) {
	switch name {
	case "ttft":
		return &m.TTFT, true
	case "tpot":
		return &m.TPOT, true
	case "itl":
		return &m.ITL, true
	case "chunk_gap":
		return &m.ChunkGap, true
	case "e2el":
		return &m.E2EL, true
	case "schedule_lag":
		return &m.ScheduleLag, true
	case "ttft_from_schedule":
		return &m.TTFTFromSchedule, true
	case "e2el_from_schedule":
		return &m.E2ELFromSchedule, true
	}
	return nil, false
}

func us(d time.Duration) int64 { return int64(d / time.Microsecond) }

// sent reports whether a record was put on the wire (a zero Sent with an error: never sent).
func sent(r *record.Record) bool { return !(r.Error != nil && r.Sent == 0) }

// Aggregate computes a level's figures from its records, skipping warm-up/cool-down ones.
//
// Latency metrics come from completed requests only; failed requests are counted (by kind)
// and never good; canceled ones (cut off by the end of the run) are counted apart. The
// measured window — for duration, concurrency and the 1 s buckets — spans every measured
// request that was sent, whatever its outcome, since all of them loaded the server.
// Memory is bounded by the number of distinct latency values, not of samples (see Dist).
func Aggregate(recs []record.Record, cfg Config) Level {
	lv := Level{Errors: map[string]int{}, Dists: map[string]*Dist{}}
	for _, name := range MetricNames {
		lv.Dists[name] = NewDist()
	}
	var (
		ttft, tpot, itl, gap = lv.Dists["ttft"], lv.Dists["tpot"], lv.Dists["itl"], lv.Dists["chunk_gap"]
		e2el, lag            = lv.Dists["e2el"], lv.Dists["schedule_lag"]
		ttftS, e2elS         = lv.Dists["ttft_from_schedule"], lv.Dists["e2el_from_schedule"]

		bounds                 = boundsOf(cfg.SLOs)
		good, goodTokens       int
		first, last            int64 = math.MaxInt64, math.MinInt64
		starts, ends           []int64
		busy                   int64 // sum of (done - sent), µs
		prompt                 PromptTokens
		intendedSum, serverSum int64
		buckets                []int64 // output tokens per 1 s after the window start; filled in a second pass
	)
	starts, ends = make([]int64, 0, len(recs)), make([]int64, 0, len(recs))
	for i := range recs {
		r := &recs[i]
		if r.Warmup || !sent(r) {
			if !r.Warmup && r.Error != nil {
				countOutcome(&lv, r)
			}
			continue
		}
		s, d := us(r.Sent), us(r.Done)
		if d < s {
			d = s
		}
		first, last = min(first, s), max(last, d)
		starts, ends = append(starts, s), append(ends, d)
		busy += d - s
		if r.Error != nil {
			countOutcome(&lv, r)
			continue
		}
		lv.Completed++
		n := r.OutputTokens
		if n <= 0 {
			n = r.Events.Tokens()
		}
		lv.TotalInputTokens += r.InputTokens
		lv.TotalOutputTokens += n
		if r.ServerPromptTokens > 0 {
			prompt.Requests++
			intendedSum += int64(r.InputTokens)
			serverSum += int64(r.ServerPromptTokens)
		}
		sched := us(r.Scheduled)
		lag.AddMicros(s - sched)
		ok := true // meets every per-request bound
		ft, hasTok := r.FirstToken()
		if hasTok {
			lt, _ := r.LastToken()
			f, l := us(ft), us(lt)
			ttft.AddMicros(f - s)
			e2el.AddMicros(l - s)
			ttftS.AddMicros(f - sched)
			e2elS.AddMicros(l - sched)
			if n >= 2 {
				tpot.AddRatio(l-f, int64(n-1), 1)
			}
			// ITL: a gap g ending in an event of k tokens is k samples of g/k.
			var prev int64
			var maxG, maxK int64 = 0, 1 // largest ITL sample as a ratio
			r.Events.Each(func(i int, t time.Duration, k int) {
				et := us(t)
				if i > 0 {
					g := et - prev
					gap.AddMicros(g)
					itl.AddRatio(g, int64(k), uint64(k))
					if cmpMul(g, maxK, maxG, int64(k)) > 0 {
						maxG, maxK = g, int64(k)
					}
				}
				prev = et
			})
			ok = bounds.meet(f-s, l-s, l-f, int64(n), maxG, maxK)
		} else {
			// Completed without any token event: nothing to time, and it cannot meet a
			// latency bound.
			ok = len(bounds) == 0
		}
		if ok {
			good++
			goodTokens += n
		}
	}
	// Peak output throughput: tokens of completed requests by 1 s bucket of event time.
	if first != math.MaxInt64 {
		for i := range recs {
			r := &recs[i]
			if r.Warmup || r.Error != nil {
				continue
			}
			r.Events.Each(func(_ int, t time.Duration, k int) {
				b := (us(t) - first) / 1_000_000
				if b < 0 {
					b = 0
				}
				for int64(len(buckets)) <= b {
					buckets = append(buckets, 0)
				}
				buckets[b] += int64(k)
			})
		}
	}
	for _, b := range buckets {
		lv.PeakOutputThroughput = max(lv.PeakOutputThroughput, float64(b))
	}

	if first != math.MaxInt64 && last > first {
		dur := float64(last-first) / 1e6
		lv.DurationS = dur
		lv.RequestThroughput = float64(lv.Completed) / dur
		lv.OutputThroughput = float64(lv.TotalOutputTokens) / dur
		lv.TotalTokenThroughput = float64(lv.TotalInputTokens+lv.TotalOutputTokens) / dur
		lv.MeanConcurrency = float64(busy) / float64(last-first)
	}
	lv.PeakConcurrency = PeakOverlap(starts, ends)
	if prompt.Requests > 0 {
		prompt.IntendedMean = float64(intendedSum) / float64(prompt.Requests)
		prompt.ServerMean = float64(serverSum) / float64(prompt.Requests)
		lv.PromptTokens = &prompt
	}
	if len(cfg.SLOs) > 0 {
		lv.GoodRequests = ptr(good)
		var gp, gt float64
		if lv.DurationS > 0 {
			gp = float64(good) / lv.DurationS
			gt = float64(goodTokens) / lv.DurationS
		}
		lv.Goodput, lv.GoodputTokenThroughput = ptr(gp), ptr(gt)
		frac := 0.0
		if judged := lv.Completed + lv.Failed; judged > 0 {
			frac = float64(good) / float64(judged)
		}
		lv.GoodFraction = ptr(frac)
	}

	ps := cfg.percentiles()
	for _, name := range MetricNames {
		st, _ := lv.Metrics.Get(name)
		*st = StatsOf(lv.Dists[name], ps)
	}
	if mean, _ := e2el.MeanStd(); e2el.Count() > 0 {
		lv.LittlesLawConcurrency = lv.RequestThroughput * mean / 1000
	}
	lv.SLO = evaluate(cfg.SLOs, lv.Dists, lv.GoodFraction)
	lv.FirstContent = firstContentStats(recs, ps)
	lv.ReadLag = readLagStats(recs, ps)
	lv.ServerTimings = compareServerTimings(recs)
	lv.Turns = byTurn(recs, ps)
	return lv
}

// readLagStats summarises Record.ReadLag over the measured requests that were sent with
// kernel stamps, failed ones included: a late client is late whatever the outcome.
func readLagStats(recs []record.Record, percentiles []float64) *Stats {
	d := NewDist()
	for i := range recs {
		r := &recs[i]
		if r.Warmup || !sent(r) || !r.KernelStamps {
			continue
		}
		d.AddMicros(us(r.ReadLag))
	}
	if d.Count() == 0 {
		return nil
	}
	s := StatsOf(d, percentiles)
	return &s
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

func boundsOf(slos []SLO) requestBoundsList {
	var out requestBoundsList
	for _, s := range slos {
		if s.Kind == SLOBound {
			out = append(out, s)
		}
	}
	return out
}

type requestBoundsList []SLO

// meet checks every per-request bound: TTFT and E2EL directly; TPOT (vacuous for one-token
// outputs, which have none); ITL as the request's largest ITL sample, maxG/maxK µs, so
// every token arrived within the bound of the previous one.
func (b requestBoundsList) meet(ttft, e2el, decode, n, maxG, maxK int64) bool {
	for _, s := range b {
		lim := us(s.Limit)
		switch s.Metric {
		case "ttft":
			if ttft > lim {
				return false
			}
		case "e2el":
			if e2el > lim {
				return false
			}
		case "tpot":
			if n >= 2 && cmpMul(decode, 1, lim, n-1) > 0 {
				return false
			}
		case "itl":
			if cmpMul(maxG, 1, lim, maxK) > 0 {
				return false
			}
		}
	}
	return true
}
