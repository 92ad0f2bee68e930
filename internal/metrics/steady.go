package metrics

import (
	"fmt"
	"math"
	"time"
)

// SteadyState is the window of a level in which throughput and in-flight requests are
// stationary, and the level's figures over it (summary.json levels[i].steady_state).
type SteadyState struct {
	Reached bool   `json:"reached"`
	Reason  string `json:"reason"`           // why it was or was not reached
	Advice  string `json:"advice,omitempty"` // what to change when it was not
	// StartS, EndS bound the window, seconds from the run's start (as the records' times);
	// null when no steady state was reached.
	StartS *float64 `json:"start_s"`
	EndS   *float64 `json:"end_s"`
	// Figures over the window (by done time): null when no steady state was reached.
	Completed         int      `json:"completed"`
	RequestThroughput float64  `json:"request_throughput"`
	OutputThroughput  float64  `json:"output_throughput"`
	MeanConcurrency   float64  `json:"mean_concurrency"`
	Metrics           *Metrics `json:"metrics"`
	// SLO is the verdict on the window's requests (Aggregator.Window); not written, since
	// summary.json's verdict is the level's.
	SLO *Verdict `json:"-"`
	// Growing says in-flight requests kept growing through the level (step 3 below): the
	// server did not keep up, which fails the level's verdict (FailBehind).
	Growing bool `json:"-"`
}

// MinRequestsPerSlot is how many requests per slot (per request the level held in flight
// at its peak) a level needs to have a steady state at all: its first and last rounds are
// ramp-up and drain, so with R rounds at most R − 2 are steady.
const MinRequestsPerSlot = 5

// steadyState finds the level's steady state (docs/metrics.md, "The steady state"):
//
//  1. A level with fewer than MinRequestsPerSlot measured requests per slot (its peak
//     concurrency) has none: too few requests per slot.
//  2. The series of output tokens and of mean in-flight requests per time bucket (window.go)
//     are each truncated at the start by MSER-5 (White, 1997: the truncation point that
//     minimises the standard error of the remaining mean, over batches of 5 buckets), and
//     at the end by MSER-5 on the reversed series (the drain). The window is the
//     intersection. A truncation in the second half of the series means the level was
//     still ramping when it ended: no steady state.
//  3. Within the window, in-flight requests must not keep growing: a line through 8 batch
//     means of the in-flight series that rises significantly (t > 5.208, 6 degrees of
//     freedom, 99.9% one-sided) by more than 20% of their mean means the server does not
//     keep up (an open loop past capacity): no steady state.
func (a *Aggregator) steadyState(lv *Level) *SteadyState {
	measured := lv.Completed + lv.Failed + lv.Canceled
	if measured == 0 {
		return nil
	}
	if a.varies != "" {
		return &SteadyState{Reason: a.varies}
	}
	slots := max(lv.PeakConcurrency, 1)
	first, tokens, inflight := a.windows.series()
	if perSlot := float64(measured) / float64(slots); perSlot < MinRequestsPerSlot {
		ss := &SteadyState{Reason: fmt.Sprintf("too few requests per slot: %d requests over %d in flight at the peak is %.1f per slot, under %d (the first and last rounds are ramp-up and drain)",
			measured, slots, perSlot, MinRequestsPerSlot),
			Advice: fmt.Sprintf("give each level at least %d requests (--requests %d, or a longer --duration)", MinRequestsPerSlot*4*slots, MinRequestsPerSlot*4*slots)}
		// Too short for a steady state, but not too short to see a backlog still growing
		// through its second half: a server falling behind, or one still filling that the
		// level cannot tell apart from it. Either way its finished requests do not speak
		// for the level, so it counts as not keeping up.
		// The series up to the last request sent: the drain after it shrinks by design.
		var last int64
		for _, t := range a.starts {
			last = max(last, t)
		}
		end := min(len(inflight), int(int64(time.Duration(last)*time.Microsecond/a.windows.width)-first)+1)
		if end >= 2*TrendBatches {
			if growth, mean, ok := growingTrend(inflight[end/2 : end]); ok {
				ss.Reason = fmt.Sprintf("in-flight requests kept growing through the level's second half (by %.0f%%) and it had too few requests per slot (%.1f) to tell a server still filling from one falling behind",
					100*growth/max(mean, 1e-9), perSlot)
				ss.Growing = true
			}
		}
		return ss
	}
	n := len(tokens)
	if n < 4*mserBatch {
		return &SteadyState{Reason: fmt.Sprintf("too short to tell: the level spans %d buckets of %s", n, a.windows.width),
			Advice: "run the level longer (--requests, --duration)"}
	}
	s1, e1 := mser(tokens)
	s2, e2 := mser(inflight)
	lo, hi := max(s1, s2), min(e1, e2) // buckets [lo, hi)
	if lo >= n/2 || hi-lo < n/4 {
		return &SteadyState{Reason: "still ramping: throughput or in-flight requests were still changing when the level ended",
			Advice: "run the level longer (--requests, --duration) or discard its start (--warmup)"}
	}
	if growth, mean, ok := growingTrend(inflight[lo:hi]); ok {
		return &SteadyState{Reason: fmt.Sprintf("in-flight requests keep growing (by %.0f%% over the level's middle): the server does not keep up with the load", 100*growth/max(mean, 1e-9)),
			Advice: "lower the rate, or cap it with --max-concurrency", Growing: true}
	}
	from, to := time.Duration(first+int64(lo))*a.windows.width, time.Duration(first+int64(hi))*a.windows.width
	w := a.Window(from, to)
	wm := w.Metrics // a copy: a pointer into w would keep the window's distributions alive
	fs, ts := from.Seconds(), to.Seconds()
	ss := &SteadyState{Reached: true, StartS: &fs, EndS: &ts,
		Reason:    fmt.Sprintf("throughput and in-flight requests stationary from %.3f s to %.3f s of the run (%.0f%% of the level)", fs, ts, 100*float64(hi-lo)/float64(n)),
		Completed: w.Completed, RequestThroughput: w.RequestThroughput, OutputThroughput: w.OutputThroughput,
		MeanConcurrency: w.MeanConcurrency, Metrics: &wm, SLO: w.SLO}
	return ss
}

// growingTrend fits a line through 8 batch means of an in-flight series and says whether it
// rises significantly (t > TrendT) by more than 20% of their mean: growth and mean are the
// line's rise over the series and the batch means' mean.
func growingTrend(inflight []float64) (growth, mean float64, ok bool) {
	var m [TrendBatches]float64
	n := len(inflight)
	for k := range m {
		b0, b1 := k*n/TrendBatches, (k+1)*n/TrendBatches
		for _, v := range inflight[b0:max(b1, b0+1)] {
			m[k] += v
		}
		m[k] /= float64(max(b1-b0, 1))
	}
	slope, se := LineFit(m[:])
	mean, _ = meanSD(m[:])
	growth = slope * TrendBatches
	return growth, mean, growth > 0.2*mean && slope > 0 && (se == 0 || slope/se > TrendT)
}

// mserBatch is MSER-5's batch: the series is averaged over batches of this many buckets.
const mserBatch = 5

// mser returns the steady part [start, end) of xs by MSER-5 from each end.
func mser(xs []float64) (start, end int) {
	var b []float64
	for i := 0; i+mserBatch <= len(xs); i += mserBatch {
		var s float64
		for _, x := range xs[i : i+mserBatch] {
			s += x
		}
		b = append(b, s/mserBatch)
	}
	d := mserCut(b)
	rev := make([]float64, 0, len(b)-d)
	for i := len(b) - 1; i >= d; i-- {
		rev = append(rev, b[i])
	}
	e := mserCut(rev)
	return d * mserBatch, (len(b) - e) * mserBatch
}

// mserCut is the truncation d in [0, len(xs)/2] minimising Σ_{i≥d} (x_i − x̄_d)² / (n − d)².
func mserCut(xs []float64) int {
	n := len(xs)
	best, cut := math.Inf(1), 0
	// Suffix sums make each candidate O(1).
	var s, s2 float64
	sums := make([][2]float64, n+1)
	for i := n - 1; i >= 0; i-- {
		s += xs[i]
		s2 += xs[i] * xs[i]
		sums[i] = [2]float64{s, s2}
	}
	for d := 0; d <= n/2; d++ {
		k := float64(n - d)
		mean := sums[d][0] / k
		ss := sums[d][1] - k*mean*mean
		if v := ss / (k * k); v < best-1e-12*math.Abs(best) {
			best, cut = v, d
		}
	}
	return cut
}

// A trend test on a series, shared by the steady state and the over-saturation rule
// (internal/load): a least-squares line through TrendBatches consecutive batch means,
// whose slope is significant when slope / its standard error > TrendT, the one-sided 99.9%
// point of Student's t with TrendBatches − 2 = 6 degrees of freedom.
const (
	TrendBatches = 8
	TrendT       = 5.208
)

// LineFit is the least-squares slope of ys against 0, 1, 2, ... and its standard error.
func LineFit(ys []float64) (slope, se float64) {
	n := float64(len(ys))
	xm := (n - 1) / 2
	var ym, sxx, sxy float64
	for _, y := range ys {
		ym += y
	}
	ym /= n
	for i, y := range ys {
		dx := float64(i) - xm
		sxx += dx * dx
		sxy += dx * (y - ym)
	}
	slope = sxy / sxx
	var rss float64
	for i, y := range ys {
		r := y - ym - slope*(float64(i)-xm)
		rss += r * r
	}
	return slope, math.Sqrt(rss / (n - 2) / sxx)
}
