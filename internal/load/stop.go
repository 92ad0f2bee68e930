package load

import (
	"math"
	"time"
)

// Stopping rules: besides its length, a level can be stopped early by what its requests
// show. They are written here once, clock-free, and consulted by Dispatch, so Run and
// RunVirtual (the live run and the simulation) honour them alike.
//
// Max error rate (Level.MaxErrorRate = F > 0): over a sliding window of the last
// ErrorWindow finished requests (warm-up ones included: a broken server fails them too),
// once at least ErrorMinimum have finished, the level stops when more than F of the window
// failed (any error, canceled included). End reason EndMaxErrorRate.
//
// Over-saturation (Level.DetectSaturation, open loop only): a server that cannot keep up
// shows two trends at once, which one that keeps up never shows for long: its backlog
// (requests due and not finished: in flight, plus those waiting for a slot under
// MaxConcurrency) grows, and so does TTFT counted from the due time (every new request
// waits behind the backlog). Each is a series, the backlog at every arrival and TTFT at
// every completion; every tenth new value (once the series has SaturationMinimum values),
// the second half of the series so far is cut into 8 consecutive batches and a
// least-squares line is fitted through the 8 batch means. A series is rising when
//
//  1. the slope is positive and significant: slope / its standard error > 5.208, the
//     one-sided 99.9% point of Student's t with 6 degrees of freedom (batch means are
//     close to independent when batches are long against the series' correlation, which
//     is why each half needs hundreds of values), and
//  2. it is material: the backlog grew by at least 5% of the half's arrivals (the server
//     finished less than 95% of what arrived), and TTFT's last batch mean is at least
//     twice its first's and above it by at least 100 ms.
//
// The level is oversaturated when both series are rising, and the backlog's window starts
// after the level's first completion (the ramp from an empty server is over). A
// batching server below capacity has a wandering backlog (its batch follows the arrivals'
// bursts, slowly) but a flat TTFT; a noisy TTFT alone (a slow prefill, a long prompt) does
// not come with a growing backlog. End reason EndOversaturated.
//
// When a rule stops a level, nothing more is sent and requests waiting for a slot are
// dropped; the requests in flight finish as they would at the level's end.
const (
	ErrorWindow       = 50
	ErrorMinimum      = 20
	SaturationMinimum = 1000
)

// More end reasons: the level was stopped by a rule.
const (
	EndOversaturated = EndReason("oversaturated")  // the server could not keep up (open loop)
	EndMaxErrorRate  = EndReason("max_error_rate") // its errors passed Level.MaxErrorRate
)

// stopRules holds the rules' state for one level. The zero value applies none.
type stopRules struct {
	maxErr float64
	ring   [ErrorWindow]bool // the last finished requests: failed?
	n      int               // finished so far
	errs   int               // failures in ring

	sat       bool
	arrivals  int
	firstDone int // arrivals when the first request finished; -1 before
	backlog   series
	ttft      series
}

func newStopRules(l Level) stopRules {
	return stopRules{maxErr: l.MaxErrorRate, sat: l.DetectSaturation && !l.Closed(), firstDone: -1}
}

// finished counts a finished request, which had its first token ttft after it was due
// (negative: none); it returns the end reason when a rule now stops the level.
func (s *stopRules) finished(failed bool, ttft time.Duration) EndReason {
	if s.sat {
		if s.firstDone < 0 {
			s.firstDone = s.arrivals
		}
		_ = ttft
	}
	if s.maxErr <= 0 {
		return ""
	}
	i := s.n % ErrorWindow
	if s.n >= ErrorWindow && s.ring[i] {
		s.errs--
	}
	s.ring[i] = failed
	if failed {
		s.errs++
	}
	s.n++
	if w := min(s.n, ErrorWindow); s.n >= ErrorMinimum && float64(s.errs) > s.maxErr*float64(w) {
		return EndMaxErrorRate
	}
	return ""
}

// arrived counts an open-loop arrival with backlog requests unfinished (itself included);
// it returns the end reason when the level is now oversaturated.
func (s *stopRules) arrived(backlog int) EndReason {
	if !s.sat {
		return ""
	}
	s.arrivals++
	if s.backlog.add(float64(backlog)) && s.rising(backlog) {
		return EndOversaturated
	}
	return ""
}

// rising is the over-saturation test, with backlog requests unfinished now.
func (s *stopRules) rising(backlog int) bool {
	if s.firstDone < 0 || s.firstDone > s.arrivals/2 || float64(backlog) < 0.1*float64(s.arrivals) {
		return false
	}
	bg, ok := s.backlog.trend()
	return ok && bg.growth >= 0.1*float64(bg.n)
}

// series is a sequence of values, kept every stride-th so that its memory stays bounded:
// past maxMarks values, every other one is dropped and the stride doubles.
type series struct {
	n      int // values added
	stride int
	marks  []float64 // every stride-th value
	pos    []int     // their positions (1-based)
}

const maxMarks = 4096

// saturationBatches is how many batch means a trend is fitted through, and saturationT the
// one-sided 99.9% point of Student's t with saturationBatches − 2 = 6 degrees of freedom.
const (
	saturationBatches = 8
	saturationT       = 5.208
)

// add appends v; it reports whether the series is due for a test.
func (s *series) add(v float64) bool {
	if s.stride == 0 {
		s.stride = 1
	}
	s.n++
	if s.n%s.stride == 0 {
		s.marks, s.pos = append(s.marks, v), append(s.pos, s.n)
		if len(s.marks) >= maxMarks {
			k := 0
			for i := 1; i < len(s.marks); i += 2 {
				s.marks[k], s.pos[k] = s.marks[i], s.pos[i]
				k++
			}
			s.marks, s.pos, s.stride = s.marks[:k], s.pos[:k], 2*s.stride
		}
	}
	return s.n >= SaturationMinimum && s.n%(10*s.stride) == 0
}

// trendResult is a significant rise of a series' second half: its values (n), the growth
// of the fitted line over them, and the first and last batch means.
type trendResult struct {
	n                   int
	growth, first, last float64
}

// trend fits a line through the batch means of the second half; ok says the slope is
// positive and significant.
func (s *series) trend() (trendResult, bool) {
	half := s.n / 2
	j := 0
	for j < len(s.pos) && s.pos[j] <= half {
		j++
	}
	pts := s.marks[j:]
	if s.n < SaturationMinimum || len(pts) < 4*saturationBatches {
		return trendResult{}, false
	}
	var m [saturationBatches]float64
	for k := range m {
		lo, hi := k*len(pts)/saturationBatches, (k+1)*len(pts)/saturationBatches
		for _, v := range pts[lo:hi] {
			m[k] += v
		}
		m[k] /= float64(hi - lo)
	}
	slope, se := lineFit(m[:])
	r := trendResult{n: s.n - half, growth: slope * saturationBatches, first: m[0], last: m[saturationBatches-1]}
	return r, slope > 0 && (se == 0 || slope/se > saturationT)
}

// lineFit is the least-squares slope of ys against 0, 1, 2, ... and its standard error.
func lineFit(ys []float64) (slope, se float64) {
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
