package servermetrics

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"time"
)

// Stat is a gauge over a level: the mean of the scrapes (evenly spaced in time) and the
// largest one.
type Stat struct {
	Mean float64 `json:"mean"`
	Max  float64 `json:"max"`
}

// Summary is levels[i].server of summary.json. A figure the server does not export, or that
// the level gave no basis for (one scrape, no prompt looked up), is left out.
type Summary struct {
	Family        string `json:"family"`
	URL           string `json:"url,omitempty"`
	Scrapes       int    `json:"scrapes"`
	FailedScrapes int    `json:"failed_scrapes"`
	LastError     string `json:"last_error,omitempty"`

	Running      *Stat `json:"running,omitempty"`
	Waiting      *Stat `json:"waiting,omitempty"`
	KVCacheUsage *Stat `json:"kv_cache_usage,omitempty"` // fraction 0..1

	// Preemptions is the counter's increase over the level (SGLang: retractions).
	Preemptions *float64 `json:"preemptions,omitempty"`
	// PrefixCacheHitRate is hit tokens / looked-up tokens over the level, from the counters'
	// increases; the mean of the server's own hit-rate gauge where it has no counters.
	PrefixCacheHitRate *float64 `json:"prefix_cache_hit_rate,omitempty"`
	// Token rates as the server counted them, over the span between the first and last
	// scrape that carried the counter.
	PromptTokensPerS     *float64 `json:"prompt_tokens_per_s,omitempty"`
	GenerationTokensPerS *float64 `json:"generation_tokens_per_s,omitempty"`

	Series Columns `json:"series"`
}

// Columns is the level's series as a table of columns, the shape report.html draws; a
// column the server never exported is left out, a missing value is null.
type Columns struct {
	TS           []float64 `json:"t_s"`
	Running      Column    `json:"running,omitempty"`
	Waiting      Column    `json:"waiting,omitempty"`
	KVCacheUsage Column    `json:"kv_cache_usage,omitempty"`
}

// Column is a series of values with NaN for "not reported", written as JSON null.
type Column []float64

// MarshalJSON writes NaN and ±Inf as null, which JSON has no number for.
func (c Column) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, v := range c {
		if i > 0 {
			b.WriteByte(',')
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			b.WriteString("null")
		} else {
			b.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
		}
	}
	b.WriteByte(']')
	return b.Bytes(), nil
}

// UnmarshalJSON reads null back as NaN.
func (c *Column) UnmarshalJSON(data []byte) error {
	var raw []*float64
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	out := make(Column, len(raw))
	for i, p := range raw {
		if p == nil {
			out[i] = math.NaN()
		} else {
			out[i] = *p
		}
	}
	*c = out
	return nil
}

// Summarize turns a level's series into its per-level figures.
func Summarize(s Series) *Summary {
	fam := s.Family
	if fam == "" {
		fam = FamilyUnknown
	}
	sum := &Summary{
		Family: fam, URL: s.URL,
		Scrapes: s.Scrapes, FailedScrapes: s.Failed, LastError: s.LastError,
		Running:      gaugeStat(s.Samples, func(v *Values) float64 { return v.Running }),
		Waiting:      gaugeStat(s.Samples, func(v *Values) float64 { return v.Waiting }),
		KVCacheUsage: gaugeStat(s.Samples, func(v *Values) float64 { return v.KVCacheUsage }),
	}
	if inc, _, ok := increase(s.Samples, func(v *Values) float64 { return v.Preemptions }); ok {
		sum.Preemptions = &inc
	}
	sum.PromptTokensPerS = rate(s.Samples, func(v *Values) float64 { return v.PromptTokens })
	sum.GenerationTokensPerS = rate(s.Samples, func(v *Values) float64 { return v.GenerationTokens })
	hits, _, okH := increase(s.Samples, func(v *Values) float64 { return v.PrefixHits })
	queries, _, okQ := increase(s.Samples, func(v *Values) float64 { return v.PrefixQueries })
	switch {
	case okH && okQ:
		if queries > 0 {
			hr := min(hits/queries, 1)
			sum.PrefixCacheHitRate = &hr
		}
	default:
		if st := gaugeStat(s.Samples, func(v *Values) float64 { return v.HitRate }); st != nil {
			sum.PrefixCacheHitRate = &st.Mean
		}
	}
	sum.Series = columns(s.Samples)
	return sum
}

func gaugeStat(ss []Sample, get func(*Values) float64) *Stat {
	total, n, mx := 0.0, 0, math.Inf(-1)
	for i := range ss {
		v := get(&ss[i].Values)
		if math.IsNaN(v) {
			continue
		}
		total += v
		n++
		mx = max(mx, v)
	}
	if n == 0 {
		return nil
	}
	return &Stat{Mean: total / float64(n), Max: mx}
}

// increase is a counter's growth over the samples that carry it, Prometheus-style: a drop
// means the server restarted and counted again from zero, so the new value is all growth
// since. ok needs two readings; span is the time between the first and the last.
func increase(ss []Sample, get func(*Values) float64) (inc, spanS float64, ok bool) {
	prev := math.NaN()
	var first, last time.Duration
	n := 0
	for i := range ss {
		v := get(&ss[i].Values)
		if math.IsNaN(v) {
			continue
		}
		t := ss[i].T
		if n == 0 {
			first = t
		} else if v >= prev {
			inc += v - prev
		} else {
			inc += v
		}
		prev, last = v, t
		n++
	}
	return inc, (last - first).Seconds(), n >= 2
}

func rate(ss []Sample, get func(*Values) float64) *float64 {
	inc, span, ok := increase(ss, get)
	if !ok || span <= 0 {
		return nil
	}
	r := inc / span
	return &r
}

// columns lays the samples out for report.html, rounded to what a chart can show (ms, and
// 1e-4 of a fraction) so that summary.json stays small.
func columns(ss []Sample) Columns {
	c := Columns{TS: make([]float64, len(ss))}
	run, wait, kv := make(Column, len(ss)), make(Column, len(ss)), make(Column, len(ss))
	var hasRun, hasWait, hasKV bool
	for i := range ss {
		v := &ss[i].Values
		c.TS[i] = round(ss[i].T.Seconds(), 1e3)
		run[i], wait[i], kv[i] = v.Running, v.Waiting, round(v.KVCacheUsage, 1e4)
		hasRun = hasRun || !math.IsNaN(v.Running)
		hasWait = hasWait || !math.IsNaN(v.Waiting)
		hasKV = hasKV || !math.IsNaN(v.KVCacheUsage)
	}
	if hasRun {
		c.Running = run
	}
	if hasWait {
		c.Waiting = wait
	}
	if hasKV {
		c.KVCacheUsage = kv
	}
	return c
}

func round(v, scale float64) float64 { return math.Round(v*scale) / scale }
