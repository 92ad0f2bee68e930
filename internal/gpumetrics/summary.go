package gpumetrics

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/servermetrics"
)

// Stat is a gauge over a level: the mean of its readings and the largest.
type Stat = servermetrics.Stat

// Window is a span of the run that a level is charged the energy of: a run's measured
// requests, first sent to last done (the span metrics.Level's throughputs are over).
type Window struct{ Start, End time.Duration }

// Energy sources, as energy_from says them.
const (
	FromCounter = "counter" // the exporter's energy counter
	FromPower   = "power"   // power integrated over time (trapezoids)
	FromBoth    = "counter+power"
)

// Summary is levels[i].gpu of summary.json: every GPU of every exporter, in total and each.
// A figure nothing gave a basis for is left out, never written as 0.
type Summary struct {
	Source        string   `json:"source"` // the exporters, joined by "+" when they differ
	URLs          []string `json:"urls"`
	Scrapes       int      `json:"scrapes"`
	FailedScrapes int      `json:"failed_scrapes"`
	LastError     string   `json:"last_error,omitempty"`
	GPUs          int      `json:"gpus"`

	// WindowS is the span the energy is over: the measured requests' first sent to last
	// done (each run's, summed, for a repeated level).
	WindowS    float64 `json:"window_s,omitempty"`
	EnergyFrom string  `json:"energy_from,omitempty"`
	// EnergyJ is every GPU's energy over the window, J; absent when a GPU's readings do not
	// cover it (Note says which and why).
	EnergyJ *float64 `json:"energy_j,omitempty"`
	// PowerW is EnergyJ / WindowS: the GPUs' mean power together, W; PowerPerGPUW is it
	// over the number of GPUs.
	PowerW       *float64 `json:"power_w,omitempty"`
	PowerPerGPUW *float64 `json:"power_per_gpu_w,omitempty"`
	// EnergyJ over the level's output tokens and its completed requests (both of measured
	// requests, as total_output_tokens and completed), and output tokens per joule.
	JoulesPerOutputToken *float64 `json:"joules_per_output_token,omitempty"`
	JoulesPerRequest     *float64 `json:"joules_per_request,omitempty"`
	OutputTokensPerJoule *float64 `json:"output_tokens_per_joule,omitempty"`
	Note                 string   `json:"note,omitempty"`

	// Gauges over the level's scrapes and GPUs: mean of every reading, and the largest.
	Utilization       *Stat    `json:"utilization,omitempty"`        // %
	MemoryUtilization *Stat    `json:"memory_utilization,omitempty"` // %
	SMClockMHz        *Stat    `json:"sm_clock_mhz,omitempty"`
	MemoryUsedMiB     *Stat    `json:"memory_used_mib,omitempty"`
	TemperatureC      *Stat    `json:"temperature_c,omitempty"`
	ThrottleReasons   []string `json:"throttle_reasons,omitempty"` // any GPU, any scrape (DCGM)

	PerGPU []GPUSummary `json:"per_gpu,omitempty"`
	Series []Columns    `json:"series,omitempty"`
}

// GPUSummary is one GPU's figures over the level.
type GPUSummary struct {
	GPU
	EnergyFrom        string   `json:"energy_from,omitempty"`
	EnergyJ           *float64 `json:"energy_j,omitempty"`
	PowerW            *float64 `json:"power_w,omitempty"` // EnergyJ / WindowS
	Utilization       *Stat    `json:"utilization,omitempty"`
	MemoryUtilization *Stat    `json:"memory_utilization,omitempty"`
	SMClockMHz        *Stat    `json:"sm_clock_mhz,omitempty"`
	MemoryUsedMiB     *Stat    `json:"memory_used_mib,omitempty"`
	TemperatureC      *Stat    `json:"temperature_c,omitempty"`
	ThrottleReasons   []string `json:"throttle_reasons,omitempty"`
}

// Columns is one exporter's series as report.html draws it: its GPUs' power together and
// their mean utilisation at each scrape (null where a GPU did not say).
type Columns struct {
	URL         string               `json:"url"`
	TS          []float64            `json:"t_s"`
	PowerW      servermetrics.Column `json:"power_w,omitempty"`
	Utilization servermetrics.Column `json:"utilization,omitempty"`
}

// Summarize derives a level's figures from its exporters' series (one per exporter and run
// of the level: series of one URL are joined), the windows its energy is charged over, and
// its measured requests' output tokens and completed requests. Nil when nothing was scraped.
func Summarize(series []Series, windows []Window, outputTokens, requests int) *Summary {
	if len(series) == 0 {
		return nil
	}
	joined := join(series)
	sum := &Summary{}
	var sources []string
	for _, s := range joined {
		sum.URLs = append(sum.URLs, s.URL)
		sum.Scrapes += s.Scrapes
		sum.FailedScrapes += s.Failed
		if s.LastError != "" {
			sum.LastError = s.LastError
		}
		if s.Source != SourceUnknown && !slices.Contains(sources, s.Source) {
			sources = append(sources, s.Source)
		}
	}
	sum.Source = strings.Join(sources, "+")
	if sum.Source == "" {
		sum.Source = SourceUnknown
	}
	for _, w := range windows {
		if w.End > w.Start {
			sum.WindowS += (w.End - w.Start).Seconds()
		}
	}

	total, allEnergy := 0.0, true
	var froms, missing []string
	var all gauges
	throttle := uint64(0)
	for _, s := range joined {
		for _, key := range sortedKeys(s.GPUs) {
			g := GPUSummary{GPU: s.GPUs[key]}
			var mine gauges
			var mask uint64
			for i := range s.Samples {
				r, ok := s.Samples[i].Read[key]
				if !ok {
					continue
				}
				mine.add(&r)
				all.add(&r)
				if r.HasThrottle {
					mask |= r.Throttle
				}
			}
			mine.fill(&g.Utilization, &g.MemoryUtilization, &g.SMClockMHz, &g.MemoryUsedMiB, &g.TemperatureC)
			g.ThrottleReasons = ThrottleReasons(mask)
			throttle |= mask
			if sum.WindowS > 0 {
				e, from, why := energy(s, key, windows)
				if why == "" {
					g.EnergyJ, g.EnergyFrom = &e, from
					p := e / sum.WindowS
					g.PowerW = &p
					total += e
					if !slices.Contains(froms, from) {
						froms = append(froms, from)
					}
				} else {
					allEnergy = false
					missing = append(missing, g.Key+": "+why)
				}
			}
			sum.PerGPU = append(sum.PerGPU, g)
		}
		sum.Series = append(sum.Series, columns(s))
	}
	sum.GPUs = len(sum.PerGPU)
	all.fill(&sum.Utilization, &sum.MemoryUtilization, &sum.SMClockMHz, &sum.MemoryUsedMiB, &sum.TemperatureC)
	sum.ThrottleReasons = ThrottleReasons(throttle)
	switch {
	case sum.GPUs == 0:
		sum.Note = "no GPU readings"
		if sum.LastError != "" {
			sum.Note += ": " + sum.LastError
		}
	case sum.WindowS <= 0:
		sum.Note = "not measured: the level measured no request"
	case !allEnergy:
		sum.Note = "not measured: " + strings.Join(missing, "; ")
	default:
		sum.EnergyJ = &total
		sum.EnergyFrom = froms[0]
		if len(froms) > 1 {
			sum.EnergyFrom = FromBoth
		}
		p := total / sum.WindowS
		perGPU := p / float64(sum.GPUs)
		sum.PowerW, sum.PowerPerGPUW = &p, &perGPU
		if outputTokens > 0 {
			v := total / float64(outputTokens)
			sum.JoulesPerOutputToken = &v
		}
		if requests > 0 {
			v := total / float64(requests)
			sum.JoulesPerRequest = &v
		}
		if total > 0 {
			v := float64(outputTokens) / total
			sum.OutputTokensPerJoule = &v
		}
	}
	return sum
}

// join puts the series of one URL (a repeated level's runs) together, in the order the URLs
// first appear.
func join(series []Series) []Series {
	var out []Series
	at := map[string]int{}
	for _, s := range series {
		i, ok := at[s.URL]
		if !ok {
			at[s.URL] = len(out)
			c := s
			c.GPUs = map[string]GPU{}
			for k, g := range s.GPUs {
				c.GPUs[k] = g
			}
			c.Samples = append([]Sample(nil), s.Samples...)
			out = append(out, c)
			continue
		}
		o := &out[i]
		o.Scrapes += s.Scrapes
		o.Failed += s.Failed
		if s.LastError != "" {
			o.LastError = s.LastError
		}
		if s.Source != SourceUnknown {
			o.Source = s.Source
		}
		for k, g := range s.GPUs {
			o.GPUs[k] = g
		}
		o.Samples = append(o.Samples, s.Samples...)
	}
	return out
}

// point is one reading of a GPU's figure at a time (s).
type point struct{ t, v float64 }

func readings(s Series, key string, get func(*Reading) float64) []point {
	var ps []point
	for i := range s.Samples {
		r, ok := s.Samples[i].Read[key]
		if !ok {
			continue
		}
		if v := get(&r); !math.IsNaN(v) {
			ps = append(ps, point{s.Samples[i].T.Seconds(), v})
		}
	}
	return ps
}

// energy is one GPU's energy over the windows: the counter's increase where it has two
// readings (a drop is a restart, counted from zero as Prometheus' increase does), else its
// power integrated. Between readings the counter and the power are linear; past the first
// or last reading, the end segment's rate (counter) or the end reading (power) goes on, for
// at most one scrape interval: a window the readings do not reach that near is not
// measured, and why says so.
func energy(s Series, key string, windows []Window) (joules float64, from, why string) {
	tol := s.Interval.Seconds()
	ps := readings(s, key, func(r *Reading) float64 { return r.EnergyJ })
	from = FromCounter
	var at func(t float64) float64 // the energy since the first reading, at t
	if len(ps) >= 2 {
		cum := make([]point, len(ps))
		for i := range ps {
			cum[i].t = ps[i].t
			if i > 0 {
				d := ps[i].v - ps[i-1].v
				if d < 0 {
					d = ps[i].v
				}
				cum[i].v = cum[i-1].v + d
			}
		}
		ps, at = cum, func(t float64) float64 { return linear(cum, t) }
	} else {
		from = FromPower
		ps = readings(s, key, func(r *Reading) float64 { return r.PowerW })
		if len(ps) < 2 {
			return 0, "", "fewer than two readings of power or energy"
		}
		at = func(t float64) float64 { return integral(ps, t) }
	}
	first, last := ps[0].t, ps[len(ps)-1].t
	for _, w := range windows {
		a, b := w.Start.Seconds(), w.End.Seconds()
		if b <= a {
			continue
		}
		if first > a+tol || last < b-tol {
			return 0, "", fmt.Sprintf("readings span %.3f-%.3f s, not the window %.3f-%.3f s", first, last, a, b)
		}
		joules += at(b) - at(a)
	}
	return joules, from, ""
}

// linear is the piecewise-linear function through ps at t, extended past the ends along the
// end segments.
func linear(ps []point, t float64) float64 {
	i := 1
	for i < len(ps)-1 && ps[i].t < t {
		i++
	}
	a, b := ps[i-1], ps[i]
	if b.t == a.t {
		return b.v
	}
	return a.v + (b.v-a.v)*(t-a.t)/(b.t-a.t)
}

// integral is the integral from ps[0].t to t of the piecewise-linear function through ps
// (trapezoids), held at its end values past its ends (negative before ps[0].t).
func integral(ps []point, t float64) float64 {
	if t <= ps[0].t {
		return -ps[0].v * (ps[0].t - t)
	}
	total := 0.0
	for i := 1; i < len(ps); i++ {
		a, b := ps[i-1], ps[i]
		if t <= b.t {
			vt := a.v
			if b.t > a.t {
				vt = a.v + (b.v-a.v)*(t-a.t)/(b.t-a.t)
			}
			return total + (a.v+vt)/2*(t-a.t)
		}
		total += (a.v + b.v) / 2 * (b.t - a.t)
	}
	end := ps[len(ps)-1]
	return total + end.v*(t-end.t)
}

// gauges accumulates the gauge figures' readings.
type gauges struct{ util, mem, clock, used, temp acc }

type acc struct {
	sum, max float64
	n        int
}

func (a *acc) add(v float64) {
	if math.IsNaN(v) {
		return
	}
	if a.n == 0 || v > a.max {
		a.max = v
	}
	a.sum += v
	a.n++
}

func (a *acc) stat() *Stat {
	if a.n == 0 {
		return nil
	}
	return &Stat{Mean: a.sum / float64(a.n), Max: a.max}
}

func (g *gauges) add(r *Reading) {
	g.util.add(r.GPUUtilPct)
	g.mem.add(r.MemUtilPct)
	g.clock.add(r.SMClockMHz)
	g.used.add(r.MemUsedMiB)
	g.temp.add(r.TempC)
}

func (g *gauges) fill(util, mem, clock, used, temp **Stat) {
	*util, *mem, *clock, *used, *temp = g.util.stat(), g.mem.stat(), g.clock.stat(), g.used.stat(), g.temp.stat()
}

// columns lays out one exporter's samples for report.html, to the ms and 0.1 W or %.
func columns(s Series) Columns {
	c := Columns{URL: s.URL, TS: make([]float64, len(s.Samples))}
	power, util := make(servermetrics.Column, len(s.Samples)), make(servermetrics.Column, len(s.Samples))
	var hasP, hasU bool
	keys := sortedKeys(s.GPUs)
	for i := range s.Samples {
		c.TS[i] = math.Round(s.Samples[i].T.Seconds()*1e3) / 1e3
		p, u, nu := 0.0, 0.0, 0
		for _, k := range keys {
			r, ok := s.Samples[i].Read[k]
			if !ok || math.IsNaN(r.PowerW) {
				p = math.NaN()
			} else {
				p += r.PowerW
			}
			if ok && !math.IsNaN(r.GPUUtilPct) {
				u += r.GPUUtilPct
				nu++
			}
		}
		power[i] = math.Round(p*10) / 10
		hasP = hasP || !math.IsNaN(p)
		util[i] = math.NaN()
		if nu > 0 {
			util[i] = math.Round(u/float64(nu)*10) / 10
			hasU = true
		}
	}
	if hasP {
		c.PowerW = power
	}
	if hasU {
		c.Utilization = util
	}
	return c
}

// WindowOf finds a run's Window from its records as they finish: its measured requests'
// first sent to last done, as metrics.Level's duration. The zero value is ready to use.
type WindowOf struct {
	first, last time.Duration
	n           int
}

// Add takes one record of the run, warm-up ones included (they are left out).
func (w *WindowOf) Add(r *record.Record) {
	if r.Warmup || !metrics.Sent(r) {
		return
	}
	done := max(r.Done, r.Sent)
	if w.n == 0 || r.Sent < w.first {
		w.first = r.Sent
	}
	if w.n == 0 || done > w.last {
		w.last = done
	}
	w.n++
}

// Window is the run's window; false when it measured no request.
func (w *WindowOf) Window() (Window, bool) {
	return Window{Start: w.first, End: w.last}, w.n > 0
}
